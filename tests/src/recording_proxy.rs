//! A recording reverse proxy on loopback: every request is forwarded to
//! an upstream (a real tool server) and its response streamed back, and
//! the request's path, `Authorization` header and body are kept, so a
//! test sees which credential each call carried.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;

use crate::fake_http::Recorded;

#[derive(Clone)]
struct Shared {
    upstream: String,
    http: reqwest::Client,
    seen: Arc<Mutex<Vec<Recorded>>>,
}

/// A running proxy; stops when dropped.
pub struct RecordingProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    seen: Arc<Mutex<Vec<Recorded>>>,
    server: tokio::task::JoinHandle<()>,
}

impl RecordingProxy {
    /// Forwards to `upstream` (`http://host:port`, no trailing slash).
    pub async fn start(upstream: &str) -> RecordingProxy {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            http: reqwest::Client::new(),
            seen: seen.clone(),
        };
        let app = Router::new().fallback(forward).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        RecordingProxy { url, seen, server }
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<Recorded> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn forward(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    shared
        .seen
        .lock()
        .unwrap()
        .push(Recorded::new(&method, path.clone(), &headers, &body));
    let mut outgoing = shared
        .http
        .request(method, format!("{}{path}", shared.upstream));
    for (name, value) in &headers {
        if !matches!(name.as_str(), "host" | "content-length" | "connection") {
            outgoing = outgoing.header(name, value);
        }
    }
    let answer = match outgoing.body(body).send().await {
        Ok(answer) => answer,
        Err(error) => {
            return Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(Body::from(error.to_string()))
                .unwrap();
        }
    };
    let mut response = Response::builder().status(answer.status().as_u16());
    for (name, value) in answer.headers() {
        if !matches!(
            name.as_str(),
            "content-length" | "transfer-encoding" | "connection"
        ) {
            response = response.header(name.as_str(), value.as_bytes());
        }
    }
    response
        .body(Body::from_stream(answer.bytes_stream()))
        .unwrap()
}
