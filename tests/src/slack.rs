//! A stand-in for Slack's Web API and its interactivity requests, for
//! `tests/slack.rs`: an axum server on loopback that records every call
//! (`chat.postMessage`, `chat.update`, `chat.postEphemeral`, `views.open`,
//! `users.info`) and answers like Slack (`ok: true`, `ts`, `channel`), or
//! with 500s while it is "down"; and the signed form posts Slack sends to
//! an app's interactivity URL.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::fake_http::serve;
use crate::{Agent, poll};

/// One Web API call as the stand-in received it.
#[derive(Debug, Clone)]
pub struct Call {
    /// `chat.postMessage`, ...
    pub method: String,
    /// The JSON body, or the form fields as an object.
    pub body: Value,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// What was answered (500 while down).
    pub status: u16,
    /// The `ts` answered, for posts.
    pub ts: Option<String>,
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    down: bool,
    emails: HashMap<String, String>,
    next_ts: u64,
}

/// The running stand-in.
#[derive(Clone)]
pub struct SlackStandIn {
    /// The Web API base (`channels.slack.api_url`).
    pub api_url: String,
    inner: Arc<Mutex<Inner>>,
}

impl SlackStandIn {
    /// Starts on a free loopback port.
    pub async fn start() -> SlackStandIn {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/api/{method}", axum::routing::post(answer))
            .with_state(inner.clone());
        let addr = serve(app, "the Slack stand-in").await;
        SlackStandIn {
            api_url: format!("http://{addr}/api"),
            inner,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// While down, every call is answered 500.
    pub fn set_down(&self, down: bool) {
        self.lock().down = down;
    }

    /// `users.info` gives this email for the user.
    pub fn add_user(&self, user: &str, email: &str) {
        self.lock().emails.insert(user.into(), email.into());
    }

    /// Every call of `method` so far (answered or not).
    pub fn calls(&self, method: &str) -> Vec<Call> {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// The answered calls of `method` so far.
    pub fn answered(&self, method: &str) -> Vec<Call> {
        let mut calls = self.calls(method);
        calls.retain(|c| c.status == 200);
        calls
    }

    /// Waits until `n` calls of `method` were answered; returns them.
    pub async fn wait_for(&self, method: &str, n: usize) -> Vec<Call> {
        poll(
            &format!("{n} answered {method}"),
            Duration::from_secs(15),
            || async {
                let calls = self.answered(method);
                (calls.len() >= n).then_some(calls)
            },
        )
        .await
    }
}

async fn answer(
    State(inner): State<Arc<Mutex<Inner>>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json_body = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let body: Value = match json_body {
        true => serde_json::from_slice(&body).unwrap_or(Value::Null),
        false => form_fields(&body),
    };
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut inner = inner.lock().unwrap_or_else(|p| p.into_inner());
    let mut call = Call {
        method: method.clone(),
        body: body.clone(),
        authorization,
        status: 500,
        ts: None,
    };
    if inner.down {
        inner.calls.push(call);
        return (StatusCode::INTERNAL_SERVER_ERROR, "down").into_response();
    }
    inner.next_ts += 1;
    let ts = format!("1700000000.{:06}", inner.next_ts);
    let channel = body["channel"].clone();
    let reply = match method.as_str() {
        "chat.postMessage" => {
            call.ts = Some(ts.clone());
            json!({"ok": true, "channel": channel, "ts": ts, "message": {"text": body["text"]}})
        }
        "chat.update" => json!({"ok": true, "channel": channel, "ts": body["ts"]}),
        "chat.postEphemeral" => json!({"ok": true, "message_ts": ts}),
        "views.open" => json!({"ok": true, "view": {"id": "V0001"}}),
        "users.info" => {
            let user = body["user"].as_str().unwrap_or_default();
            match inner.emails.get(user) {
                Some(email) => {
                    json!({"ok": true, "user": {"id": user, "profile": {"email": email}}})
                }
                None => json!({"ok": false, "error": "user_not_found"}),
            }
        }
        _ => json!({"ok": false, "error": "unknown_method"}),
    };
    call.status = 200;
    inner.calls.push(call);
    axum::Json(reply).into_response()
}

fn form_fields(body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    let fields: serde_json::Map<String, Value> = text
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), Value::String(v.replace("%40", "@"))))
        .collect();
    Value::Object(fields)
}

/// `v0=<hex HMAC-SHA256(secret, "v0:{timestamp}:{body}")>`, as Slack signs.
pub fn sign(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("v0={hex}")
}

/// A form body `payload=<JSON>`.
pub fn form(payload: &Value) -> String {
    let mut encoded = String::from("payload=");
    for byte in payload.to_string().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                encoded.push(byte as char)
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

/// A `block_actions` payload: `user` clicked `action_id` (value `value`)
/// in `channel`.
pub fn click(user: &str, action_id: &str, value: &str, channel: &str) -> Value {
    json!({
        "type": "block_actions",
        "user": {"id": user, "username": user.to_lowercase(), "team_id": "T0TEST"},
        "api_app_id": "A0TEST",
        "trigger_id": format!("trigger-{user}-{action_id}"),
        "response_url": "https://hooks.slack.invalid/actions/T0TEST/1/x",
        "container": {"type": "message", "channel_id": channel, "message_ts": "1700000000.000001"},
        "channel": {"id": channel, "name": "approvals"},
        "actions": [{"action_id": action_id, "block_id": "asg_actions", "type": "button", "value": value, "action_ts": "1700000001.000001"}]
    })
}

/// A `view_submission` payload of `view` (as opened) with `text` typed.
pub fn submission(user: &str, view: &Value, text: &str) -> Value {
    json!({
        "type": "view_submission",
        "user": {"id": user},
        "view": {
            "id": "V0001",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": {"values": {"asg_input": {"asg_value": {"type": "plain_text_input", "value": text}}}}
        }
    })
}

/// Now, in Unix seconds.
pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// POSTs `payload` to the agent's interactivity URL, signed with
/// `secret` at `timestamp`; status and answer.
pub async fn send_signed(
    agent: &Agent,
    secret: &str,
    timestamp: i64,
    payload: &Value,
) -> (u16, Value) {
    let body = form(payload);
    let signature = sign(secret, timestamp, &body);
    send(
        agent,
        &body,
        &[
            ("x-slack-request-timestamp", &timestamp.to_string()),
            ("x-slack-signature", &signature),
        ],
    )
    .await
}

/// POSTs a raw form body with these headers.
pub async fn send(agent: &Agent, body: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = agent
        .http
        .post(format!("{}/channels/slack/actions", agent.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("POST /channels/slack/actions");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}
