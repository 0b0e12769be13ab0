//! The `Host` check against DNS rebinding, one implementation for every
//! server a browser can reach: the agent (`api::guard`), the `web` binary
//! and the tool servers over HTTP (`asg-tool-http`).
//!
//! A page on `evil.example` can make its name resolve to 127.0.0.1 (or to
//! a compose service's address) and then talk to a local server
//! "same-origin"; its requests still carry `Host: evil.example`. A server
//! answers only loopback names (`localhost`, `*.localhost`, 127.0.0.0/8,
//! `[::1]`, any port) and the names of its `allowed_hosts`; other hosts
//! get 421 Misdirected Request, whose message names the host and the
//! setting that would allow it.
//!
//! The agent checks when it listens on loopback or has `allowed_hosts`
//! ([`HostPolicy::new`], unchanged from before); the web server and the
//! tool servers check on every listen address, `0.0.0.0` included
//! ([`HostPolicy::always`]): they have no reason to answer a name nobody
//! configured.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::Response;

/// Longest host name echoed back in an error message.
const MAX_ECHOED: usize = 100;

/// Which `Host` header values a server answers.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// False: every host is answered.
    check: bool,
    /// Extra accepted names, lower case, without port or brackets.
    allowed: Vec<String>,
    /// The configured listen address, for error messages.
    listen: String,
    /// What the server is called in messages ("agent", "web server").
    server: String,
}

impl HostPolicy {
    /// The agent's policy: checked when it listens on a loopback address
    /// (`listen_host`) or when `allowed_hosts` is set.
    pub fn new(listen_host: &str, allowed_hosts: &[String]) -> HostPolicy {
        let mut policy = HostPolicy::always("agent", listen_host, allowed_hosts);
        policy.check = is_loopback_name(&normalize(listen_host)) || !allowed_hosts.is_empty();
        policy
    }

    /// Checked on every listen address: loopback names and
    /// `allowed_hosts` only. `server` names the server in messages.
    pub fn always(server: &str, listen_host: &str, allowed_hosts: &[String]) -> HostPolicy {
        HostPolicy {
            check: true,
            allowed: allowed_hosts.iter().map(|h| normalize(h)).collect(),
            listen: listen_host.to_string(),
            server: server.to_string(),
        }
    }

    /// Answers every host (router tests, tools).
    pub fn any() -> HostPolicy {
        HostPolicy {
            check: false,
            allowed: Vec::new(),
            listen: String::new(),
            server: "server".into(),
        }
    }

    /// Also answers these names (e.g. the host of a configured public
    /// URL).
    pub fn with_names(mut self, names: impl IntoIterator<Item = String>) -> HostPolicy {
        for name in names {
            let name = normalize(&name);
            if !name.is_empty() && !self.allowed.contains(&name) {
                self.allowed.push(name);
            }
        }
        self
    }

    /// The accepted names besides loopback ones (normalized).
    pub fn allowed_names(&self) -> &[String] {
        &self.allowed
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

    /// The request's host, if it is refused: `Err` with the 421 message.
    /// A request without any host (not a browser: every browser sends
    /// one) passes.
    pub fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), String> {
        match request_host(headers, uri) {
            Ok(None) => Ok(()),
            Ok(Some(host)) if self.accepts(host) => Ok(()),
            Ok(Some(host)) => Err(self.refusal(host)),
            Err(()) => Err(self.refusal("(not text)")),
        }
    }

    /// The message of a refusal: the host, what is answered, and the
    /// setting that would allow it.
    pub fn refusal(&self, host: &str) -> String {
        let shown: String = host.chars().take(MAX_ECHOED).collect();
        let name = normalize(&shown);
        format!(
            "this {server} does not answer to host {shown:?}: it listens on {} and answers \
             loopback names (localhost, 127.0.0.1, [::1]){}; to allow the name, add it to \
             the {server} config: allowed_hosts: [{name:?}]",
            self.listen,
            self.listed(),
            server = self.server,
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

/// The 421 answer (`misdirected_request`) of a refused host.
pub fn misdirected(message: String) -> Response {
    crate::error_response(
        StatusCode::MISDIRECTED_REQUEST,
        "misdirected_request",
        message,
    )
}

/// Middleware: 421 for a refused `Host`, before anything else runs.
pub async fn refuse_foreign_hosts(
    State(policy): State<Arc<HostPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    match policy.check(request.headers(), request.uri()) {
        Ok(()) => next.run(request).await,
        Err(message) => {
            tracing::warn!(path = %request.uri().path(), "{message}");
            misdirected(message)
        }
    }
}

/// Lower case, without the port, the IPv6 brackets or a final dot.
pub fn normalize(host: &str) -> String {
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
pub fn is_loopback_name(name: &str) -> bool {
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

/// `allowed_hosts` entries are bare host names (an optional port is
/// ignored), not URLs. `Err((field, problem))`.
pub fn validate_allowed_hosts(hosts: &[String]) -> Result<(), (String, String)> {
    for (i, host) in hosts.iter().enumerate() {
        let bad = host.trim().is_empty()
            || host.contains('/')
            || host.contains('@')
            || host.chars().any(char::is_whitespace);
        if bad {
            return Err((
                format!("allowed_hosts[{i}]"),
                format!("must be a host name like \"agent.example.com\", got {host:?}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
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
    fn always_checks_on_every_listen_address() {
        for listen in ["0.0.0.0", "::", "192.168.1.5", "127.0.0.1"] {
            let policy = HostPolicy::always("mcp-resources server", listen, &[]);
            assert!(!policy.accepts("evil.example:8090"), "{listen}");
            assert!(!policy.accepts("mcp-resources:8090"), "{listen}");
            assert!(policy.accepts("127.0.0.1:8090"), "{listen}");
            assert!(policy.accepts("localhost"), "{listen}");
            let named = HostPolicy::always("x", listen, &["MCP-Resources".into()]);
            assert!(named.accepts("mcp-resources:8090"), "{listen}");
            assert!(!named.accepts("evil.example"), "{listen}");
        }
        let extra = HostPolicy::always("web server", "0.0.0.0", &[])
            .with_names(["Chat.Example.com:443".to_string(), String::new()]);
        assert_eq!(extra.allowed_names(), ["chat.example.com"]);
        assert!(extra.accepts("chat.example.com"));
    }

    #[test]
    fn the_refusal_names_the_host_the_server_and_the_setting() {
        let policy = HostPolicy::new("127.0.0.1", &[]);
        let message = policy.refusal("Evil.example:8080");
        assert!(message.contains("\"Evil.example:8080\""), "{message}");
        assert!(
            message.starts_with("this agent does not answer"),
            "{message}"
        );
        assert!(
            message.contains("the agent config: allowed_hosts: [\"evil.example\"]"),
            "{message}"
        );
        let policy = HostPolicy::always("web server", "0.0.0.0", &["chat.lan".into()]);
        let message = policy.refusal(&"x".repeat(500));
        assert!(message.starts_with("this web server"), "{message}");
        assert!(message.contains("allowed_hosts (chat.lan)"), "{message}");
        assert!(message.len() < 600, "the host is cut: {message}");
    }

    #[test]
    fn allowed_hosts_are_names_not_urls() {
        assert!(validate_allowed_hosts(&["a.example".into(), "box:8080".into()]).is_ok());
        for bad in ["http://a.example/", "", " ", "user@host", "a b"] {
            let (field, problem) = validate_allowed_hosts(&["ok".into(), bad.into()]).unwrap_err();
            assert_eq!(field, "allowed_hosts[1]", "{bad:?}");
            assert!(problem.contains("host name"), "{problem}");
        }
    }

    #[tokio::test]
    async fn the_middleware_answers_421_as_json_before_the_route() {
        let policy = Arc::new(HostPolicy::always("web server", "0.0.0.0", &[]));
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(middleware::from_fn_with_state(policy, refuse_foreign_hosts));
        let ask = |host: Option<&str>| {
            let mut builder = axum::http::Request::builder().uri("/");
            if let Some(host) = host {
                builder = builder.header("host", host);
            }
            app.clone().oneshot(builder.body(Body::empty()).unwrap())
        };
        let response = ask(Some("evil.example:3000")).await.unwrap();
        assert_eq!(response.status(), StatusCode::MISDIRECTED_REQUEST);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains(r#""code":"misdirected_request""#), "{body}");
        assert!(body.contains("evil.example:3000"), "{body}");
        for host in [Some("localhost:3000"), None] {
            let response = ask(host).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{host:?}");
        }
    }
}
