//! `mcp-filesystem` over MCP streamable HTTP (rmcp's
//! `StreamableHttpService`, one session per client) at `/mcp`, with
//! `GET /health`, as `mcp-resources --config` serves its tools, guarded by
//! `asg_tool_http::Access` (`allowed_hosts`, `auth_token_env`).

use std::sync::Arc;

use axum::Router;
use tokio_util::sync::CancellationToken;

use super::FilesystemServer;
use super::sandbox::Sandbox;
use asg_tool_http::Access;

/// Binds `host:port`, prints `mcp-filesystem listening on
/// http://ADDR:PORT/mcp` on stdout, and serves `/mcp` to callers `access`
/// lets through until `shutdown` completes.
pub async fn serve_http(
    sandbox: Arc<Sandbox>,
    host: &str,
    port: u16,
    access: Access,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (listener, bound) = asg_tool_http::bind(host, port).await?;
    let cancel = CancellationToken::new();
    let roots = sandbox.names();
    let token = if access.needs_token() {
        ", service token required"
    } else {
        ""
    };
    let router = router(sandbox, access, cancel.clone());
    println!(
        "mcp-filesystem listening on http://{}/mcp (roots: {roots}{token})",
        asg_http::process::shown(bound)
    );
    asg_tool_http::serve(listener, router, shutdown, cancel).await?;
    tracing::info!("mcp-filesystem stopped");
    Ok(())
}

/// `/mcp` (streamable HTTP, one [`FilesystemServer`] per session over the
/// shared sandbox) and `GET /health` (`asg_tool_http::router`).
pub fn router(sandbox: Arc<Sandbox>, access: Access, cancel: CancellationToken) -> Router {
    asg_tool_http::router(
        move || FilesystemServer::new(sandbox.clone()),
        access,
        cancel,
    )
}
