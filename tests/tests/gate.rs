//! Holes in the gate, closed (issue 12): a call to a tool the node was not
//! offered, a third-party tool without annotations, a tool name shared by
//! two kinds of tool, a timeout next to calls in flight, the operator
//! inbox, event-stream caps and a graceful shutdown during a turn.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use asg_tests::sse::EventStream as Events;
use asg_tests::{
    Agent, AgentOptions, approval_uuid, binary, config_with, conversation_id, testdata,
    tool_messages,
};
use serde_json::{Value, json};

fn plain_tools(log: &Path) -> AgentOptions {
    AgentOptions {
        env: vec![
            (
                "PLAIN_TOOLS_SCRIPT".into(),
                testdata("mcp/plain_tools.py").display().to_string(),
            ),
            ("PLAIN_TOOLS_LOG".into(), log.display().to_string()),
        ],
        ..Default::default()
    }
}

/// Lines the plain tool server wrote: one per executed call.
fn executed(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_call_to_a_tool_the_node_was_not_offered_is_refused_not_run() {
    // The node may only list, and sits in a parallel node that would run
    // destructive calls unapproved: the model's call to resources_add must
    // neither run nor stop for approval.
    let agent = Agent::start(&testdata("gate-unoffered.yaml"), AgentOptions::default()).await;
    let (status, answer) = agent.say_new("sneak add injected-1").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], false, "{answer}");
    let refusal = tool_messages(&answer["conversation"])
        .into_iter()
        .find(|m| m["tool_result"]["name"] == "resources_add")
        .unwrap_or_else(|| panic!("no refusal recorded: {answer}"));
    assert_eq!(refusal["tool_result"]["is_error"], true);
    assert!(
        refusal["content"]
            .as_str()
            .unwrap()
            .contains("not one of the tools available"),
        "{refusal}"
    );
    agent.wait_log("was not offered").await;
    // Nothing was created: list through a node that may list.
    let (_, listed) = agent.say_new("list").await;
    let result = tool_messages(&listed["conversation"])
        .pop()
        .unwrap_or_else(|| panic!("no list result: {listed}"));
    assert!(
        result["content"].as_str().unwrap().contains("\"count\": 0")
            || result["content"].as_str().unwrap().contains("\"count\":0"),
        "{result}"
    );
}

#[tokio::test]
async fn an_unannotated_third_party_tool_stops_for_approval() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let agent = Agent::start(&testdata("gate-plain-tools.yaml"), plain_tools(&log)).await;
    let (_, tools) = agent.get("/tools").await;
    let note = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "note_write")
        .cloned()
        .unwrap_or_else(|| panic!("no note_write in {tools}"));
    assert_eq!(note["destructiveHint"], true, "{note}");

    let (status, answer) = agent.say_new("write note hello").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    assert_eq!(answer["result"]["approval"]["tool_name"], "note_write");
    assert!(executed(&log).is_empty(), "ran before approval");
    let (status, decided) = agent
        .decide(&approval_uuid(&answer), json!({"approved": true}))
        .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(executed(&log), ["note_write hello"]);
}

#[tokio::test]
async fn a_timeout_fails_only_its_own_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let agent = Agent::start(&testdata("gate-plain-tools.yaml"), plain_tools(&log)).await;
    // The server's timeout is 2 s: the first call times out at 2 s while
    // the second, started at 1 s and taking 1.5 s, is still in flight.
    let slow = agent.say_new("echo first after 5");
    let other = async {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        agent.say_new("echo second after 1.5").await
    };
    let ((_, first), (_, second)) = tokio::join!(slow, other);
    let first_result = tool_messages(&first["conversation"]).pop().unwrap();
    assert_eq!(first_result["tool_result"]["is_error"], true, "{first}");
    let text = first_result["content"].as_str().unwrap();
    assert!(text.contains("did not answer within 2 seconds"), "{text}");
    assert!(text.contains("may still have run"), "{text}");
    let second_result = tool_messages(&second["conversation"]).pop().unwrap();
    assert_eq!(second_result["tool_result"]["is_error"], false, "{second}");
    assert_eq!(second_result["content"], "echo: second", "{second}");
}

fn run_to_exit(config: &Path) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(binary("agent"))
        .arg("--config")
        .arg(config)
        .args(["--port", "0", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run agent");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

#[test]
fn a_name_shared_by_a_tool_and_a_sub_agent_stops_the_agent_at_startup() {
    let (code, output) = run_to_exit(&testdata("gate-clash.yaml"));
    assert_eq!(code, Some(2), "{output}");
    assert!(output.contains("\"resources_add\""), "{output}");
    assert!(output.contains("MCP server \"resources\""), "{output}");
    assert!(
        output.contains("sub-agent at http://127.0.0.1:9"),
        "{output}"
    );
}

#[tokio::test]
async fn the_operator_inbox_sees_approvals_of_every_conversation() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let (_, before) = agent.say_new("add resource early-1 with value 1").await;
    let early = approval_uuid(&before);
    let (status, events) = Events::open(&format!("{}/events", agent.url), &[]).await;
    assert_eq!(status, 200);
    let mut events = events.unwrap();
    let pending = events.next_of("pending").await;
    assert_eq!(pending["approvals"][0]["uuid"], early.as_str(), "{pending}");

    // Another client, another conversation: the inbox sees it.
    let (_, answer) = agent.say_new("add resource inbox-1 with value 2").await;
    let uuid = approval_uuid(&answer);
    let requested = events.next_of("approval_requested").await;
    assert_eq!(requested["approval"]["uuid"], uuid.as_str(), "{requested}");
    assert_eq!(
        requested["approval"]["conversation_id"],
        conversation_id(&answer).as_str()
    );
    let (status, _) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200);
    let resolved = events.next_of("approval_resolved").await;
    assert_eq!(resolved["uuid"], uuid.as_str(), "{resolved}");
    assert_eq!(resolved["decision"]["approved"], true, "{resolved}");
    assert_eq!(resolved["decision"]["decided_by"]["via"], "rest");
    assert_eq!(
        resolved["conversation_id"],
        conversation_id(&answer).as_str()
    );
}

#[tokio::test]
async fn event_streams_are_capped_with_a_503() {
    let (_dir, config) = config_with(
        "agent-resources.yaml",
        "limits: { max_subscribers_per_conversation: 1, max_subscribers: 2 }",
    );
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let (_, answer) = agent.say_new("hello").await;
    let id = conversation_id(&answer);
    let url = format!("{}/conversations/{id}/events", agent.url);
    let (status, first) = Events::open(&url, &[]).await;
    assert_eq!(status, 200);
    let (status, _) = Events::open(&url, &[]).await;
    assert_eq!(status, 503, "a second stream of one conversation");
    let (status, inbox) = Events::open(&format!("{}/events", agent.url), &[]).await;
    assert_eq!(status, 200);
    let (status, _) = Events::open(&format!("{}/events", agent.url), &[]).await;
    assert_eq!(status, 503, "a third stream in total");
    // Closing a stream gives its place back.
    drop(first);
    drop(inbox);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _) = Events::open(&url, &[]).await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the place never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn sigterm_lets_a_running_approved_call_finish() {
    let options = AgentOptions {
        env: vec![("MCP_RESOURCES_DELAY_MS".into(), "1500".into())],
        ..Default::default()
    };
    let mut agent = Agent::start(&testdata("agent-resources.yaml"), options.clone()).await;
    let (_, answer) = agent.say_new("add resource graceful-1 with value 5").await;
    let id = conversation_id(&answer);
    let uuid = approval_uuid(&answer);
    let client = agent.http.clone();
    let url = format!("{}/approvals/{uuid}", agent.url);
    let decision = tokio::spawn(async move {
        client
            .post(url)
            .json(&json!({"approved": true}))
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    wait_for_state(&agent, &id, "executing").await;
    let status = agent.stop();
    assert!(status.is_some_and(|s| s.success()), "exit: {status:?}");
    assert_eq!(
        decision.await.unwrap().ok(),
        Some(200),
        "the caller got the outcome"
    );
    let restarted = Agent::start(
        &testdata("agent-resources.yaml"),
        AgentOptions {
            data_dir: Some(agent.data_dir.clone()),
            ..options
        },
    )
    .await;
    let conversation = restarted.conversation(&id).await;
    let result = tool_messages(&conversation).pop().unwrap();
    assert_eq!(result["tool_result"]["is_error"], false, "{conversation}");
    assert_eq!(restarted.resource_names().await, ["graceful-1"]);
}

async fn wait_for_state(agent: &Agent, id: &str, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let conversation = agent.conversation(id).await;
        if conversation["pending_approval"]["state"] == state {
            return;
        }
        assert!(Instant::now() < deadline, "never {state}: {conversation}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn openai_answer(text: &str) -> Value {
    json!({"id": "c", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}]})
}

#[tokio::test]
async fn a_history_longer_than_the_budget_still_reaches_the_model() {
    use asg_tests::fake_http::{FakeHttp, Reply};
    let fake = FakeHttp::start(vec![Reply::json(openai_answer("noted"))]).await;
    let (_dir, config) = config_with("agent-openai.yaml", "");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "timeout_secs: 2",
        "timeout_secs: 2\n  max_history_messages: 6",
    );
    std::fs::write(&config, text).unwrap();
    let agent = Agent::start(
        &config,
        AgentOptions {
            env: vec![("OPENAI_BASE_URL".into(), fake.url.clone())],
            ..Default::default()
        },
    )
    .await;
    let (_, answer) = agent.say_new("message 0").await;
    let id = conversation_id(&answer);
    for i in 1..12 {
        let (status, answer) = agent.say(&id, &format!("message {i}")).await;
        assert_eq!(status, 200, "turn {i}: {answer}");
    }
    let requests = fake.requests();
    assert_eq!(requests.len(), 12);
    let last: Value = serde_json::from_str(&requests[11].body).unwrap();
    let messages = last["messages"].as_array().unwrap();
    // The system prompt travels first, then at most 6 history messages
    // ending with the newest user message.
    assert_eq!(messages[0]["role"], "system", "{last}");
    assert!(messages.len() <= 7, "{} messages sent", messages.len());
    assert_eq!(messages.last().unwrap()["content"], "message 11");
    assert_eq!(
        messages[1]["role"], "user",
        "history starts with a user turn"
    );
    // The conversation itself keeps everything.
    let stored = agent.conversation(&id).await;
    let users = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 12);
}

#[tokio::test]
async fn a_long_tool_result_is_cut_with_a_visible_note() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let (_config_dir, config) = config_with(
        "gate-plain-tools.yaml",
        "limits: { max_tool_result_bytes: 300 }",
    );
    let agent = Agent::start(&config, plain_tools(&log)).await;
    let long = "x".repeat(2000);
    let (status, answer) = agent.say_new(&format!("echo {long} after 0")).await;
    assert_eq!(status, 201, "{answer}");
    let result = tool_messages(&answer["conversation"]).pop().unwrap();
    let content = result["content"].as_str().unwrap();
    assert!(content.starts_with("echo: xxx"), "{content}");
    assert!(
        content.contains("[truncated: the result was 2006 bytes; only the first 300 are kept"),
        "{content}"
    );
    assert!(content.len() < 450, "{} bytes kept", content.len());
}

// Multi-threaded: `Agent::stop` blocks its thread while the caller's
// request is answered on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_still_running_at_the_shutdown_deadline_is_recorded_as_interrupted() {
    let (_dir, config) = config_with("agent-resources.yaml", "shutdown_timeout_secs: 1");
    let options = AgentOptions {
        env: vec![("MCP_RESOURCES_DELAY_MS".into(), "4000".into())],
        ..Default::default()
    };
    let mut agent = Agent::start(&config, options.clone()).await;
    let (_, answer) = agent.say_new("add resource late-1 with value 5").await;
    let id = conversation_id(&answer);
    let uuid = approval_uuid(&answer);
    let client = agent.http.clone();
    let url = format!("{}/approvals/{uuid}", agent.url);
    let decision = tokio::spawn(async move {
        let response = client
            .post(url)
            .json(&json!({"approved": true}))
            .send()
            .await
            .ok()?;
        let answered = Instant::now();
        let status = response.status().as_u16();
        let body: Value = response.json().await.ok()?;
        Some((status, body, answered))
    });
    wait_for_state(&agent, &id, "executing").await;
    let started = Instant::now();
    let status = agent.stop();
    assert!(status.is_some_and(|s| s.success()), "exit: {status:?}");
    // The waiting caller learns at the deadline (1 s, not the 4 s call)
    // that the agent is shutting down.
    let (status, body, answered) = decision.await.unwrap().expect("an answer");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "shutting_down", "{body}");
    let waited = answered.duration_since(started);
    assert!(
        waited < Duration::from_millis(3000),
        "answered after {waited:?}\n{}",
        agent.log()
    );
    assert!(
        agent
            .log()
            .contains("turns still running at the shutdown deadline")
    );
    let restarted = Agent::start(
        &config,
        AgentOptions {
            data_dir: Some(agent.data_dir.clone()),
            ..options
        },
    )
    .await;
    let conversation = restarted.conversation(&id).await;
    let messages = conversation["messages"].as_array().unwrap();
    let result = &messages[messages.len() - 2];
    assert!(
        result["content"].as_str().unwrap().contains("may have run"),
        "{conversation}"
    );
    let last = messages.last().unwrap();
    assert!(last["content"].as_str().unwrap().starts_with("Interrupted"));
    assert_eq!(conversation["status"], "active");
    assert!(conversation["pending_approval"].is_null());
    assert!(
        restarted.resource_names().await.len() <= 1,
        "ran at most once"
    );
}
