//! Router tests of the A2A v1.0 bindings with `oneshot` and the offline
//! scripted model: the v1.0 wire (parts without `kind`, `TASK_STATE_*`,
//! `StreamResponse`), the `A2A-Version` header, `ListTasks` pages, an
//! approval continuation on a stored waiting conversation, and the
//! HTTP+JSON routes with their problem details.

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;
use uuid::Uuid;

use super::super::tests::{app, waiting};

/// Sends a request; answers (status, headers, body text).
async fn http(
    app: &Router,
    method: &str,
    uri: &str,
    version: Option<&str>,
    body: String,
) -> (StatusCode, HeaderMap, String) {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A JSON-RPC call to `/a2a` with `A2A-Version: 1.0`.
async fn rpc(app: &Router, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    let (status, headers, text) = http(app, "POST", "/a2a", Some("1.0"), body.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(headers["a2a-version"], "1.0");
    serde_json::from_str(&text).unwrap()
}

fn message(parts: Value, task: Option<&str>) -> Value {
    let mut message =
        json!({"messageId": Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": parts});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({"message": message})
}

/// Fails when a v0.3 discriminator leaked into a v1.0 answer.
fn assert_no_kind(value: &Value) {
    match value {
        Value::Object(map) => {
            assert!(!map.contains_key("kind"), "kind in {value}");
            assert!(!map.contains_key("final"), "final in {value}");
            map.values().for_each(assert_no_kind);
        }
        Value::Array(items) => items.iter().for_each(assert_no_kind),
        _ => {}
    }
}

#[tokio::test]
async fn send_get_and_list_answer_in_the_v1_form() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let sent = rpc(
        &app,
        "SendMessage",
        message(json!([{"text": "hello"}]), None),
    )
    .await;
    let task = &sent["result"]["task"];
    assert_no_kind(&sent);
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(
        task["artifacts"][0]["parts"][0],
        json!({"text": "echo: hello"})
    );
    assert_eq!(task["history"][0]["role"], "ROLE_USER");
    let id = task["id"].as_str().unwrap();
    let got = rpc(&app, "GetTask", json!({"id": id, "historyLength": 1})).await;
    assert_eq!(got["result"]["id"], id);
    assert_eq!(got["result"]["history"].as_array().unwrap().len(), 1);
    rpc(
        &app,
        "SendMessage",
        message(json!([{"text": "again"}]), None),
    )
    .await;
    let first = rpc(&app, "ListTasks", json!({"pageSize": 1})).await;
    assert_no_kind(&first);
    let page = &first["result"];
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1, "{first}");
    assert_eq!(page["totalSize"], 2);
    assert!(
        page["tasks"][0].get("artifacts").is_none(),
        "artifacts only when asked"
    );
    let token = page["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let second = rpc(
        &app,
        "ListTasks",
        json!({"pageSize": 1, "pageToken": token}),
    )
    .await;
    assert_eq!(second["result"]["tasks"][0]["id"], id, "{second}");
    assert_eq!(second["result"]["nextPageToken"], "");
    let bad = rpc(&app, "ListTasks", json!({"pageSize": 0})).await;
    assert_eq!(bad["error"]["code"], -32602);
    let bad = rpc(&app, "ListTasks", json!({"pageToken": "nope"})).await;
    assert_eq!(bad["error"]["code"], -32602);
}

#[tokio::test]
async fn an_approval_is_input_required_and_a_data_part_decides_it() {
    let dir = tempfile::tempdir().unwrap();
    let (id, uuid) = waiting(dir.path());
    let app = app(dir.path()).await;
    let id = id.to_string();
    let got = rpc(&app, "GetTask", json!({"id": id})).await;
    let status = &got["result"]["status"];
    assert_eq!(status["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(status["message"]["role"], "ROLE_AGENT");
    let data = &status["message"]["parts"][1];
    assert_eq!(data["mediaType"], "application/json");
    assert_eq!(data["data"]["approval_uuid"], uuid.to_string());
    assert_eq!(data["data"]["tool_name"], "resources_add");
    let parts = json!([{"data": {"approved": false, "approval_uuid": uuid.to_string()}}]);
    let decided = rpc(&app, "SendMessage", message(parts, Some(&id))).await;
    let task = &decided["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{decided}");
    let again = json!([{"data": {"approved": true, "approval_uuid": uuid.to_string()}}]);
    let late = rpc(&app, "SendMessage", message(again, Some(&id))).await;
    assert_eq!(late["error"]["code"], -32602, "{late}");
    let scalar = rpc(
        &app,
        "SendMessage",
        message(json!([{"data": 1}]), Some(&id)),
    )
    .await;
    assert_eq!(scalar["error"]["code"], -32602);
}

#[tokio::test]
async fn the_version_header_is_checked_and_answered() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let v1 = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": Uuid::new_v4().to_string()}});
    for refused in ["2.0", "0.2", "x"] {
        let (_, headers, text) = http(&app, "POST", "/a2a", Some(refused), v1.to_string()).await;
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["error"]["code"], -32009, "{refused}: {answer}");
        assert_eq!(headers["a2a-version"], "1.0");
    }
    let (_, headers, text) = http(&app, "POST", "/a2a", None, v1.to_string()).await;
    assert!(text.contains("-32001"), "{text}");
    assert_eq!(headers["a2a-version"], "1.0");
    let v03 = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message":
        {"kind": "message", "role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hi"}]}}});
    for version in [Some("0.3"), None] {
        let (_, headers, text) = http(&app, "POST", "/a2a", version, v03.to_string()).await;
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["result"]["kind"], "task", "{answer}");
        assert_eq!(answer["result"]["status"]["state"], "completed");
        assert_eq!(headers["a2a-version"], "0.3");
    }
}

/// The `data:` payloads of an SSE body.
fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}

/// The one field a `StreamResponse` sets, and its state if it has one.
fn shape(event: &Value) -> String {
    let object = event.as_object().unwrap();
    assert_eq!(object.len(), 1, "one of: {event}");
    let (key, value) = object.iter().next().unwrap();
    match value["status"]["state"].as_str() {
        Some(state) => format!("{key}:{state}"),
        None => key.clone(),
    }
}

#[tokio::test]
async fn streams_carry_stream_responses() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let params = message(json!([{"text": "hi"}]), None);
    let body =
        json!({"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage", "params": params});
    let (_, _, text) = http(&app, "POST", "/a2a", Some("1.0"), body.to_string()).await;
    let rpc_events = events(&text);
    assert_no_kind(&json!(rpc_events));
    let shapes: Vec<String> = rpc_events.iter().map(|e| shape(&e["result"])).collect();
    assert_eq!(
        shapes.first().map(String::as_str),
        Some("task:TASK_STATE_SUBMITTED")
    );
    assert_eq!(
        shapes.last().map(String::as_str),
        Some("statusUpdate:TASK_STATE_COMPLETED")
    );
    assert!(shapes.contains(&"artifactUpdate".to_string()), "{shapes:?}");
    let (status, _, text) = http(
        &app,
        "POST",
        "/a2a/v1/message:stream",
        None,
        params.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let rest_events = events(&text);
    assert_eq!(shapes, rest_events.iter().map(shape).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_rest_binding_serves_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let params = message(json!([{"text": "hello"}]), None);
    let (status, headers, text) = http(
        &app,
        "POST",
        "/a2a/v1/message:send",
        Some("1.0"),
        params.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(headers["a2a-version"], "1.0");
    let sent: Value = serde_json::from_str(&text).unwrap();
    let id = sent["task"]["id"].as_str().unwrap().to_string();
    let (status, _, text) = http(
        &app,
        "GET",
        &format!("/a2a/v1/tasks/{id}?historyLength=1"),
        None,
        String::new(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let got: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(got["history"].as_array().unwrap().len(), 1);
    let (_, _, text) = http(&app, "GET", "/a2a/v1/tasks?pageSize=5", None, String::new()).await;
    let listed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(listed["tasks"][0]["id"], id.as_str(), "{listed}");
}

#[tokio::test]
async fn the_rest_binding_answers_problem_details() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let params = message(json!([{"text": "hello"}]), None);
    let (_, _, text) = http(
        &app,
        "POST",
        "/a2a/v1/message:send",
        None,
        params.to_string(),
    )
    .await;
    let sent: Value = serde_json::from_str(&text).unwrap();
    let id = sent["task"]["id"].as_str().unwrap().to_string();
    // method, path, A2A-Version ("-": none), status, ErrorInfo reason
    let unknown = Uuid::new_v4();
    let problems = format!(
        "GET /a2a/v1/tasks/{unknown} - 404 TASK_NOT_FOUND
         GET /a2a/v1/tasks/not-a-uuid - 404 TASK_NOT_FOUND
         POST /a2a/v1/tasks/{id}:cancel - 400 TASK_NOT_CANCELABLE
         POST /a2a/v1/tasks/{id}:archive - 404 METHOD_NOT_FOUND
         GET /a2a/v1/tasks/{id}/pushNotificationConfigs - 400 PUSH_NOTIFICATION_NOT_SUPPORTED
         GET /a2a/v1/tasks?pageSize=500 - 400 INVALID_PARAMS
         GET /a2a/v1/tasks/{id} 0.3 400 VERSION_NOT_SUPPORTED
         GET /a2a/v1/tasks/{id} 3.1 400 VERSION_NOT_SUPPORTED"
    );
    for line in problems.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [method, uri, version, code, reason] = fields[..] else {
            panic!("bad row {line:?}");
        };
        let version = Some(version).filter(|v| *v != "-");
        let code: u16 = code.parse().unwrap();
        let (status, headers, text) = http(&app, method, uri, version, String::new()).await;
        assert_eq!(status.as_u16(), code, "{uri}: {text}");
        assert_eq!(headers["content-type"], "application/problem+json");
        let problem: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(problem["status"], code);
        assert!(problem["title"].is_string() && problem["detail"].is_string());
        assert_eq!(problem["error"]["details"][0]["reason"], reason, "{uri}");
    }
}

#[tokio::test]
async fn list_tasks_filters_by_state_and_context_and_adds_artifacts_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (waiting_id, _) = waiting(dir.path());
    let app = app(dir.path()).await;
    let mut hello = message(json!([{"text": "hello"}]), None);
    hello["message"]["contextId"] = json!("ctx-1");
    let sent = rpc(&app, "SendMessage", hello).await;
    let done = sent["result"]["task"]["id"].clone();
    let ids = |answer: &Value| -> Vec<Value> {
        let tasks = answer["result"]["tasks"].as_array().cloned();
        tasks
            .unwrap_or_default()
            .iter()
            .map(|t| t["id"].clone())
            .collect()
    };
    let waiting = rpc(
        &app,
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED"}),
    )
    .await;
    assert_eq!(ids(&waiting), [json!(waiting_id.to_string())], "{waiting}");
    let completed = rpc(&app, "ListTasks", json!({"status": "TASK_STATE_COMPLETED"})).await;
    assert_eq!(ids(&completed), vec![done.clone()]);
    let context = rpc(&app, "ListTasks", json!({"contextId": "ctx-1"})).await;
    assert_eq!(ids(&context), vec![done.clone()]);
    let full = rpc(
        &app,
        "ListTasks",
        json!({"contextId": "ctx-1", "includeArtifacts": true}),
    )
    .await;
    let artifact = &full["result"]["tasks"][0]["artifacts"][0]["parts"][0];
    assert_eq!(artifact, &json!({"text": "echo: hello"}), "{full}");
    let all = rpc(
        &app,
        "ListTasks",
        json!({"status": "TASK_STATE_UNSPECIFIED"}),
    )
    .await;
    assert_eq!(ids(&all).len(), 2);
    let bad = rpc(&app, "ListTasks", json!({"status": "DONE"})).await;
    assert_eq!(bad["error"]["code"], -32602);
}

#[tokio::test]
async fn a_filtered_list_pages_through_the_matching_tasks_only() {
    let dir = tempfile::tempdir().unwrap();
    let (waiting_id, _) = waiting(dir.path());
    let app = app(dir.path()).await;
    let mut done = Vec::new();
    for text in ["one", "two"] {
        let sent = rpc(
            &app,
            "SendMessage",
            message(json!([{ "text": text }]), None),
        )
        .await;
        done.push(sent["result"]["task"]["id"].clone());
    }
    let list = |params: Value| rpc(&app, "ListTasks", params);
    // The waiting task is the oldest: two newer, completed ones come first
    // in the store, and a page of one must still find it.
    let waiting = list(json!({"status": "TASK_STATE_INPUT_REQUIRED", "pageSize": 1})).await;
    let tasks = &waiting["result"]["tasks"];
    assert_eq!(tasks.as_array().map(Vec::len), Some(1), "{waiting}");
    assert_eq!(tasks[0]["id"], json!(waiting_id.to_string()));
    assert_eq!(waiting["result"]["totalSize"], 1, "{waiting}");
    assert_eq!(waiting["result"]["nextPageToken"], "", "{waiting}");
    // Completed tasks one per page, newest first, then no more.
    let first = list(json!({"status": "TASK_STATE_COMPLETED", "pageSize": 1})).await;
    assert_eq!(first["result"]["tasks"][0]["id"], done[1], "{first}");
    assert_eq!(first["result"]["totalSize"], 2, "{first}");
    let token = first["result"]["nextPageToken"].clone();
    assert_ne!(token, json!(""), "{first}");
    let second =
        list(json!({"status": "TASK_STATE_COMPLETED", "pageSize": 1, "pageToken": token})).await;
    assert_eq!(second["result"]["tasks"][0]["id"], done[0], "{second}");
    let token = second["result"]["nextPageToken"].clone();
    assert_eq!(
        token,
        json!(""),
        "the second of two is the last page: {second}"
    );
}

/// Sends `text` in `context`; the task's id.
async fn sent_in(app: &Router, text: &str, context: &str) -> Value {
    let mut hello = message(json!([{ "text": text }]), None);
    hello["message"]["contextId"] = json!(context);
    let sent = rpc(app, "SendMessage", hello).await;
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    sent["result"]["task"]["id"].clone()
}

#[tokio::test]
async fn total_size_counts_the_tasks_matching_every_filter() {
    let dir = tempfile::tempdir().unwrap();
    let (waiting_id, _) = waiting(dir.path());
    let app = app(dir.path()).await;
    let mut done = Vec::new();
    for (text, context) in [("one", "ctx-a"), ("two", "ctx-a"), ("three", "ctx-b")] {
        done.push(sent_in(&app, text, context).await);
    }
    let list = |params: Value| rpc(&app, "ListTasks", params);
    let counted = [
        (json!({}), 4),
        (json!({"contextId": "ctx-a"}), 2),
        (json!({"status": "TASK_STATE_COMPLETED"}), 3),
        (json!({"status": "TASK_STATE_INPUT_REQUIRED"}), 1),
        (
            json!({"status": "TASK_STATE_COMPLETED", "contextId": "ctx-b"}),
            1,
        ),
        (
            json!({"status": "TASK_STATE_INPUT_REQUIRED", "contextId": "ctx-a"}),
            0,
        ),
        (json!({"status": "TASK_STATE_CANCELED"}), 0),
        (json!({"statusTimestampAfter": "2000-01-01T00:00:00Z"}), 4),
        (
            json!({"statusTimestampAfter": "2999-01-01T00:00:00+02:00"}),
            0,
        ),
    ];
    for (params, total) in counted {
        let mut paged = params.clone();
        paged["pageSize"] = json!(1);
        let answer = list(paged).await;
        assert_eq!(answer["result"]["totalSize"], total, "{params}: {answer}");
        let shown = answer["result"]["tasks"].as_array().map_or(0, Vec::len);
        assert_eq!(shown, total.min(1), "{params}: {answer}");
        let more = answer["result"]["nextPageToken"] != "";
        assert_eq!(more, total > 1, "{params}: {answer}");
    }
    // At or after the newest task's status time: that task, never the
    // waiting one, stored before the agent started.
    let newest = list(json!({"pageSize": 1})).await;
    assert_eq!(newest["result"]["tasks"][0]["id"], done[2], "{newest}");
    let at = newest["result"]["tasks"][0]["status"]["timestamp"].clone();
    let since = list(json!({"statusTimestampAfter": at})).await;
    let ids: Vec<Value> = since["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert!(ids.contains(&done[2]), "{since}");
    assert!(!ids.contains(&json!(waiting_id.to_string())), "{since}");
    assert_eq!(since["result"]["totalSize"], ids.len(), "{since}");
    let bad = list(json!({"statusTimestampAfter": "yesterday"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("statusTimestampAfter")
    );
    // The HTTP+JSON binding takes the same filters as query parameters.
    let uri = "/a2a/v1/tasks?contextId=ctx-a&status=TASK_STATE_COMPLETED&pageSize=1";
    let (status, _, text) = http(&app, "GET", uri, None, String::new()).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let page: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(page["totalSize"], 2, "{page}");
    assert_eq!(page["tasks"][0]["id"], done[1], "{page}");
}

#[tokio::test]
async fn a_v1_client_gets_the_v1_card_and_every_other_the_card_for_both() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let path = "/.well-known/agent-card.json";
    let (status, headers, text) = http(&app, "GET", path, None, String::new()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["vary"], "a2a-version");
    let both: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(both["url"], "http://agent.test/a2a");
    assert_eq!(both["protocolVersion"], "0.3.0");
    for version in ["0.3", "9.9"] {
        let (_, _, same) = http(&app, "GET", path, Some(version), String::new()).await;
        assert_eq!(same, text, "A2A-Version {version}");
    }
    for version in ["1.0", "1"] {
        let (status, headers, v1) = http(&app, "GET", path, Some(version), String::new()).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["vary"], "a2a-version");
        let v1: Value = serde_json::from_str(&v1).unwrap();
        for v03 in ["url", "protocolVersion", "preferredTransport"] {
            assert!(v1.get(v03).is_none(), "{v03} in the v1.0 card: {v1}");
        }
        assert_eq!(v1["supportedInterfaces"], both["supportedInterfaces"]);
        assert_eq!(v1["supportedInterfaces"][0]["protocolVersion"], "1.0");
        assert_eq!(v1["name"], both["name"]);
    }
}

/// Every `$ref` under `value`, by schema name.
fn refs(value: &Value, found: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(name)) = map.get("$ref") {
                found.insert(name.trim_start_matches("#/components/schemas/").to_string());
            }
            map.values().for_each(|v| refs(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
        _ => {}
    }
}

/// `/openapi.json` and the router agree on `/a2a/v1`: every route and
/// method the router answers as an A2A operation is documented, every
/// documented one is answered, and every schema they name is in the
/// document.
#[tokio::test]
async fn every_rest_route_served_is_documented_and_every_documented_one_is_served() {
    use std::collections::BTreeSet;
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (status, _, text) = http(&app, "GET", "/openapi.json", None, String::new()).await;
    assert_eq!(status, StatusCode::OK);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if path.starts_with("/a2a/v1") {
            for method in item.as_object().unwrap().keys() {
                documented.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    assert_eq!(documented.len(), 11, "{documented:?}");
    // The documented paths and near misses, with every method.
    let mut templates: BTreeSet<String> = documented.iter().map(|(_, p)| p.clone()).collect();
    templates.extend(
        [
            "/a2a/v1",
            "/a2a/v1/card",
            "/a2a/v1/message",
            "/a2a/v1/message:archive",
            "/a2a/v1/tasks/{id}:archive",
            "/a2a/v1/tasks/{id}/pushNotificationConfigs/{configId}/more",
        ]
        .map(String::from),
    );
    let mut served = BTreeSet::new();
    for template in &templates {
        let id = Uuid::new_v4().to_string();
        let uri = template.replace("{id}", &id).replace("{configId}", "cfg");
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            let (_, headers, text) = http(&app, method, &uri, None, "{}".into()).await;
            // An A2A operation names the version it served; a route that
            // is none answers the REST 404/405, or METHOD_NOT_FOUND.
            if headers.contains_key("a2a-version") && !text.contains("\"METHOD_NOT_FOUND\"") {
                served.insert((method.to_string(), template.clone()));
            }
        }
    }
    assert_eq!(served, documented);
    let operation = |path: &str, method: &str| doc["paths"][path][method].clone();
    let problem = &operation("/a2a/v1/tasks/{id}", "get")["responses"]["404"]["content"];
    assert_eq!(
        problem["application/problem+json"]["schema"]["$ref"],
        "#/components/schemas/a2a.v1.Problem"
    );
    let send = operation("/a2a/v1/message:send", "post");
    assert_eq!(
        send["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/a2a.v1.SendMessageRequest"
    );
    let mut named = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if path.starts_with("/a2a/v1") {
            refs(item, &mut named);
        }
    }
    for name in [
        "a2a.v1.Task",
        "a2a.v1.StreamResponse",
        "a2a.v1.ListTasksResponse",
    ] {
        assert!(named.contains(name), "{name} not named: {named:?}");
    }
    // Every schema named, and every one they name in turn, is there.
    let schemas = &doc["components"]["schemas"];
    let mut checked = BTreeSet::new();
    while let Some(name) = named.iter().find(|n| !checked.contains(*n)).cloned() {
        let schema = &schemas[name.as_str()];
        assert!(schema.is_object(), "schema {name} is missing");
        refs(schema, &mut named);
        checked.insert(name);
    }
}

/// An app whose engine keeps its data in `dir`, with a push service (as
/// the `agent` binary layers it) that accepts loopback callbacks, and
/// API keys for `alice` and `bob` (no roles: each reads only its own
/// tasks).
async fn app_with_keys(dir: &std::path::Path) -> Router {
    use crate::config::{ApiKeyConfig, AuthConfig};
    use crate::notify::deliver::{Deliveries, Retry};
    use crate::notify::{A2aPushConfig, a2a_push::PushService};
    let store = crate::store::JsonFileStore::open(dir).unwrap();
    let engine = crate::test_support::scripted_engine(
        std::sync::Arc::new(store),
        super::super::tests::RULES,
    )
    .await;
    let policy = A2aPushConfig {
        allow_private_networks: true,
        allowed_hosts: vec![],
    };
    let deliveries = Deliveries::start(4, 1, Retry::default());
    let push = PushService::open(dir, None, engine.clone(), policy, deliveries).unwrap();
    let key = |name: &str| ApiKeyConfig {
        name: name.into(),
        key_env: name.into(),
        roles: vec![],
        groups: vec![],
    };
    let config = AuthConfig {
        oidc: None,
        api_keys: vec![key("alice"), key("bob")],
        role_map: None,
    };
    let auth =
        crate::auth::Authenticator::from_config(&config, &|name| Some(api_key(name))).unwrap();
    crate::test_support::app_with_auth(engine, auth).layer(axum::Extension(push))
}

/// The API key of `who` in [`app_with_keys`].
fn api_key(who: &str) -> String {
    format!("{who}-key-0123456789abcdef")
}

/// A v1.0 request with the API key of `who`: answers (status, body text).
async fn as_caller(
    app: &Router,
    who: &str,
    method: &str,
    uri: &str,
    body: Value,
) -> (StatusCode, String) {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .header("X-API-Key", api_key(who))
        .body(Body::from(body))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A v1.0 JSON-RPC call as `who`; the answer, or the error event of a
/// streaming method.
async fn rpc_as(app: &Router, who: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    let (status, text) = as_caller(app, who, "POST", "/a2a", body).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(_) => events(&text).pop().unwrap_or(Value::Null),
    }
}

/// The reason and detail of a problem-details body.
fn reason_and_detail(text: &str) -> (String, String) {
    let problem: Value = serde_json::from_str(text).unwrap();
    let reason = problem["error"]["details"][0]["reason"].as_str().unwrap();
    (
        reason.to_string(),
        problem["detail"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn subscribing_to_a_finished_task_is_an_unsupported_operation() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_with_keys(dir.path()).await;
    let sent = rpc_as(
        &app,
        "alice",
        "SendMessage",
        message(json!([{"text": "hi"}]), None),
    )
    .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let failed = rpc_as(
        &app,
        "alice",
        "SendMessage",
        message(json!([{"text": "fail"}]), None),
    )
    .await;
    let failed_id = failed["result"]["task"]["id"].as_str().unwrap().to_string();
    for (task, state) in [
        (&id, "TASK_STATE_COMPLETED"),
        (&failed_id, "TASK_STATE_FAILED"),
    ] {
        let refused = rpc_as(&app, "alice", "SubscribeToTask", json!({"id": task})).await;
        assert_eq!(refused["error"]["code"], -32004, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(task.as_str()) && message.contains(state),
            "{message}"
        );
        for method in ["GET", "POST"] {
            let uri = format!("/a2a/v1/tasks/{task}:subscribe");
            let (status, text) = as_caller(&app, "alice", method, &uri, Value::Null).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{method} {uri}: {text}");
            let (reason, detail) = reason_and_detail(&text);
            assert_eq!(reason, "UNSUPPORTED_OPERATION", "{text}");
            assert!(
                detail.contains(task.as_str()) && detail.contains(state),
                "{detail}"
            );
        }
    }
    // Ownership first: another principal learns nothing of the state.
    let foreign = rpc_as(&app, "bob", "SubscribeToTask", json!({"id": id})).await;
    assert_eq!(foreign["error"]["code"], -32001, "{foreign}");
    assert!(!foreign.to_string().contains("COMPLETED"), "{foreign}");
    for method in ["GET", "POST"] {
        let uri = format!("/a2a/v1/tasks/{id}:subscribe");
        let (status, text) = as_caller(&app, "bob", method, &uri, Value::Null).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
        assert_eq!(reason_and_detail(&text).0, "TASK_NOT_FOUND");
        assert!(!text.contains("COMPLETED"), "{text}");
    }
}

#[tokio::test]
async fn subscribing_to_a_waiting_task_still_streams_it() {
    let dir = tempfile::tempdir().unwrap();
    let (id, _) = waiting(dir.path());
    let app = app(dir.path()).await;
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": id}});
    let (_, _, text) = http(&app, "POST", "/a2a", Some("1.0"), body.to_string()).await;
    let shapes: Vec<String> = events(&text).iter().map(|e| shape(&e["result"])).collect();
    let expected = [
        "task:TASK_STATE_INPUT_REQUIRED",
        "statusUpdate:TASK_STATE_INPUT_REQUIRED",
    ];
    assert_eq!(shapes, expected, "{text}");
    let uri = format!("/a2a/v1/tasks/{id}:subscribe");
    let (status, _, text) = http(&app, "GET", &uri, None, String::new()).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(
        events(&text).iter().map(shape).collect::<Vec<_>>(),
        expected
    );
}

#[tokio::test]
async fn a_push_config_the_task_lacks_is_task_not_found_naming_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_with_keys(dir.path()).await;
    let sent = rpc_as(
        &app,
        "alice",
        "SendMessage",
        message(json!([{"text": "hi"}]), None),
    )
    .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let config = json!({"taskId": id, "id": "kept", "url": "http://127.0.0.1:9/hook"});
    let made = rpc_as(&app, "alice", "CreateTaskPushNotificationConfig", config).await;
    assert_eq!(made["result"]["id"], "kept", "{made}");
    let missing = json!({"taskId": id, "id": "gone-cfg"});
    for method in [
        "GetTaskPushNotificationConfig",
        "DeleteTaskPushNotificationConfig",
    ] {
        let answer = rpc_as(&app, "alice", method, missing.clone()).await;
        assert_eq!(answer["error"]["code"], -32001, "{method}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("gone-cfg"), "{method}: {message}");
    }
    let uri = format!("/a2a/v1/tasks/{id}/pushNotificationConfigs/gone-cfg");
    for method in ["GET", "DELETE"] {
        let (status, text) = as_caller(&app, "alice", method, &uri, Value::Null).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method}: {text}");
        let (reason, detail) = reason_and_detail(&text);
        assert_eq!(reason, "TASK_NOT_FOUND", "{text}");
        assert!(detail.contains("gone-cfg"), "{detail}");
    }
    // The config that exists is still there, and gone once deleted.
    let kept = json!({"taskId": id, "id": "kept"});
    let got = rpc_as(&app, "alice", "GetTaskPushNotificationConfig", kept.clone()).await;
    assert_eq!(got["result"]["id"], "kept", "{got}");
    let uri = format!("/a2a/v1/tasks/{id}/pushNotificationConfigs/kept");
    assert_eq!(
        as_caller(&app, "alice", "DELETE", &uri, Value::Null)
            .await
            .0,
        StatusCode::OK
    );
    let again = rpc_as(&app, "alice", "GetTaskPushNotificationConfig", kept).await;
    assert_eq!(again["error"]["code"], -32001, "{again}");
    // Another principal's task is not found, whatever config it names.
    for config in ["kept", "gone-cfg"] {
        let params = json!({"taskId": id, "id": config});
        let foreign = rpc_as(&app, "bob", "GetTaskPushNotificationConfig", params).await;
        assert_eq!(foreign["error"]["code"], -32001, "{foreign}");
        assert!(!foreign.to_string().contains(config), "{foreign}");
        let uri = format!("/a2a/v1/tasks/{id}/pushNotificationConfigs/{config}");
        let (status, text) = as_caller(&app, "bob", "DELETE", &uri, Value::Null).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
        assert!(!text.contains(config), "{text}");
    }
}

/// A v0.3 JSON-RPC call (no `A2A-Version`) as `who`: the body text.
async fn rpc03_as(app: &Router, who: &str, method: &str, params: Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    let request = Request::builder()
        .method("POST")
        .uri("/a2a")
        .header("content-type", "application/json")
        .header("X-API-Key", api_key(who))
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn v03_keeps_its_answers_for_finished_tasks_and_missing_configs() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_with_keys(dir.path()).await;
    let send = json!({"message": {"kind": "message", "messageId": Uuid::new_v4().to_string(),
        "role": "user", "parts": [{"kind": "text", "text": "hi"}]}});
    let text = rpc03_as(&app, "alice", "message/send", send).await;
    let sent: Value = serde_json::from_str(&text).unwrap();
    let id = sent["result"]["id"].as_str().unwrap().to_string();
    let text = rpc03_as(&app, "alice", "tasks/resubscribe", json!({"id": id})).await;
    let states: Vec<Value> = events(&text)
        .iter()
        .map(|e| e["result"]["status"]["state"].clone())
        .collect();
    assert_eq!(states, [json!("completed"), json!("completed")], "{text}");
    let text = rpc03_as(&app, "bob", "tasks/resubscribe", json!({"id": id})).await;
    assert_eq!(events(&text)[0]["error"]["code"], -32001, "{text}");
    for method in ["get", "delete"] {
        let params = json!({"id": id, "pushNotificationConfigId": "gone-cfg"});
        let method = format!("tasks/pushNotificationConfig/{method}");
        let answer: Value =
            serde_json::from_str(&rpc03_as(&app, "alice", &method, params).await).unwrap();
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
    }
}
