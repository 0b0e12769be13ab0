//! The `web` binary's `GET /metrics`: its HTTP requests by route template
//! and the standard `process_*` values (`asg_http::metrics`). On the
//! chat's own address it needs a signed-in session when sign-in is
//! configured (like `/api`); `metrics_listen` serves it alone, without
//! sign-in, for a scraper on a private network.

use std::sync::{Arc, OnceLock};

use asg_http::metrics::{HttpMetrics, Registry};
use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;

use crate::auth::{WebAuth, sign_in_required};

/// The process's registry and HTTP families.
pub struct WebMetrics {
    registry: Registry,
    /// Counted by the router's middleware.
    pub http: HttpMetrics,
}

/// The process-wide metrics.
pub fn metrics() -> &'static WebMetrics {
    static METRICS: OnceLock<WebMetrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut registry = Registry::default();
        let http = HttpMetrics::register(&mut registry);
        asg_http::metrics::register_process(&mut registry);
        WebMetrics { registry, http }
    })
}

/// `GET /metrics` on the chat's address: for a signed-in session when
/// sign-in is configured.
pub fn routes(auth: Option<Arc<WebAuth>>) -> Router {
    Router::new()
        .route("/metrics", get(guarded))
        .with_state(auth)
}

async fn guarded(State(auth): State<Option<Arc<WebAuth>>>, headers: HeaderMap) -> Response {
    if let Some(auth) = auth
        && auth.bearer(&headers).await.is_err()
    {
        return sign_in_required();
    }
    asg_http::metrics::answer(&metrics().registry)
}

/// `GET /metrics` alone (`metrics_listen`).
pub fn open_router() -> Router {
    Router::new().route(
        "/metrics",
        get(|| async { asg_http::metrics::answer(&metrics().registry) }),
    )
}
