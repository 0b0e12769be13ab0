//! `/questions` routes: list the pending questions, answer one. A
//! question is a pending item like an approval; the engine asks the core
//! who may answer and whether the answer fits.

use asg_shared::rest::{AnswerRequest, ConversationResponse, ErrorBody, QuestionList};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::error::ApiError;
use super::extract::{Caller, Ctx, ListQuery, parse_json, parse_uuid};
use super::{AppState, conversation_response};

/// Answers a pending question; the run goes on with the answer.
#[utoipa::path(post, path = "/questions/{uuid}", tag = "questions",
    params(("uuid" = String, Path, description = "Question UUID")),
    request_body(content = AnswerRequest, examples(
        ("text" = (value = json!({"answer": "staging"}))),
        ("form" = (value = json!({"answer": {"environment": "staging", "replicas": 2}}))),
        ("decline" = (value = json!({"action": "decline"}))),
    )),
    responses(
        (status = 200, description = "Answer recorded; the run went on with it", body = ConversationResponse),
        (status = 400, description = "Malformed JSON or uuid", body = ErrorBody),
        (status = 403, description = "The caller may not answer (not the owner, not among `questions.answerers`)", body = ErrorBody),
        (status = 404, description = "Unknown question", body = ErrorBody),
        (status = 409, description = "Already answered (`error.conversation` has the current state)", body = ErrorBody),
        (status = 422, description = "No answer, or one that does not fit the question (the message names the field); the question stays pending", body = ErrorBody,
            example = json!({"error": {"code": "invalid_request", "message": "invalid answer: answer.replicas: 0 is less than the minimum of 1"}})),
    ))]
pub async fn questions_answer(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
    Ctx(ctx): Ctx,
    body: Bytes,
) -> Result<Response, ApiError> {
    let uuid = parse_uuid("question uuid", &uuid)?;
    let request: AnswerRequest = parse_json(&body)?;
    let reply = request.reply().map_err(|message| {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
    })?;
    let outcome = state.engine.answer_question(uuid, &ctx, reply).await?;
    Ok(conversation_response(
        StatusCode::OK,
        outcome.conversation,
        Some(outcome.result),
    ))
}

/// Lists pending questions across conversations, oldest first, one page
/// at a time: an approver or admin sees every one, anyone else those
/// its own turns asked. The first page starts with the questions MCP
/// servers ask during open calls.
#[utoipa::path(get, path = "/questions", tag = "questions",
    params(
        ("limit" = Option<usize>, Query, description = "Questions per page, 1 to 500 (default 50)"),
        ("cursor" = Option<String>, Query, description = "The `next_cursor` of the previous page"),
    ),
    responses((status = 200, body = QuestionList),
        (status = 400, description = "A bad limit or cursor, or an unknown parameter", body = ErrorBody)))]
pub async fn questions_index(
    State(state): State<AppState>,
    Caller(caller): Caller,
    query: ListQuery,
) -> Result<Json<QuestionList>, ApiError> {
    if query.status.is_some() {
        return Err(ApiError::bad_request(
            "GET /questions takes no status: every listed question waits for an answer",
        ));
    }
    let seen_by = crate::auth::policy::approvals_seen_by(&caller);
    let first_page = query.page.after.is_none();
    let query = crate::store::PendingQuery {
        questions: Some(true),
        requested_by: seen_by.clone(),
        proxies: false,
        state: None,
        after: query.page.after.map(|key| (key.at, key.id)),
        limit: query.page.limit,
    };
    let listed = state.engine.pending_page(query).await?;
    // The MCP servers' questions of open calls come first, on the first
    // page (they are not stored).
    let live = state
        .engine
        .asked_during_calls()
        .into_iter()
        .filter(|_| first_page)
        .filter(|q| {
            seen_by.as_ref().is_none_or(|subject| {
                q.requested_by
                    .as_ref()
                    .is_some_and(|by| &by.subject == subject)
            })
        });
    Ok(Json(QuestionList {
        questions: live.chain(listed.approvals).collect(),
        next_cursor: listed
            .next
            .map(|(at, id)| super::page::encode(super::page::Key { at, id })),
    }))
}
