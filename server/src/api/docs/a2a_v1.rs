//! The OpenAPI entries of the A2A v1.0 HTTP+JSON binding under `/a2a/v1`
//! ([`crate::api::a2a::v1::rest`]): one per route and method, with the
//! request and response schemas of `asg_shared::a2a::v1` (named
//! `a2a.v1.*`, as the protocol's package) and the problem details every
//! error comes as. The functions are never called: they carry the
//! annotations.

#![allow(dead_code)]

use asg_shared::a2a::v1::{
    ListTaskPushNotificationConfigsResponse, ListTasksResponse, SendMessageRequest, StreamResponse,
    Task, TaskPushNotificationConfig,
};

use crate::api::a2a::v1::rest::Problem;

/// The errors of every operation, as `application/problem+json`.
#[derive(utoipa::IntoResponses)]
pub(super) enum Problems {
    /// Bad params (`INVALID_PARAMS`), an unsupported or v0.3 `A2A-Version`
    /// (`VERSION_NOT_SUPPORTED`), a task that cannot be canceled
    /// (`TASK_NOT_CANCELABLE`), push notifications not enabled
    /// (`PUSH_NOTIFICATION_NOT_SUPPORTED`).
    #[response(status = 400, content_type = "application/problem+json")]
    BadRequest(Problem),
    /// The caller may not do this (`FORBIDDEN`: deciding an approval
    /// without the approver role).
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(Problem),
    /// No such task for this caller (`TASK_NOT_FOUND`: another
    /// principal's task too), or no such method (`METHOD_NOT_FOUND`).
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
    /// The agent failed (`INTERNAL_ERROR`).
    #[response(status = 500, content_type = "application/problem+json")]
    Internal(Problem),
    /// More turns running and queued than `limits` allow (`UNAVAILABLE`);
    /// `Retry-After` says when to retry.
    #[response(status = 503, content_type = "application/problem+json")]
    Unavailable(Problem),
}

/// A stream: server-sent events, each `data:` a `StreamResponse` (an
/// error after the stream began comes as an event too).
#[derive(utoipa::IntoResponses)]
#[response(status = 200, content_type = "text/event-stream")]
pub(super) struct Events(StreamResponse);

/// `SendMessage`: a new task (a message without `taskId`), or the next
/// message of one. On a task that is `TASK_STATE_INPUT_REQUIRED`, a data
/// part `{"approved": true|false, "approval_uuid": …}` decides the
/// approval, `{"answer": …}` answers a question. Answered once the turn
/// ends (at an approval at the latest).
#[utoipa::path(post, path = "/a2a/v1/message:send", tag = "a2a",
    request_body(content = SendMessageRequest, example = json!({"message": {"messageId": "m1",
        "role": "ROLE_USER", "parts": [{"text": "list all resources"}]}})),
    responses(
        (status = 200, description = "The task, as `{\"task\": …}`", body = StreamResponse,
            example = json!({"task": {"id": "9f1a489e-f142-4e0b-a210-a78f74846156",
                "contextId": "9f1a489e-f142-4e0b-a210-a78f74846156",
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-02T03:04:05.000Z"},
                "artifacts": [{"artifactId": "answer-008e003d", "name": "answer",
                    "parts": [{"text": "There are 0 resources."}]}]}})),
        Problems,
    ))]
fn message_send() {}

/// `SendStreamingMessage`: as `message:send`, answered as server-sent
/// events, each `data:` a `StreamResponse` (the task, status updates, the
/// answer artifact, the final status).
#[utoipa::path(post, path = "/a2a/v1/message:stream", tag = "a2a",
    request_body(content = SendMessageRequest),
    responses(Events, Problems))]
fn message_stream() {}

/// `ListTasks`: the caller's tasks (every task for an admin), newest
/// first, that match every filter given. `totalSize` counts the matching
/// tasks on every page.
#[utoipa::path(get, path = "/a2a/v1/tasks", tag = "a2a",
    params(
        ("contextId" = Option<String>, Query, description = "Only tasks of this context"),
        ("status" = Option<String>, Query, description = "Only tasks in this state (`TASK_STATE_COMPLETED`, …)"),
        ("statusTimestampAfter" = Option<String>, Query, description = "Only tasks whose status changed at or after this RFC 3339 time"),
        ("pageSize" = Option<i32>, Query, description = "Tasks per page, 1 to 100 (default 50)"),
        ("pageToken" = Option<String>, Query, description = "The `nextPageToken` of the previous page"),
        ("historyLength" = Option<i32>, Query, description = "Most history messages per task"),
        ("includeArtifacts" = Option<bool>, Query, description = "Include the artifacts (default false)"),
    ),
    responses(
        (status = 200, body = ListTasksResponse, example = json!({"tasks": [],
            "nextPageToken": "", "pageSize": 50, "totalSize": 0})),
        Problems,
    ))]
fn tasks_list() {}

/// `GetTask`: the task, with `historyLength` messages of history.
#[utoipa::path(get, path = "/a2a/v1/tasks/{id}", tag = "a2a",
    params(
        ("id" = String, Path, description = "Task id (the conversation UUID)"),
        ("historyLength" = Option<i32>, Query, description = "Most history messages"),
    ),
    responses((status = 200, body = Task), Problems))]
fn tasks_get() {}

/// `CancelTask`: cancels a task waiting for approval (its call is not
/// run); other tasks are not cancelable.
#[utoipa::path(post, path = "/a2a/v1/tasks/{id}:cancel", tag = "a2a",
    params(("id" = String, Path, description = "Task id")),
    request_body(content = Option<Object>, description = "Ignored (the SDKs send the request object)"),
    responses((status = 200, description = "The canceled task", body = Task), Problems))]
fn tasks_cancel() {}

/// `SubscribeToTask`: the task's events again, as server-sent events,
/// each `data:` a `StreamResponse`.
#[utoipa::path(get, path = "/a2a/v1/tasks/{id}:subscribe", tag = "a2a",
    params(("id" = String, Path, description = "Task id")),
    responses(Events, Problems))]
fn tasks_subscribe() {}

/// `SubscribeToTask` as the SDKs send it (`POST`, the body ignored).
#[utoipa::path(post, path = "/a2a/v1/tasks/{id}:subscribe", tag = "a2a",
    params(("id" = String, Path, description = "Task id")),
    request_body(content = Option<Object>, description = "Ignored"),
    responses(Events, Problems))]
fn tasks_subscribe_post() {}

/// `CreateTaskPushNotificationConfig`: a callback the agent POSTs the
/// task's `StreamResponse` to when it becomes input-required, completed,
/// failed or canceled (owner only; private, loopback and link-local URLs
/// refused unless `a2a_push` allows them).
#[utoipa::path(post, path = "/a2a/v1/tasks/{id}/pushNotificationConfigs", tag = "a2a",
    params(("id" = String, Path, description = "Task id")),
    request_body(content = TaskPushNotificationConfig, example = json!({"id": "cfg-1",
        "url": "https://client.example/a2a-hook", "token": "t0k3n"})),
    responses((status = 200, description = "The config as stored", body = TaskPushNotificationConfig), Problems))]
fn push_config_create() {}

/// `ListTaskPushNotificationConfigs`: every config of the task.
#[utoipa::path(get, path = "/a2a/v1/tasks/{id}/pushNotificationConfigs", tag = "a2a",
    params(("id" = String, Path, description = "Task id")),
    responses((status = 200, body = ListTaskPushNotificationConfigsResponse), Problems))]
fn push_configs_list() {}

/// `GetTaskPushNotificationConfig`: one config by its id.
#[utoipa::path(get, path = "/a2a/v1/tasks/{id}/pushNotificationConfigs/{configId}", tag = "a2a",
    params(
        ("id" = String, Path, description = "Task id"),
        ("configId" = String, Path, description = "Config id"),
    ),
    responses((status = 200, body = TaskPushNotificationConfig), Problems))]
fn push_config_get() {}

/// `DeleteTaskPushNotificationConfig`: removes one config.
#[utoipa::path(delete, path = "/a2a/v1/tasks/{id}/pushNotificationConfigs/{configId}", tag = "a2a",
    params(
        ("id" = String, Path, description = "Task id"),
        ("configId" = String, Path, description = "Config id"),
    ),
    responses((status = 200, description = "Removed: an empty object", body = Object, example = json!({})), Problems))]
fn push_config_delete() {}
