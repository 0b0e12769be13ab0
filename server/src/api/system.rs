//! `/health` and `/tools`; the catalog's [`Tool`] → REST [`ToolInfo`]
//! mapping (also the A2A card's view).

use asg_shared::rest::{Health, HealthDetails, ToolInfo, ToolList};
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::engine::Engine;
use crate::tool::{Tool, ToolKind};

/// Liveness check, with what an operator should look at.
///
/// `details.quarantined_files` counts the conversation files that could not
/// be loaded at startup and were moved to `data_dir/quarantine/` (the log
/// names each one). `details.mcp_servers` lists the MCP servers: one that
/// was unreachable at startup is `unavailable` (retried in the background;
/// its tools are missing meanwhile) and the status is then `degraded`,
/// still with 200: the agent serves, so it stays in the load balancer.
/// `details.store` is `unavailable` when the PostgreSQL store cannot be
/// reached: the status is then `unavailable` with 503, so a load balancer
/// sends requests elsewhere until the database is back.
#[utoipa::path(get, path = "/health", tag = "system",
    responses(
        (status = 200, body = Health,
            example = json!({"status": "ok", "details": {"quarantined_files": 0, "store": "ok",
                "mcp_servers": [{"name": "resources", "transport": "http", "status": "ready", "tools": 3}]}})),
        (status = 503, description = "The database of the store cannot be reached", body = Health,
            example = json!({"status": "unavailable", "details": {"quarantined_files": 0, "store": "unavailable"}})),
    ))]
pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let tools = state.engine.tools();
    let store_up = state.engine.store_is_up();
    let (code, status) = match (store_up, tools.all_ready()) {
        (false, _) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        (true, true) => (StatusCode::OK, "ok"),
        (true, false) => (StatusCode::OK, "degraded"),
    };
    let health = Health {
        status: status.to_string(),
        details: Some(HealthDetails {
            quarantined_files: state.quarantined_files,
            mcp_servers: tools.health().iter().map(server_health).collect(),
            store: if store_up { "ok" } else { "unavailable" }.to_string(),
        }),
    };
    (code, Json(health))
}

/// Every tool the agent can call, with its input schema and whether it
/// needs approval (`destructiveHint`).
#[utoipa::path(get, path = "/tools", tag = "system",
    responses((status = 200, body = ToolList,
        example = json!({"tools": [{"name": "resources_add", "description": "Add a resource with a `name` (non-empty string) and an integer `value`.",
            "input_schema": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "integer", "format": "int64"}}, "required": ["name", "value"]},
            "destructiveHint": true, "readOnlyHint": false, "source": "mcp", "server": "resources"}]}))))]
pub async fn tools_index(State(state): State<AppState>) -> Json<ToolList> {
    Json(ToolList {
        tools: tool_infos(&state.engine),
    })
}

/// The engine's tools as the REST view describes them.
pub(crate) fn tool_infos(engine: &Engine) -> Vec<ToolInfo> {
    engine.catalog_tools().iter().map(ToolInfo::from).collect()
}

impl From<&Tool> for ToolInfo {
    fn from(tool: &Tool) -> ToolInfo {
        ToolInfo {
            name: tool.name.clone(),
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
            destructive_hint: tool.gated,
            read_only_hint: tool.read_only,
            source: match tool.kind {
                ToolKind::Mcp => "mcp",
                ToolKind::SubAgent => "a2a",
            }
            .to_string(),
            server: tool.server.clone(),
        }
    }
}

/// Who the agent takes the caller for, and its roles (the web chat shows
/// Approve / Reject only to approvers; the server stays the authority).
#[utoipa::path(get, path = "/me", tag = "system",
    responses(
        (status = 200, body = asg_shared::rest::Me,
            example = json!({"subject": "alice", "name": "Alice Approver", "roles": ["approver"], "authenticated": true})),
        (status = 401, description = "No or invalid credentials", body = asg_shared::rest::ErrorBody),
    ))]
pub async fn me(
    super::extract::Caller(caller): super::extract::Caller,
) -> Json<asg_shared::rest::Me> {
    Json(asg_shared::rest::Me {
        subject: caller.subject.clone(),
        name: caller.name.clone(),
        roles: caller
            .roles
            .iter()
            .map(|r| r.as_str().to_string())
            .collect(),
        authenticated: !caller.is_anonymous(),
        login: false,
    })
}

/// A tool server's health as `/health` reports it.
fn server_health(server: &crate::mcp::ServerHealth) -> asg_shared::rest::McpServerHealth {
    asg_shared::rest::McpServerHealth {
        name: server.name.clone(),
        transport: if server.http { "http" } else { "stdio" }.to_string(),
        status: server.label().to_string(),
        tools: server.tools(),
    }
}

/// `GET /metrics`: the Prometheus metrics (OpenMetrics text), behind the
/// same authentication as the rest of the API. The pending approvals are
/// read from the store at each scrape (so they are right after a
/// restart, and on every replica of a shared store).
pub async fn metrics(State(state): State<AppState>) -> Response {
    metrics_of(&state.engine).await
}

/// `GET /metrics` on its own address (`metrics_listen`): the same
/// answer, no authentication, nothing else served.
pub fn metrics_router(engine: Engine) -> axum::Router {
    axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(
                |State(engine): State<Engine>| async move { metrics_of(&engine).await },
            ),
        )
        .with_state(engine)
}

async fn metrics_of(engine: &Engine) -> Response {
    let metrics = crate::metrics::metrics();
    match engine.pending_by_tool().await {
        Ok(by_tool) => metrics.set_pending(&by_tool),
        Err(error) => tracing::warn!(%error, "metrics: cannot count the pending approvals"),
    }
    match metrics.encode() {
        Ok(text) => ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
