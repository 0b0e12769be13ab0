//! `/approvals` routes: resolve one, list the pending ones.

use asg_shared::rest::{ApprovalList, ApprovalRequest, ConversationResponse, ErrorBody};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::error::ApiError;
use super::extract::{Caller, Ctx, ListQuery, parse_json, parse_status, parse_uuid};
use super::{AppState, conversation_response};
use crate::engine::Choice;
use asg_shared::ApprovalState;

/// Approves or rejects a pending approval; approval runs the stored call.
#[utoipa::path(post, path = "/approvals/{uuid}", tag = "approvals",
    params(("uuid" = String, Path, description = "Approval UUID")),
    request_body(content = ApprovalRequest, examples(
        ("approved" = (value = json!({"approved": true}))),
        ("action" = (value = json!({"action": "reject", "reason": "not now"}))),
        ("answer" = (value = json!({"answer": "yes"}))),
        ("edited" = (value = json!({"approved": true, "arguments": {"name": "web-1", "value": 40}}))),
        ("remember" = (value = json!({"approved": true, "remember": "conversation"}))),
    )),
    responses(
        (status = 200, description = "Decision applied; the call ran once (approve) or was cancelled (reject)", body = ConversationResponse,
            example = json!({"conversation": {"id": "bb77af30-9945-40e6-8a98-3214f774d0c5", "status": "active", "messages": ["…"]},
            "result": {"response": "Created the resource: {\"created\": {\"id\": \"res_423043d2\", \"name\": \"web-1\", \"value\": 42}}", "waiting_approval": false}})),
        (status = 400, description = "Malformed JSON or uuid", body = ErrorBody),
        (status = 404, description = "Unknown approval", body = ErrorBody,
            example = json!({"error": {"code": "not_found", "message": "approval f83d7736-9d7f-4ec0-a960-8d636a22df6d not found"}})),
        (status = 409, description = "Already resolved (`error.conversation` has the current state)", body = ErrorBody,
            example = json!({"error": {"code": "approval_resolved", "message": "approval f83d7736-9d7f-4ec0-a960-8d636a22df6d was already resolved",
                "conversation": {"id": "bb77af30-9945-40e6-8a98-3214f774d0c5", "status": "active", "messages": ["…"]}}})),
        (status = 415, description = "A body that is not declared `application/json`", body = ErrorBody),
        (status = 403, description = "The caller may not decide this approval (not an approver, four-eyes, or not among a rule's `approvers`)", body = ErrorBody),
        (status = 422, description = "No decision, an unknown one, edited arguments that break the tool's input schema (the message names the field), or editing where it is not allowed", body = ErrorBody,
            example = json!({"error": {"code": "invalid_request", "message": "invalid edited arguments: arguments.value: \"forty\" is not of type \"integer\""}})),
        (status = 502, description = "The model failed after the decision was applied", body = ErrorBody),
    ))]
pub async fn approvals_resolve(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
    Ctx(ctx): Ctx,
    body: Bytes,
) -> Result<Response, ApiError> {
    let uuid = parse_uuid("approval uuid", &uuid)?;
    let request: ApprovalRequest = parse_json(&body)?;
    let approve = request.decision().map_err(|message| {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
    })?;
    let choice = Choice {
        arguments: request.arguments,
        remember: request.remember,
    };
    let outcome = state
        .engine
        .resolve_approval_with(uuid, &ctx, approve, request.reason, choice)
        .await?;
    Ok(conversation_response(
        StatusCode::OK,
        outcome.conversation,
        Some(outcome.result),
    ))
}

/// Revokes a conversation's remembered approvals of one tool: its later
/// calls ask again.
#[utoipa::path(delete, path = "/conversations/{id}/grants/{tool}", tag = "approvals",
    params(("id" = String, Path, description = "Conversation UUID"), ("tool" = String, Path, description = "Tool name")),
    responses(
        (status = 200, description = "Revoked; the conversation without them", body = ConversationResponse),
        (status = 403, description = "Neither the owner nor an approver", body = ErrorBody),
        (status = 404, description = "Unknown conversation, or no remembered approval of this tool", body = ErrorBody),
    ))]
pub async fn grants_revoke(
    State(state): State<AppState>,
    Path((id, tool)): Path<(String, String)>,
    Ctx(ctx): Ctx,
) -> Result<Response, ApiError> {
    let id = parse_uuid("conversation id", &id)?;
    let conversation = state.engine.revoke_grants(id, &ctx, &tool).await?;
    Ok(conversation_response(StatusCode::OK, conversation, None))
}

/// Lists pending approvals across conversations, oldest first, one page
/// at a time.
#[utoipa::path(get, path = "/approvals", tag = "approvals",
    params(
        ("limit" = Option<usize>, Query, description = "Approvals per page, 1 to 500 (default 50)"),
        ("cursor" = Option<String>, Query, description = "The `next_cursor` of the previous page"),
        ("status" = Option<String>, Query, description = "Only this state: pending or executing"),
    ),
    responses((status = 200, body = ApprovalList,
        example = json!({"approvals": [{"uuid": "f83d7736-9d7f-4ec0-a960-8d636a22df6d", "conversation_id": "bb77af30-9945-40e6-8a98-3214f774d0c5",
            "tool_name": "resources_add", "tool_args": {"name": "web-1", "value": 42},
            "description": "resources_add with arguments {\"name\":\"web-1\",\"value\":42}", "created_at": "2026-01-02T03:04:05Z",
            "call_id": "call_1", "node": "resource-manager", "state": "pending"}]})),
        (status = 400, description = "A bad limit, cursor or status, or an unknown parameter", body = ErrorBody,
            example = json!({"error": {"code": "bad_request", "message": "limit must be a whole number from 1 to 500, got \"0\""}}))))]
pub async fn approvals_index(
    State(state): State<AppState>,
    Caller(caller): Caller,
    query: ListQuery,
) -> Result<Json<ApprovalList>, ApiError> {
    let status: Option<ApprovalState> =
        parse_status(query.status.as_deref(), "pending, executing")?;
    let query = crate::store::PendingQuery {
        questions: Some(false),
        requested_by: crate::auth::policy::approvals_seen_by(&caller),
        proxies: false,
        state: status,
        after: query.page.after.map(|key| (key.at, key.id)),
        limit: query.page.limit,
    };
    let listed = state.engine.pending_page(query).await?;
    Ok(Json(ApprovalList {
        approvals: listed.approvals,
        next_cursor: listed
            .next
            .map(|(at, id)| super::page::encode(super::page::Key { at, id })),
    }))
}
