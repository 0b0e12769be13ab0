//! A2A JSON-RPC on `POST /a2a` for the scenario tests: one request shape,
//! one call helper, and the `message/send` parameters most tests send.

use asg_shared::a2a::JsonRpcResponse;
use serde_json::{Value, json};

use crate::Agent;

/// The JSON-RPC request every helper sends (id 1).
pub fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// One JSON-RPC call with extra headers (credentials); status and body as
/// they came, for tests about refusals.
pub async fn call_with(
    agent: &Agent,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> (u16, Value) {
    agent
        .post_with("/a2a", request(method, params).to_string(), headers)
        .await
}

/// One JSON-RPC call with extra headers; the whole response, which must
/// be HTTP 200 and a JSON-RPC 2.0 response to this request (its id, a
/// `result` or an `error`).
pub async fn rpc_with(
    agent: &Agent,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> Value {
    let (status, body) = call_with(agent, headers, method, params).await;
    assert_eq!(status, 200, "{method}: {body}");
    let response: JsonRpcResponse = serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("{method}: not a JSON-RPC response ({e}): {body}"));
    assert_eq!(response.jsonrpc, "2.0", "{method}: {body}");
    assert_eq!(response.id, json!(1), "{method}: {body}");
    // `result` may be null (a delete), so the keys are what count.
    assert!(
        body.get("result").is_some() != response.error.is_some(),
        "{method}: neither or both of result and error: {body}"
    );
    body
}

/// One JSON-RPC call; the whole response (see [`rpc_with`]).
pub async fn rpc(agent: &Agent, method: &str, params: Value) -> Value {
    rpc_with(agent, &[], method, params).await
}

/// `message/send` parameters: a user message with one text part, a new
/// message id, and `taskId` when it continues `task`.
pub fn send_params(text: &str, task: Option<&str>) -> Value {
    let mut message = json!({"role": "user", "kind": "message",
        "messageId": uuid::Uuid::new_v4().to_string(),
        "parts": [{"kind": "text", "text": text}]});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({ "message": message })
}
