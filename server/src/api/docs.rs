//! `/openapi.json` (generated from the handlers' `#[utoipa::path]`
//! annotations and the `asg_shared` types) and `/docs`, a self-contained
//! interactive page rendered from it. The page loads nothing from the
//! internet, so it works on an offline machine.

use axum::Json;
use axum::response::Html;
use utoipa::OpenApi;

use super::{approvals, conversations, events, system};

/// The OpenAPI description of the REST API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Agent Stop and Go",
        description = "An agent server that stops before destructive actions until a human approves them."
    ),
    paths(
        system::health,
        system::tools_index,
        conversations::conversations_create,
        conversations::conversations_index,
        conversations::conversations_show,
        conversations::conversations_send,
        events::conversations_events,
        approvals::approvals_resolve,
        approvals::approvals_index,
    ),
    tags(
        (name = "system", description = "Health and tools"),
        (name = "conversations", description = "Conversations and messages"),
        (name = "approvals", description = "The human in the loop"),
    )
)]
pub struct ApiDoc;

/// The OpenAPI document.
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

/// The interactive docs page.
pub async fn docs_page() -> Html<&'static str> {
    Html(include_str!("assets/docs.html"))
}
