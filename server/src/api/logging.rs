//! One log line per request: method, path, status, latency, conversation
//! id and `sid=`. The session id is chosen here (incoming `X-Session-ID`
//! or a fresh one), handed to handlers as a request extension and echoed
//! in the response. Headers, bodies and query strings are never logged.

use std::time::Instant;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use uuid::Uuid;

use super::extract::{SESSION_HEADER, SessionId, session_from_headers};
use crate::context::new_session_id;

/// Set by handlers on responses about one conversation, so the log line
/// names it and shows its session id.
#[derive(Debug, Clone)]
pub struct ConversationTag {
    /// The conversation.
    pub id: Uuid,
    /// Its session id.
    pub session_id: String,
}

/// The request-logging middleware.
pub async fn log_requests(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    // The route template, never the raw path, labels the metrics.
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |m| m.as_str().to_string());
    let sid = session_from_headers(request.headers()).unwrap_or_else(new_session_id);
    request.extensions_mut().insert(SessionId(sid.clone()));
    let mut response = next.run(request).await;
    let tag = response.extensions().get::<ConversationTag>().cloned();
    let sid = tag.as_ref().map_or(sid, |t| t.session_id.clone());
    let conversation = tag.map(|t| t.id.to_string()).unwrap_or_else(|| "-".into());
    if let Ok(value) = HeaderValue::from_str(&sid) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    let took = started.elapsed();
    let latency_ms = took.as_secs_f64() * 1000.0;
    let status = response.status().as_u16();
    crate::metrics::metrics().http_request(method.as_str(), &route, status, took);
    tracing::info!(
        target: "http",
        %method,
        %path,
        status,
        latency_ms = format_args!("{latency_ms:.2}"),
        %conversation,
        %sid,
        "request"
    );
    response
}
