//! The A2A v1.0 HTTP+JSON binding under [`PREFIX`] (`/a2a/v1`):
//! `POST /message:send`, `POST /message:stream`, `GET /tasks`,
//! `GET /tasks/{id}`, `POST /tasks/{id}:cancel`, `GET|POST
//! /tasks/{id}:subscribe`, and the push configs of a task:
//! `POST|GET /tasks/{id}/pushNotificationConfigs` (create, list) and
//! `GET|DELETE /tasks/{id}/pushNotificationConfigs/{configId}`. The same handlers as the JSON-RPC methods run
//! behind it ([`super::dispatch`]'s targets); only the framing differs.
//!
//! A `{id}:verb` segment is one path parameter to axum (a `:` is no
//! separator), so the task routes take the whole segment and split the
//! verb off themselves. Errors are RFC 9457 problem details
//! (`application/problem+json`: `type`, `title`, `status`, `detail`)
//! that also carry the `error` member (`google.rpc.Status` with an
//! `ErrorInfo` reason such as `TASK_NOT_FOUND`) the official SDKs read.
//! The methods' futures are boxed, as on `/a2a`: large futures stay off
//! the connection task's stack.

use asg_shared::a2a::error_codes;
use asg_shared::a2a::v1::{StreamResponse, Task};
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde_json::{Map, Value, json};

use super::super::{Call, RpcError, RpcOutcome, Wire, call_for, counted, tag};
use super::{PROTOCOL_VERSION, check_version, send_params, versioned};
use crate::api::AppState;
use crate::api::extract::Ctx;
use crate::notify::a2a_push::PushService;

/// Where the binding lives, relative to the public base URL.
pub const PREFIX: &str = "/a2a/v1";

/// The binding's routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(&format!("{PREFIX}/message:send"), post(message_send))
        .route(&format!("{PREFIX}/message:stream"), post(message_stream))
        .route(&format!("{PREFIX}/tasks"), get(tasks_list))
        .route(
            &format!("{PREFIX}/tasks/{{id}}"),
            get(tasks_get).post(tasks_post),
        )
        .route(
            &format!("{PREFIX}/tasks/{{id}}/pushNotificationConfigs"),
            get(push_configs).post(push_configs),
        )
        .route(
            &format!("{PREFIX}/tasks/{{id}}/pushNotificationConfigs/{{config}}"),
            get(push_config).delete(push_config),
        )
}

/// What every handler extracts.
type Push = Option<Extension<PushService>>;

/// The call of a REST request, or the problem when its `A2A-Version` is
/// not served (only 1.0 here; an absent header is taken as 1.0).
fn rest_call(
    state: AppState,
    push: Push,
    ctx: Ctx,
    headers: &HeaderMap,
) -> Result<Call, Box<Response>> {
    let asks_v03 = headers
        .get(super::VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().starts_with("0."));
    let refused = match check_version(headers) {
        Err(error) => Some(error),
        Ok(()) if asks_v03 => Some(RpcError::new(
            error_codes::VERSION_NOT_SUPPORTED,
            "this HTTP+JSON binding serves A2A 1.0; v0.3 is served over JSON-RPC at /a2a",
        )),
        Ok(()) => None,
    };
    match refused {
        Some(error) => Err(Box::new(finish("invalid", problem(&error)))),
        None => Ok(call_for(
            state,
            push,
            ctx.0,
            headers,
            Value::Null,
            Wire::V1Rest,
        )),
    }
}

async fn message_send(
    State(state): State<AppState>,
    push: Push,
    ctx: Ctx,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let call = match rest_call(state, push, ctx, &headers) {
        Ok(call) => call,
        Err(refused) => return *refused,
    };
    let result = match body_params(&body).and_then(|b| send_params(Some(b))) {
        Ok(params) => Box::pin(super::super::message_send(&call, Some(params))).await,
        Err(error) => Err(error),
    };
    let response = match result {
        Ok((conversation, task)) => {
            let mut response = ok(&StreamResponse::Task((&task).into()));
            response.extensions_mut().insert(tag(&conversation));
            response
        }
        Err(error) => problem(&error),
    };
    finish("SendMessage", response)
}

async fn message_stream(
    State(state): State<AppState>,
    push: Push,
    ctx: Ctx,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let call = match rest_call(state, push, ctx, &headers) {
        Ok(call) => call,
        Err(refused) => return *refused,
    };
    let response = match body_params(&body).and_then(|b| send_params(Some(b))) {
        Ok(params) => Box::pin(super::super::stream::message_stream(call, Some(params))).await,
        Err(error) => problem(&error),
    };
    finish("SendStreamingMessage", response)
}

async fn tasks_list(
    State(state): State<AppState>,
    push: Push,
    ctx: Ctx,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let call = match rest_call(state, push, ctx, &headers) {
        Ok(call) => call,
        Err(refused) => return *refused,
    };
    let response = match super::list::list_tasks(&call, Some(query_params(query.as_deref()))).await
    {
        Ok(page) => ok(&page),
        Err(error) => problem(&error),
    };
    finish("ListTasks", response)
}

/// `GET /tasks/{id}` and `GET /tasks/{id}:subscribe`.
async fn tasks_get(
    State(state): State<AppState>,
    push: Push,
    ctx: Ctx,
    headers: HeaderMap,
    Path(segment): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let call = match rest_call(state, push, ctx, &headers) {
        Ok(call) => call,
        Err(refused) => return *refused,
    };
    if let Some(id) = segment.strip_suffix(":subscribe") {
        return subscribe(call, id).await;
    }
    if segment.contains(':') {
        return finish("unknown", problem(&no_such_method("GET", &segment)));
    }
    let mut params = query_params(query.as_deref());
    params["id"] = Value::from(segment);
    let response = match super::super::tasks_get(&call, Some(params)).await {
        Ok((conversation, task)) => task_response(&conversation, &task),
        Err(error) => problem(&error),
    };
    finish("GetTask", response)
}

/// `POST /tasks/{id}:cancel` and `POST /tasks/{id}:subscribe`. The body
/// (the SDKs send the request object, whose id the path already gives)
/// is read whole even though unused: a connection whose request body is
/// left unread is closed after the answer, and a client reusing it fails.
async fn tasks_post(
    State(state): State<AppState>,
    push: Push,
    ctx: Ctx,
    headers: HeaderMap,
    Path(segment): Path<String>,
    _body: Bytes,
) -> Response {
    let call = match rest_call(state, push, ctx, &headers) {
        Ok(call) => call,
        Err(refused) => return *refused,
    };
    if let Some(id) = segment.strip_suffix(":subscribe") {
        return subscribe(call, id).await;
    }
    let Some(id) = segment.strip_suffix(":cancel") else {
        return finish("unknown", problem(&no_such_method("POST", &segment)));
    };
    let response = match Box::pin(super::super::tasks_cancel(&call, Some(json!({"id": id})))).await
    {
        Ok((conversation, task)) => task_response(&conversation, &task),
        Err(error) => problem(&error),
    };
    finish("CancelTask", response)
}

/// A `{id}:verb` (or `{id}` alone) that names no method for `method`.
fn no_such_method(method: &str, segment: &str) -> RpcError {
    RpcError::new(
        error_codes::METHOD_NOT_FOUND,
        format!(
            "{method} {PREFIX}/tasks/{segment} is not a method; use GET /tasks/{{id}}, \
             POST /tasks/{{id}}:cancel or GET|POST /tasks/{{id}}:subscribe"
        ),
    )
}

/// `POST` (create: the body is the config) and `GET` (list) of a task's
/// push configs.
async fn push_configs(
    State(state): State<AppState>,
    push: Push,
    ctx: Ctx,
    headers: HeaderMap,
    method: Method,
    Path(task): Path<String>,
    body: Bytes,
) -> Response {
    let call = match rest_call(state, push, ctx, &headers) {
        Ok(call) => call,
        Err(refused) => return *refused,
    };
    let (name, params) = if method == Method::POST {
        let params = body_params(&body).map(|mut config| {
            config["taskId"] = Value::from(task);
            config
        });
        ("CreateTaskPushNotificationConfig", params)
    } else {
        (
            "ListTaskPushNotificationConfigs",
            Ok(json!({"taskId": task})),
        )
    };
    push_answer(&call, name, params).await
}

/// `GET` and `DELETE` of one push config.
async fn push_config(
    State(state): State<AppState>,
    push: Push,
    ctx: Ctx,
    headers: HeaderMap,
    method: Method,
    Path((task, config)): Path<(String, String)>,
) -> Response {
    let call = match rest_call(state, push, ctx, &headers) {
        Ok(call) => call,
        Err(refused) => return *refused,
    };
    let name = if method == Method::DELETE {
        "DeleteTaskPushNotificationConfig"
    } else {
        "GetTaskPushNotificationConfig"
    };
    let params = json!({"taskId": task, "id": config});
    push_answer(&call, name, Ok(params)).await
}

async fn push_answer(call: &Call, name: &'static str, params: Result<Value, RpcError>) -> Response {
    let result = match params {
        Ok(params) => super::push_method(call, name, Some(params)).await,
        Err(error) => Err(error),
    };
    let response = match result {
        Ok((conversation, value)) => {
            let mut response = ok(&value);
            response.extensions_mut().insert(tag(&conversation));
            response
        }
        Err(error) => problem(&error),
    };
    finish(name, response)
}

async fn subscribe(call: Call, id: &str) -> Response {
    let response = Box::pin(super::super::stream::resubscribe(
        call,
        Some(json!({"id": id})),
    ))
    .await;
    finish("SubscribeToTask", response)
}

fn task_response(
    conversation: &asg_shared::Conversation,
    task: &asg_shared::a2a::Task,
) -> Response {
    let mut response = ok(&Task::from(task));
    response.extensions_mut().insert(tag(conversation));
    response
}

/// Counts the request and names the version served.
fn finish(method: &'static str, response: Response) -> Response {
    versioned(
        counted(method, PROTOCOL_VERSION, response),
        PROTOCOL_VERSION,
    )
}

/// The body as the method's params.
fn body_params(body: &[u8]) -> Result<Value, RpcError> {
    serde_json::from_slice(body).map_err(|e| {
        RpcError::new(
            error_codes::PARSE_ERROR,
            format!("the body is not valid JSON: {e}"),
        )
    })
}

/// Query parameters as params: numbers and booleans typed, the rest
/// strings (`pageSize=5&status=TASK_STATE_COMPLETED`).
pub(crate) fn query_params(query: Option<&str>) -> Value {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query.unwrap_or("")).unwrap_or_default();
    let mut params = Map::new();
    for (key, value) in pairs {
        let typed = match key.as_str() {
            "pageSize" | "historyLength" => value
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or(Value::from(value)),
            "includeArtifacts" => value
                .parse::<bool>()
                .map(Value::from)
                .unwrap_or(Value::from(value)),
            _ => Value::from(value),
        };
        params.insert(key, typed);
    }
    Value::Object(params)
}

fn ok(body: &impl serde::Serialize) -> Response {
    let mut response = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        serde_json::to_vec(body).unwrap_or_default(),
    )
        .into_response();
    response
        .extensions_mut()
        .insert(RpcOutcome { error: false });
    response
}

/// The HTTP status and the `ErrorInfo` reason of an error: 503
/// `UNAVAILABLE` for an overloaded agent, else by its code.
fn status_and_reason(error: &RpcError) -> (StatusCode, &'static str) {
    if error.retry_after_secs.is_some() {
        return (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE");
    }
    status_of_code(error.code)
}

fn status_of_code(code: i64) -> (StatusCode, &'static str) {
    match code {
        error_codes::TASK_NOT_FOUND => (StatusCode::NOT_FOUND, "TASK_NOT_FOUND"),
        error_codes::TASK_NOT_CANCELABLE => (StatusCode::BAD_REQUEST, "TASK_NOT_CANCELABLE"),
        error_codes::PUSH_NOTIFICATION_NOT_SUPPORTED => {
            (StatusCode::BAD_REQUEST, "PUSH_NOTIFICATION_NOT_SUPPORTED")
        }
        error_codes::UNSUPPORTED_OPERATION => (StatusCode::BAD_REQUEST, "UNSUPPORTED_OPERATION"),
        error_codes::CONTENT_TYPE_NOT_SUPPORTED => {
            (StatusCode::BAD_REQUEST, "CONTENT_TYPE_NOT_SUPPORTED")
        }
        error_codes::VERSION_NOT_SUPPORTED => (StatusCode::BAD_REQUEST, "VERSION_NOT_SUPPORTED"),
        error_codes::METHOD_NOT_FOUND => (StatusCode::NOT_FOUND, "METHOD_NOT_FOUND"),
        error_codes::FORBIDDEN => (StatusCode::FORBIDDEN, "FORBIDDEN"),
        error_codes::INVALID_PARAMS => (StatusCode::BAD_REQUEST, "INVALID_PARAMS"),
        error_codes::INVALID_REQUEST | error_codes::PARSE_ERROR => {
            (StatusCode::BAD_REQUEST, "INVALID_REQUEST")
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR"),
    }
}

/// An error of this binding: RFC 9457 problem details (`type`, `title`,
/// `status`, `detail`), the `ErrorInfo` reason, and the `error` member the
/// official SDKs read (a `google.rpc.Status`).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = a2a::v1::Problem)]
pub struct Problem {
    /// Always `about:blank`: the status says what kind of error it is.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The HTTP status's reason phrase.
    pub title: &'static str,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong, for a person.
    pub detail: String,
    /// `TASK_NOT_FOUND`, `TASK_NOT_CANCELABLE`, `INVALID_PARAMS`,
    /// `VERSION_NOT_SUPPORTED`, `METHOD_NOT_FOUND`, `FORBIDDEN`,
    /// `PUSH_NOTIFICATION_NOT_SUPPORTED`, `UNSUPPORTED_OPERATION`,
    /// `CONTENT_TYPE_NOT_SUPPORTED`, `INVALID_REQUEST`, `UNAVAILABLE` (an
    /// overloaded agent, with `Retry-After`) or `INTERNAL_ERROR`.
    pub reason: &'static str,
    /// The same error as a `google.rpc.Status`.
    pub error: RpcStatus,
}

/// A `google.rpc.Status` with one `ErrorInfo`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = google::rpc::Status)]
pub struct RpcStatus {
    /// The HTTP status.
    pub code: u16,
    /// The gRPC code name (`NOT_FOUND`, `INVALID_ARGUMENT`, …).
    pub status: &'static str,
    /// What went wrong.
    pub message: String,
    /// One `ErrorInfo`.
    pub details: Vec<ErrorInfo>,
}

/// A `google.rpc.ErrorInfo`: the A2A error by its reason.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = google::rpc::ErrorInfo)]
pub struct ErrorInfo {
    /// `type.googleapis.com/google.rpc.ErrorInfo`.
    #[serde(rename = "@type")]
    pub type_url: &'static str,
    /// As [`Problem::reason`].
    pub reason: &'static str,
    /// `a2a-protocol.org`.
    pub domain: &'static str,
}

/// The problem details of an error (also the data of an SSE error event).
pub(crate) fn problem_body(error: &RpcError) -> Value {
    let (status, reason) = status_and_reason(error);
    let grpc_status = match status {
        StatusCode::NOT_FOUND => "NOT_FOUND",
        StatusCode::SERVICE_UNAVAILABLE => "UNAVAILABLE",
        StatusCode::FORBIDDEN => "PERMISSION_DENIED",
        StatusCode::INTERNAL_SERVER_ERROR => "INTERNAL",
        _ if reason.starts_with("INVALID") || reason == "CONTENT_TYPE_NOT_SUPPORTED" => {
            "INVALID_ARGUMENT"
        }
        _ => "FAILED_PRECONDITION",
    };
    let problem = Problem {
        kind: "about:blank",
        title: status.canonical_reason().unwrap_or("Error"),
        status: status.as_u16(),
        detail: error.message.clone(),
        reason,
        error: RpcStatus {
            code: status.as_u16(),
            status: grpc_status,
            message: error.message.clone(),
            details: vec![ErrorInfo {
                type_url: "type.googleapis.com/google.rpc.ErrorInfo",
                reason,
                domain: "a2a-protocol.org",
            }],
        },
    };
    serde_json::to_value(problem).unwrap_or(Value::Null)
}

/// An error as a problem-details response.
pub(crate) fn problem(error: &RpcError) -> Response {
    let (status, _) = status_and_reason(error);
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        )],
        problem_body(error).to_string(),
    )
        .into_response();
    if let Some(secs) = error.retry_after_secs {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response.extensions_mut().insert(RpcOutcome { error: true });
    response
}
