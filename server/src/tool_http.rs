//! What `mcp-resources --config` and `mcp-filesystem` share to serve their
//! tools over MCP streamable HTTP: rmcp's `StreamableHttpService` (one
//! session per client) at `/mcp` beside `GET /health`, the listening line
//! tests and scripts read, and a graceful shutdown that ends the open
//! sessions first.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::routing::get;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// `/mcp` (streamable HTTP, a `make` per session) and `GET /health`.
///
/// On a loopback address rmcp's `Host` check stays on (DNS rebinding);
/// on any other address the server is meant to be reached by other names
/// (compose service names), so the check is off, as in the reference.
pub fn router<S, F>(make: F, bound: SocketAddr, cancel: CancellationToken) -> Router
where
    S: ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + Clone + 'static,
{
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(cancel);
    if !bound.ip().is_loopback() {
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest_service("/mcp", service)
}

/// Binds `host:port`; the listener and the address it got.
pub async fn bind(host: &str, port: u16) -> anyhow::Result<(TcpListener, SocketAddr)> {
    let address = format!("{host}:{port}");
    let listener = TcpListener::bind(&address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}

/// Serves `router` until `shutdown` completes; then `cancel` ends the
/// open MCP sessions (their SSE streams) so the graceful shutdown does
/// not wait for clients to hang up.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            cancel.cancel();
        })
        .await
        .context("server error")
}

/// The address to print: loopback for an unspecified bind address.
pub fn shown(bound: SocketAddr) -> String {
    if bound.ip().is_unspecified() {
        format!("127.0.0.1:{}", bound.port())
    } else {
        bound.to_string()
    }
}
