//! Keeps browsers from being turned against a local agent.
//!
//! - **DNS rebinding:** a page on `evil.example` can make its name resolve
//!   to 127.0.0.1 and then talk to the agent "same-origin"; its requests
//!   still carry `Host: evil.example`. When the agent listens on a loopback
//!   address, only loopback names (and `allowed_hosts`) are answered; other
//!   hosts get 421. On other addresses the check applies once
//!   `allowed_hosts` is set.
//! - **Cross-site simple requests:** a form or `fetch` without preflight
//!   can only send `text/plain`, form or multipart bodies. A state-changing
//!   request with a body must say `application/json` (or `*/*+json`),
//!   otherwise it gets 415 before any handler runs.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Longest host name echoed back in an error message.
const MAX_ECHOED: usize = 100;

/// Which `Host` header values the agent answers.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// False: every host is answered.
    check: bool,
    /// Extra accepted names, lower case, without port or brackets.
    allowed: Vec<String>,
    /// The configured listen address, for error messages.
    listen: String,
}

impl HostPolicy {
    /// The policy for an agent listening on `listen_host` with the
    /// configured `allowed_hosts`.
    pub fn new(listen_host: &str, allowed_hosts: &[String]) -> HostPolicy {
        HostPolicy {
            check: is_loopback_name(&normalize(listen_host)) || !allowed_hosts.is_empty(),
            allowed: allowed_hosts.iter().map(|h| normalize(h)).collect(),
            listen: listen_host.to_string(),
        }
    }

    /// Answers every host (router tests, tools).
    pub fn any() -> HostPolicy {
        HostPolicy {
            check: false,
            allowed: Vec::new(),
            listen: String::new(),
        }
    }

    /// Whether a `Host` value (`name`, `name:port`, `[v6]:port`) is
    /// answered.
    pub fn accepts(&self, host: &str) -> bool {
        if !self.check {
            return true;
        }
        let name = normalize(host);
        is_loopback_name(&name) || self.allowed.contains(&name)
    }

    fn refusal(&self, host: &str) -> ApiError {
        let shown: String = host.chars().take(MAX_ECHOED).collect();
        let name = normalize(&shown);
        ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "misdirected_request",
            format!(
                "this agent does not answer to host {shown:?}: it listens on {} and answers \
                 loopback names (localhost, 127.0.0.1, [::1]){}; to allow the name, add it to \
                 the agent config: allowed_hosts: [{name:?}]",
                self.listen,
                self.listed(),
            ),
        )
    }

    fn listed(&self) -> String {
        if self.allowed.is_empty() {
            String::new()
        } else {
            format!(" and allowed_hosts ({})", self.allowed.join(", "))
        }
    }
}

/// Lower case, without the port, the IPv6 brackets or a final dot.
fn normalize(host: &str) -> String {
    let host = host.trim();
    if host.parse::<IpAddr>().is_ok() {
        // A bare IPv6 address (a listen address, never a Host header).
        return host.to_ascii_lowercase();
    }
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split_once(']').map_or(rest, |(inside, _)| inside)
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// `localhost`, `*.localhost`, 127.0.0.0/8 and `::1` (normalized names).
fn is_loopback_name(name: &str) -> bool {
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The host a request was sent to: the `Host` header, or the URI's
/// authority (HTTP/2). `Err` for a header that is not text.
fn request_host<'a>(headers: &'a HeaderMap, uri: &'a Uri) -> Result<Option<&'a str>, ()> {
    match headers.get(header::HOST) {
        Some(value) => value.to_str().map(Some).map_err(|_| ()),
        None => Ok(uri.authority().map(|a| a.as_str())),
    }
}

/// Whether a request has (or may have) a body: anything but a body known
/// to be empty (a body of unknown length counts as one).
fn has_body(body: &Body) -> bool {
    !body.is_end_stream() && body.size_hint().exact() != Some(0)
}

/// `application/json` or `application/<something>+json`, any parameters.
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// 415 unless a state-changing request with a body declares JSON.
fn check_content_type(request: &Request) -> Result<(), ApiError> {
    if request.method().is_safe() || !has_body(request.body()) {
        return Ok(());
    }
    let received = match request.headers().get(header::CONTENT_TYPE) {
        None => "none".to_string(),
        Some(value) => match value.to_str() {
            Ok(text) if is_json(text) => return Ok(()),
            Ok(text) => format!("{:?}", text.chars().take(MAX_ECHOED).collect::<String>()),
            Err(_) => "(not text)".to_string(),
        },
    };
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!(
            "request body has content type {received}; this endpoint expects \
             application/json (send the header `Content-Type: application/json`)"
        ),
    ))
}

/// The middleware: Host first (421), then the content type (415).
pub async fn guard(State(hosts): State<Arc<HostPolicy>>, request: Request, next: Next) -> Response {
    if let Err(error) = check_host(&hosts, &request) {
        return error.into_response();
    }
    if let Err(error) = check_content_type(&request) {
        return error.into_response();
    }
    next.run(request).await
}

fn check_host(policy: &Arc<HostPolicy>, request: &Request) -> Result<(), ApiError> {
    match request_host(request.headers(), request.uri()) {
        // No Host at all: not a browser (every browser sends one).
        Ok(None) => Ok(()),
        Ok(Some(host)) if policy.accepts(host) => Ok(()),
        Ok(Some(host)) => Err(policy.refusal(host)),
        Err(()) => Err(policy.refusal("(not text)")),
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::middleware;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    #[test]
    fn loopback_listeners_answer_loopback_names_and_allowed_hosts_only() {
        let policy = HostPolicy::new("127.0.0.1", &["Agent.Example.com".into()]);
        for host in [
            "localhost",
            "LOCALHOST:8080",
            "app.localhost:3000",
            "127.0.0.1",
            "127.1.2.3:9",
            "[::1]",
            "[::1]:8080",
            "agent.example.com",
            "AGENT.example.COM:443",
            "localhost.",
        ] {
            assert!(policy.accepts(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "128.0.0.1",
            "[::2]:80",
            "example.com",
            "",
        ] {
            assert!(!policy.accepts(host), "{host}");
        }
    }

    #[test]
    fn which_listen_addresses_check_the_host() {
        for listen in [
            "127.0.0.1",
            "127.0.0.2",
            "::1",
            "[::1]",
            "localhost",
            "LocalHost",
        ] {
            assert!(
                !HostPolicy::new(listen, &[]).accepts("evil.example"),
                "{listen}"
            );
        }
        for listen in ["0.0.0.0", "::", "192.168.1.5", "agent.internal"] {
            assert!(
                HostPolicy::new(listen, &[]).accepts("evil.example"),
                "{listen}"
            );
            let strict = HostPolicy::new(listen, &["agent.internal".into()]);
            assert!(!strict.accepts("evil.example"), "{listen}");
            assert!(strict.accepts("agent.internal:8080"), "{listen}");
            assert!(strict.accepts("localhost:8080"), "{listen}");
        }
        assert!(HostPolicy::any().accepts("evil.example"));
    }

    #[test]
    fn json_media_types() {
        for good in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/json-rpc+json",
            "application/problem+json;charset=UTF-8",
        ] {
            assert!(is_json(good), "{good}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "text/json",
            "application/jsonp",
            "",
        ] {
            assert!(!is_json(bad), "{bad}");
        }
    }

    async fn answer(
        policy: HostPolicy,
        request: axum::http::Request<Body>,
    ) -> (StatusCode, String) {
        let app = Router::new()
            .route("/", get(|| async { "ok" }).post(|| async { "posted" }))
            .layer(middleware::from_fn_with_state(Arc::new(policy), guard));
        let response = app.oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    fn request(
        method: &str,
        host: Option<&str>,
        content_type: Option<&str>,
        body: &str,
    ) -> axum::http::Request<Body> {
        let mut builder = axum::http::Request::builder().method(method).uri("/");
        if let Some(host) = host {
            builder = builder.header("host", host);
        }
        if let Some(content_type) = content_type {
            builder = builder.header("content-type", content_type);
        }
        builder
            .header("content-length", body.len())
            .body(Body::from(body.to_string()))
            .unwrap()
    }

    #[tokio::test]
    async fn the_middleware_answers_421_then_415_as_json() {
        let local = || HostPolicy::new("127.0.0.1", &["box.lan".into()]);
        let (status, body) =
            answer(local(), request("GET", Some("evil.example:8080"), None, "")).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{body}");
        assert!(body.contains(r#""code":"misdirected_request""#), "{body}");
        assert!(
            body.contains("evil.example:8080") && body.contains("allowed_hosts"),
            "{body}"
        );
        for host in [Some("localhost:8080"), Some("BOX.lan:1"), None] {
            let (status, body) = answer(local(), request("GET", host, None, "")).await;
            assert_eq!((status, body.as_str()), (StatusCode::OK, "ok"), "{host:?}");
        }
        let form = request("POST", Some("localhost"), Some("text/plain"), "{}");
        let (status, body) = answer(local(), form).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
        assert!(
            body.contains(r#""code":"unsupported_media_type""#),
            "{body}"
        );
        assert!(
            body.contains("text/plain") && body.contains("application/json"),
            "{body}"
        );
        let (status, body) = answer(local(), request("POST", None, None, "{}")).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
        assert!(body.contains("content type none"), "{body}");
        for (content_type, body) in [
            (Some("application/json; charset=utf-8"), "{}"),
            (Some("application/vnd.api+json"), "{}"),
            (None, ""),
            (Some("text/plain"), ""),
        ] {
            let (status, answer) = answer(local(), request("POST", None, content_type, body)).await;
            assert_eq!(
                (status, answer.as_str()),
                (StatusCode::OK, "posted"),
                "{content_type:?}"
            );
        }
    }

    #[test]
    fn the_refusal_names_the_host_and_the_setting() {
        let policy = HostPolicy::new("127.0.0.1", &[]);
        let message = format!("{:?}", policy.refusal("Evil.example:8080"));
        assert!(message.contains("Evil.example:8080"), "{message}");
        assert!(
            message.contains("allowed_hosts: [\\\"evil.example\\\"]"),
            "{message}"
        );
    }
}
