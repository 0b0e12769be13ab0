//! `/openapi.json` (generated from the handlers' `#[utoipa::path]`
//! annotations and the `asg_shared` types) and `/docs`, a self-contained
//! interactive page rendered from it. The page loads nothing from the
//! internet, so it works on an offline machine.

use axum::Json;
use axum::extract::State;
use axum::response::Html;
use utoipa::OpenApi;

use super::{AgentInfo, AppState, approvals, conversations, events, inbox, system};

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
        inbox::inbox_events,
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

/// `GET /`: a small index of the agent's pages.
pub async fn index_page(State(state): State<AppState>) -> Html<String> {
    Html(render_index(&state.agent))
}

fn render_index(agent: &AgentInfo) -> String {
    let description = if agent.description.trim().is_empty() {
        "An agent with human approvals."
    } else {
        agent.description.trim()
    };
    include_str!("assets/index.html")
        .replace("{{name}}", &escape_html(&agent.name))
        .replace("{{description}}", &escape_html(description))
        .replace("{{version}}", &escape_html(&agent.version))
}

/// Text for HTML element content and attribute values.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
