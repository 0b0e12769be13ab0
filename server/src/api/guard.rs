//! Keeps browsers from being turned against a local agent.
//!
//! - **DNS rebinding:** a page on `evil.example` can make its name resolve
//!   to 127.0.0.1 and then talk to the agent "same-origin"; its requests
//!   still carry `Host: evil.example`. When the agent listens on a loopback
//!   address, only loopback names (and `allowed_hosts`) are answered; other
//!   hosts get 421. On other addresses the check applies once
//!   `allowed_hosts` is set. The check itself is `asg_http::host_check`,
//!   shared with the web server and the tool servers.
//! - **Cross-site simple requests:** a form or `fetch` without preflight
//!   can only send `text/plain`, form or multipart bodies. A state-changing
//!   request with a body must say `application/json` (or `*/*+json`),
//!   otherwise it gets 415 before any handler runs. The channels' routes
//!   (`/channels/…`: Slack's signed forms, an email link's confirmation
//!   form) are the exception: each verifies a signature or a signed
//!   token the forging page cannot have.

use asg_http::host_check::HostPolicy;
use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Longest content type echoed back in an error message.
const MAX_ECHOED: usize = 100;

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
    if request.method().is_safe()
        || !has_body(request.body())
        || super::channels::is_channel_path(request.uri().path())
    {
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

/// The answer refusing a request, if it is refused: Host first (421,
/// `asg_http::host_check`), then the content type (415). Called by
/// [`super::edge`].
pub fn refusal(hosts: &HostPolicy, request: &Request) -> Option<Response> {
    if let Err(message) = hosts.check(request.headers(), request.uri()) {
        return Some(asg_http::host_check::misdirected(message).into_response());
    }
    check_content_type(request)
        .err()
        .map(IntoResponse::into_response)
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::middleware;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

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

    /// The guard as the edge applies it: refused, or passed on.
    async fn guarded(
        axum::extract::State(hosts): axum::extract::State<std::sync::Arc<HostPolicy>>,
        request: Request,
        next: middleware::Next,
    ) -> Response {
        match refusal(&hosts, &request) {
            Some(refused) => refused,
            None => next.run(request).await,
        }
    }

    async fn answer(
        policy: HostPolicy,
        request: axum::http::Request<Body>,
    ) -> (StatusCode, String) {
        let app = Router::new()
            .route("/", get(|| async { "ok" }).post(|| async { "posted" }))
            .layer(middleware::from_fn_with_state(
                std::sync::Arc::new(policy),
                guarded,
            ));
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
}
