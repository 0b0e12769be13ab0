//! The reference implementation's own files, run unchanged (issue 11):
//! `testdata/reference/examples/*.yaml` in its older shape (no `agent:` key
//! in simple.yaml, the singular `mcp:` key starting `./bin/mcp-resources`
//! from the working directory) and `testdata/reference/config/agent.yaml`
//! (mcp-resources over streamable HTTP at the fixed
//! `http://localhost:8090/mcp`), all on the reference's model
//! `google:gemini-2.5-flash`, answered by a local rule-based fake Gemini.
//!
//! Each agent runs in a temp directory laid out like the reference's
//! checkout: `bin/mcp-resources` (a symlink to the built binary) and
//! `data/` (conversations and `resources.db`). TS-015..TS-019.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use asg_tests::fake_gemini::{
    FAKE_GEMINI_KEY, FakeGemini, FunctionResponse, GeminiCall, GeminiReply,
};
use asg_tests::{
    Agent, AgentOptions, approval_uuid, assert_error, binary, conversation_id, node_order,
    testdata, tool_calls, tool_messages, trace,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------
// The reference's checkout layout

/// A reference example file.
fn example(name: &str) -> PathBuf {
    testdata(&format!("reference/examples/{name}.yaml"))
}

/// A temp directory holding `bin/mcp-resources` and `data/`, the working
/// directory of the agents of one test.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("bin")).expect("bin/");
        std::fs::create_dir(dir.path().join("data")).expect("data/");
        std::os::unix::fs::symlink(
            binary("mcp-resources"),
            dir.path().join("bin/mcp-resources"),
        )
        .expect("symlink bin/mcp-resources");
        Workspace { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The agent on `config`, run from this directory with `data_dir`
    /// `./data` (the reference's), its model answered by `fake`.
    async fn agent(&self, config: &Path, fake: &FakeGemini) -> Agent {
        let options = AgentOptions {
            env: fake.env(),
            data_dir: Some(self.path().join("data")),
            cwd: Some(self.path().to_path_buf()),
            ..AgentOptions::default()
        };
        Agent::start(config, options).await
    }

    /// A second agent on simple.yaml in this directory (same
    /// `./data/resources.db`, its own conversation store).
    async fn helper(&self) -> (FakeGemini, Agent) {
        let fake = FakeGemini::start(resource_manager).await;
        let options = AgentOptions {
            env: fake.env(),
            cwd: Some(self.path().to_path_buf()),
            ..AgentOptions::default()
        };
        let agent = Agent::start(&example("simple"), options).await;
        (fake, agent)
    }

    /// Names of the resources in `./data/resources.db`, read through the
    /// resources_list tool of a helper agent.
    async fn resource_names(&self) -> Vec<String> {
        let (_fake, agent) = self.helper().await;
        agent.resource_names().await
    }

    /// Adds resources through a helper agent, approving each add.
    async fn seed(&self, resources: &[(&str, i64)]) {
        let (_fake, agent) = self.helper().await;
        for (name, value) in resources {
            let (status, answer) = agent
                .say_new(&format!("add resource {name} with value {value}"))
                .await;
            assert_eq!(status, 201, "{answer}");
            let (status, done) = agent
                .decide(&approval_uuid(&answer), json!({"approved": true}))
                .await;
            assert_eq!(status, 200, "{done}");
        }
    }
}

// ---------------------------------------------------------------------
// Reading requests and tool results (the fake model's side)

/// `(name, value)` of "add resource NAME with value N" in a text.
fn parse_add(text: &str) -> Option<(String, i64)> {
    let rest = &text[text.find("add resource ")? + "add resource ".len()..];
    let (name, rest) = rest.split_once(" with value ")?;
    let value = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect::<String>()
        .parse()
        .ok()?;
    Some((name.trim().to_string(), value))
}

/// The rest of the first line of `text` holding `label`, after it (a
/// placeholder's value starts in the middle of its template's line).
fn line_after<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|line| line.find(label).map(|at| &line[at + label.len()..]))
        .map(str::trim)
}

/// The resources of a resources_list result.
fn listed(response: &FunctionResponse) -> Vec<Value> {
    response
        .json()
        .and_then(|v| v["resources"].as_array().cloned())
        .unwrap_or_default()
}

fn names(resources: &[Value]) -> Vec<String> {
    resources
        .iter()
        .filter_map(|r| r["name"].as_str().map(str::to_string))
        .collect()
}

/// A tool result as one line of compact JSON (or its text).
fn compact(response: &FunctionResponse) -> String {
    response
        .json()
        .map(|v| v.to_string())
        .unwrap_or_else(|| response.text())
}

fn unexpected(call: &GeminiCall) -> GeminiReply {
    GeminiReply::error(
        400,
        format!("the fake Gemini has no rule for: {}", call.system),
    )
}

// ---------------------------------------------------------------------
// The fake model's rules, one set per file

/// simple.yaml and config/agent.yaml: one model with every tool.
fn resource_manager(call: &GeminiCall) -> GeminiReply {
    if !call.system.contains("You are a resource management agent") {
        return unexpected(call);
    }
    match call.last_function_response() {
        None => match parse_add(&call.user_text) {
            Some((name, value)) => {
                GeminiReply::call("resources_add", json!({"name": name, "value": value}))
            }
            None if call.user_text.contains("list") => {
                GeminiReply::call("resources_list", json!({}))
            }
            None => GeminiReply::text("I can list, add and remove resources."),
        },
        Some(done) if done.name == "resources_list" => {
            let resources = listed(done);
            GeminiReply::text(format!(
                "There are {} resources: {}.",
                resources.len(),
                names(&resources).join(", ")
            ))
        }
        Some(done) => GeminiReply::text(format!("{}: {}", done.name, compact(done))),
    }
}

/// sequential.yaml: the analyzer writes a plan; the executor acts on the
/// plan it finds in its own prompt (so only the data flow can feed it).
fn sequential(call: &GeminiCall) -> GeminiReply {
    if call.system.contains("You are a request analyzer") {
        return GeminiReply::text(match parse_add(&call.user_text) {
            Some((name, value)) => {
                format!("- Intent: add\n- Target: {name}\n- Details: value {value}")
            }
            None => "- Intent: list\n- Target: all resources\n- Details: none".to_string(),
        });
    }
    if !call.system.contains("You are a resource executor") {
        return unexpected(call);
    }
    if let Some(done) = call.last_function_response() {
        return GeminiReply::text(format!("EXECUTED {}: {}", done.name, compact(done)));
    }
    let intent = line_after(&call.system, "- Intent:");
    let target = line_after(&call.system, "- Target:").unwrap_or_default();
    let value: Option<i64> =
        line_after(&call.system, "- Details: value").and_then(|v| v.parse().ok());
    match (intent, value) {
        (Some("add"), Some(value)) => {
            GeminiReply::call("resources_add", json!({"name": target, "value": value}))
        }
        (Some("list"), _) => GeminiReply::call("resources_list", json!({})),
        _ => GeminiReply::text("No analysis to act on."),
    }
}

/// parallel.yaml: two listing branches, then a summary of both outputs.
fn parallel(call: &GeminiCall) -> GeminiReply {
    if call.system.contains("You are a data summarizer") {
        let all = line_after(&call.system, "All resources: RAW ")
            .and_then(|json| serde_json::from_str::<Value>(json).ok())
            .and_then(|v| v["resources"].as_array().cloned())
            .unwrap_or_default();
        let count = line_after(&call.system, "Count information:").unwrap_or("?");
        return GeminiReply::text(format!(
            "Summary: {count} Names: {}.",
            names(&all).join(", ")
        ));
    }
    let counting = call.system.contains("count the resources");
    if !counting && !call.system.contains("give back its raw output") {
        return unexpected(call);
    }
    match call.last_function_response() {
        None => GeminiReply::call("resources_list", json!({})),
        Some(done) if counting => {
            GeminiReply::text(format!("Total: {} resources found.", listed(done).len()))
        }
        Some(done) => GeminiReply::text(format!("RAW {}", compact(done))),
    }
}

/// loop.yaml's checker: list, then add one or (when `may_exit` and 3
/// exist) call exit_loop.
fn checker(call: &GeminiCall, may_exit: bool) -> GeminiReply {
    if !call.system.contains("You are a resource checker") {
        return unexpected(call);
    }
    match call.last_function_response() {
        None => GeminiReply::call("resources_list", json!({})),
        Some(done) if done.name == "resources_list" => {
            let count = listed(done).len();
            if may_exit && count >= 3 {
                GeminiReply::call("exit_loop", json!({}))
                    .with_text(format!("Enough: {count} resources."))
            } else {
                let n = count as i64 + 1;
                GeminiReply::call(
                    "resources_add",
                    json!({"name": format!("auto-resource-{n}"), "value": n * 10}),
                )
            }
        }
        Some(_) => GeminiReply::text("Need more resources"),
    }
}

/// full-pipeline.yaml: classify, gather (parallel), execute (pauses on
/// the add), verify (loop), format.
fn full_pipeline(call: &GeminiCall) -> GeminiReply {
    let system = &call.system;
    let done = call.last_function_response();
    if system.contains("You are an intent classifier") {
        return GeminiReply::text(match parse_add(&call.user_text) {
            Some((name, value)) => format!("MUTATE: add resource {name} with value {value}"),
            None => "QUERY: list all resources".to_string(),
        });
    }
    if system.contains("Call resources_list to get all current resources") {
        return match done {
            None => GeminiReply::call("resources_list", json!({})),
            Some(done) => GeminiReply::text(format!("RAW {}", compact(done))),
        };
    }
    if system.contains("Enrich this request") {
        return GeminiReply::text(match parse_add(system) {
            Some((name, value)) => {
                format!("- Action: add\n- Resource: {name}\n- Value: {value}\n- Notes: none")
            }
            None => "- Action: list\n- Resource: all\n- Value: none\n- Notes: none".to_string(),
        });
    }
    if system.contains("You are the execution agent") {
        return execution_agent(call);
    }
    if system.contains("You are a verifier") {
        return verifier(call);
    }
    if system.contains("You are a response formatter") {
        let verification = line_after(system, "Verification:").unwrap_or("?");
        return GeminiReply::text(format!("Done. {verification}"));
    }
    unexpected(call)
}

/// The full pipeline's executor: acts on the enriched request in its
/// prompt.
fn execution_agent(call: &GeminiCall) -> GeminiReply {
    if let Some(done) = call.last_function_response() {
        return GeminiReply::text(format!("EXECUTED {}: {}", done.name, compact(done)));
    }
    let action = line_after(&call.system, "- Action:");
    let name = line_after(&call.system, "- Resource:").unwrap_or_default();
    let value: Option<i64> = line_after(&call.system, "- Value:").and_then(|v| v.parse().ok());
    match (action, value) {
        (Some("add"), Some(value)) => {
            GeminiReply::call("resources_add", json!({"name": name, "value": value}))
        }
        _ => GeminiReply::call("resources_list", json!({})),
    }
}

/// The full pipeline's loop step: exits once a listed resource is the one
/// the execution result names.
fn verifier(call: &GeminiCall) -> GeminiReply {
    let Some(done) = call.last_function_response() else {
        return GeminiReply::call("resources_list", json!({}));
    };
    let execution = line_after(&call.system, "Execution result:").unwrap_or_default();
    let seen = names(&listed(done))
        .into_iter()
        .find(|name| execution.contains(&format!("\"name\":\"{name}\"")));
    match seen {
        Some(name) => {
            GeminiReply::call("exit_loop", json!({})).with_text(format!("VERIFIED: {name} exists."))
        }
        None => GeminiReply::text("Not visible yet"),
    }
}

// ---------------------------------------------------------------------
// Reading the agent's answers

/// Tool results of `tool` in a conversation.
fn results_of(conversation: &Value, tool: &str) -> Vec<Value> {
    tool_messages(conversation)
        .into_iter()
        .filter(|m| m["tool_result"]["name"] == tool)
        .collect()
}

/// The answer of a turn that must have completed (no approval pending).
fn completed(got: &(u16, Value), status: u16) -> &Value {
    let (code, answer) = got;
    assert_eq!(*code, status, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], false, "{answer}");
    assert_eq!(answer["conversation"]["status"], "active", "{answer}");
    assert!(
        answer["conversation"].get("pipeline_state").is_none(),
        "{answer}"
    );
    answer
}

/// Approves `uuid`; the decision completes the turn. A second decision on
/// the same approval is refused (the call ran once).
async fn approve_once(agent: &Agent, uuid: &str) -> Value {
    let got = agent.decide(uuid, json!({"approved": true})).await;
    let answer = completed(&got, 200).clone();
    let again = agent.decide(uuid, json!({"approved": true})).await;
    assert_error(&again, 409);
    answer
}

/// Approves every `resources_add` the loop asks for, checking that each
/// waits (nothing added) until approved; returns how many and the last
/// answer.
async fn approve_each_add(
    agent: &Agent,
    mut got: (u16, Value),
    ws: &Workspace,
) -> (usize, (u16, Value)) {
    let mut approvals = 0;
    while got.1["result"]["waiting_approval"] == true {
        assert_eq!(
            got.1["result"]["approval"]["tool_name"], "resources_add",
            "{}",
            got.1
        );
        assert_eq!(
            ws.resource_names().await.len(),
            approvals,
            "added before approval"
        );
        got = agent
            .decide(&approval_uuid(&got.1), json!({"approved": true}))
            .await;
        approvals += 1;
        assert!(approvals <= 10, "approvals never end: {}", got.1);
    }
    (approvals, got)
}

/// The approval a paused turn waits for, after checking it is `tool`
/// with `args`.
fn pending(got: &(u16, Value), tool: &str, args: Value) -> String {
    let (status, answer) = got;
    assert_eq!(*status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    assert_eq!(answer["conversation"]["status"], "waiting_approval");
    let approval = &answer["result"]["approval"];
    assert_eq!(approval["tool_name"], tool, "{answer}");
    assert_eq!(approval["tool_args"], args, "{answer}");
    approval_uuid(answer)
}

/// Calls of the node whose prompt holds `marker` that began an invocation
/// (no tool result yet): one per run of the node.
fn invocations(fake: &FakeGemini, marker: &str) -> usize {
    fake.calls_with_system(marker)
        .iter()
        .filter(|c| c.function_responses.is_empty())
        .count()
}

// ---------------------------------------------------------------------
// TS-015: simple.yaml (no `agent:` key, singular `mcp:`)

#[tokio::test]
async fn ts015_simple_example_runs_as_one_model_with_the_stdio_tools() {
    let ws = Workspace::new();
    let fake = FakeGemini::start(resource_manager).await;
    let agent = ws.agent(&example("simple"), &fake).await;

    let got = agent.say_new("add resource alpha with value 1").await;
    let uuid = pending(&got, "resources_add", json!({"name": "alpha", "value": 1}));
    assert!(got.1["conversation"].get("pipeline_state").is_none());
    let added = approve_once(&agent, &uuid).await;
    let response = added["result"]["response"].as_str().unwrap_or_default();
    assert!(response.contains("\"name\":\"alpha\""), "{response}");

    // A read-only call runs at once.
    let got = agent.say_new("list all resources").await;
    let answer = completed(&got, 201);
    assert_eq!(
        answer["result"]["response"],
        "There are 1 resources: alpha."
    );
    let calls = tool_calls(&answer["conversation"]);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["name"], "resources_list");
    assert_eq!(calls[0]["needs_approval"], false);

    // What reached the model: the file's prompt, every tool, its model.
    for call in fake.calls() {
        assert_eq!(call.model, "gemini-2.5-flash");
        assert_eq!(call.api_key.as_deref(), Some(FAKE_GEMINI_KEY));
        assert!(call.system.contains("You are a resource management agent"));
        for tool in ["resources_add", "resources_list", "resources_remove"] {
            assert!(call.offers(tool), "{tool} not offered: {:?}", call.tools);
        }
        assert!(!call.offers("exit_loop"), "{:?}", call.tools);
    }
    // ./bin/mcp-resources ran from the working directory, on ./data.
    assert!(ws.path().join("data/resources.db").is_file());
}

// ---------------------------------------------------------------------
// TS-016, TS-019: sequential.yaml

#[tokio::test]
async fn ts016_sequential_example_feeds_the_analysis_to_the_executor() {
    let ws = Workspace::new();
    let fake = FakeGemini::start(sequential).await;
    let agent = ws.agent(&example("sequential"), &fake).await;
    let got = agent.say_new("list all resources").await;
    let answer = completed(&got, 201);
    let conversation = &answer["conversation"];
    assert_eq!(node_order(conversation), ["analyzer", "executor"]);

    // The executor's prompt, as sent to the model, holds the analyzer's
    // output in place of {analysis}.
    let analysis = "- Intent: list\n- Target: all resources\n- Details: none";
    let executor = fake.calls_with_system("You are a resource executor");
    assert_eq!(executor.len(), 2, "a tool call, then the answer");
    for call in &executor {
        assert!(
            call.system.contains(&format!("Analysis: {analysis}")),
            "{}",
            call.system
        );
    }
    assert_eq!(invocations(&fake, "You are a request analyzer"), 1);
    // The executor's tool ran and its output is the final answer.
    assert_eq!(results_of(conversation, "resources_list").len(), 1);
    let response = answer["result"]["response"].as_str().unwrap_or_default();
    assert!(
        response.starts_with("EXECUTED resources_list: {\"count\":0"),
        "{response}"
    );
}

#[tokio::test]
async fn ts019_sequential_example_pauses_at_the_executor_and_resumes() {
    let ws = Workspace::new();
    let fake = FakeGemini::start(sequential).await;
    let agent = ws.agent(&example("sequential"), &fake).await;
    let got = agent.say_new("add resource test-seq with value 55").await;
    let uuid = pending(
        &got,
        "resources_add",
        json!({"name": "test-seq", "value": 55}),
    );
    let answer = &got.1;
    assert_eq!(answer["result"]["approval"]["node"], "executor");
    let state = &answer["conversation"]["pipeline_state"];
    assert_eq!(state["paused_node_path"], json!([1]), "{state}");
    assert_eq!(
        state["session_state"]["analysis"],
        "- Intent: add\n- Target: test-seq\n- Details: value 55"
    );
    assert!(
        ws.resource_names().await.is_empty(),
        "added before approval"
    );

    let done = approve_once(&agent, &uuid).await;
    let response = done["result"]["response"].as_str().unwrap_or_default();
    assert!(
        response.starts_with("EXECUTED resources_add: {\"created\""),
        "{response}"
    );
    assert_eq!(node_order(&done["conversation"]), ["analyzer", "executor"]);
    // Resuming did not start the pipeline over.
    assert_eq!(invocations(&fake, "You are a request analyzer"), 1);
    assert_eq!(ws.resource_names().await, ["test-seq"]);
}

// ---------------------------------------------------------------------
// TS-017: parallel.yaml

#[tokio::test]
async fn ts017_parallel_example_gathers_both_views_for_the_summarizer() {
    let ws = Workspace::new();
    ws.seed(&[("alpha", 1), ("beta", 2)]).await;
    let fake = FakeGemini::start(parallel).await;
    let agent = ws.agent(&example("parallel"), &fake).await;
    let got = agent
        .say_new("give me a full overview of all resources")
        .await;
    let answer = completed(&got, 201);
    assert_eq!(
        answer["result"]["response"],
        "Summary: Total: 2 resources found. Names: alpha, beta."
    );
    let conversation = &answer["conversation"];
    assert_eq!(
        node_order(conversation),
        ["list-all", "count-analysis", "summarizer"]
    );
    // Both branches produced output...
    let trace = trace(conversation);
    let said = |node: &str, text: &str| {
        trace
            .iter()
            .any(|(n, role, content)| n == node && role == "assistant" && content.starts_with(text))
    };
    assert!(said("list-all", "RAW {\"count\":2"), "{trace:?}");
    assert!(
        said("count-analysis", "Total: 2 resources found."),
        "{trace:?}"
    );
    assert_eq!(results_of(conversation, "resources_list").len(), 2);
    // ... and the summarizer's prompt held both.
    let summarizer = fake.calls_with_system("You are a data summarizer");
    assert_eq!(summarizer.len(), 1);
    let system = &summarizer[0].system;
    assert!(
        system.contains("All resources: RAW {\"count\":2"),
        "{system}"
    );
    assert!(
        system.contains("Count information: Total: 2 resources found."),
        "{system}"
    );
}

// ---------------------------------------------------------------------
// TS-018: loop.yaml

#[tokio::test]
async fn ts018_loop_example_adds_until_three_exist_then_exits() {
    let ws = Workspace::new();
    let fake = FakeGemini::start(|call: &GeminiCall| checker(call, true)).await;
    let agent = ws.agent(&example("loop"), &fake).await;
    let got = agent.say_new("ensure we have at least 3 resources").await;
    // `allow_destructive` unset: each add inside the loop asks first.
    let (approvals, answer) = approve_each_add(&agent, got, &ws).await;
    assert_eq!(approvals, 3);
    let answer = completed(&answer, 200);
    assert_eq!(answer["result"]["response"], "Enough: 3 resources.");
    let conversation = &answer["conversation"];
    let adds = results_of(conversation, "resources_add");
    assert_eq!(adds.len(), 3, "{adds:?}");
    assert!(adds.iter().all(|m| m["is_error"] != true), "{adds:?}");
    let exits = tool_calls(conversation)
        .into_iter()
        .filter(|c| c["name"] == "exit_loop")
        .count();
    assert_eq!(exits, 1);
    // Three adding iterations and the one that exits: within 5.
    assert_eq!(invocations(&fake, "You are a resource checker"), 4);
    assert!(
        fake.calls_with_system("You are a resource checker")
            .iter()
            .all(|c| c.offers("exit_loop"))
    );
    assert_eq!(
        ws.resource_names().await,
        ["auto-resource-1", "auto-resource-2", "auto-resource-3"]
    );
}

#[tokio::test]
async fn ts018_loop_example_stops_at_max_iterations() {
    let ws = Workspace::new();
    // A model that never calls exit_loop.
    let fake = FakeGemini::start(|call: &GeminiCall| checker(call, false)).await;
    let agent = ws.agent(&example("loop"), &fake).await;
    let got = agent.say_new("ensure we have at least 3 resources").await;
    let (approvals, answer) = approve_each_add(&agent, got, &ws).await;
    assert_eq!(approvals, 5);
    let answer = completed(&answer, 200);
    assert_eq!(answer["result"]["response"], "Need more resources");
    assert_eq!(invocations(&fake, "You are a resource checker"), 5);
    assert_eq!(
        results_of(&answer["conversation"], "resources_add").len(),
        5
    );
    assert_eq!(ws.resource_names().await.len(), 5);
}

// ---------------------------------------------------------------------
// TS-019: full-pipeline.yaml (sequential > parallel, approval, loop)

/// The full pipeline paused at its executor (path [2]) with the session
/// state of the steps before it.
fn assert_paused_at_executor(answer: &Value) {
    assert_eq!(answer["result"]["approval"]["node"], "executor");
    let state = &answer["conversation"]["pipeline_state"];
    assert_eq!(state["paused_node_path"], json!([2]), "{state}");
    let session = &state["session_state"];
    let text = |key: &str| session[key].as_str().unwrap_or("").to_string();
    assert_eq!(
        text("intent"),
        "MUTATE: add resource test-pipe with value 55"
    );
    assert!(text("current_resources").starts_with("RAW "), "{session}");
    assert!(
        text("enriched_request").contains("- Resource: test-pipe"),
        "{session}"
    );
    // Not yet at the loop or the formatter.
    let nodes = node_order(&answer["conversation"]);
    assert_eq!(
        nodes.last().map(String::as_str),
        Some("executor"),
        "{nodes:?}"
    );
}

#[tokio::test]
async fn ts019_full_pipeline_example_pauses_for_approval_and_completes() {
    let ws = Workspace::new();
    let fake = FakeGemini::start(full_pipeline).await;
    let agent = ws.agent(&example("full-pipeline"), &fake).await;
    let got = agent.say_new("add resource test-pipe with value 55").await;
    let uuid = pending(
        &got,
        "resources_add",
        json!({"name": "test-pipe", "value": 55}),
    );
    assert_paused_at_executor(&got.1);
    assert!(
        ws.resource_names().await.is_empty(),
        "added before approval"
    );

    let done = approve_once(&agent, &uuid).await;
    assert_eq!(
        done["result"]["response"],
        "Done. VERIFIED: test-pipe exists."
    );
    let conversation = &done["conversation"];
    assert_eq!(
        node_order(conversation),
        [
            "intent-analyzer",
            "current-state",
            "request-enricher",
            "executor",
            "verifier",
            "response-formatter"
        ]
    );
    assert_eq!(results_of(conversation, "resources_add").len(), 1);
    // Nothing before the pause ran again; the loop ran once.
    assert_eq!(invocations(&fake, "You are an intent classifier"), 1);
    assert_eq!(invocations(&fake, "Enrich this request"), 1);
    assert_eq!(invocations(&fake, "You are a verifier"), 1);
    assert_eq!(ws.resource_names().await, ["test-pipe"]);
    let shown = agent.conversation(&conversation_id(&done)).await;
    assert_eq!(shown["status"], "active");
}

// ---------------------------------------------------------------------
// config/agent.yaml with mcp-resources over HTTP on the fixed port 8090

/// The one port the reference's config/agent.yaml names.
const REFERENCE_MCP_PORT: u16 = 8090;

/// `mcp-resources --config testdata/reference/mcp-resources.yaml` (host
/// 0.0.0.0, port 8090, db `./data/resources.db`), run from a workspace.
/// Port 8090 is taken under an exclusive lock on a file in the temp dir,
/// held until the server is gone: no other test of this repo binds 8090
/// (they use port 0), and runs of this test from other processes wait
/// for each other instead of colliding.
struct ReferenceResources {
    child: Child,
    log: std::sync::Arc<std::sync::Mutex<String>>,
    _lock: std::fs::File,
}

impl ReferenceResources {
    async fn start(cwd: &Path) -> ReferenceResources {
        let lock = tokio::task::spawn_blocking(lock_reference_port)
            .await
            .expect("lock task");
        wait_until_free(REFERENCE_MCP_PORT).await;
        let mut child = Command::new(binary("mcp-resources"))
            .arg("--config")
            .arg(testdata("reference/mcp-resources.yaml"))
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start mcp-resources");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let _ = asg_tests::capture_output(&mut child, &log, |_| None);
        let mut server = ReferenceResources {
            child,
            log,
            _lock: lock,
        };
        server.wait_healthy().await;
        server
    }

    async fn wait_healthy(&mut self) {
        let url = format!("http://127.0.0.1:{REFERENCE_MCP_PORT}/health");
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("mcp-resources exited ({status}): {}", self.log());
            }
            if let Ok(r) = reqwest::get(&url).await
                && r.status().is_success()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("mcp-resources never answered {url}: {}", self.log());
    }

    fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for ReferenceResources {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Blocks until this process holds the port-8090 lock file.
fn lock_reference_port() -> std::fs::File {
    let path = std::env::temp_dir().join("asg-tests-port-8090.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    file
}

/// Waits (up to 30 s) until nothing listens on `port`.
async fn wait_until_free(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpListener::bind(("0.0.0.0", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "port {port} is taken by a process outside this test suite; \
             the reference's config/agent.yaml needs it"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn reference_agent_yaml_over_http_waits_for_approval_and_adds_once() {
    let ws = Workspace::new();
    let _server = ReferenceResources::start(ws.path()).await;
    let fake = FakeGemini::start(resource_manager).await;
    let agent = ws
        .agent(&testdata("reference/config/agent.yaml"), &fake)
        .await;

    let got = agent.say_new("add resource http-ref with value 7").await;
    let uuid = pending(
        &got,
        "resources_add",
        json!({"name": "http-ref", "value": 7}),
    );
    assert!(
        agent.resource_names().await.is_empty(),
        "added before approval"
    );

    let done = approve_once(&agent, &uuid).await;
    let response = done["result"]["response"].as_str().unwrap_or_default();
    assert!(
        response.starts_with("resources_add: {\"created\""),
        "{response}"
    );
    assert_eq!(agent.resource_names().await, ["http-ref"]);
    assert_eq!(
        results_of(
            &agent.conversation(&conversation_id(&done)).await,
            "resources_add"
        )
        .len(),
        1
    );
    // The server's db_path (./data/resources.db) is its working directory's.
    assert!(ws.path().join("data/resources.db").is_file());
    assert!(fake.calls().iter().all(|c| c.model == "gemini-2.5-flash"));
}
