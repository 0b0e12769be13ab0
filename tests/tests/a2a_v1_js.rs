//! The official JavaScript SDK (`@a2a-js/sdk` 1.3.x, `tests/interop-js`)
//! in its native v1.0 mode against the real agent
//! (`testdata/agent-resources.yaml`, API keys for alice, an approver, and
//! bob), once per binding: `tests/interop-js/a2a_v1_client.mjs` runs as
//! alice through the SDK's JsonRpcTransport or RestTransport and prints
//! one JSON line per step (card, send, get, an approval and its
//! continuation, a rejection, list pages, cancel and its errors, push
//! config create/get/list/delete, streaming, an approval over a stream,
//! subscribe, an unsupported `A2A-Version`, and on JSON-RPC the SDK's v0.3
//! compat transport). This test asserts on those lines, then reads the
//! resources through the agent (the approved one exists once, the
//! rejected and canceled ones not) and tries the tasks as bob.
//!
//! Without the SDK (`npm ci` in tests/interop-js, done by scripts/test.sh)
//! the test is skipped on a developer machine and fails in CI.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use asg_tests::a2a::{js_dir, js_sdk_version, sdk_present};
use asg_tests::fake_http::{FakeHttp, Reply};
use asg_tests::{Agent, AgentOptions};
use serde_json::{Value, json};

const ALICE: &str = "alice-key-0123456789abcdef";
const BOB: &str = "bob-key-0123456789abcdef01";

async fn agent() -> (tempfile::TempDir, Agent) {
    let keys = "a2a_push: { allow_private_networks: true }\nauth:\n  api_keys:\n    - { name: alice, key_env: ALICE_KEY, roles: [approver] }\n    \
                - { name: bob, key_env: BOB_KEY }\n";
    let (dir, config) = asg_tests::config_with("agent-resources.yaml", keys);
    let env = [("ALICE_KEY", ALICE), ("BOB_KEY", BOB)];
    let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
    (dir, agent)
}

/// What the script reported: each step's line by its name.
struct Report {
    steps: HashMap<String, Value>,
    text: String,
}

impl Report {
    fn step(&self, name: &str) -> &Value {
        self.steps
            .get(name)
            .unwrap_or_else(|| panic!("no {name:?} step in the report:\n{}", self.text))
    }

    /// `step.field` as a string ("" when absent).
    fn str(&self, name: &str, field: &str) -> &str {
        self.step(name)[field].as_str().unwrap_or_default()
    }
}

/// Runs the client script as alice on `binding`; panics (with its output
/// and the agent's log) unless it finished every step.
async fn run_script(agent: &Agent, binding: &str, hook: &str) -> Report {
    let script = js_dir().join("a2a_v1_client.mjs");
    let run = tokio::process::Command::new("node")
        .arg(&script)
        .args([agent.url.as_str(), ALICE, hook, binding])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("the JS client script did not finish within 180 s")
        .expect("cannot run node");
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let steps: HashMap<String, Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|v| Some((v["step"].as_str()?.to_string(), v)))
        .collect();
    assert!(
        output.status.success() && steps.contains_key("done"),
        "the JS client script failed ({}):\n{text}\n{stderr}\nagent log:\n{}",
        output.status,
        agent.log()
    );
    Report { steps, text }
}

/// The card as the SDK resolved it, and the transport it chose.
fn check_card_and_client(report: &Report, base: &str, binding: &str) {
    let card = report.step("card");
    let mut interfaces: Vec<Value> = card["interfaces"].as_array().cloned().unwrap_or_default();
    interfaces.sort_by_key(|i| i.to_string());
    let mut expected = vec![
        json!(["HTTP+JSON", "1.0", format!("{base}/a2a/v1")]),
        json!(["JSONRPC", "0.3.0", format!("{base}/a2a")]),
        json!(["JSONRPC", "1.0", format!("{base}/a2a")]),
    ];
    expected.sort_by_key(|i| i.to_string());
    assert_eq!(interfaces, expected, "{card}");
    assert_eq!(card["streaming"], true, "{card}");
    assert_eq!(card["pushNotifications"], true, "{card}");
    let (transport, endpoint) = match binding {
        "jsonrpc" => ("JsonRpcTransport", format!("{base}/a2a")),
        _ => ("RestTransport", format!("{base}/a2a/v1")),
    };
    let client = report.step("client");
    assert_eq!(
        client,
        &json!({"step": "client", "transport": transport, "endpoint": endpoint,
            "protocolVersion": "1.0"})
    );
}

/// A plain send and GetTask of its task.
fn check_send_and_get(report: &Report) {
    let send = report.step("send");
    assert_eq!(send["state"], "TASK_STATE_COMPLETED", "{send}");
    assert!(
        report.str("send", "artifact").contains("resources"),
        "{send}"
    );
    assert_eq!(
        (&send["versionSent"], &send["versionAnswered"]),
        (&json!("1.0"), &json!("1.0"))
    );
    let get = report.step("get");
    assert_eq!(
        (&get["id"], &get["state"]),
        (&send["id"], &send["state"]),
        "{get}"
    );
    assert_eq!(
        get["history"],
        json!(["ROLE_AGENT"]),
        "historyLength 1: {get}"
    );
}

/// The approval asked, chatter while waiting, approve, reject.
fn check_approvals(report: &Report, name: &str) {
    let ask = report.step("ask");
    assert_eq!(ask["state"], "TASK_STATE_INPUT_REQUIRED", "{ask}");
    let approval = &ask["statusData"][0];
    assert_eq!(approval["tool_name"], "resources_add", "{ask}");
    assert_eq!(
        approval["tool_args"],
        json!({"name": name, "value": 7}),
        "{ask}"
    );
    let uuid = approval["approval_uuid"].as_str().unwrap_or_default();
    assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{ask}");
    assert!(
        approval["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty()),
        "{ask}"
    );
    let chatter = report.step("chatter");
    assert_eq!(
        (&chatter["id"], &chatter["state"]),
        (&ask["id"], &ask["state"]),
        "{chatter}"
    );
    assert_eq!(chatter["statusData"][0]["approval_uuid"], uuid, "{chatter}");
    let approve = report.step("approve");
    assert_eq!(approve["state"], "TASK_STATE_COMPLETED", "{approve}");
    assert_eq!(
        (&approve["id"], &approve["contextId"]),
        (&ask["id"], &ask["contextId"])
    );
    assert!(
        report
            .str("approve", "artifact")
            .contains("Created the resource"),
        "{approve}"
    );
    let reject = report.step("reject");
    assert_eq!(reject["asked"], "TASK_STATE_INPUT_REQUIRED", "{reject}");
    assert_eq!(reject["state"], "TASK_STATE_COMPLETED", "{reject}");
    assert!(
        report.str("reject", "artifact").contains("not run"),
        "{reject}"
    );
    assert_eq!(
        report.step("resources"),
        &json!({"step": "resources", "created": 1, "refused": 0}),
        "the approved call ran once, the rejected one never"
    );
}

/// ListTasks pages, cancel, errors, push configs.
fn check_list_cancel_push(report: &Report, hook: &str) {
    let list = report.step("list");
    let expected = json!({"step": "list", "first": 2, "second": 2, "nextPageToken": true,
        "totalSize": 4, "distinct": 4, "foreign": []});
    assert_eq!(list, &expected, "alice's four tasks in two pages");
    let cancel = report.step("cancel");
    assert_eq!(cancel["asked"], "TASK_STATE_INPUT_REQUIRED", "{cancel}");
    assert_eq!(cancel["state"], "TASK_STATE_CANCELED", "{cancel}");
    assert_eq!(cancel["again"], "TaskNotCancelableError", "{cancel}");
    assert_eq!(cancel["unknown"], "TaskNotFoundError", "{cancel}");
    let push = report.step("push");
    let config =
        json!({"id": "js-hook", "taskId": push["expectedTask"], "url": hook, "token": "tok"});
    assert_eq!(push["created"], config, "{push}");
    assert_eq!(push["got"], config, "{push}");
    assert_eq!(push["listed"], json!(["js-hook"]), "{push}");
    assert_eq!(push["afterDelete"], json!([]), "{push}");
    // A config that is not there is TaskNotFoundError naming it, as both
    // SDKs' own servers answer.
    let deleted = report.step("push_deleted");
    for call in ["get", "delete"] {
        assert_eq!(deleted[call]["error"], "TaskNotFoundError", "{deleted}");
        assert_eq!(deleted[call]["typed"], "TaskNotFoundError", "{deleted}");
        let message = deleted[call]["message"].as_str().unwrap();
        assert!(message.contains("js-hook"), "{deleted}");
    }
}

/// Streams: a plain turn, an approval asked and decided over streams,
/// subscribing to the waiting task.
fn check_streams(report: &Report) {
    let stream = report.step("stream");
    let kinds = stream["kinds"].as_array().unwrap();
    assert_eq!(kinds.first(), Some(&json!("task")), "{stream}");
    assert!(kinds.contains(&json!("artifactUpdate")), "{stream}");
    assert_eq!(kinds.last(), Some(&json!("statusUpdate")), "{stream}");
    assert_eq!(
        stream["states"].as_array().unwrap().last(),
        Some(&json!("TASK_STATE_COMPLETED"))
    );

    let asked = report.step("stream_ask");
    assert_eq!(asked["kinds"][0], "task", "{asked}");
    let states = asked["states"].as_array().unwrap();
    assert_eq!(
        states.last(),
        Some(&json!("TASK_STATE_INPUT_REQUIRED")),
        "{asked}"
    );
    assert_eq!(
        asked["last"]["datas"][0]["tool_name"], "resources_add",
        "{asked}"
    );
    let waiting = report.step("subscribe_waiting");
    assert_eq!(
        waiting["kinds"],
        json!(["task", "statusUpdate"]),
        "{waiting}"
    );
    assert_eq!(
        waiting["task"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{waiting}"
    );
    assert_eq!(waiting["task"]["id"], asked["task"]["id"], "{waiting}");
    assert_eq!(
        waiting["states"],
        json!(["TASK_STATE_INPUT_REQUIRED"]),
        "{waiting}"
    );
}

/// The approval decided over a stream, and a subscription to a finished
/// task.
fn check_stream_approval(report: &Report) {
    let approved = report.step("stream_approve");
    let states = approved["states"].as_array().unwrap();
    assert_eq!(
        states.last(),
        Some(&json!("TASK_STATE_COMPLETED")),
        "{approved}"
    );
    assert!(
        approved["kinds"]
            .as_array()
            .unwrap()
            .contains(&json!("artifactUpdate"))
    );
    assert_eq!(
        approved["final"]["state"], "TASK_STATE_COMPLETED",
        "{approved}"
    );
    assert!(
        approved["final"]["artifact"]
            .as_str()
            .unwrap()
            .contains("Created the resource")
    );
    // A subscription to a task in a terminal state is refused with
    // UnsupportedOperationError naming the task and its state (the v1.0
    // specification; both SDKs' servers answer it). Over JSON-RPC the
    // error is the stream's one SSE event, which the SDK throws as a plain
    // Error whose cause is the typed one; over HTTP+JSON it is the 400.
    let done = report.step("subscribe_done");
    assert_eq!(done["typed"], "UnsupportedOperationError", "{done}");
    let message = done["message"].as_str().unwrap();
    let task = done["taskId"].as_str().unwrap();
    assert!(message.contains(task), "{done}");
    assert!(message.contains("TASK_STATE_COMPLETED"), "{done}");
}

/// The JS SDK on one binding against a fresh agent.
async fn the_js_sdk_speaks_v1_over(binding: &str) {
    if !sdk_present(&format!("a2a_v1_js ({binding})"), js_sdk_version()) {
        return;
    }
    let (_dir, agent) = agent().await;
    let hook_server = FakeHttp::start(vec![Reply::status(200, "{}")]).await;
    let hook = format!("{}/js-hook", hook_server.url);
    let report = run_script(&agent, binding, &hook).await;
    let name = format!("js-{}", binding.replace('_', "-"));
    check_card_and_client(&report, &agent.url, binding);
    check_send_and_get(&report);
    check_approvals(&report, &name);
    check_list_cancel_push(&report, &hook);
    check_streams(&report);
    check_stream_approval(&report);
    let version = report.step("version");
    assert_eq!(version["sent"], "9.9", "{version}");
    assert_eq!(version["error"], "VersionNotSupportedError", "{version}");
    if binding == "jsonrpc" {
        let v03 = report.step("v03");
        assert_eq!(v03["transport"], "LegacyJsonRpcTransport", "{v03}");
        assert_eq!(v03["state"], "TASK_STATE_COMPLETED", "{v03}");
    }

    // What exists, read through the agent: each approval ran exactly once.
    let names = agent.list_resources_with(&[("x-api-key", ALICE)]).await;
    let count = |n: &str| names.iter().filter(|r| r["name"] == n).count();
    assert_eq!(count(&name), 1, "{names:?}");
    assert_eq!(count(&format!("{name}-streamed")), 1, "{names:?}");
    assert_eq!(count(&format!("{name}-refused")), 0, "{names:?}");
    assert_eq!(count(&format!("{name}-canceled")), 0, "{names:?}");
    check_bob_sees_nothing(&agent, report.step("tasks")).await;
}

/// Bob finds none of the tasks the SDK made, on either binding.
async fn check_bob_sees_nothing(agent: &Agent, tasks: &Value) {
    let ids: Vec<&str> = tasks["ids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(ids.len() > 8, "{tasks}");
    let http = reqwest::Client::new();
    for id in ids.iter().step_by(3) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}});
        let request = http
            .post(format!("{}/a2a", agent.url))
            .header("x-api-key", BOB);
        let answer: Value = request
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["error"]["code"], -32001, "{answer}");
        let request = http.get(format!("{}/a2a/v1/tasks/{id}", agent.url));
        let status = request
            .header("x-api-key", BOB)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 404);
    }
    let request = http.get(format!("{}/a2a/v1/tasks", agent.url));
    let listed: Value = request
        .header("x-api-key", BOB)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["tasks"], json!([]), "{listed}");
}

#[tokio::test]
async fn the_official_js_sdk_speaks_v1_over_json_rpc() {
    the_js_sdk_speaks_v1_over("jsonrpc").await;
}

#[tokio::test]
async fn the_official_js_sdk_speaks_v1_over_http_json() {
    the_js_sdk_speaks_v1_over("http_json").await;
}
