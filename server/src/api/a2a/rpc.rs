//! The JSON-RPC 2.0 wire of the A2A server, as pure functions: the
//! envelope (-32700 / -32600), the params of each method (-32602 with the
//! field named, -32001 for a task id that is not a UUID), approval
//! decisions in continuation messages, and the response objects.

use asg_shared::a2a::{
    A2aMessage, JsonRpcError, JsonRpcResponse, MessageRole, MessageSendParams, Part,
    PushNotificationConfig, TaskQueryParams, approval_keys, error_codes,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use uuid::Uuid;

use super::card::MODES;

/// A JSON-RPC error before it is wrapped in a response.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// See [`error_codes`].
    pub code: i64,
    /// What is wrong.
    pub message: String,
    /// Set when the agent is overloaded: the HTTP answer is 503 with
    /// this `Retry-After`, whatever the binding.
    pub retry_after_secs: Option<u64>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            retry_after_secs: None,
        }
    }

    /// The agent has no place for the request now; retry after `secs`.
    pub(crate) fn overloaded(message: impl Into<String>, secs: u64) -> RpcError {
        RpcError {
            retry_after_secs: Some(secs),
            ..RpcError::new(error_codes::INTERNAL_ERROR, message)
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(error_codes::INVALID_PARAMS, message)
    }

    pub(crate) fn task_not_found(raw: &str) -> RpcError {
        RpcError::new(
            error_codes::TASK_NOT_FOUND,
            format!("task {raw:?} not found"),
        )
    }
}

/// Splits a body into id, method and params, or says what is wrong (with
/// the id to answer with).
pub(crate) fn parse_envelope(
    body: &[u8],
) -> Result<(Value, String, Option<Value>), (Value, RpcError)> {
    let invalid =
        |id: Value, message: &str| Err((id, RpcError::new(error_codes::INVALID_REQUEST, message)));
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        let message = if crate::api::extract::is_blank(body) {
            "parse error: the body is empty; a JSON-RPC request object is expected".to_string()
        } else {
            format!("parse error: the body is not valid JSON: {e}")
        };
        (
            Value::Null,
            RpcError::new(error_codes::PARSE_ERROR, message),
        )
    })?;
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return invalid(
                Value::Null,
                "batch requests are not supported; send one request object",
            );
        }
        _ => {
            return invalid(
                Value::Null,
                "invalid request: a JSON-RPC request object is expected",
            );
        }
    };
    let id = match object.get("id") {
        None => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id.clone(),
        Some(_) => {
            return invalid(
                Value::Null,
                "invalid request: `id` must be a string, a number or null",
            );
        }
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id, "invalid request: `jsonrpc` must be \"2.0\"");
    }
    let method = match object.get("method") {
        Some(Value::String(method)) => method.clone(),
        Some(_) => return invalid(id, "invalid request: `method` must be a string"),
        None => return invalid(id, "invalid request: `method` is missing"),
    };
    let params = object.get("params").filter(|p| !p.is_null()).cloned();
    Ok((id, method, params))
}

/// Validated `message/send` / `message/stream` params.
pub(crate) struct SendRequest {
    pub message: A2aMessage,
    pub history_length: Option<usize>,
    /// `configuration.pushNotificationConfig`: registered for the task.
    pub push: Option<PushNotificationConfig>,
}

/// Parses `message/send` params with a message naming each problem.
pub(crate) fn parse_send(params: Option<Value>) -> Result<SendRequest, RpcError> {
    let params = params
        .ok_or_else(|| RpcError::invalid_params("params are required: {\"message\": {...}}"))?;
    let message = params
        .get("message")
        .ok_or_else(|| RpcError::invalid_params("params.message is required"))?;
    let fields = message
        .as_object()
        .ok_or_else(|| RpcError::invalid_params("params.message must be an object"))?;
    for key in ["messageId", "role", "parts"] {
        if !fields.contains_key(key) {
            return Err(RpcError::invalid_params(format!(
                "params.message.{key} is required"
            )));
        }
    }
    let params: MessageSendParams = typed(params)?;
    let message = params.message;
    if message.parts.is_empty() {
        return Err(RpcError::invalid_params(
            "params.message.parts must not be empty",
        ));
    }
    if message.role != MessageRole::User {
        return Err(RpcError::invalid_params(
            "params.message.role must be \"user\"",
        ));
    }
    if message.message_id.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "params.message.messageId must not be empty",
        ));
    }
    let config = params.configuration.unwrap_or_default();
    if let Some(modes) = config.accepted_output_modes.filter(|m| !m.is_empty())
        && !modes
            .iter()
            .any(|m| MODES.contains(&m.as_str()) || ["text", "text/*", "*/*"].contains(&m.as_str()))
    {
        return Err(RpcError::new(
            error_codes::CONTENT_TYPE_NOT_SUPPORTED,
            format!(
                "none of the accepted output modes {modes:?} is produced; this agent answers in {MODES:?}"
            ),
        ));
    }
    let history_length =
        history_length(config.history_length, "params.configuration.historyLength")?;
    Ok(SendRequest {
        message,
        history_length,
        push: config.push_notification_config,
    })
}

/// Parses `tasks/*` params: the task id (a known UUID) and historyLength.
pub(crate) fn parse_query(params: Option<Value>) -> Result<(Uuid, Option<usize>), RpcError> {
    let params = params
        .ok_or_else(|| RpcError::invalid_params("params are required: {\"id\": \"<task id>\"}"))?;
    if params.get("id").is_none() {
        return Err(RpcError::invalid_params("params.id is required"));
    }
    let query: TaskQueryParams = typed(params)?;
    let history_length = history_length(query.history_length, "params.historyLength")?;
    let id = Uuid::parse_str(&query.id).map_err(|_| RpcError::task_not_found(&query.id))?;
    Ok((id, history_length))
}

pub(crate) fn typed<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    if !params.is_object() {
        return Err(RpcError::invalid_params("params must be an object"));
    }
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        RpcError::invalid_params(format!("params.{path}: {}", e.into_inner()))
    })
}

fn history_length(value: Option<i64>, field: &str) -> Result<Option<usize>, RpcError> {
    value
        .map(|n| {
            usize::try_from(n).map_err(|_| {
                RpcError::invalid_params(format!("{field} must not be negative, got {n}"))
            })
        })
        .transpose()
}

/// `{"jsonrpc": "2.0", "id": ..., "result": ...}`.
pub(crate) fn result_response(id: Value, result: &impl serde::Serialize) -> JsonRpcResponse {
    match serde_json::to_value(result) {
        Ok(result) => JsonRpcResponse {
            jsonrpc: "2.0".into(),
            id,
            result: Some(result),
            error: None,
        },
        Err(e) => error_response(
            id,
            RpcError::new(error_codes::INTERNAL_ERROR, format!("internal error: {e}")),
        ),
    }
}

/// `{"jsonrpc": "2.0", "id": ..., "error": {...}}`.
pub(crate) fn error_response(id: Value, error: RpcError) -> JsonRpcResponse {
    JsonRpcResponse {
        jsonrpc: "2.0".into(),
        id,
        result: None,
        error: Some(JsonRpcError {
            code: error.code,
            message: error.message,
            data: None,
        }),
    }
}

/// An approval decision read from a continuation: `Ok(None)` when the
/// message is not one, `Err` when its data part is malformed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Approve (run the call) or reject.
    pub approve: bool,
    /// Why, if the client said.
    pub reason: Option<String>,
    /// The approval the client meant, if it named one.
    pub approval_uuid: Option<String>,
}

/// An answer to a question read from a continuation.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The answer, or decline / cancel.
    pub reply: asg_shared::QuestionReply,
    /// The question the client meant, if it named one (`approval_uuid`).
    pub uuid: Option<String>,
}

/// Reads an answer: a data part with `answer` (a string or an object) or
/// `action` (`decline`, `cancel`), optionally naming its `approval_uuid`.
/// `Ok(None)` when the message has none.
pub fn reply(message: &A2aMessage) -> Result<Option<Reply>, String> {
    use asg_shared::QuestionReply;
    let mut found = None;
    for part in &message.parts {
        let Part::Data { data, .. } = part else {
            continue;
        };
        let answer = data.get(approval_keys::ANSWER);
        let action = data
            .get(approval_keys::ACTION)
            .map(|a| a.as_str().map(str::trim));
        let reply = match (answer, action) {
            (None, None) => continue,
            (Some(_), Some(_)) => return Err("give `answer` or `action`, not both".into()),
            (Some(answer), None) => QuestionReply::Accept {
                answer: answer.clone(),
            },
            (None, Some(Some("decline"))) => QuestionReply::Decline,
            (None, Some(Some("cancel"))) => QuestionReply::Cancel,
            (None, Some(other)) => {
                return Err(format!(
                    "data part field `action` must be \"decline\" or \"cancel\", got {other:?}"
                ));
            }
        };
        if found.is_some() {
            return Err("the message holds several answers; send one message per question".into());
        }
        found = Some(Reply {
            reply,
            uuid: data
                .get(approval_keys::APPROVAL_UUID)
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }
    Ok(found)
}

/// Reads a decision: a data part with a boolean `approved` (optional
/// `reason`, `approval_uuid`), or a whole text of approved / approve / yes
/// or rejected / reject / no (case-insensitive, trimmed).
pub fn decision(message: &A2aMessage) -> Result<Option<Decision>, String> {
    let decisions = message
        .parts
        .iter()
        .filter(
            |p| matches!(p, Part::Data { data, .. } if data.contains_key(approval_keys::APPROVED)),
        )
        .count();
    if decisions > 1 {
        return Err(format!(
            "the message holds {decisions} decisions; send one message per approval, each naming its approval_uuid"
        ));
    }
    for part in &message.parts {
        let Part::Data { data, .. } = part else {
            continue;
        };
        let Some(approved) = data.get(approval_keys::APPROVED) else {
            continue;
        };
        let approve = approved.as_bool().ok_or_else(|| {
            format!("data part field `approved` must be a boolean, got {approved}")
        })?;
        let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_string);
        return Ok(Some(Decision {
            approve,
            reason: text(approval_keys::REASON),
            approval_uuid: text(approval_keys::APPROVAL_UUID),
        }));
    }
    let text = message.text();
    let word = text
        .trim()
        .trim_end_matches(['.', '!'])
        .trim()
        .to_ascii_lowercase();
    let approve = match word.as_str() {
        "approved" | "approve" | "yes" => true,
        "rejected" | "reject" | "no" => false,
        _ => return Ok(None),
    };
    Ok(Some(Decision {
        approve,
        reason: None,
        approval_uuid: None,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn user(parts: Vec<Part>) -> A2aMessage {
        A2aMessage {
            role: MessageRole::User,
            parts,
            message_id: "m".into(),
            task_id: None,
            context_id: None,
            reference_task_ids: Vec::new(),
            metadata: None,
            kind: "message".into(),
        }
    }

    #[test]
    fn decisions_from_text_and_data() {
        let said = |text: &str| {
            decision(&user(vec![Part::text(text)]))
                .unwrap()
                .map(|d| d.approve)
        };
        for yes in ["approved", " Approve ", "YES", "yes."] {
            assert_eq!(said(yes), Some(true), "{yes}");
        }
        for no in ["rejected", "Reject", "no", "NO!"] {
            assert_eq!(said(no), Some(false), "{no}");
        }
        for other in ["yes please do it", "list resources", ""] {
            assert_eq!(said(other), None, "{other}");
        }
        let data = |v: Value| Part::data(v.as_object().cloned().unwrap());
        let d = decision(&user(vec![data(
            json!({"approved": false, "reason": "not now"}),
        )]))
        .unwrap()
        .unwrap();
        assert!(!d.approve);
        assert_eq!(d.reason.as_deref(), Some("not now"));
        assert!(decision(&user(vec![data(json!({"approved": "yes"}))])).is_err());
        assert_eq!(
            decision(&user(vec![data(json!({"other": 1}))])).unwrap(),
            None
        );
    }
}
