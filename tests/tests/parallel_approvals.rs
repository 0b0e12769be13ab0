//! Several approvals pending at once: `parallel` branches that each stop
//! for their own approval (`allow_destructive` unset), decided one by one
//! in either order, with a restart between the decisions.

use asg_tests::a2a::rpc;
use asg_tests::{Agent, AgentOptions, conversation_id, testdata};
use serde_json::{Value, json};

const CONFIG: &str = "e2e-parallel-approvals.yaml";

/// The pending approvals of a conversation, as `(node, uuid)`.
fn pending(conversation: &Value) -> Vec<(String, String)> {
    conversation["pending_approvals"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|p| {
                    (
                        p["node"].as_str().unwrap_or_default().to_string(),
                        p["uuid"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The uuid of the approval node `node` waits for.
fn uuid_of(conversation: &Value, node: &str) -> String {
    pending(conversation)
        .into_iter()
        .find(|(n, _)| n == node)
        .unwrap_or_else(|| panic!("{node} is not waiting: {conversation}"))
        .1
}

/// Starts the two-branch run; checks both branches wait and the third
/// finished meanwhile.
async fn start_run(agent: &Agent) -> (String, Value) {
    let (status, answer) = agent.say_new("add both").await;
    assert_eq!(status, 201, "{answer}");
    let conversation = &answer["conversation"];
    assert_eq!(conversation["status"], "waiting_approval", "{answer}");
    let nodes: Vec<String> = pending(conversation).into_iter().map(|(n, _)| n).collect();
    assert_eq!(nodes, ["adder-a", "adder-b"], "{answer}");
    // The old single field shows the first, for older clients.
    assert_eq!(
        conversation["pending_approval"]["uuid"],
        conversation["pending_approvals"][0]["uuid"]
    );
    assert_eq!(answer["result"]["waiting_approval"], true);
    // The sibling without a destructive call ran to its end meanwhile.
    let state = &conversation["pipeline_state"];
    assert_eq!(state["branch_outputs"]["0.2"]["text"], "COUNT 0", "{state}");
    assert!(
        agent.resource_names().await.is_empty(),
        "added before approval"
    );
    (conversation_id(&answer), conversation.clone())
}

fn restart_options(data: &tempfile::TempDir) -> AgentOptions {
    AgentOptions {
        data_dir: Some(data.path().to_path_buf()),
        ..Default::default()
    }
}

#[tokio::test]
async fn two_branches_wait_each_for_its_approval_and_go_on_after_both_across_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let mut agent = Agent::start(&testdata(CONFIG), restart_options(&data)).await;
    let (id, conversation) = start_run(&agent).await;
    let (a, b) = (
        uuid_of(&conversation, "adder-a"),
        uuid_of(&conversation, "adder-b"),
    );

    // GET /approvals lists each.
    let (_, listed) = agent.get("/approvals").await;
    let uuids: Vec<&str> = listed["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["uuid"].as_str())
        .collect();
    assert!(
        uuids.contains(&a.as_str()) && uuids.contains(&b.as_str()),
        "{listed}"
    );

    // b first: it runs at once, the run still waits for a.
    let (status, after_b) = agent.decide(&b, json!({"approved": true})).await;
    assert_eq!(status, 200, "{after_b}");
    assert_eq!(after_b["conversation"]["status"], "waiting_approval");
    assert_eq!(pending(&after_b["conversation"]).len(), 1);
    assert_eq!(uuid_of(&after_b["conversation"], "adder-a"), a);
    assert_eq!(agent.resource_names().await, ["from-adder-b"]);
    let (again, _) = agent.decide(&b, json!({"approved": true})).await;
    assert_eq!(again, 409, "a decided approval is decided once");

    agent.stop();
    let agent = Agent::start(&testdata(CONFIG), restart_options(&data)).await;
    let shown = agent.conversation(&id).await;
    assert_eq!(pending(&shown).len(), 1, "{shown}");

    let (status, done) = agent.decide(&a, json!({"approved": true})).await;
    assert_eq!(status, 200, "{done}");
    let conversation = &done["conversation"];
    assert_eq!(conversation["status"], "active", "{done}");
    assert!(conversation.get("pipeline_state").is_none(), "{done}");
    assert!(pending(conversation).is_empty());
    let response = done["result"]["response"].as_str().unwrap();
    assert!(response.starts_with("TALLY a=[ADDED: "), "{response}");
    assert!(response.contains("from-adder-a"), "{response}");
    assert!(
        response.contains("b=[ADDED: ") && response.contains("from-adder-b"),
        "{response}"
    );
    // The finished sibling did not run again: its saved output was used.
    assert!(response.ends_with("COUNT 0"), "{response}");
    let count_runs = conversation["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["node"] == "count-analysis" && m["role"] == "system")
        .count();
    assert_eq!(count_runs, 1, "count-analysis ran again");
    let mut names = agent.resource_names().await;
    names.sort();
    assert_eq!(names, ["from-adder-a", "from-adder-b"]);
}

#[tokio::test]
async fn a_rejected_branch_reports_its_refusal_and_the_other_goes_on_in_the_other_order() {
    let data = tempfile::tempdir().unwrap();
    let mut agent = Agent::start(&testdata(CONFIG), restart_options(&data)).await;
    let (_, conversation) = start_run(&agent).await;
    let (a, b) = (
        uuid_of(&conversation, "adder-a"),
        uuid_of(&conversation, "adder-b"),
    );

    let (status, after_a) = agent
        .decide(&a, json!({"approved": false, "reason": "not a"}))
        .await;
    assert_eq!(status, 200, "{after_a}");
    assert_eq!(after_a["conversation"]["status"], "waiting_approval");
    assert!(agent.resource_names().await.is_empty());

    agent.stop();
    let agent = Agent::start(&testdata(CONFIG), restart_options(&data)).await;
    let (status, done) = agent.decide(&b, json!({"approved": true})).await;
    assert_eq!(status, 200, "{done}");
    let response = done["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with("TALLY a=[Not done: resources_add was rejected"),
        "{response}"
    );
    assert!(response.contains("b=[ADDED: "), "{response}");
    assert_eq!(agent.resource_names().await, ["from-adder-b"]);
    // The model of the rejected branch was not asked again.
    let a_answers = done["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["node"] == "adder-a" && m["role"] == "assistant")
        .count();
    assert_eq!(a_answers, 1, "only its tool call: {done}");
}

fn a2a_message(task: Option<&str>, parts: Value) -> Value {
    let mut message =
        json!({"role": "user", "parts": parts, "messageId": uuid::Uuid::new_v4().to_string()});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({"message": message})
}

/// The approval uuids the task's input-required message lists.
fn listed_on_task(task: &Value) -> Vec<String> {
    assert_eq!(task["status"]["state"], "input-required", "{task}");
    task["status"]["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["data"]["approval_uuid"].as_str().map(str::to_string))
        .collect()
}

/// A continuation of task `id` carrying data `parts`; the whole reply.
async fn continue_task(agent: &Agent, id: &str, parts: Value) -> Value {
    rpc(agent, "message/send", a2a_message(Some(id), parts)).await
}

/// A decision part, naming `uuid` when given.
fn decision(uuid: Option<&str>) -> Value {
    match uuid {
        Some(uuid) => json!({"kind": "data", "data": {"approved": true, "approval_uuid": uuid}}),
        None => json!({"kind": "data", "data": {"approved": true}}),
    }
}

/// The JSON-RPC error message of `reply`, after checking it is -32602.
fn invalid_params(reply: &Value) -> String {
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    reply["error"]["message"].as_str().unwrap().to_string()
}

/// Starts the two-branch run over A2A: the task id and the uuids of
/// adder-a and adder-b, checked to be listed on the task.
async fn a2a_run(agent: &Agent) -> (String, String, String) {
    let text = json!([{"kind": "text", "text": "add both"}]);
    let sent = rpc(agent, "message/send", a2a_message(None, text)).await;
    let task = &sent["result"];
    let id = task["id"].as_str().unwrap().to_string();
    let conversation = agent.conversation(&id).await;
    let a = uuid_of(&conversation, "adder-a");
    let b = uuid_of(&conversation, "adder-b");
    assert_eq!(listed_on_task(task), [a.clone(), b.clone()]);
    (id, a, b)
}

#[tokio::test]
async fn an_a2a_task_lists_every_pending_approval_and_a_continuation_names_the_one_it_decides() {
    let agent = Agent::start(&testdata(CONFIG), AgentOptions::default()).await;
    let (id, a, b) = a2a_run(&agent).await;

    // A decision that names no approval is ambiguous with two pending.
    let text = invalid_params(&continue_task(&agent, &id, json!([decision(None)])).await);
    assert!(
        text.contains(&a) && text.contains(&b) && text.contains("approval_uuid"),
        "{text}"
    );
    // One that names an approval of no pending step is refused too.
    let stranger = uuid::Uuid::new_v4().to_string();
    invalid_params(&continue_task(&agent, &id, json!([decision(Some(&stranger))])).await);
    // Two decisions in one message are refused: one message per approval.
    let both = json!([decision(Some(&a)), decision(Some(&b))]);
    let text = invalid_params(&continue_task(&agent, &id, both).await);
    assert!(text.contains("one message per approval"), "{text}");
    assert!(agent.resource_names().await.is_empty());

    // A uuid is a uuid in upper case too.
    let named = continue_task(&agent, &id, json!([decision(Some(&b.to_uppercase()))])).await;
    assert!(named["error"].is_null(), "{named}");
    assert_eq!(listed_on_task(&named["result"]), vec![a.clone()]);
    assert_eq!(agent.resource_names().await, ["from-adder-b"]);

    // Cancel refuses the one still pending; nothing else runs.
    let canceled = rpc(&agent, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    let shown = agent.conversation(&id).await;
    assert!(pending(&shown).is_empty(), "{shown}");
    let refused: Vec<&Value> = shown["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["approved"] == false)
        .collect();
    assert_eq!(refused.len(), 1, "{shown}");
    assert_eq!(refused[0]["approval_uuid"], json!(a));
    let (status, _) = agent.decide(&a, json!({"approved": true})).await;
    assert_eq!(status, 409, "decided after cancel");
    assert_eq!(agent.resource_names().await, ["from-adder-b"]);
}

/// Agent B (resources) and, started on demand, agent A running
/// e2e-parallel-proxy.yaml against it with a data directory kept across
/// restarts.
struct ProxyChain {
    b: Agent,
    data: tempfile::TempDir,
}

impl ProxyChain {
    async fn start() -> ProxyChain {
        ProxyChain {
            b: Agent::start(&testdata("e2e-chain-b.yaml"), AgentOptions::default()).await,
            data: tempfile::tempdir().unwrap(),
        }
    }

    async fn a(&self) -> Agent {
        let options = AgentOptions {
            data_dir: Some(self.data.path().to_path_buf()),
            ..AgentOptions::with_env(&[("AGENT_B_URL", &self.b.url)])
        };
        Agent::start(&testdata("e2e-parallel-proxy.yaml"), options).await
    }
}

#[tokio::test]
async fn proxy_approvals_of_two_branches_are_decided_on_their_own_across_a_restart() {
    let chain = ProxyChain::start().await;
    let (b, mut a) = (&chain.b, chain.a().await);
    let (status, answer) = a.say_new("add both over there").await;
    assert_eq!(status, 201, "{answer}");
    let conversation = &answer["conversation"];
    let listed = conversation["pending_approvals"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{answer}");
    for (approval, (node, name)) in listed
        .iter()
        .zip([("delegate-a", "p-a"), ("delegate-b", "p-b")])
    {
        assert_eq!(approval["node"], node);
        assert_eq!(approval["remote_agent_name"], "resource-agent");
        assert_eq!(approval["tool_name"], "resources_add");
        assert_eq!(approval["tool_args"]["name"], name);
    }
    let (_, on_b) = b.get("/approvals").await;
    assert_eq!(on_b["approvals"].as_array().unwrap().len(), 2, "{on_b}");
    let (first, second) = (
        uuid_of(conversation, "delegate-b"),
        uuid_of(conversation, "delegate-a"),
    );

    let (status, after) = a.decide(&first, json!({"approved": true})).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["conversation"]["status"], "waiting_approval");
    assert_eq!(b.resource_names().await, ["p-b"]);

    a.stop();
    let a = chain.a().await;
    let (status, done) = a
        .decide(
            &second,
            json!({"approved": false, "reason": "not this one"}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["conversation"]["status"], "active", "{done}");
    let response = done["result"]["response"].as_str().unwrap();
    assert!(
        response.contains("[delegate-a]\nNot done: resources_add was rejected"),
        "{response}"
    );
    assert!(
        response.contains("[delegate-b]\n") && response.contains("p-b"),
        "{response}"
    );
    // B ran the approved add once and was told of the rejection.
    assert_eq!(b.resource_names().await, ["p-b"]);
    let (_, on_b) = b.get("/approvals").await;
    assert_eq!(on_b["approvals"], json!([]), "B still waits: {on_b}");
}

#[tokio::test]
async fn a_loop_in_a_branch_keeps_its_count_whatever_order_the_approvals_come_in() {
    let agent = Agent::start(&testdata("e2e-parallel-loop.yaml"), AgentOptions::default()).await;
    let (status, answer) = agent.say_new("ensure we have at least 10 resources").await;
    assert_eq!(status, 201, "{answer}");
    let mut conversation = answer["conversation"].clone();
    let mut rounds = 0;
    // The last listed (the sibling's) first, each time.
    while let Some((_, uuid)) = pending(&conversation).pop() {
        let (status, done) = agent.decide(&uuid, json!({"approved": true})).await;
        assert_eq!(status, 200, "{done}");
        conversation = done["conversation"].clone();
        rounds += 1;
        assert!(rounds <= 10, "approvals never end: {conversation}");
    }
    let adds = conversation["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["node"] == "filler" && m["tool_call"]["name"] == "resources_add")
        .count();
    assert_eq!(adds, 3, "max_iterations is 3");
    assert_eq!(conversation["status"], "active");
    let added = conversation["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["tool_result"]["name"] == "resources_add" && m["is_error"] != true)
        .count();
    assert_eq!(added, 4, "3 by the loop, 1 by adder-b: {conversation}");
}

/// The two-branch run on a config of its own: approves adder-b, restarts
/// with `change` applied to the config, and decides adder-a with `last`.
async fn decided_across_a_config_change(
    extra: &str,
    change: impl Fn(String) -> String,
    last: Value,
) -> (Agent, Value, tempfile::TempDir) {
    let (dir, config) = asg_tests::config_with(CONFIG, extra);
    let options = AgentOptions {
        data_dir: Some(dir.path().join("data")),
        ..Default::default()
    };
    let mut agent = Agent::start(&config, options.clone()).await;
    let (_, conversation) = start_run(&agent).await;
    let (a, b) = (
        uuid_of(&conversation, "adder-a"),
        uuid_of(&conversation, "adder-b"),
    );
    let (status, _) = agent.decide(&b, json!({"approved": true})).await;
    assert_eq!(status, 200);
    agent.stop();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, change(text)).unwrap();
    let agent = Agent::start(&config, options).await;
    let (status, done) = agent.decide(&a, last).await;
    assert_eq!(status, 200, "{done}");
    (agent, done, dir)
}

fn ran(conversation: &Value, node: &str) -> bool {
    conversation["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["node"] == node)
}

/// Approves adder-b, changes the report prompt across a restart, decides
/// adder-a with `last`; checks the run ended with `said` and resumed
/// nothing (only adder-b's add ran).
async fn ended_by_a_config_change(last: Value, said: &str) -> Value {
    let (agent, done, _dir) = decided_across_a_config_change(
        "",
        |text| text.replace("prompt: \"Report.", "prompt: \"Report v2."),
        last,
    )
    .await;
    let response = done["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with(&format!("Pipeline cancelled: {said}")),
        "{response}"
    );
    assert!(
        !ran(&done["conversation"], "tally"),
        "the tally ran on the new config"
    );
    assert_eq!(done["conversation"]["status"], "active");
    assert!(pending(&done["conversation"]).is_empty());
    assert_eq!(agent.resource_names().await, ["from-adder-b"]);
    done
}

#[tokio::test]
async fn a_config_change_refuses_the_rest_of_the_run_and_resumes_nothing() {
    ended_by_a_config_change(
        json!({"approved": true}),
        "resources_add was refused because the agent's configuration changed",
    )
    .await;
}

#[tokio::test]
async fn a_rejection_after_a_config_change_ends_the_run_instead_of_resuming_it_on_the_new_config() {
    let done = ended_by_a_config_change(
        json!({"approved": false, "reason": "not now"}),
        "resources_add was rejected and the agent's configuration changed",
    )
    .await;
    // The rejection is recorded as the person's, not as the config's.
    let decisions = done["conversation"]["decisions"].as_array().unwrap();
    assert!(
        decisions
            .iter()
            .any(|d| d["approved"] == false && d["decided_by"]["subject"] != "system:config"),
        "{decisions:?}"
    );
}

#[tokio::test]
async fn a_step_that_moved_in_the_tree_is_never_resumed_at_another_node() {
    let swap = |text: String| {
        let a = "        - { type: llm, name: adder-a, prompt: \"Add resource a.\", tools: [resources_add], output_key: a }\n";
        let b = "        - { type: llm, name: adder-b, prompt: \"Add resource b.\", tools: [resources_add], output_key: b }\n";
        assert!(text.contains(a) && text.contains(b));
        text.replace(a, "@A@").replace(b, a).replace("@A@", b)
    };
    let (agent, done, _dir) = decided_across_a_config_change(
        "approval:\n  on_config_change: resume\n",
        swap,
        json!({"approved": true}),
    )
    .await;
    let response = done["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with(
            "Pipeline cancelled: the paused step \"adder-a\" is no longer at its place"
        ),
        "{response}"
    );
    assert!(!ran(&done["conversation"], "tally"));
    // adder-a's approved call ran once; b's result was not misreported.
    let mut names = agent.resource_names().await;
    names.sort();
    assert_eq!(names, ["from-adder-a", "from-adder-b"]);
}

#[tokio::test]
async fn a_failed_branch_withdraws_the_sub_agent_approval_its_sibling_stopped_on() {
    use asg_tests::fake_http::{FakeHttp, Reply};
    let b = Agent::start(&testdata("e2e-chain-b.yaml"), AgentOptions::default()).await;
    let broken = FakeHttp::start(vec![Reply::status(500, "down"); 3]).await;
    let broken_url = format!("{}/rpc", broken.url);
    let options = AgentOptions::with_env(&[("AGENT_B_URL", &b.url), ("BROKEN_URL", &broken_url)]);
    let a = Agent::start(&testdata("e2e-parallel-proxy-failing.yaml"), options).await;
    let (status, answer) = a.say_new("go").await;
    assert_eq!(status, 502, "{answer}");
    assert_eq!(answer["error"]["code"], "sub_agent_error", "{answer}");
    // The stopped sibling's call is closed in the conversation...
    let closed = answer["error"]["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| {
            m["content"]
                .as_str()
                .unwrap_or("")
                .starts_with("Not run: another branch")
        });
    assert!(closed, "{answer}");
    // ...nothing waits on A, and B was told: no approval left there,
    // nothing added.
    let (_, on_a) = a.get("/approvals").await;
    assert_eq!(on_a["approvals"], json!([]), "{on_a}");
    let (_, on_b) = b.get("/approvals").await;
    assert_eq!(on_b["approvals"], json!([]), "B still waits: {on_b}");
    assert!(b.resource_names().await.is_empty());
}

#[tokio::test]
async fn the_last_proxy_approval_settled_on_the_sub_agent_lets_the_run_finish_after_a_restart() {
    let chain = ProxyChain::start().await;
    let (b, mut a) = (&chain.b, chain.a().await);
    let (_, answer) = a.say_new("add both over there").await;
    let id = conversation_id(&answer);
    let conversation = &answer["conversation"];
    let on_a = uuid_of(conversation, "delegate-b");
    let (status, _) = a.decide(&on_a, json!({"approved": true})).await;
    assert_eq!(status, 200);
    a.stop();

    // While A is down, the other approval is decided on B itself.
    let (_, on_b) = b.get("/approvals").await;
    let [left] = on_b["approvals"].as_array().unwrap().as_slice() else {
        panic!("{on_b}");
    };
    let (status, _) = b
        .decide(left["uuid"].as_str().unwrap(), json!({"approved": true}))
        .await;
    assert_eq!(status, 200);

    let a = chain.a().await;
    let mut shown = a.conversation(&id).await;
    for _ in 0..100 {
        // Active, and the resumed run's turn over (its first save is
        // already active, before the run's answer).
        if shown["status"] == "active" && shown["turn_in_progress"] != true {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        shown = a.conversation(&id).await;
    }
    assert_eq!(shown["status"], "active", "A never caught up: {shown}");
    assert!(pending(&shown).is_empty());
    let answer = shown["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        answer.contains("[delegate-a]") && answer.contains("p-a"),
        "{answer}"
    );
    assert!(
        answer.contains("[delegate-b]") && answer.contains("p-b"),
        "{answer}"
    );
    let mut names = b.resource_names().await;
    names.sort();
    assert_eq!(names, ["p-a", "p-b"]);
}

#[tokio::test]
async fn a_rejected_delegation_leaves_no_approval_of_its_task_waiting_on_the_sub_agent() {
    // B's run stops twice at once (two parallel branches); A shows the
    // first as its proxy approval. A rejection there ends the delegated
    // task on B: B's other approval is refused too, never left for
    // someone to approve on B after A gave up on the run.
    let b = Agent::start(&testdata(CONFIG), AgentOptions::default()).await;
    let a = Agent::start(
        &testdata("agent-delegator.yaml"),
        AgentOptions::with_env(&[("DOWNSTREAM_URL", &b.url)]),
    )
    .await;
    let (status, answer) = a.say_new("add both").await;
    assert_eq!(status, 201, "{answer}");
    let (_, on_b) = b.get("/approvals").await;
    assert_eq!(on_b["approvals"].as_array().unwrap().len(), 2, "{on_b}");
    let proxy = answer["result"]["approval"]["uuid"].as_str().unwrap();
    let (status, done) = a
        .decide(proxy, json!({"approved": false, "reason": "no"}))
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["conversation"]["status"], "active", "{done}");
    let response = done["result"]["response"].as_str().unwrap();
    assert!(response.contains("Rejected by the user"), "{response}");
    let (_, on_b) = b.get("/approvals").await;
    assert_eq!(on_b["approvals"], json!([]), "B still waits: {on_b}");
    // B's run went on with both branches refused, and nothing ran there.
    let (_, listed) = b.get("/conversations").await;
    let delegated = listed["conversations"].as_array().unwrap();
    assert_eq!(delegated.len(), 1, "{listed}");
    let on_b = b.conversation(delegated[0]["id"].as_str().unwrap()).await;
    assert_eq!(on_b["status"], "active", "{on_b}");
    let refused = on_b["decisions"].as_array().unwrap();
    assert_eq!(refused.len(), 2, "{on_b}");
    assert!(refused.iter().all(|d| d["approved"] == false), "{on_b}");
    let ran_add = on_b["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["tool_result"]["name"] == "resources_add" && m["is_error"] != true);
    assert!(!ran_add, "an add ran on B: {on_b}");
}
