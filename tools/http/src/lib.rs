//! What `mcp-resources --config` and `mcp-filesystem` share to serve their
//! tools over MCP streamable HTTP: rmcp's `StreamableHttpService` (one
//! session per client) at `/mcp` beside `GET /health`, the listening line
//! tests and scripts read, and a graceful shutdown that ends the open
//! sessions first.
//!
//! `/mcp` is guarded ([`Access`]) on every listen address, `0.0.0.0`
//! included: a `Host` that is neither a loopback name nor in the server's
//! `allowed_hosts` gets 421 (`asg_http::host_check`, against DNS rebinding:
//! these servers have no other authentication by default), then, with
//! `auth_token_env`, a request without the service token gets 401
//! (`asg_http::service_token`). `/health` stays open: probes reach it by IP
//! and it tells nothing but "ok".

pub mod config;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use asg_http::host_check::{HostPolicy, misdirected};
use asg_http::service_token::{self, ExpectedToken};

/// Who may call `/mcp`: the `Host` names answered and, optionally, the
/// service token a request must carry.
#[derive(Debug)]
pub struct Access {
    hosts: HostPolicy,
    token: Option<ExpectedToken>,
}

impl Access {
    /// The access of server `server` (e.g. `mcp-resources`) listening on
    /// `listen_host`: loopback names and `allowed_hosts`, and the token in
    /// the variable `auth_token_env` names, read from the environment now
    /// (an error names the variable).
    pub fn new(
        server: &str,
        listen_host: &str,
        allowed_hosts: &[String],
        auth_token_env: Option<&str>,
    ) -> Result<Access, String> {
        Access::with_env(server, listen_host, allowed_hosts, auth_token_env, &|var| {
            std::env::var(var).ok()
        })
    }

    /// [`Access::new`] with the environment looked up by `env`.
    pub fn with_env(
        server: &str,
        listen_host: &str,
        allowed_hosts: &[String],
        auth_token_env: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Access, String> {
        let token = match auth_token_env {
            Some(var) => {
                let token = service_token::from_env("auth_token_env", var, env)?;
                Some(ExpectedToken::new(&token))
            }
            None => None,
        };
        Ok(Access {
            hosts: HostPolicy::always(&format!("{server} server"), listen_host, allowed_hosts),
            token,
        })
    }

    /// Whether requests must carry the service token.
    pub fn needs_token(&self) -> bool {
        self.token.is_some()
    }
}

/// `/mcp` (streamable HTTP, a `make` per session), guarded by `access`,
/// and `GET /health`.
///
/// rmcp's own `Host` check is off: ours ([`Access`]) runs first on every
/// listen address, with the same rules as the agent's and the server's
/// `allowed_hosts` (rmcp's knows loopback names only, and only where it is
/// turned on).
pub fn router<S, F>(make: F, access: Access, cancel: CancellationToken) -> Router
where
    S: ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + Clone + 'static,
{
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel)
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    // Layers apply to the routes added before them: `/health` stays open.
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(Arc::new(access), guard))
        .route("/health", get(|| async { "ok" }))
}

/// Host first (421), then the service token (401).
async fn guard(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    if let Err(message) = access.hosts.check(request.headers(), request.uri()) {
        tracing::warn!("{message}");
        return misdirected(message);
    }
    if let Some(token) = &access.token
        && !token.accepts(request.headers())
    {
        tracing::warn!("a request without the service token was refused (401)");
        return service_token::unauthorized();
    }
    next.run(request).await
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
    asg_http::serve::serve(listener, router, async move {
        shutdown.await;
        cancel.cancel();
    })
    .await
    .context("server error")
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::StatusCode;
    use tower::ServiceExt;

    use super::*;

    /// A server without tools: only the guard in front of it matters.
    #[derive(Clone)]
    struct NoTools;
    impl ServerHandler for NoTools {}

    const TOKEN: &str = "a-service-token-of-32-characters";

    fn access(allowed: &[&str], token: bool) -> Access {
        let allowed: Vec<String> = allowed.iter().map(|h| h.to_string()).collect();
        let env = |var: &str| (var == "TOOL_TOKEN").then(|| TOKEN.to_string());
        let var = token.then_some("TOOL_TOKEN");
        Access::with_env("mcp-test", "0.0.0.0", &allowed, var, &env).unwrap()
    }

    async fn status(access: Access, path: &str, host: &str, bearer: Option<&str>) -> StatusCode {
        let app = router(|| NoTools, access, CancellationToken::new());
        let mut request = axum::http::Request::builder()
            .method(if path == "/health" { "GET" } else { "POST" })
            .uri(path)
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(token) = bearer {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let response = app
            .oneshot(request.body(Body::from(body)).unwrap())
            .await
            .unwrap();
        response.status()
    }

    #[tokio::test]
    async fn a_foreign_host_gets_421_on_an_unspecified_address() {
        let plain = || access(&["mcp-test"], false);
        assert_eq!(
            status(plain(), "/mcp", "evil.example:8090", None).await,
            StatusCode::MISDIRECTED_REQUEST
        );
        for host in ["127.0.0.1:8090", "localhost", "MCP-test:8090"] {
            let got = status(plain(), "/mcp", host, None).await;
            assert_ne!(got, StatusCode::MISDIRECTED_REQUEST, "{host}");
            assert_ne!(got, StatusCode::UNAUTHORIZED, "{host}");
        }
        assert_eq!(
            status(plain(), "/health", "evil.example", None).await,
            StatusCode::OK
        );
    }

    #[tokio::test]
    async fn with_a_token_mcp_needs_it_and_health_does_not() {
        let guarded = || access(&[], true);
        assert_eq!(
            status(guarded(), "/mcp", "localhost", None).await,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            status(
                guarded(),
                "/mcp",
                "localhost",
                Some("wrong-token-wrong-token")
            )
            .await,
            StatusCode::UNAUTHORIZED
        );
        let got = status(guarded(), "/mcp", "localhost", Some(TOKEN)).await;
        assert!(
            got.is_success() || got == StatusCode::BAD_REQUEST,
            "rmcp answers: {got}"
        );
        // The Host is judged first, even with the right token.
        assert_eq!(
            status(guarded(), "/mcp", "evil.example", Some(TOKEN)).await,
            StatusCode::MISDIRECTED_REQUEST
        );
        assert_eq!(
            status(guarded(), "/health", "localhost", None).await,
            StatusCode::OK
        );
        let missing = Access::with_env("mcp-test", "0.0.0.0", &[], Some("NOPE"), &|_| None);
        assert!(missing.unwrap_err().contains("NOPE"));
    }
}
