//! `/conversations` routes: create, list, get, send a message.

use asg_shared::rest::{
    ConversationList, ConversationResponse, ConversationSummary, CreateConversationRequest,
    ErrorBody, SendMessageRequest, StatusSummary,
};
use asg_shared::{Conversation, Role};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::access;
use super::error::ApiError;
use super::extract::{Caller, Ctx, ListQuery, is_blank, parse_json, parse_status, parse_uuid};
use super::page::{self, Key};
use super::{AppState, conversation_response};
use crate::store::{ListPage, StatusCounts};

/// Creates a conversation, optionally processing a first message.
#[utoipa::path(post, path = "/conversations", tag = "conversations",
    request_body(content = Option<CreateConversationRequest>, example = json!({"message": "list all resources"})),
    responses(
        (status = 201, description = "Created; `result` is present when a message was sent. Here the message asked for a destructive call, so the turn stopped for an approval.", body = ConversationResponse,
            example = json!({"conversation": {"id": "bb77af30-9945-40e6-8a98-3214f774d0c5", "session_id": "960e5e2e", "status": "waiting_approval",
            "messages": [
                {"id": "1542245c-2467-4192-953c-820adf521730", "role": "system", "content": "You are a resource manager.", "created_at": "2026-01-02T03:04:05Z"},
                {"id": "ecf9613e-8253-4abc-a1de-5f2c89b3f57a", "role": "user", "content": "add resource web-1 with value 42", "created_at": "2026-01-02T03:04:05Z"},
                {"id": "1af81a15-6a7e-4e4d-8fcb-fd81a934a1cd", "role": "assistant", "content": "", "node": "resource-manager", "created_at": "2026-01-02T03:04:05Z",
                 "tool_call": {"id": "call_1", "name": "resources_add", "arguments": {"name": "web-1", "value": 42}, "needs_approval": true, "approval_uuid": "f83d7736-9d7f-4ec0-a960-8d636a22df6d"}}],
            "pending_approval": {"uuid": "f83d7736-9d7f-4ec0-a960-8d636a22df6d", "conversation_id": "bb77af30-9945-40e6-8a98-3214f774d0c5", "tool_name": "resources_add",
                "tool_args": {"name": "web-1", "value": 42}, "description": "resources_add with arguments {\"name\":\"web-1\",\"value\":42}",
                "created_at": "2026-01-02T03:04:05Z", "call_id": "call_1", "node": "resource-manager", "state": "pending"},
            "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:05Z"},
        "result": {"response": "Approval required: resources_add with arguments {\"name\":\"web-1\",\"value\":42}", "waiting_approval": true,
            "approval": {"uuid": "f83d7736-9d7f-4ec0-a960-8d636a22df6d", "tool_name": "resources_add", "tool_args": {"name": "web-1", "value": 42}, "state": "pending"}}})),
        (status = 400, description = "Malformed JSON", body = ErrorBody,
            example = json!({"error": {"code": "bad_request", "message": "malformed JSON: key must be a string at line 1 column 2"}})),
        (status = 415, description = "A body that is not declared `application/json`", body = ErrorBody,
            example = json!({"error": {"code": "unsupported_media_type", "message": "request body has content type \"text/plain\"; this endpoint expects application/json (send the header `Content-Type: application/json`)"}})),
        (status = 422, description = "Invalid content", body = ErrorBody),
        (status = 502, description = "The model failed (recorded in the conversation)", body = ErrorBody),
        (status = 504, description = "The model timed out", body = ErrorBody),
    ))]
pub async fn conversations_create(
    State(state): State<AppState>,
    Ctx(ctx): Ctx,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: CreateConversationRequest = if is_blank(&body) {
        CreateConversationRequest::default()
    } else {
        parse_json(&body)?
    };
    let with_result = request.message.is_some();
    let outcome = state.engine.create(&ctx, request.message).await?;
    Ok(conversation_response(
        StatusCode::CREATED,
        outcome.conversation,
        with_result.then_some(outcome.result),
    ))
}

/// Lists conversations with a status summary, one page at a time.
#[utoipa::path(get, path = "/conversations", tag = "conversations",
    params(
        ("limit" = Option<usize>, Query, description = "Conversations per page, 1 to 500 (default 50)"),
        ("cursor" = Option<String>, Query, description = "The `next_cursor` of the previous page"),
        ("status" = Option<String>, Query, description = "Only this status: active, waiting_approval, completed or canceled"),
    ),
    responses((status = 200, body = ConversationList,
        example = json!({"conversations": [{"id": "bb77af30-9945-40e6-8a98-3214f774d0c5", "session_id": "960e5e2e", "status": "waiting_approval",
            "message_count": 3, "title": "add resource web-1 with value 42", "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:05Z"}],
            "summary": {"total": 1, "active": 0, "waiting_approval": 1, "completed": 0, "canceled": 0}})),
        (status = 400, description = "A bad limit, cursor or status, or an unknown parameter", body = ErrorBody,
            example = json!({"error": {"code": "bad_request", "message": "limit must be a whole number from 1 to 500, got \"0\""}}))))]
pub async fn conversations_index(
    State(state): State<AppState>,
    Caller(caller): Caller,
    query: ListQuery,
) -> Result<Json<ConversationList>, ApiError> {
    let status = parse_status(
        query.status.as_deref(),
        "active, waiting_approval, completed, canceled",
    )?;
    let listed = state
        .engine
        .list_for(crate::store::ListQuery {
            scope: crate::auth::policy::ReadScope::of(&caller),
            status,
            after: query.page.after.map(|key| (key.at, key.id)),
            limit: query.page.limit,
            tasks: Default::default(),
        })
        .await?;
    Ok(Json(conversation_list(listed)))
}

/// A page of stored conversations as `GET /conversations` words it.
fn conversation_list(listed: ListPage) -> ConversationList {
    ConversationList {
        conversations: listed.conversations.iter().map(summarize).collect(),
        summary: status_summary(listed.summary),
        next_cursor: listed.next.map(|(at, id)| page::encode(Key { at, id })),
    }
}

fn status_summary(counts: StatusCounts) -> StatusSummary {
    StatusSummary {
        total: counts.total,
        active: counts.active,
        waiting_approval: counts.waiting_approval,
        completed: counts.completed,
        canceled: counts.canceled,
    }
}

fn summarize(conversation: &Conversation) -> ConversationSummary {
    let title = conversation
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| shorten(&m.content, 80));
    ConversationSummary {
        id: conversation.id,
        session_id: conversation.session_id.clone(),
        status: conversation.status,
        message_count: conversation.messages.len(),
        title,
        pending_approval: conversation.pending().first().cloned(),
        pending_approvals: conversation.pending().to_vec(),
        created_at: conversation.created_at,
        updated_at: conversation.updated_at,
    }
}

fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Returns one conversation with all its messages and pending approval.
#[utoipa::path(get, path = "/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "Conversation UUID")),
    responses(
        (status = 200, body = ConversationResponse, example = json!({"conversation": {"id": "bb77af30-9945-40e6-8a98-3214f774d0c5", "session_id": "960e5e2e", "status": "waiting_approval",
            "messages": [
                {"id": "1542245c-2467-4192-953c-820adf521730", "role": "system", "content": "You are a resource manager.", "created_at": "2026-01-02T03:04:05Z"},
                {"id": "ecf9613e-8253-4abc-a1de-5f2c89b3f57a", "role": "user", "content": "add resource web-1 with value 42", "created_at": "2026-01-02T03:04:05Z"},
                {"id": "1af81a15-6a7e-4e4d-8fcb-fd81a934a1cd", "role": "assistant", "content": "", "node": "resource-manager", "created_at": "2026-01-02T03:04:05Z",
                 "tool_call": {"id": "call_1", "name": "resources_add", "arguments": {"name": "web-1", "value": 42}, "needs_approval": true, "approval_uuid": "f83d7736-9d7f-4ec0-a960-8d636a22df6d"}}],
            "pending_approval": {"uuid": "f83d7736-9d7f-4ec0-a960-8d636a22df6d", "conversation_id": "bb77af30-9945-40e6-8a98-3214f774d0c5", "tool_name": "resources_add",
                "tool_args": {"name": "web-1", "value": 42}, "description": "resources_add with arguments {\"name\":\"web-1\",\"value\":42}",
                "created_at": "2026-01-02T03:04:05Z", "call_id": "call_1", "node": "resource-manager", "state": "pending"},
            "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:05Z"},
        "result": {"response": "Approval required: resources_add with arguments {\"name\":\"web-1\",\"value\":42}", "waiting_approval": true,
            "approval": {"uuid": "f83d7736-9d7f-4ec0-a960-8d636a22df6d", "tool_name": "resources_add", "tool_args": {"name": "web-1", "value": 42}, "state": "pending"}}})),
        (status = 400, description = "The id is not a UUID", body = ErrorBody,
            example = json!({"error": {"code": "bad_request", "message": "conversation id must be a UUID, got \"42\""}})),
        (status = 404, description = "Unknown conversation", body = ErrorBody,
            example = json!({"error": {"code": "not_found", "message": "conversation 0d2c7d1e-5a8b-4c47-9a51-2f0c3a6e9b10 not found"}})),
    ))]
pub async fn conversations_show(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_uuid("conversation id", &id)?;
    let conversation = access::readable(&state.engine, &caller, id).await?;
    Ok(state.rendered.answer(&conversation))
}

/// Sends a user message.
#[utoipa::path(post, path = "/conversations/{id}/messages", tag = "conversations",
    params(("id" = String, Path, description = "Conversation UUID")),
    request_body(content = SendMessageRequest, example = json!({"message": "add resource web-1 with value 42"})),
    responses(
        (status = 200, description = "The turn ran; `result.waiting_approval` tells whether it stopped for an approval", body = ConversationResponse,
            example = json!({"conversation": {"id": "7e9698ce-5531-4eb2-8114-e6e7384c72f5", "status": "active", "messages": ["…"]},
                "result": {"response": "There are 0 resources: {\"count\": 0, \"resources\": []}", "waiting_approval": false}})),
        (status = 400, description = "Malformed JSON or id", body = ErrorBody),
        (status = 404, description = "Unknown conversation", body = ErrorBody),
        (status = 409, description = "The conversation waits for an approval (`error.approval`)", body = ErrorBody,
            example = json!({"error": {"code": "waiting_approval", "message": "conversation is waiting for approval f83d7736-9d7f-4ec0-a960-8d636a22df6d; approve or reject it first",
                "approval": {"uuid": "f83d7736-9d7f-4ec0-a960-8d636a22df6d", "tool_name": "resources_add", "tool_args": {"name": "web-1", "value": 42}, "state": "pending"}}})),
        (status = 415, description = "A body that is not declared `application/json`", body = ErrorBody),
        (status = 422, description = "Invalid content", body = ErrorBody),
        (status = 502, description = "The model failed", body = ErrorBody),
        (status = 504, description = "The model timed out", body = ErrorBody),
    ))]
pub async fn conversations_send(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Ctx(ctx): Ctx,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id = parse_uuid("conversation id", &id)?;
    let request: SendMessageRequest = parse_json(&body)?;
    let outcome = state.engine.send(id, &ctx, request.message).await?;
    Ok(conversation_response(
        StatusCode::OK,
        outcome.conversation,
        Some(outcome.result),
    ))
}
