//! `/api/*` -> the agent, streaming both ways. State-changing requests
//! from another site are refused (403). With login configured, a
//! signed-in session's access token is sent as `Authorization: Bearer`
//! (whatever the browser sent), and a request without a session and
//! without its own credentials gets 401.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;

use super::auth::{WebAuth, json_error, sign_in_required};
use super::security::check_same_origin;

/// Request headers passed to the agent.
const FORWARDED_REQUEST: [&str; 7] = [
    "content-type",
    "accept",
    "authorization",
    "x-session-id",
    "last-event-id",
    // W3C trace context: the browser's (or a gateway's) trace goes on
    // into the agent's spans.
    "traceparent",
    "tracestate",
];

/// Response headers passed back to the browser.
const FORWARDED_RESPONSE: [&str; 4] = [
    "content-type",
    "cache-control",
    "x-session-id",
    "www-authenticate",
];

/// Largest request body forwarded.
const MAX_BODY: usize = 1024 * 1024;

/// The agent's base URL and an HTTP client.
pub struct Proxy {
    agent_url: String,
    http: reqwest::Client,
    auth: Option<Arc<WebAuth>>,
    trusted_origins: Arc<[String]>,
}

impl Proxy {
    /// A proxy to `agent_url`, adding the session's token when `auth` is
    /// set; state-changing requests only from `trusted_origins`.
    pub fn new(
        agent_url: &str,
        auth: Option<Arc<WebAuth>>,
        trusted_origins: Arc<[String]>,
    ) -> Proxy {
        Proxy {
            auth,
            trusted_origins,
            agent_url: agent_url.trim_end_matches('/').to_string(),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .build()
                .unwrap_or_default(),
        }
    }
}

/// Forwards one request.
pub async fn forward(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Some(refused) = refuse_cross_site(&proxy, &parts) {
        return refused;
    }
    let bearer = match session_bearer(&proxy, &parts.headers).await {
        Ok(bearer) => bearer,
        Err(refused) => return refused,
    };
    let url = agent_url(&proxy.agent_url, &parts.uri);
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "request body too large".into(),
        );
    };
    let outgoing = agent_request(&proxy.http, &parts, &url, body, bearer.as_deref());
    let upstream = match outgoing.send().await {
        Ok(upstream) => upstream,
        Err(e) => {
            tracing::warn!(agent = %proxy.agent_url, error = %e, "agent unreachable");
            return error(
                StatusCode::BAD_GATEWAY,
                "agent_unreachable",
                format!(
                    "cannot reach the agent at {}; is it running?",
                    proxy.agent_url
                ),
            );
        }
    };
    relay(upstream)
}

/// The 403 for a state-changing request from another site, if it is one.
fn refuse_cross_site(proxy: &Proxy, parts: &Parts) -> Option<Response> {
    let trusted = &proxy.trusted_origins;
    let Err(refused) = check_same_origin(&parts.method, &parts.headers, trusted) else {
        return None;
    };
    tracing::warn!(method = %parts.method, path = %parts.uri.path(), "{}", refused.0);
    Some(json_error(StatusCode::FORBIDDEN, "forbidden", &refused.0))
}

/// The signed-in session's access token when login is configured, or the
/// 401 for a request with neither a session nor its own credentials.
async fn session_bearer(proxy: &Proxy, headers: &HeaderMap) -> Result<Option<String>, Response> {
    match &proxy.auth {
        None => Ok(None),
        Some(auth) => match auth.bearer(headers).await {
            Ok(token) => Ok(Some(token)),
            // A script with its own credentials (no session) passes.
            Err(_) if headers.contains_key("authorization") => Ok(None),
            Err(_) => Err(sign_in_required()),
        },
    }
}

/// The agent's URL for a `/api/...` request, query included.
fn agent_url(base: &str, uri: &Uri) -> String {
    let path = uri.path().strip_prefix("/api").unwrap_or_default();
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    format!("{base}{}{query}", if path.is_empty() { "/" } else { path })
}

/// The request to the agent: the forwarded headers, with the session's
/// token replacing the browser's `Authorization`. The browser's `Host`
/// (and any `Forwarded` / `X-Forwarded-*`) is not among them: reqwest
/// sends the agent's own host from `agent_url`, so the agent's own Host
/// check judges this server, not the page.
fn agent_request(
    http: &reqwest::Client,
    parts: &Parts,
    url: &str,
    body: Bytes,
    bearer: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut outgoing = http
        .request(parts.method.clone(), url)
        .header(asg_http::CLIENT_HEADER, "web")
        .body(body);
    for name in FORWARDED_REQUEST {
        if name == "authorization" && bearer.is_some() {
            continue;
        }
        if let Some(value) = parts.headers.get(name) {
            outgoing = outgoing.header(name, value);
        }
    }
    if let Some(token) = bearer {
        outgoing = outgoing.bearer_auth(token);
    }
    outgoing
}

/// The agent's answer for the browser: its status, the forwarded
/// headers, and the body streamed unbuffered.
fn relay(upstream: reqwest::Response) -> Response {
    let mut response = Response::builder().status(upstream.status().as_u16());
    for name in FORWARDED_RESPONSE {
        if let Some(value) = upstream.headers().get(name)
            && let Ok(value) = HeaderValue::from_bytes(value.as_bytes())
        {
            response = response.header(name, value);
        }
    }
    // Server-sent events must not be buffered by anything in between.
    response = response.header("x-accel-buffering", "no");
    let stream = upstream.bytes_stream().map_err(std::io::Error::other);
    response
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| {
            error(
                StatusCode::BAD_GATEWAY,
                "bad_gateway",
                "invalid agent answer".into(),
            )
        })
}

fn error(status: StatusCode, code: &str, message: String) -> Response {
    (
        status,
        axum::Json(serde_json::json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}
