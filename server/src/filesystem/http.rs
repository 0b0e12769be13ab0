//! `mcp-filesystem` over MCP streamable HTTP (rmcp's
//! `StreamableHttpService`, one session per client) at `/mcp`, with
//! `GET /health`, as `mcp-resources --config` serves its tools.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::FilesystemServer;
use super::sandbox::Sandbox;

/// Binds `host:port`, prints `mcp-filesystem listening on
/// http://ADDR:PORT/mcp` on stdout, and serves until `shutdown` completes.
pub async fn serve_http(
    sandbox: Arc<Sandbox>,
    host: &str,
    port: u16,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let address = format!("{host}:{port}");
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener.local_addr()?;
    let cancel = CancellationToken::new();
    let roots = sandbox.names();
    let router = router(sandbox, bound, cancel.clone());
    println!(
        "mcp-filesystem listening on http://{}/mcp (roots: {roots})",
        shown(bound)
    );
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            // Ends the open MCP sessions (their SSE streams) so the
            // graceful shutdown does not wait for clients to hang up.
            cancel.cancel();
        })
        .await
        .context("server error")?;
    tracing::info!("mcp-filesystem stopped");
    Ok(())
}

/// The address to print: loopback for an unspecified bind address.
fn shown(bound: SocketAddr) -> String {
    if bound.ip().is_unspecified() {
        format!("127.0.0.1:{}", bound.port())
    } else {
        bound.to_string()
    }
}

/// `/mcp` (streamable HTTP) and `GET /health`.
///
/// On a loopback address rmcp's `Host` check stays on (DNS rebinding);
/// on any other address the server is meant to be reached by other names
/// (compose service names), so the check is off, as in the reference.
pub fn router(sandbox: Arc<Sandbox>, bound: SocketAddr, cancel: CancellationToken) -> Router {
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(cancel);
    if !bound.ip().is_loopback() {
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(FilesystemServer::new(sandbox.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest_service("/mcp", service)
}
