//! The two operations the client needs (send a message, read a task) as
//! each route writes them, and their answers read back as the v0.3 task
//! model: v0.3 JSON-RPC (`message/send`, `tasks/get`), v1.0 JSON-RPC
//! (`SendMessage`, `GetTask`, header `A2A-Version: 1.0`) and v1.0
//! HTTP+JSON (`POST {base}/message:send`, `GET {base}/tasks/{id}`, errors
//! as RFC 9457 problem details). Pure: no I/O.

use asg_shared::a2a::v1::{self, StreamResponse};
use asg_shared::a2a::{A2aMessage, JsonRpcResponse, MessageSendParams, Task, from_v1};
use serde_json::{Value, json};

use super::route::{Binding, Route, Version};

/// What to do.
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    /// Send a message (a new task, or a continuation).
    Send(&'a A2aMessage),
    /// Read a task, without its history.
    GetTask(&'a str),
}

/// A request ready to go out.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `POST` or `GET`.
    pub method: reqwest::Method,
    /// Where.
    pub url: String,
    /// The JSON body (`None` for a `GET`).
    pub body: Option<Value>,
    /// The `A2A-Version` header to send, if any.
    pub version: Option<&'static str>,
    /// How spans and logs name the operation (the method name).
    pub name: &'static str,
}

/// What a sub-agent answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A task.
    Task(Task),
    /// A direct reply (no task).
    Message(A2aMessage),
}

/// Why an answer was not a usable result.
#[derive(Debug, Clone, PartialEq)]
pub enum WireError {
    /// The body could not be read as the protocol's answer.
    Invalid(String),
    /// A JSON-RPC error.
    Rpc { code: i64, message: String },
    /// An HTTP+JSON error status, with the problem's detail.
    Problem { status: u16, message: String },
}

/// The request for `op` on `route`.
pub fn request(route: &Route, op: Op<'_>) -> Result<Request, String> {
    match (route.version, route.binding) {
        (Version::V03, _) => Ok(jsonrpc(route, op, None)),
        (Version::V1, Binding::JsonRpc) => Ok(jsonrpc(route, op, Some(v1::PROTOCOL_VERSION))),
        (Version::V1, Binding::HttpJson) => http_json(route, op),
    }
}

fn jsonrpc(route: &Route, op: Op<'_>, version: Option<&'static str>) -> Request {
    let v1 = version.is_some();
    let (name, params) = match op {
        Op::Send(message) if v1 => ("SendMessage", json!(send_v1(message))),
        Op::Send(message) => ("message/send", json!(send_v03(message))),
        Op::GetTask(id) if v1 => ("GetTask", json!({"id": id, "historyLength": 0})),
        Op::GetTask(id) => ("tasks/get", json!({"id": id, "historyLength": 0})),
    };
    Request {
        method: reqwest::Method::POST,
        url: route.url.clone(),
        body: Some(json!({
            "jsonrpc": "2.0",
            "id": uuid::Uuid::new_v4().to_string(),
            "method": name,
            "params": params,
        })),
        version,
        name,
    }
}

fn http_json(route: &Route, op: Op<'_>) -> Result<Request, String> {
    let mut url = reqwest::Url::parse(&route.url).map_err(|e| format!("bad URL: {e}"))?;
    let (method, name, body) = match op {
        Op::Send(message) => {
            push_segments(&mut url, &["message:send"])?;
            (
                reqwest::Method::POST,
                "SendMessage",
                Some(json!(send_v1(message))),
            )
        }
        Op::GetTask(id) => {
            push_segments(&mut url, &["tasks", id])?;
            url.query_pairs_mut().append_pair("historyLength", "0");
            (reqwest::Method::GET, "GetTask", None)
        }
    };
    Ok(Request {
        method,
        url: url.to_string(),
        body,
        version: Some(v1::PROTOCOL_VERSION),
        name,
    })
}

/// Appends path segments, each percent-encoded; a task id that would
/// move up the path (`.`, `..`, empty) is refused.
fn push_segments(url: &mut reqwest::Url, segments: &[&str]) -> Result<(), String> {
    if let Some(bad) = segments.iter().find(|s| matches!(**s, "" | "." | "..")) {
        return Err(format!("refused to put {bad:?} in a URL path"));
    }
    url.path_segments_mut()
        .map_err(|()| "the URL cannot have a path".to_string())?
        .pop_if_empty()
        .extend(segments);
    Ok(())
}

fn send_v03(message: &A2aMessage) -> MessageSendParams {
    MessageSendParams {
        message: message.clone(),
        configuration: None,
        metadata: None,
    }
}

fn send_v1(message: &A2aMessage) -> v1::SendMessageRequest {
    v1::SendMessageRequest {
        message: v1::Message::from(message),
        configuration: None,
        metadata: None,
    }
}

/// Reads a successful (2xx) answer.
pub fn read(route: &Route, op: Op<'_>, body: &[u8]) -> Result<Answer, WireError> {
    let result = match route.binding {
        Binding::JsonRpc => {
            let rpc: JsonRpcResponse = serde_json::from_slice(body).map_err(invalid)?;
            if let Some(error) = rpc.error {
                return Err(WireError::Rpc {
                    code: error.code,
                    message: error.message,
                });
            }
            rpc.result
                .ok_or_else(|| WireError::Invalid("no result".into()))?
        }
        Binding::HttpJson => serde_json::from_slice(body).map_err(invalid)?,
    };
    match (route.version, op) {
        (Version::V03, Op::Send(_))
            if result.get("kind").and_then(Value::as_str) == Some("message") =>
        {
            Ok(Answer::Message(
                serde_json::from_value(result).map_err(invalid)?,
            ))
        }
        (Version::V03, _) => Ok(Answer::Task(
            serde_json::from_value(result).map_err(invalid)?,
        )),
        (Version::V1, Op::Send(_)) => match serde_json::from_value(result).map_err(invalid)? {
            StreamResponse::Task(task) => Ok(Answer::Task(from_v1::task(task))),
            StreamResponse::Message(message) => Ok(Answer::Message(from_v1::message(message))),
            _ => Err(WireError::Invalid(
                "a send answered with a stream event, not a task or a message".into(),
            )),
        },
        (Version::V1, Op::GetTask(_)) => {
            let task: v1::Task = serde_json::from_value(result).map_err(invalid)?;
            Ok(Answer::Task(from_v1::task(task)))
        }
    }
}

/// Reads an HTTP+JSON error answer (RFC 9457: `detail`, else `title`;
/// some servers also send `error.message`).
pub fn problem(status: u16, body: &[u8]) -> WireError {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
    let message = text(&value["detail"])
        .or_else(|| text(&value["title"]))
        .or_else(|| text(&value["error"]["message"]))
        .unwrap_or_else(|| format!("HTTP {status}"));
    WireError::Problem {
        status,
        message: cut(&message, 300),
    }
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

fn invalid(error: serde_json::Error) -> WireError {
    WireError::Invalid(error.to_string())
}

#[cfg(test)]
mod tests;
