//! A2A v1.0 on the same agent as v0.3: the JSON-RPC methods (on `/a2a`,
//! recognised by their names, which v0.3 does not use), the `A2A-Version`
//! header, and the HTTP+JSON binding ([`rest`]).
//!
//! Every v1.0 method is its v0.3 twin with the wire translated at the
//! edge: the params become the v0.3 params (a v1.0 message becomes the
//! engine's message, part by part), the v0.3 handler runs (the same
//! continuation rules, the same engine calls, the same ownership: another
//! principal's task is not found), and its task is answered in the v1.0
//! form (`asg_shared::a2a::v1`). Only `ListTasks` is new ([`list`]).

use asg_shared::a2a::v1::{
    self as wire, ListTaskPushNotificationConfigsResponse, SendMessageRequest, StreamResponse,
    TaskPushConfigRequest, TaskPushNotificationConfig,
};
use asg_shared::a2a::{A2aMessage, MessageSendConfiguration, MessageSendParams, error_codes};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use serde_json::{Value, json};

use super::{Call, RpcError, error_answer, json_response, result_response, tag, typed};

pub mod list;
pub mod rest;

pub use asg_shared::a2a::v1::PROTOCOL_VERSION;

/// The request and response header naming the protocol version.
pub const VERSION_HEADER: &str = "a2a-version";

/// The v1.0 JSON-RPC method names (also the metrics labels of v1.0).
pub(crate) const METHODS: [&str; 10] = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
];

/// Whether `method` is a v1.0 method.
pub(crate) fn is_method(method: &str) -> bool {
    METHODS.contains(&method)
}

/// Checks the `A2A-Version` header: absent (v0.3 by the specification;
/// the method name decides here), `0.3` or `1.0` (a patch number is
/// ignored); anything else is `VersionNotSupportedError` (-32009).
pub(crate) fn check_version(headers: &HeaderMap) -> Result<(), RpcError> {
    let Some(raw) = headers.get(VERSION_HEADER) else {
        return Ok(());
    };
    let text = raw.to_str().unwrap_or("").trim();
    let mut numbers = text.split('.');
    let major_minor = (numbers.next(), numbers.next().unwrap_or("0"));
    match major_minor {
        (Some("1"), "0") | (Some("0"), "3") => Ok(()),
        _ => Err(RpcError::new(
            error_codes::VERSION_NOT_SUPPORTED,
            format!("A2A-Version {text:?} is not supported; this agent serves 1.0 and 0.3"),
        )),
    }
}

/// Names the version served in the response's `A2A-Version` header.
pub(crate) fn versioned(mut response: Response, version: &'static str) -> Response {
    response
        .headers_mut()
        .insert(VERSION_HEADER, HeaderValue::from_static(version));
    response
}

/// Runs one v1.0 JSON-RPC method (the name is one of [`METHODS`]).
pub(crate) async fn dispatch(call: Call, method: &str, params: Option<Value>) -> Response {
    let id = call.id.clone();
    let result = match method {
        "SendStreamingMessage" => {
            return match send_params(params) {
                Ok(params) => super::stream::message_stream(call, Some(params)).await,
                Err(error) => super::stream::sse_error(id, call.wire, error),
            };
        }
        "SubscribeToTask" => return super::stream::resubscribe(call, params).await,
        "ListTasks" => {
            return match list::list_tasks(&call, params).await {
                Ok(page) => json_response(result_response(id, &page), None),
                Err(error) => error_answer(id, error),
            };
        }
        "SendMessage" => match send_params(params) {
            Ok(params) => super::message_send(&call, Some(params))
                .await
                .map(|(c, task)| (c, to_value(&StreamResponse::Task((&task).into())))),
            Err(error) => Err(error),
        },
        "GetTask" => task_answer(super::tasks_get(&call, params).await),
        "CancelTask" => task_answer(super::tasks_cancel(&call, params).await),
        push => push_method(&call, push, params).await,
    };
    match result {
        Ok((conversation, value)) => {
            json_response(result_response(id, &value), Some(tag(&conversation)))
        }
        Err(error) => error_answer(id, error),
    }
}

pub(crate) type Answered = Result<(std::sync::Arc<asg_shared::Conversation>, Value), RpcError>;

fn task_answer(answer: super::Answer) -> Answered {
    answer.map(|(c, task)| (c, to_value(&wire::Task::from(&task))))
}

fn to_value(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// `SendMessage` params as the v0.3 `message/send` params.
pub(crate) fn send_params(params: Option<Value>) -> Result<Value, RpcError> {
    let params = params
        .ok_or_else(|| RpcError::invalid_params("params are required: {\"message\": {...}}"))?;
    let request: SendMessageRequest = typed(params)?;
    let message = A2aMessage::try_from(request.message)
        .map_err(|e| RpcError::invalid_params(format!("params.message.{e}")))?;
    let config = request.configuration.unwrap_or_default();
    let push = match config.task_push_notification_config {
        Some(value) => {
            let config: TaskPushNotificationConfig = typed(value)?;
            Some(config.to_v03().push_notification_config)
        }
        None => None,
    };
    let params = MessageSendParams {
        message,
        configuration: Some(MessageSendConfiguration {
            accepted_output_modes: Some(config.accepted_output_modes),
            blocking: Some(!config.return_immediately),
            history_length: config.history_length,
            push_notification_config: push,
        }),
        metadata: request.metadata,
    };
    serde_json::to_value(params)
        .map_err(|e| RpcError::new(error_codes::INTERNAL_ERROR, format!("internal error: {e}")))
}

/// The push config methods, on the v0.3 ones (configs by `id` within
/// their task).
pub(crate) async fn push_method(call: &Call, method: &str, params: Option<Value>) -> Answered {
    let params = params.ok_or_else(|| RpcError::invalid_params("params are required"))?;
    if method == "CreateTaskPushNotificationConfig" {
        let config: TaskPushNotificationConfig = typed(params)?;
        let v03 = serde_json::to_value(config.to_v03()).unwrap_or(Value::Null);
        let (c, stored) =
            super::push::dispatch(call, "tasks/pushNotificationConfig/set", Some(v03)).await?;
        return Ok((c, from_v03_config(stored)?));
    }
    let request: TaskPushConfigRequest = typed(params)?;
    let mut query = json!({"id": request.task_id});
    if !request.id.is_empty() {
        query["pushNotificationConfigId"] = Value::from(request.id);
    }
    let (v03_method, shape): (&str, Shape) = match method {
        "GetTaskPushNotificationConfig" => ("tasks/pushNotificationConfig/get", from_v03_config),
        "ListTaskPushNotificationConfigs" => ("tasks/pushNotificationConfig/list", from_v03_list),
        _ => ("tasks/pushNotificationConfig/delete", |_| Ok(json!({}))),
    };
    let (c, result) = super::push::dispatch(call, v03_method, Some(query)).await?;
    Ok((c, shape(result)?))
}

/// Words a v0.3 push result in the v1.0 form.
type Shape = fn(Value) -> Result<Value, RpcError>;

fn from_v03_config(value: Value) -> Result<Value, RpcError> {
    let config: asg_shared::a2a::TaskPushNotificationConfig = typed(value)?;
    Ok(to_value(&TaskPushNotificationConfig::from_v03(&config)))
}

fn from_v03_list(value: Value) -> Result<Value, RpcError> {
    let configs: Vec<asg_shared::a2a::TaskPushNotificationConfig> = serde_json::from_value(value)
        .map_err(|e| {
        RpcError::new(error_codes::INTERNAL_ERROR, format!("internal error: {e}"))
    })?;
    Ok(to_value(&ListTaskPushNotificationConfigsResponse {
        configs: configs
            .iter()
            .map(TaskPushNotificationConfig::from_v03)
            .collect(),
        next_page_token: String::new(),
    }))
}

#[cfg(test)]
mod tests;
