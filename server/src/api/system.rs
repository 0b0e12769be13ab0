//! `/health` and `/tools`.

use asg_shared::rest::{Health, ToolList};
use axum::Json;
use axum::extract::State;

use super::AppState;

/// Liveness check.
#[utoipa::path(get, path = "/health", tag = "system",
    responses((status = 200, body = Health, example = json!({"status": "ok"}))))]
pub async fn health() -> Json<Health> {
    Json(Health {
        status: "ok".to_string(),
    })
}

/// Every tool the agent can call, with its input schema and whether it
/// needs approval (`destructiveHint`).
#[utoipa::path(get, path = "/tools", tag = "system",
    responses((status = 200, body = ToolList)))]
pub async fn tools_index(State(state): State<AppState>) -> Json<ToolList> {
    Json(ToolList {
        tools: state.engine.tool_infos(),
    })
}
