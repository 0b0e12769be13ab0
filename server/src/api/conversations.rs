//! `/conversations` routes: create, list, get, send a message.

use asg_shared::rest::{
    ConversationList, ConversationResponse, CreateConversationRequest, ErrorBody,
    SendMessageRequest,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::error::ApiError;
use super::extract::{Ctx, is_blank, parse_json, parse_uuid};
use super::{AppState, conversation_response};

/// Creates a conversation, optionally processing a first message.
#[utoipa::path(post, path = "/conversations", tag = "conversations",
    request_body(content = Option<CreateConversationRequest>, example = json!({"message": "list all resources"})),
    responses(
        (status = 201, description = "Created; `result` is present when a message was sent", body = ConversationResponse),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
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

/// Lists conversations with a status summary.
#[utoipa::path(get, path = "/conversations", tag = "conversations",
    responses((status = 200, body = ConversationList)))]
pub async fn conversations_index(State(state): State<AppState>) -> Json<ConversationList> {
    Json(state.engine.list())
}

/// Returns one conversation with all its messages and pending approval.
#[utoipa::path(get, path = "/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "Conversation UUID")),
    responses(
        (status = 200, body = ConversationResponse),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, description = "Unknown conversation", body = ErrorBody),
    ))]
pub async fn conversations_show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_uuid("conversation id", &id)?;
    let conversation = state
        .engine
        .get(id)
        .ok_or_else(|| ApiError::not_found(format!("conversation {id} not found")))?;
    Ok(conversation_response(StatusCode::OK, conversation, None))
}

/// Sends a user message.
#[utoipa::path(post, path = "/conversations/{id}/messages", tag = "conversations",
    params(("id" = String, Path, description = "Conversation UUID")),
    request_body(content = SendMessageRequest, example = json!({"message": "add resource web-1 with value 42"})),
    responses(
        (status = 200, description = "The turn ran; `result.waiting_approval` tells whether it stopped for an approval", body = ConversationResponse),
        (status = 400, description = "Malformed JSON or id", body = ErrorBody),
        (status = 404, description = "Unknown conversation", body = ErrorBody),
        (status = 409, description = "The conversation waits for an approval (`error.approval`)", body = ErrorBody),
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
