//! One span and one log line per request: method, path, status,
//! latency, conversation id, `sid=` and the trace id (OpenTelemetry's
//! when traces are on, else the caller's `traceparent`). The session id is chosen here (incoming `X-Session-ID`
//! or a fresh one), handed to handlers as a request extension and echoed
//! in the response. Headers, bodies and query strings are never logged.

use std::future::Future;
use std::time::Instant;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::response::Response;
use tracing::Instrument;
use uuid::Uuid;

use super::extract::{SESSION_HEADER, SessionId, session_from_headers};
use crate::context::new_session_id;
use crate::telemetry;

/// Set by handlers on responses about one conversation, so the log line
/// names it and shows its session id.
#[derive(Debug, Clone)]
pub struct ConversationTag {
    /// The conversation.
    pub id: Uuid,
    /// Its session id.
    pub session_id: String,
}

/// Answers a request with `handle`, inside the request's span (its parent
/// the caller's `traceparent`), then writes its log line and metrics.
/// Called by [`super::edge`], first.
pub async fn logged<F, Answer>(mut request: Request, handle: F) -> Response
where
    F: FnOnce(Request) -> Answer,
    Answer: Future<Output = Response>,
{
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    // The route template, never the raw path, labels the metrics.
    let route = asg_http::metrics::route_of(&request);
    let sid = session_from_headers(request.headers()).unwrap_or_else(new_session_id);
    let span = telemetry::request_span(method.as_str(), &route, &sid);
    telemetry::set_parent_from(&span, request.headers());
    let trace_id = telemetry::trace_id_of(&span, request.headers());
    if let Some(trace_id) = &trace_id {
        span.record("trace_id", trace_id.as_str());
    }
    request.extensions_mut().insert(SessionId(sid.clone()));
    let mut response = handle(request).instrument(span.clone()).await;
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
    telemetry::end_request_span(&span, status);
    span.in_scope(|| {
        tracing::info!(
            target: asg_http::logging::REQUEST_TARGET,
            %method,
            %path,
            status,
            latency_ms = format_args!("{latency_ms:.2}"),
            trace_id = %trace_id.as_deref().unwrap_or("-"),
            %conversation,
            %sid,
            "request"
        )
    });
    response
}
