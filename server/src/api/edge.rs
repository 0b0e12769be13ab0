//! What every request passes before its route, in this order: its span
//! and log line ([`logging`], outermost, so refusals are logged too), the
//! Host and content-type guard ([`guard`]: 421, 415), authentication
//! ([`auth`]: 401, 503), and axum's plain-text 413 for an over-limit body
//! made JSON. One middleware rather than four, so the order is written in
//! one place and tested (`tests`); each axum middleware layer also clones
//! and boxes the rest of the stack for every request (the four together
//! were about 5 % of a cached `GET`'s CPU in a profile, though the `GET`
//! rate did not change measurably with one: README, "Benchmarks").

use std::sync::Arc;

use asg_http::host_check::HostPolicy;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::{MAX_BODY_BYTES, auth, guard, logging};
use crate::auth::Authenticator;

/// What the edge checks against.
pub struct Edge {
    /// Which `Host` headers are answered.
    pub hosts: Arc<HostPolicy>,
    /// Who may call.
    pub auth: Authenticator,
}

/// The middleware (`axum::middleware::from_fn_with_state`).
pub async fn edge(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    logging::logged(request, |request| async move {
        if let Some(refused) = guard::refusal(&edge.hosts, &request) {
            return refused;
        }
        match auth::authenticate(&edge.auth, request).await {
            Ok(request) => body_too_large_as_json(next.run(request).await),
            Err(refused) => refused,
        }
    })
    .await
}

/// axum answers an over-limit body with a plain-text 413; make it JSON.
fn body_too_large_as_json(response: Response) -> Response {
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("request body is larger than {MAX_BODY_BYTES} bytes"),
        )
        .into_response();
    }
    response
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::{Body, Bytes};
    use axum::extract::DefaultBodyLimit;
    use axum::http::Request as HttpRequest;
    use axum::routing::post;
    use tower::ServiceExt;

    use super::*;
    use crate::auth::Principal;

    const KEY: &str = "k-0123456789abcdef";

    /// A route behind the edge (only `localhost` answered, one API key)
    /// that names its caller.
    fn app() -> Router {
        let config = crate::test_support::ops_bot_key(&[], &[]);
        let auth = Authenticator::from_config(&config, &|_| Some(KEY.into())).unwrap();
        let edge = Arc::new(Edge {
            hosts: Arc::new(HostPolicy::new("127.0.0.1", &[])),
            auth,
        });
        let caller = |principal: axum::Extension<Principal>, _body: Bytes| async move {
            principal.subject.clone()
        };
        Router::new()
            .route("/x", post(caller))
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .layer(axum::middleware::from_fn_with_state(edge, super::edge))
    }

    /// Status, session id header and body of a JSON `POST /x`.
    async fn post_x(host: &str, key: Option<&str>, body: Vec<u8>) -> (u16, bool, String) {
        let mut request = HttpRequest::post("/x")
            .header("host", host)
            .header("content-type", "application/json");
        if let Some(key) = key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        let response = app()
            .oneshot(request.body(Body::from(body)).unwrap())
            .await
            .unwrap();
        let status = response.status().as_u16();
        let logged = response.headers().contains_key("x-session-id");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, logged, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn each_check_answers_in_its_order_and_every_answer_is_logged() {
        // Host before credentials: a foreign host learns nothing of auth.
        let (status, logged, body) = post_x("evil.example", None, b"{}".to_vec()).await;
        assert_eq!((status, logged), (421, true), "{body}");
        let (status, logged, body) = post_x("localhost", None, b"{}".to_vec()).await;
        assert_eq!((status, logged), (401, true), "{body}");
        let (status, logged, body) = post_x("localhost", Some(KEY), b"{}".to_vec()).await;
        assert_eq!((status, logged, body.as_str()), (200, true, "key:ops-bot"));
        let large = vec![b' '; MAX_BODY_BYTES + 1];
        let (status, logged, body) = post_x("localhost", Some(KEY), large).await;
        assert_eq!((status, logged), (413, true));
        assert!(body.contains("\"payload_too_large\""), "{body}");
    }
}
