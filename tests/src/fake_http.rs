//! A tiny programmable HTTP server on loopback for tests: it records every
//! request (method, path, headers, body) and answers with a canned reply,
//! optionally after a delay.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Method.
    pub method: String,
    /// Path and query.
    pub uri: String,
    /// Headers, lowercase names.
    pub headers: Vec<(String, String)>,
    /// Body text.
    pub body: String,
}

impl Recorded {
    /// What a handler received: `uri` as it should be recorded (path and
    /// query), header values that are not text as empty.
    pub fn new(method: &Method, uri: String, headers: &HeaderMap, body: &[u8]) -> Recorded {
        Recorded {
            method: method.to_string(),
            uri,
            headers: headers
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
                .collect(),
            body: String::from_utf8_lossy(body).into_owned(),
        }
    }
}

/// Serves `app` on a new loopback port in the background; its address.
pub async fn serve(app: Router, what: &str) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind {what}: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{what} address: {e}"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// A canned reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// JSON or text body.
    pub body: String,
    /// Delay before answering.
    pub delay: Duration,
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    replies: Mutex<Vec<Reply>>,
}

/// A running fake server.
#[derive(Clone)]
pub struct FakeHttp {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
}

impl FakeHttp {
    /// Starts a server answering every request with the queued replies in
    /// order; the last one repeats.
    pub async fn start(replies: Vec<Reply>) -> FakeHttp {
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            replies: Mutex::new(replies),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let addr = serve(app, "fake server").await;
        FakeHttp {
            url: format!("http://{addr}"),
            shared,
        }
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }
}

impl Reply {
    /// A 200 JSON reply.
    pub fn json(body: serde_json::Value) -> Reply {
        Reply {
            status: 200,
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    /// A reply with a status and raw body.
    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    /// The same reply after a delay.
    pub fn delayed(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recorded = Recorded::new(&method, uri.to_string(), &headers, &body);
    if let Ok(mut requests) = shared.requests.lock() {
        requests.push(recorded);
    }
    let reply = shared.replies.lock().ok().and_then(|mut replies| {
        if replies.len() > 1 {
            Some(replies.remove(0))
        } else {
            replies.first().cloned()
        }
    });
    let Some(reply) = reply else {
        return (StatusCode::NOT_FOUND, "no reply queued").into_response();
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [("content-type", "application/json")], reply.body).into_response()
}
