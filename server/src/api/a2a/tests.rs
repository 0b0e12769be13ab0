//! Router tests of the A2A server with `oneshot` and the offline scripted
//! model: the card, every JSON-RPC error code, send / get / cancel,
//! continuations of a conversation stored as waiting for approval, the
//! REST view agreeing, historyLength and the SSE streams. The approval
//! scenarios against the real `mcp-resources` are in
//! `server/tests/a2a_server.rs`.

use std::path::Path;

use asg_shared::{
    Conversation, ConversationStatus, Message, PendingApproval, Role, ToolCall, fixtures,
};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use chrono::Utc;
use serde_json::{Value, json};
use tower::ServiceExt;
use uuid::Uuid;

pub(super) const RULES: &str = r#"
rules:
  - when: { user: "(?i)fail" }
    fail: "scripted failure"
  - when: { after_tool: "*", result: "^Rejected" }
    reply: "not run: {result}"
  - when: { after_tool: "*" }
    reply: "{tool} returned: {result}"
  - reply: "echo: {user}"
"#;

pub(super) async fn app(dir: &std::path::Path) -> Router {
    crate::test_support::scripted_app(dir, RULES).await
}

/// Stores a conversation stopped before `resources_add` (start the app
/// after this); returns (conversation id, approval uuid).
pub(super) fn waiting(dir: &Path) -> (Uuid, Uuid) {
    let (id, uuid, now) = (Uuid::new_v4(), Uuid::new_v4(), Utc::now());
    let message = |role, content: &str| Message {
        node: Some("root".into()),
        created_at: now,
        ..fixtures::message(role, content)
    };
    let args = json!({"name": "web-1", "value": 42})
        .as_object()
        .cloned()
        .unwrap();
    let mut call = message(Role::Assistant, "");
    call.tool_call = Some(Box::new(ToolCall {
        id: "call-1".into(),
        name: "resources_add".into(),
        arguments: args.clone(),
        needs_approval: true,
        approval_uuid: Some(uuid),
        provider_signature: None,
    }));
    let conversation = Conversation {
        id,
        session_id: "feed0001".into(),
        status: ConversationStatus::WaitingApproval,
        messages: vec![
            message(Role::System, "You are a test agent.").into(),
            message(Role::User, "add resource web-1 with value 42").into(),
            call.into(),
        ],
        pending_approval: Some(PendingApproval {
            uuid,
            conversation_id: id,
            tool_args: args,
            description: "resources_add with arguments {\"name\":\"web-1\",\"value\":42}".into(),
            created_at: now,
            call_id: "call-1".into(),
            node: Some("root".into()),
            ..fixtures::pending_approval("resources_add")
        }),
        created_at: now,
        updated_at: now,
        ..fixtures::conversation()
    };
    let dir = dir.join("conversations");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{id}.json"));
    std::fs::write(file, serde_json::to_vec(&conversation).unwrap()).unwrap();
    (id, uuid)
}

async fn http(app: &Router, method: &str, uri: &str, body: String) -> (StatusCode, String) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .header("x-session-id", "sess-test-1")
        .body(Body::from(body))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// POSTs a raw body to `/a2a`; JSON-RPC answers are always HTTP 200.
async fn raw(app: &Router, body: &str) -> Value {
    let (status, text) = http(app, "POST", "/a2a", body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    serde_json::from_str(&text).unwrap()
}

async fn call(app: &Router, method: &str, params: Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let answer = raw(app, &request.to_string()).await;
    assert_eq!(answer["jsonrpc"], "2.0");
    assert_eq!(answer["id"], 7);
    answer
}

fn message(text: &str, task: Option<&str>) -> Value {
    let mut message = json!({
        "kind": "message", "role": "user", "messageId": Uuid::new_v4().to_string(),
        "parts": [{"kind": "text", "text": text}],
    });
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({ "message": message })
}

async fn send(app: &Router, text: &str, task: Option<&str>) -> Value {
    let answer = call(app, "message/send", message(text, task)).await;
    answer["result"].clone()
}

async fn get(app: &Router, id: &str) -> Value {
    call(app, "tasks/get", json!({ "id": id })).await["result"].clone()
}

fn code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error: {answer}"))
}

/// The `data:` payloads of an SSE body.
async fn stream(app: &Router, method: &str, params: Value) -> Vec<Value> {
    let request = json!({"jsonrpc": "2.0", "id": "s1", "method": method, "params": params});
    let (status, text) = http(app, "POST", "/a2a", request.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str::<Value>(data.trim()).unwrap())
        .inspect(|event| assert_eq!(event["id"], "s1", "{event}"))
        .collect()
}

#[tokio::test]
async fn card_is_served_on_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (status, new) = http(&app, "GET", "/.well-known/agent-card.json", String::new()).await;
    assert_eq!(status, StatusCode::OK);
    let (_, old) = http(&app, "GET", "/.well-known/agent.json", String::new()).await;
    assert_eq!(new, old);
    let card: Value = serde_json::from_str(&new).unwrap();
    assert_eq!(card["name"], "test-agent");
    assert_eq!(card["description"], "A test agent.");
    assert_eq!(card["url"], "http://agent.test/a2a");
    assert_eq!(card["version"], "0.0.1");
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert_eq!(
        card["capabilities"],
        json!({"streaming": true, "pushNotifications": true, "stateTransitionHistory": false})
    );
    assert_eq!(
        card["defaultInputModes"],
        json!(["text/plain", "application/json"])
    );
    // No tools: one general skill describing the agent.
    assert_eq!(card["skills"].as_array().unwrap().len(), 1);
    assert_eq!(card["skills"][0]["description"], "A test agent.");
}

/// Raw bodies: `body | code | text the error message contains`.
const BODY_ERRORS: &str = r#"
{not json | -32700 | not valid JSON
<empty> | -32700 | empty
[] | -32600 | batch
[{"jsonrpc":"2.0","id":1,"method":"tasks/get"}] | -32600 | batch
42 | -32600 | object
{"jsonrpc":"1.0","id":1,"method":"tasks/get"} | -32600 | jsonrpc
{"id":1,"method":"tasks/get"} | -32600 | jsonrpc
{"jsonrpc":"2.0","id":{},"method":"tasks/get"} | -32600 | id
{"jsonrpc":"2.0","id":[1],"method":"tasks/get"} | -32600 | id
{"jsonrpc":"2.0","id":1} | -32600 | method
{"jsonrpc":"2.0","id":1,"method":5} | -32600 | method
{"jsonrpc":"2.0","id":1,"method":"tasks/list"} | -32601 | tasks/list
"#;

/// `method | params | code | text`; MSG is a valid message, UNKNOWN a
/// task id that does not exist.
const PARAM_ERRORS: &str = r#"
message/send | null | -32602 | params
message/send | {} | -32602 | params.message
message/send | [1] | -32602 | params.message
message/send | {"message": "hi"} | -32602 | object
message/send | {"message": {"role": "user", "parts": [{"kind": "text", "text": "x"}]}} | -32602 | messageId
message/send | {"message": {"messageId": "m", "parts": [{"kind": "text", "text": "x"}]}} | -32602 | role
message/send | {"message": {"messageId": "m", "role": "user"}} | -32602 | parts
message/send | {"message": {"messageId": "m", "role": "user", "parts": []}} | -32602 | empty
message/send | {"message": {"messageId": "m", "role": "user", "parts": "hi"}} | -32602 | parts
message/send | {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "video"}]}} | -32602 | parts[0]
message/send | {"message": {"messageId": "m", "role": "agent", "parts": [{"kind": "text", "text": "x"}]}} | -32602 | role
message/send | {"message": {"messageId": "m", "role": "robot", "parts": [{"kind": "text", "text": "x"}]}} | -32602 | role
message/send | {"message": {"messageId": 5, "role": "user", "parts": [{"kind": "text", "text": "x"}]}} | -32602 | messageId
message/send | {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "  "}]}} | -32602 | no text
message/send | {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "file", "file": {"uri": "x"}}]}} | -32005 | file
message/send | {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "x"}], "taskId": "../../etc/passwd"}} | -32001 | not found
message/send | {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "x"}], "taskId": "UNKNOWN"}} | -32001 | not found
message/send | {"message": MSG, "configuration": {"historyLength": -1}} | -32602 | historyLength
message/send | {"message": MSG, "configuration": {"historyLength": 1.5}} | -32602 | historyLength
message/send | {"message": MSG, "configuration": {"pushNotificationConfig": {"url": "http://x"}}} | -32003 | push
message/send | {"message": MSG, "configuration": {"acceptedOutputModes": ["image/png"]}} | -32005 | image/png
message/stream | {"message": MSG, "configuration": {"historyLength": -1}} | -32602 | historyLength
tasks/get | null | -32602 | params
tasks/get | {} | -32602 | params.id
tasks/get | {"id": 5} | -32602 | params.id
tasks/get | {"id": "UNKNOWN", "historyLength": -2} | -32602 | historyLength
tasks/get | {"id": "../../etc/passwd"} | -32001 | not found
tasks/get | {"id": "UNKNOWN"} | -32001 | not found
tasks/cancel | {"id": "UNKNOWN"} | -32001 | not found
tasks/pushNotificationConfig/set | {"taskId": "UNKNOWN"} | -32003 | push
tasks/pushNotificationConfig/get | {"id": "UNKNOWN"} | -32003 | push
tasks/pushNotificationConfig/list | {"id": "UNKNOWN"} | -32003 | push
tasks/pushNotificationConfig/delete | {"id": "UNKNOWN"} | -32003 | push
"#;

fn rows(table: &str) -> impl Iterator<Item = Vec<&str>> {
    table
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(" | ").collect())
}

fn assert_error(answer: &Value, expected: &str, needle: &str, case: &str) {
    assert_eq!(code(answer).to_string(), expected, "{case} -> {answer}");
    let text = answer["error"]["message"].as_str().unwrap();
    assert!(text.contains(needle), "{case} -> {text}");
}

#[tokio::test]
async fn every_error_has_its_code_and_names_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    for row in rows(BODY_ERRORS) {
        let body = if row[0] == "<empty>" { "" } else { row[0] };
        assert_error(&raw(&app, body).await, row[1], row[2], body);
    }
    assert_eq!(
        raw(&app, r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#).await["id"],
        Value::Null
    );
    assert_eq!(
        raw(&app, r#"{"jsonrpc":"1.0","id":"a","method":"x"}"#).await["id"],
        "a"
    );

    let valid = r#"{"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "x"}]}"#;
    let unknown = Uuid::new_v4().to_string();
    for row in rows(PARAM_ERRORS) {
        let params = row[1].replace("MSG", valid).replace("UNKNOWN", &unknown);
        let params: Value = serde_json::from_str(&params).unwrap();
        let answer = if row[0] == "message/stream" {
            stream(&app, row[0], params).await.remove(0)
        } else {
            call(&app, row[0], params).await
        };
        assert_error(&answer, row[2], row[3], &row.join(" | "));
    }
    let long = message(&"x".repeat(70_000), None);
    let answer = stream(&app, "message/stream", long).await.remove(0);
    assert_error(&answer, "-32602", "bytes", "a text over the limit");
    // None of them created anything.
    let conversations = dir.path().join("conversations");
    assert_eq!(std::fs::read_dir(conversations).map_or(0, |d| d.count()), 0);
}

#[tokio::test]
async fn message_send_completes_with_an_artifact_and_rest_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let task = send(&app, "hello", None).await;
    assert_eq!(task["kind"], "task");
    assert_eq!(task["status"]["state"], "completed", "{task}");
    assert_eq!(
        task["artifacts"][0]["parts"][0],
        json!({"kind": "text", "text": "echo: hello"})
    );
    assert_eq!(task["contextId"], task["id"]);
    let history = task["history"].as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(
        (history[0]["role"].as_str(), history[1]["role"].as_str()),
        (Some("user"), Some("agent"))
    );
    assert_eq!(history[1]["taskId"], task["id"]);
    let id = task["id"].as_str().unwrap();
    let (status, rest) = http(&app, "GET", &format!("/conversations/{id}"), String::new()).await;
    assert_eq!(status, StatusCode::OK);
    let rest: Value = serde_json::from_str(&rest).unwrap();
    assert_eq!(rest["conversation"]["status"], "active");
    assert_eq!(rest["conversation"]["session_id"], "sess-test-1");
    let again = get(&app, id).await;
    assert_eq!(again["artifacts"], task["artifacts"]);

    // A continuation of an active task is a new turn.
    let next = send(&app, "second", Some(id)).await;
    assert_eq!(next["id"], task["id"]);
    assert_eq!(next["artifacts"][0]["parts"][0]["text"], "echo: second");
    assert_ne!(
        next["artifacts"][0]["artifactId"],
        task["artifacts"][0]["artifactId"]
    );
}

#[tokio::test]
async fn a_failing_model_gives_a_failed_task_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let task = send(&app, "please fail", None).await;
    assert_eq!(task["status"]["state"], "failed", "{task}");
    let reason = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(reason.contains("scripted failure"), "{reason}");
    assert!(task.get("artifacts").is_none());
}

#[tokio::test]
async fn tasks_get_reads_a_rest_conversation_and_honours_history_length() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (status, created) = http(
        &app,
        "POST",
        "/conversations",
        r#"{"message": "one"}"#.into(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let created: Value = serde_json::from_str(&created).unwrap();
    let id = created["conversation"]["id"].as_str().unwrap().to_string();
    let task = get(&app, &id).await;
    assert_eq!(task["id"], id.as_str());
    assert_eq!(task["status"]["state"], "completed");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "echo: one");
    send(&app, "two", Some(&id)).await;
    let with = |n: Value| json!({"id": id, "historyLength": n});
    let history = |task: Value| task["history"].as_array().map_or(0, Vec::len);
    assert_eq!(history(get(&app, &id).await), 4);
    assert_eq!(
        history(call(&app, "tasks/get", with(json!(0))).await["result"].clone()),
        0
    );
    let last = call(&app, "tasks/get", with(json!(1))).await["result"].clone();
    assert_eq!(last["history"], json!([last["history"][0].clone()]));
    assert_eq!(last["history"][0]["parts"][0]["text"], "echo: two");
    let mut params = message("three", Some(&id));
    params["configuration"] = json!({"historyLength": 2});
    let sent = call(&app, "message/send", params).await["result"].clone();
    assert_eq!(history(sent), 2);
}

#[tokio::test]
async fn the_client_context_id_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let mut params = message("hi", None);
    params["message"]["contextId"] = json!("ctx-42");
    let task = call(&app, "message/send", params).await["result"].clone();
    assert_eq!(task["contextId"], "ctx-42");
    let id = task["id"].as_str().unwrap();
    assert_eq!(get(&app, id).await["contextId"], "ctx-42");
    assert_eq!(send(&app, "again", Some(id)).await["contextId"], "ctx-42");
    let mut other = message("hi", Some(id));
    other["message"]["contextId"] = json!("ctx-other");
    assert_eq!(code(&call(&app, "message/send", other).await), -32602);
}

fn data_part(task: &Value) -> Value {
    task["status"]["message"]["parts"]
        .as_array()
        .and_then(|parts| parts.iter().find(|p| p["kind"] == "data"))
        .map(|p| p["data"].clone())
        .unwrap_or_else(|| panic!("no data part: {task}"))
}

#[tokio::test]
async fn a_waiting_task_is_input_required_and_keeps_waiting_on_other_text() {
    let dir = tempfile::tempdir().unwrap();
    let (id, uuid) = waiting(dir.path());
    let app = app(dir.path()).await;
    let task = get(&app, &id.to_string()).await;
    assert_eq!(task["status"]["state"], "input-required");
    assert_eq!(task["status"]["message"]["role"], "agent");
    let data = data_part(&task);
    assert_eq!(data["approval_uuid"], uuid.to_string());
    assert_eq!(data["tool_name"], "resources_add");
    assert_eq!(data["tool_args"], json!({"name": "web-1", "value": 42}));
    assert!(
        data["description"]
            .as_str()
            .unwrap()
            .contains("resources_add")
    );

    let still = send(&app, "what is this?", Some(&id.to_string())).await;
    assert_eq!(still["status"]["state"], "input-required");
    let text = still["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("waiting for an approval decision"), "{text}");
    assert_eq!(data_part(&still)["approval_uuid"], uuid.to_string());
    let mut wrong = message("", Some(&id.to_string()));
    wrong["message"]["parts"] =
        json!([{"kind": "data", "data": {"approved": true, "approval_uuid": Uuid::new_v4()}}]);
    assert_eq!(code(&call(&app, "message/send", wrong).await), -32602);
    assert_eq!(
        get(&app, &id.to_string()).await["status"]["state"],
        "input-required"
    );
}

#[tokio::test]
async fn continuations_approve_and_reject() {
    let dir = tempfile::tempdir().unwrap();
    let (approved, _) = waiting(dir.path());
    let (rejected, _) = waiting(dir.path());
    let app = app(dir.path()).await;
    let task = send(&app, " Approved ", Some(&approved.to_string())).await;
    assert_eq!(task["status"]["state"], "completed", "{task}");
    let answer = task["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(answer.starts_with("resources_add returned"), "{answer}");

    let mut decision = message("", Some(&rejected.to_string()));
    decision["message"]["parts"] =
        json!([{"kind": "data", "data": {"approved": false, "reason": "not today"}}]);
    let task = call(&app, "message/send", decision.clone()).await["result"].clone();
    assert_eq!(task["status"]["state"], "completed", "{task}");
    let answer = task["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(
        answer.contains("not run") && answer.contains("not today"),
        "{answer}"
    );
    // No approval is pending any more: a bare decision is refused.
    assert_eq!(code(&call(&app, "message/send", decision).await), -32602);
}

#[tokio::test]
async fn approval_via_rest_shows_in_tasks_get() {
    let dir = tempfile::tempdir().unwrap();
    let (id, uuid) = waiting(dir.path());
    let app = app(dir.path()).await;
    let (status, _) = http(
        &app,
        "POST",
        &format!("/approvals/{uuid}"),
        r#"{"approved": true}"#.into(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let task = get(&app, &id.to_string()).await;
    assert_eq!(task["status"]["state"], "completed");
    assert!(
        task["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("resources_add")
    );
}

#[tokio::test]
async fn cancel_a_waiting_task_but_not_a_terminal_one() {
    let dir = tempfile::tempdir().unwrap();
    let (id, _) = waiting(dir.path());
    let app = app(dir.path()).await;
    let id = id.to_string();
    let task = call(&app, "tasks/cancel", json!({"id": id})).await["result"].clone();
    assert_eq!(task["status"]["state"], "canceled", "{task}");
    assert_eq!(get(&app, &id).await["status"]["state"], "canceled");
    let (_, rest) = http(&app, "GET", &format!("/conversations/{id}"), String::new()).await;
    let rest: Value = serde_json::from_str(&rest).unwrap();
    assert_eq!(rest["conversation"]["status"], "canceled");
    let tool = &rest["conversation"]["messages"][3];
    assert_eq!(tool["role"], "tool");
    assert!(
        tool["content"].as_str().unwrap().contains("not run"),
        "{tool}"
    );

    let again = call(&app, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(code(&again), -32002);
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("canceled")
    );
    let closed = call(&app, "message/send", message("hello?", Some(&id))).await;
    assert_eq!(code(&closed), -32602);
    assert!(
        closed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no more messages")
    );

    let done = send(&app, "hi", None).await;
    let answer = call(&app, "tasks/cancel", json!({"id": done["id"]})).await;
    assert_eq!(code(&answer), -32002);
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let r = &e["result"];
            match r["kind"].as_str() {
                Some("status-update") => format!(
                    "status:{}:{}",
                    r["status"]["state"].as_str().unwrap(),
                    r["final"]
                ),
                Some(kind) => kind.to_string(),
                None => format!("error:{}", e["error"]["code"]),
            }
        })
        .collect()
}

#[tokio::test]
async fn message_stream_sends_the_task_progress_artifact_and_a_final_status() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let events = stream(&app, "message/stream", message("hello", None)).await;
    assert_eq!(
        kinds(&events),
        [
            "task",
            "status:working:false",
            "artifact-update",
            "status:completed:true"
        ]
    );
    let task = &events[0]["result"];
    assert_eq!(task["status"]["state"], "submitted");
    assert_eq!(task["history"][0]["parts"][0]["text"], "hello");
    for event in &events[1..] {
        assert_eq!(event["result"]["taskId"], task["id"]);
        assert_eq!(event["result"]["contextId"], task["contextId"]);
    }
    assert_eq!(
        events[2]["result"]["artifact"]["parts"][0]["text"],
        "echo: hello"
    );
    let id = task["id"].as_str().unwrap();
    assert_eq!(get(&app, id).await["status"]["state"], "completed");

    let failed = stream(&app, "message/stream", message("fail now", Some(id))).await;
    assert_eq!(
        kinds(&failed),
        ["task", "status:working:false", "status:failed:true"]
    );
    let resub = stream(&app, "tasks/resubscribe", json!({"id": id})).await;
    assert_eq!(kinds(&resub), ["task", "status:failed:true"]);
    let missing = stream(&app, "tasks/resubscribe", json!({"id": "nope"})).await;
    assert_eq!(kinds(&missing), ["error:-32001"]);
    let bad = stream(&app, "message/stream", json!({"message": {"role": "user"}})).await;
    assert_eq!(kinds(&bad), ["error:-32602"]);
}

#[tokio::test]
async fn stream_continuations_of_a_waiting_task() {
    let dir = tempfile::tempdir().unwrap();
    let (id, _) = waiting(dir.path());
    let app = app(dir.path()).await;
    let id = id.to_string();
    let resub = stream(&app, "tasks/resubscribe", json!({"id": id})).await;
    assert_eq!(kinds(&resub), ["task", "status:input-required:true"]);
    assert_eq!(data_part(&resub[1]["result"])["tool_name"], "resources_add");
    let other = stream(&app, "message/stream", message("hmm", Some(&id))).await;
    assert_eq!(kinds(&other), ["task", "status:input-required:true"]);
    let events = stream(&app, "message/stream", message("yes", Some(&id))).await;
    assert_eq!(
        kinds(&events),
        [
            "task",
            "status:working:false",
            "status:working:false",
            "artifact-update",
            "status:completed:true"
        ]
    );
    let tool = &events[2]["result"]["status"]["message"]["parts"][0]["text"];
    assert_eq!(tool, "resources_add failed");
}

#[tokio::test]
async fn responses_name_the_conversation_and_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let (id, _) = waiting(dir.path());
    let app = app(dir.path()).await;
    let post = |body: Value| {
        Request::post("/a2a")
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    let rpc = |params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": params});
    // Without X-Session-ID, a continuation keeps the conversation's session.
    let response = app
        .clone()
        .oneshot(post(rpc(message("hmm", Some(&id.to_string())))))
        .await
        .unwrap();
    assert_eq!(response.headers()["x-session-id"], "feed0001");
    // A new conversation's session id is the one the response reports.
    let response = app
        .clone()
        .oneshot(post(rpc(message("hi", None))))
        .await
        .unwrap();
    let sid = response.headers()["x-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let task: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(task["result"]["metadata"]["session_id"], sid.as_str());
}
