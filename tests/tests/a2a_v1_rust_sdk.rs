//! A2A v1.0 with the official Rust SDK (a2a-rs: `a2a-lf`, `a2a-client-lf`,
//! `a2a-server-lf`; binaries from `tests/interop-rust`, built by
//! `scripts/test.sh` into `target/interop-rust`), both ways:
//! - its client (`a2a-rust-client`) against our agent
//!   (`testdata/agent-resources.yaml`, API keys alice and bob) on JSON-RPC
//!   and HTTP+JSON: card, send, get, an approval asked, nudged, approved
//!   (once, a repeat refused), rejected and named with a wrong uuid, list
//!   pages, cancel, not found, streaming with an approval, subscribe
//!   (refused on the finished listing: UnsupportedOperationError). The
//!   binary prints what it saw as JSON lines; the assertions are here.
//! - the asking sub-agent built on its server (`a2a-rust-asker`, started
//!   by `asg_tests::asking_rust`) honours the contract our client's tests
//!   rely on, checked with raw v1.0 requests on both bindings.
//!
//! Without the binaries the tests are skipped on a developer machine and
//! fail in CI.

use std::process::Stdio;
use std::time::Duration;

use asg_tests::asking_rust::{AskerBinding, RustAskingAgent, sdk_binary};
use asg_tests::{Agent, AgentOptions};
use serde_json::{Value, json};

const ALICE: &str = "alice-key-0123456789abcdef";
const BOB: &str = "bob-key-0123456789abcdef01";

async fn agent() -> (tempfile::TempDir, Agent) {
    let keys = "auth:\n  api_keys:\n    - { name: alice, key_env: ALICE_KEY, roles: [approver] }\n    \
                - { name: bob, key_env: BOB_KEY }\n";
    let (dir, config) = asg_tests::config_with("agent-resources.yaml", keys);
    let env = [("ALICE_KEY", ALICE), ("BOB_KEY", BOB)];
    let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
    (dir, agent)
}

/// The client's output lines, looked up by binding and step.
struct Report {
    lines: Vec<Value>,
    text: String,
}

impl Report {
    fn parse(text: String) -> Report {
        let lines = text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        Report { lines, text }
    }

    /// The line of `step` on `binding` ("" for the card and done lines).
    fn step(&self, binding: &str, step: &str) -> &Value {
        self.lines
            .iter()
            .find(|l| l["step"] == step && l["binding"].as_str().unwrap_or("") == binding)
            .unwrap_or_else(|| panic!("no {binding} {step} line in:\n{}", self.text))
    }

    /// The state of a step's task, asserting it answered without error.
    fn state(&self, binding: &str, step: &str) -> &str {
        let line = self.step(binding, step);
        assert!(line["error"].is_null(), "{binding} {step}: {line}");
        line["state"].as_str().unwrap_or("")
    }

    /// The error code of a step that must have failed.
    fn error(&self, binding: &str, step: &str) -> i64 {
        let line = self.step(binding, step);
        line["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("{binding} {step} did not fail: {line}"))
    }
}

/// Runs `a2a-rust-client` against the agent as alice.
async fn run_client(agent: &Agent) -> Option<Report> {
    let binary = sdk_binary("a2a-rust-client")?;
    let run = tokio::process::Command::new(binary)
        .args([agent.url.as_str(), ALICE])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("a2a-rust-client did not finish within 180 s")
        .expect("cannot run a2a-rust-client");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "a2a-rust-client failed ({}):\n{stdout}\n{}\nagent log:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        agent.log()
    );
    Some(Report::parse(stdout))
}

/// Card and the interface the SDK's factory picked for each binding.
fn check_card(report: &Report, base: &str) {
    let card = report.step("", "card");
    let interfaces = card["interfaces"].as_array().expect("interfaces");
    for expected in [
        json!(["JSONRPC", "1.0", format!("{base}/a2a")]),
        json!(["HTTP+JSON", "1.0", format!("{base}/a2a/v1")]),
    ] {
        assert!(interfaces.contains(&expected), "{expected} not in {card}");
    }
    assert_eq!(card["streaming"], true, "{card}");
    for (binding, url) in [("JSONRPC", "/a2a"), ("HTTP+JSON", "/a2a/v1")] {
        let connect = report.step(binding, "connect");
        assert_eq!(
            (&connect["protocolBinding"], &connect["protocolVersion"]),
            (&json!(binding), &json!("1.0")),
            "{connect}"
        );
        assert_eq!(connect["url"], format!("{base}{url}"), "{connect}");
    }
}

/// Send, get, and the approval asked, nudged, approved once, rejected,
/// and named with a wrong uuid.
fn check_approvals(r: &Report, b: &str, name: &str) {
    assert_eq!(r.state(b, "send"), "TASK_STATE_COMPLETED");
    assert!(
        r.step(b, "send")["artifact"]
            .as_str()
            .unwrap()
            .contains("resources")
    );
    let got = r.step(b, "get");
    assert_eq!(r.state(b, "get"), "TASK_STATE_COMPLETED");
    assert_eq!(got["task"], r.step(b, "send")["task"], "{got}");
    assert_eq!(
        got["historyRoles"],
        json!(["ROLE_AGENT"]),
        "historyLength 1: {got}"
    );

    let asked = r.step(b, "ask");
    assert_eq!(r.state(b, "ask"), "TASK_STATE_INPUT_REQUIRED");
    let data = &asked["statusData"][0];
    assert!(data["approval_uuid"].is_string(), "{asked}");
    assert_eq!(data["tool_name"], "resources_add", "{asked}");
    assert_eq!(data["tool_args"]["name"], name, "{asked}");
    assert!(data["description"].is_string(), "{asked}");
    assert_eq!(r.state(b, "nudge"), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(r.step(b, "nudge")["task"], asked["task"]);
    let approved = r.step(b, "approve");
    assert_eq!(r.state(b, "approve"), "TASK_STATE_COMPLETED");
    assert_eq!(
        (&approved["task"], &approved["contextId"]),
        (&asked["task"], &asked["contextId"])
    );
    let answer = approved["artifact"].as_str().unwrap();
    assert!(answer.contains("Created the resource"), "{approved}");
    assert_eq!(r.error(b, "approve_again"), -32602, "a decided approval");
    assert_eq!(r.state(b, "get_approved"), "TASK_STATE_COMPLETED");

    assert_eq!(r.state(b, "ask_refused"), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(r.state(b, "reject"), "TASK_STATE_COMPLETED");
    let refused = r.step(b, "reject")["artifact"].as_str().unwrap();
    assert!(refused.contains("not run"), "{refused}");
    assert_eq!(r.state(b, "ask_wrong"), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(r.error(b, "wrong_uuid"), -32602, "a uuid of no approval");
    assert_eq!(r.state(b, "get_wrong"), "TASK_STATE_INPUT_REQUIRED");
}

/// List pages, cancel, not found.
fn check_list_and_cancel(r: &Report, b: &str) {
    let first = r.step(b, "list_page1");
    let second = r.step(b, "list_page2");
    let ids = |page: &Value| -> Vec<String> {
        let ids = page["ids"].as_array().unwrap_or_else(|| panic!("{page}"));
        ids.iter()
            .map(|i| i.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(first).len(), 2, "{first}");
    assert!(
        first["nextPageToken"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{first}"
    );
    assert!(first["totalSize"].as_i64().unwrap_or(0) >= 4, "{first}");
    assert_eq!(ids(second).len(), 2, "{second}");
    assert!(
        ids(second).iter().all(|id| !ids(first).contains(id)),
        "pages overlap: {first} {second}"
    );

    assert_eq!(r.state(b, "ask_canceled"), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(r.state(b, "cancel"), "TASK_STATE_CANCELED");
    assert_eq!(r.error(b, "cancel_again"), -32002, "TaskNotCancelable");
    assert_eq!(r.state(b, "get_canceled"), "TASK_STATE_CANCELED");
    assert_eq!(r.error(b, "get_unknown"), -32001, "TaskNotFound");
}

/// Streams: a listing, an approval asked and approved; subscribe.
fn check_streams(r: &Report, b: &str) {
    let stream = r.step(b, "stream");
    assert!(stream["error"].is_null(), "{stream}");
    let kinds = stream["kinds"].as_array().unwrap();
    assert_eq!(kinds.first(), Some(&json!("task")), "{stream}");
    assert_eq!(kinds.last(), Some(&json!("statusUpdate")), "{stream}");
    assert!(kinds.contains(&json!("artifactUpdate")), "{stream}");
    let last_state = |line: &Value| line["states"].as_array().and_then(|s| s.last()).cloned();
    assert_eq!(
        last_state(stream),
        Some(json!("TASK_STATE_COMPLETED")),
        "{stream}"
    );

    let asked = r.step(b, "stream_ask");
    assert!(asked["error"].is_null(), "{asked}");
    assert_eq!(
        last_state(asked),
        Some(json!("TASK_STATE_INPUT_REQUIRED")),
        "{asked}"
    );
    assert!(
        asked["statusData"][0]["approval_uuid"].is_string(),
        "{asked}"
    );
    let approved = r.step(b, "stream_approve");
    assert!(approved["error"].is_null(), "{approved}");
    assert_eq!(
        last_state(approved),
        Some(json!("TASK_STATE_COMPLETED")),
        "{approved}"
    );
    assert_eq!(approved["task"], asked["task"], "{approved}");
    let answer = approved["artifact"].as_str().unwrap();
    assert!(answer.contains("Created the resource"), "{approved}");

    // The listing is finished: a subscription to it is refused with
    // UnsupportedOperationError naming the task and its state.
    let subscribed = r.step(b, "subscribe");
    assert_eq!(r.error(b, "subscribe"), -32004, "{subscribed}");
    let message = subscribed["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(stream["task"].as_str().unwrap()),
        "{subscribed}"
    );
    assert!(message.contains("TASK_STATE_COMPLETED"), "{subscribed}");
    assert!(
        subscribed["kinds"].as_array().is_none_or(Vec::is_empty),
        "{subscribed}"
    );
}

/// Every approved resource exists once, nothing refused, canceled or
/// wrongly named was created.
fn check_executed_once(r: &Report, b: &str, name: &str) {
    assert_eq!(r.state(b, "list_final"), "TASK_STATE_COMPLETED");
    let listed = r.step(b, "list_final")["artifact"].as_str().unwrap();
    for created in [name.to_string(), format!("{name}-streamed")] {
        let count = listed.matches(&format!("{created}\"")).count();
        assert_eq!(count, 1, "{created} created {count} times: {listed}");
    }
    for kept in ["refused", "canceled", "wrong"] {
        assert!(
            !listed.contains(&format!("{name}-{kept}")),
            "{kept}: {listed}"
        );
    }
}

#[tokio::test]
async fn the_official_rust_sdk_client_speaks_v1_to_the_agent() {
    if sdk_binary("a2a-rust-client").is_none() {
        return;
    }
    let (_dir, agent) = agent().await;
    let Some(report) = run_client(&agent).await else {
        return;
    };
    report.step("", "done");
    assert!(
        !report.lines.iter().any(|l| l["step"] == "aborted"),
        "a step the next ones need failed:\n{}",
        report.text
    );
    check_card(&report, &agent.url);
    for (binding, name) in [("JSONRPC", "rsrpc"), ("HTTP+JSON", "rsrest")] {
        check_approvals(&report, binding, name);
        check_list_and_cancel(&report, binding);
        check_streams(&report, binding);
        check_executed_once(&report, binding, name);
    }
    // Bob sees none of what the SDK made as alice.
    let bobs = asg_tests::a2a::rpc_with(
        &agent,
        &[("x-api-key", BOB), ("a2a-version", "1.0")],
        "ListTasks",
        json!({}),
    )
    .await;
    assert_eq!(bobs["result"]["tasks"], json!([]), "{bobs}");
}

/// One raw v1.0 JSON-RPC call to the asker at `{url}/jsonrpc`, with
/// `A2A-Version: 1.0` when `version` and a bearer token when `token`;
/// the HTTP status and the body.
async fn asker_post(
    asker: &RustAskingAgent,
    token: Option<&str>,
    version: bool,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new().post(format!("{}/jsonrpc", asker.url));
    if version {
        request = request.header("a2a-version", "1.0");
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.json(&body).send().await.expect("asker request");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A v1.0 JSON-RPC call with a bearer token: the whole JSON-RPC response.
async fn asker_rpc(asker: &RustAskingAgent, token: &str, method: &str, params: Value) -> Value {
    let (status, body) = asker_post(asker, Some(token), true, method, params).await;
    assert_eq!(status, 200, "{method}: {body}");
    body
}

/// JSON-RPC `SendMessage` of `parts` (continuing `task`): the result.
async fn asker_rpc_send(
    asker: &RustAskingAgent,
    token: &str,
    parts: Value,
    task: Option<&str>,
) -> Value {
    let params = json!({"message": user_message(parts, task)});
    asker_rpc(asker, token, "SendMessage", params).await
}

/// One raw HTTP+JSON `message:send` to the asker (no credentials): the task.
async fn asker_rest_send(asker: &RustAskingAgent, parts: Value, task: Option<&str>) -> Value {
    let response = reqwest::Client::new()
        .post(format!("{}/rest/message:send", asker.url))
        .json(&json!({"message": user_message(parts, task)}))
        .send()
        .await
        .expect("asker request failed");
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("asker answered no JSON");
    answer["task"].clone()
}

/// GET on the asker: the JSON answer.
async fn asker_get(asker: &RustAskingAgent, path: &str) -> Value {
    let response = reqwest::get(format!("{}{path}", asker.url))
        .await
        .expect("GET");
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.expect("JSON")
}

/// The card's interface for `binding` at `{url}{path}`, protocol 1.0.
fn interface(asker: &RustAskingAgent, path: &str, binding: &str) -> Value {
    json!({"url": format!("{}{path}", asker.url), "protocolBinding": binding, "protocolVersion": "1.0"})
}

fn user_message(parts: Value, task: Option<&str>) -> Value {
    let mut message = json!({"messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER", "parts": parts});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    message
}

fn decision(approved: bool, uuid: &str) -> Value {
    json!([{"data": {"approved": approved, "approval_uuid": uuid}}])
}

/// The question of a waiting task: its text and approval data part.
fn question(task: &Value, path: &str) -> String {
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task}"
    );
    let parts = &task["status"]["message"]["parts"];
    let asked = format!("Approve delete_file for {path}?");
    assert_eq!(parts[0]["text"], asked, "{task}");
    let data = &parts[1]["data"];
    let expected = json!({"tool_name": "delete_file", "tool_args": {"path": path},
        "description": format!("delete {path}")});
    for key in ["tool_name", "tool_args", "description"] {
        assert_eq!(data[key], expected[key], "{key}: {task}");
    }
    let uuid = data["approval_uuid"].as_str().expect("approval_uuid");
    uuid.to_string()
}

/// The answer of a decided task: completed with one artifact text.
fn answered(task: &Value, text: &str) {
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], text, "{task}");
}

#[tokio::test]
async fn the_rust_sdk_asker_honours_the_asking_contract_over_json_rpc() {
    let Some(asker) = RustAskingAgent::try_start(AskerBinding::Both).await else {
        return;
    };
    let card = asker_get(&asker, "/.well-known/agent-card.json").await;
    let both = [
        interface(&asker, "/jsonrpc", "JSONRPC"),
        interface(&asker, "/rest", "HTTP+JSON"),
    ];
    assert_eq!(card["supportedInterfaces"], json!(both), "{card}");
    let sent = asker_rpc_send(&asker, "t1", json!([{"text": "notes.txt"}]), None).await;
    let uuid = question(&sent["result"]["task"], "notes.txt");
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let other = uuid::Uuid::new_v4().to_string();
    let again = asker_rpc_send(&asker, "t1", decision(true, &other), Some(&id)).await;
    assert_eq!(
        question(&again["result"]["task"], "notes.txt"),
        uuid,
        "asked again"
    );
    let got = asker_rpc(&asker, "t1", "GetTask", json!({"id": id})).await;
    question(&got["result"], "notes.txt");
    assert!(asker.executions().is_empty(), "{:?}", asker.log_lines());

    let done = asker_rpc_send(&asker, "t2", decision(true, &uuid), Some(&id)).await;
    answered(&done["result"]["task"], "deleted notes.txt");
    let repeat = asker_rpc_send(&asker, "t2", decision(true, &uuid), Some(&id)).await;
    assert!(
        repeat["error"].is_object(),
        "a completed task decides nothing: {repeat}"
    );
    let got = asker_rpc(&asker, "t2", "GetTask", json!({"id": id})).await;
    answered(&got["result"], "deleted notes.txt");
    assert_eq!(asker.executions(), ["executed delete_file notes.txt"]);
    let auth = asker.auth_values();
    let count = |token: &str| auth.iter().filter(|a| *a == token).count();
    assert_eq!(auth[0], "-", "the card came without credentials: {auth:?}");
    assert_eq!((count("Bearer t1"), count("Bearer t2")), (3, 3), "{auth:?}");

    // A waiting task canceled (as our agent forwards a cancel) runs nothing.
    let waiting = asker_rpc_send(&asker, "t3", json!([{"text": "b.txt"}]), None).await;
    let id = waiting["result"]["task"]["id"].clone();
    let canceled = asker_rpc(&asker, "t3", "CancelTask", json!({"id": id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    assert_eq!(asker.executions(), ["executed delete_file notes.txt"]);

    // Without `A2A-Version` the SDK's JSON-RPC door speaks 0.3, which it
    // does not serve: a v1.0 client must send the header.
    let (_, bare) = asker_post(&asker, None, false, "GetTask", json!({"id": id})).await;
    assert_eq!(bare["error"]["code"], -32009, "{bare}");
}

#[tokio::test]
async fn the_rust_sdk_asker_honours_the_asking_contract_over_http_json() {
    let Some(asker) = RustAskingAgent::try_start(AskerBinding::HttpJson).await else {
        return;
    };
    let card = asker_get(&asker, "/.well-known/agent-card.json").await;
    let rest = [interface(&asker, "/rest", "HTTP+JSON")];
    assert_eq!(card["supportedInterfaces"], json!(rest), "{card}");

    let task = asker_rest_send(&asker, json!([{"text": "a.txt"}]), None).await;
    let uuid = question(&task, "a.txt");
    let id = task["id"].as_str().unwrap().to_string();
    let missing = json!([{"data": {"approved": true}}]);
    let again = asker_rest_send(&asker, missing, Some(&id)).await;
    assert_eq!(question(&again, "a.txt"), uuid, "no uuid: asked again");
    let done = asker_rest_send(&asker, decision(false, &uuid), Some(&id)).await;
    answered(&done, "kept a.txt");
    answered(
        &asker_get(&asker, &format!("/rest/tasks/{id}")).await,
        "kept a.txt",
    );
    assert_eq!(asker.executions(), ["rejected delete_file a.txt"]);
    let auth = asker.auth_values();
    assert!(auth.len() >= 5 && auth.iter().all(|a| a == "-"), "{auth:?}");
    let (status, _) = asker_post(&asker, None, true, "GetTask", json!({"id": id})).await;
    assert_eq!(
        status, 404,
        "JSON-RPC is not served with --binding http_json"
    );
}
