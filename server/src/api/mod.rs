//! The REST API: axum routes, extractors, errors and the docs page.
//!
//! Only this module knows HTTP. Handlers extract, make one engine call and
//! answer; business rules live in [`crate::engine`].

pub mod a2a;
pub mod access;
pub mod approvals;
pub mod auth;
pub mod channels;
pub mod conversations;
pub mod docs;
pub mod edge;
pub mod error;
pub mod events;
pub mod extract;
pub mod guard;
pub mod inbox;
pub mod logging;
pub mod markdown;
pub mod page;
pub mod questions;
pub mod rendered;
pub mod system;

use std::sync::Arc;

use asg_shared::Conversation;
use asg_shared::rest::TurnResult;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router, middleware};

use crate::engine::{Engine, TurnAnswer};
use error::ApiError;
use logging::ConversationTag;

/// Largest request body accepted, in bytes (answers 413 above).
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// Shared state of every handler: one `Arc`, because axum clones the
/// state for every extractor of every request (cloning each field's
/// `Arc` and the caches' handles was about 8 % of a `GET`'s CPU time).
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl std::ops::Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

impl From<AppParts> for AppState {
    fn from(parts: AppParts) -> AppState {
        AppState(Arc::new(parts))
    }
}

/// What [`AppState`] holds.
pub struct AppParts {
    /// The engine.
    pub engine: Engine,
    /// Who this agent is (agent card, docs).
    pub agent: Arc<AgentInfo>,
    /// Turns true when the server shuts down, so endless streams (SSE)
    /// end and graceful shutdown does not wait for them.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// Conversation files the store set aside at startup (`GET /health`).
    pub quarantined_files: usize,
    /// Which `Host` headers are answered ([`guard`], `asg_http::host_check`).
    pub hosts: Arc<asg_http::host_check::HostPolicy>,
    /// Who may call ([`auth`]).
    pub auth: crate::auth::Authenticator,
    /// Conversation bodies made once per version ([`rendered`]).
    pub rendered: rendered::RenderedBodies,
}

/// A shutdown flag that never turns (tests, tools).
pub fn never_shutdown() -> tokio::sync::watch::Receiver<bool> {
    let (sender, receiver) = tokio::sync::watch::channel(false);
    // Keep the sender alive so `changed()` never reports a closed channel.
    std::mem::forget(sender);
    receiver
}

/// Identity of the agent, as peers see it.
#[derive(Debug, Clone)]
pub struct AgentInfo {
    /// Name from the config.
    pub name: String,
    /// Description from the config.
    pub description: String,
    /// Base URL peers use, without a trailing slash (`public_url`, or
    /// built from host and the bound port).
    pub public_url: String,
    /// Version of this build.
    pub version: String,
    /// The web chat in front of this agent (`web_chat_url`), linked from
    /// the index page.
    pub web_chat_url: Option<String>,
    /// What callers must present (declared on the agent card).
    pub security: CardSecurity,
}

/// The credentials an agent accepts, as its card declares them.
#[derive(Debug, Clone, Default)]
pub struct CardSecurity {
    /// The OpenID Connect issuer whose bearer tokens are accepted.
    pub oidc_issuer: Option<String>,
    /// API keys are accepted (`Authorization: Bearer` or `X-API-Key`).
    pub api_keys: bool,
}

/// The REST router.
pub fn router(parts: AppParts) -> Router {
    let state = AppState::from(parts);
    let edge = Arc::new(edge::Edge {
        hosts: state.hosts.clone(),
        auth: state.auth.clone(),
    });
    Router::new()
        .route("/", get(docs::index_page))
        .route("/health", get(system::health))
        .route("/metrics", get(system::metrics))
        .route("/tools", get(system::tools_index))
        .route("/me", get(system::me))
        .route("/markdown", post(markdown::markdown_render))
        .route("/docs", get(docs::docs_page))
        .route("/openapi.json", get(docs::openapi_json))
        .route(
            "/conversations",
            post(conversations::conversations_create).get(conversations::conversations_index),
        )
        .route(
            "/conversations/{id}",
            get(conversations::conversations_show),
        )
        .route(
            "/conversations/{id}/events",
            get(events::conversations_events),
        )
        .route(
            "/conversations/{id}/messages",
            post(conversations::conversations_send),
        )
        .route("/approvals", get(approvals::approvals_index))
        .route("/events", get(inbox::inbox_events))
        .route("/approvals/{uuid}", post(approvals::approvals_resolve))
        .route("/questions", get(questions::questions_index))
        .route("/questions/{uuid}", post(questions::questions_answer))
        .route(
            "/conversations/{id}/grants/{tool}",
            delete(approvals::grants_revoke),
        )
        .merge(a2a::routes())
        .merge(channels::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(edge, edge::edge))
        .with_state(state)
}

/// Answers with a conversation (and what a turn produced), tagged for the
/// request log.
pub(crate) fn conversation_response(
    status: StatusCode,
    conversation: Arc<Conversation>,
    result: Option<TurnAnswer>,
) -> Response {
    let tag = ConversationTag {
        id: conversation.id,
        session_id: conversation.session_id.clone(),
    };
    // Same shape as `ConversationResponse`, serialized from the shared
    // snapshot without copying the conversation.
    #[derive(serde::Serialize)]
    struct Body<'a> {
        conversation: &'a Conversation,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<TurnResult>,
    }
    let body = Body {
        conversation: &conversation,
        result: result.map(turn_result),
    };
    let mut response = (status, Json(body)).into_response();
    response.extensions_mut().insert(tag);
    response
}

/// A turn's answer as REST words it.
fn turn_result(answer: TurnAnswer) -> TurnResult {
    let (question, approval) = match answer.approval {
        Some(pending) if pending.is_question() => (Some(pending), None),
        approval => (None, approval),
    };
    TurnResult {
        response: answer.response,
        waiting_approval: answer.waiting_approval,
        approval,
        question,
    }
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route; see GET /docs")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed on this route; see GET /docs",
    )
}

#[cfg(test)]
mod tests;
