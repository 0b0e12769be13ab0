//! A rule-based fake of Gemini's `generateContent` endpoint, for scenario
//! tests that run the agent on a `google:` / `gemini-` model unchanged.
//!
//! The agent is pointed at it with `GEMINI_BASE_URL` (see
//! [`FakeGemini::env`]). Every `POST .../models/{model}:generateContent`
//! is read into a [`GeminiCall`] (system instruction, last user text, the
//! function responses since it, the offered function names), recorded, and
//! answered by the test's rule: a pure function of the call, so parallel
//! branches calling at the same time get the same answers in any order.
//! Offline and deterministic: no clock, no randomness, loopback only.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The key the fake expects in `x-goog-api-key` (any other is refused
/// with a 403, as Gemini does).
/// The prompt tokens every fake answer reports (`usageMetadata`).
pub const FAKE_PROMPT_TOKENS: u64 = 120;
/// The output tokens every fake answer reports.
pub const FAKE_OUTPUT_TOKENS: u64 = 8;

pub const FAKE_GEMINI_KEY: &str = "fake-gemini-key";

/// One tool result sent back to the model (`functionResponse` part).
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionResponse {
    /// The function (tool) name.
    pub name: String,
    /// Its `response` object (`{"result": ...}` or `{"error": ...}`).
    pub response: Value,
}

impl FunctionResponse {
    /// The tool's output text (`result`, else `error`).
    pub fn text(&self) -> String {
        let value = self
            .response
            .get("result")
            .or_else(|| self.response.get("error"));
        match value {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => self.response.to_string(),
        }
    }

    /// The output text parsed as JSON, when it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.text()).ok()
    }

    /// The agent reported the call as failed (`error`).
    pub fn is_error(&self) -> bool {
        self.response.get("error").is_some()
    }
}

/// What the agent asked the model, as the rules see it.
#[derive(Debug, Clone)]
pub struct GeminiCall {
    /// The model id in the URL (`gemini-2.5-flash`).
    pub model: String,
    /// The `x-goog-api-key` header.
    pub api_key: Option<String>,
    /// The system instruction's text (parts joined).
    pub system: String,
    /// The text of the last user turn that holds text.
    pub user_text: String,
    /// The function responses sent after that user text, in order.
    pub function_responses: Vec<FunctionResponse>,
    /// Names of the offered function declarations, in order.
    pub tools: Vec<String>,
    /// The whole request body.
    pub body: Value,
}

impl GeminiCall {
    /// Reads a `generateContent` body.
    pub fn parse(model: &str, api_key: Option<String>, body: Value) -> GeminiCall {
        let texts = |parts: Option<&Value>| -> Vec<String> {
            parts
                .and_then(Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let system = texts(body.pointer("/systemInstruction/parts")).join("\n");
        let mut user_text = String::new();
        let mut function_responses = Vec::new();
        let contents = body.get("contents").and_then(Value::as_array);
        for content in contents.into_iter().flatten() {
            if content.get("role").and_then(Value::as_str) != Some("user") {
                continue;
            }
            let text = texts(content.get("parts"));
            if !text.is_empty() {
                user_text = text.join("\n");
                function_responses.clear();
            }
            let parts = content.get("parts").and_then(Value::as_array);
            for part in parts.into_iter().flatten() {
                if let Some(response) = part.get("functionResponse") {
                    function_responses.push(FunctionResponse {
                        name: string_at(response, "/name"),
                        response: response.get("response").cloned().unwrap_or(Value::Null),
                    });
                }
            }
        }
        let tools = declared_tools(&body);
        GeminiCall {
            model: model.to_string(),
            api_key,
            system,
            user_text,
            function_responses,
            tools,
            body,
        }
    }

    /// The last function response since the last user text.
    pub fn last_function_response(&self) -> Option<&FunctionResponse> {
        self.function_responses.last()
    }

    /// Whether a function of that name was offered.
    pub fn offers(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }
}

/// Names of the function declarations of a request.
fn declared_tools(body: &Value) -> Vec<String> {
    body.pointer("/tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|tool| tool.get("functionDeclarations").and_then(Value::as_array))
        .flatten()
        .map(|declaration| string_at(declaration, "/name"))
        .collect()
}

fn string_at(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// What the model answers: text, function calls (text may come with
/// them), or an HTTP error.
#[derive(Debug, Clone, PartialEq)]
pub struct GeminiReply {
    /// Text part, if any.
    pub text: Option<String>,
    /// `(name, args)` of each function call, in order.
    pub calls: Vec<(String, Value)>,
    /// An error status instead of an answer (with `text` as message).
    pub error_status: Option<u16>,
}

impl GeminiReply {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> GeminiReply {
        GeminiReply {
            text: Some(text.into()),
            calls: Vec::new(),
            error_status: None,
        }
    }

    /// One function call.
    pub fn call(name: &str, args: Value) -> GeminiReply {
        GeminiReply::calls(vec![(name, args)])
    }

    /// Several function calls in one answer.
    pub fn calls(calls: Vec<(&str, Value)>) -> GeminiReply {
        GeminiReply {
            text: None,
            calls: calls
                .into_iter()
                .map(|(name, args)| (name.to_string(), args))
                .collect(),
            error_status: None,
        }
    }

    /// An HTTP error with Gemini's error body (e.g. a rule that does not
    /// know the request: the agent then shows a model error).
    pub fn error(status: u16, message: impl Into<String>) -> GeminiReply {
        GeminiReply {
            text: Some(message.into()),
            calls: Vec::new(),
            error_status: Some(status),
        }
    }

    /// The same reply with a text part before the calls.
    pub fn with_text(mut self, text: impl Into<String>) -> GeminiReply {
        self.text = Some(text.into());
        self
    }

    fn to_response(&self) -> (StatusCode, Value) {
        if let Some(status) = self.error_status {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            let body = json!({"error": {
                "code": status.as_u16(),
                "message": self.text.clone().unwrap_or_default(),
                "status": if status == StatusCode::FORBIDDEN { "PERMISSION_DENIED" } else { "INVALID_ARGUMENT" },
            }});
            return (status, body);
        }
        let mut parts: Vec<Value> = Vec::new();
        if let Some(text) = &self.text {
            parts.push(json!({"text": text}));
        }
        for (name, args) in &self.calls {
            parts.push(json!({"functionCall": {"name": name, "args": args}}));
        }
        let body = json!({
            "candidates": [{
                "content": {"role": "model", "parts": parts},
                "finishReason": "STOP",
                "index": 0,
            }],
            "modelVersion": "fake",
            // Fixed counts, so the token metrics can be checked.
            "usageMetadata": {
                "promptTokenCount": FAKE_PROMPT_TOKENS,
                "candidatesTokenCount": FAKE_OUTPUT_TOKENS,
                "totalTokenCount": FAKE_PROMPT_TOKENS + FAKE_OUTPUT_TOKENS,
            },
        });
        (StatusCode::OK, body)
    }
}

type Rules = dyn Fn(&GeminiCall) -> GeminiReply + Send + Sync;

struct Shared {
    rules: Box<Rules>,
    /// Every call, when kept (not in a benchmark: it would grow).
    calls: Option<Mutex<Vec<GeminiCall>>>,
}

/// A running fake Gemini on a free loopback port.
#[derive(Clone)]
pub struct FakeGemini {
    /// `http://127.0.0.1:PORT` (the agent's `GEMINI_BASE_URL`).
    pub url: String,
    shared: Arc<Shared>,
}

impl FakeGemini {
    /// Starts the server; `rules` answers every call.
    pub async fn start(
        rules: impl Fn(&GeminiCall) -> GeminiReply + Send + Sync + 'static,
    ) -> FakeGemini {
        FakeGemini::serve(Box::new(rules), true).await
    }

    /// Starts a server that keeps no calls ([`FakeGemini::calls`] stays
    /// empty), for load that would make the list grow without end.
    pub async fn start_unrecorded(
        rules: impl Fn(&GeminiCall) -> GeminiReply + Send + Sync + 'static,
    ) -> FakeGemini {
        FakeGemini::serve(Box::new(rules), false).await
    }

    async fn serve(rules: Box<Rules>, recorded: bool) -> FakeGemini {
        let shared = Arc::new(Shared {
            rules,
            calls: recorded.then(Mutex::default),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let addr = crate::fake_http::serve(app, "the fake Gemini").await;
        FakeGemini {
            url: format!("http://{addr}"),
            shared,
        }
    }

    /// The environment that points an agent here.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("GEMINI_BASE_URL".to_string(), self.url.clone()),
            ("GEMINI_API_KEY".to_string(), FAKE_GEMINI_KEY.to_string()),
        ]
    }

    /// Every call so far, in arrival order (parallel branches interleave).
    pub fn calls(&self) -> Vec<GeminiCall> {
        self.shared
            .calls
            .as_ref()
            .and_then(|calls| calls.lock().ok().map(|c| c.clone()))
            .unwrap_or_default()
    }

    /// The calls whose system instruction contains `needle`.
    pub fn calls_with_system(&self, needle: &str) -> Vec<GeminiCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.system.contains(needle))
            .collect()
    }
}

/// The model id of a `.../models/{model}:generateContent` path.
fn model_of(path: &str) -> Option<&str> {
    let (_, rest) = path.rsplit_once("/models/")?;
    rest.strip_suffix(":generateContent")
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(model) = model_of(uri.path()).filter(|_| method == Method::POST) else {
        let message = format!(
            "the fake Gemini serves POST .../models/{{model}}:generateContent, not {method} {uri}"
        );
        return (StatusCode::NOT_FOUND, message).into_response();
    };
    let api_key = headers
        .get("x-goog-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "the body is not JSON").into_response();
    };
    let call = GeminiCall::parse(model, api_key, body);
    if let Some(Ok(mut calls)) = shared.calls.as_ref().map(Mutex::lock) {
        calls.push(call.clone());
    }
    let reply = if call.api_key.as_deref() == Some(FAKE_GEMINI_KEY) {
        (shared.rules)(&call)
    } else {
        GeminiReply::error(403, "API key not valid (fake Gemini)")
    };
    let (status, body) = reply.to_response();
    (
        status,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_reads_system_user_text_responses_and_tools() {
        let body = json!({
            "systemInstruction": {"parts": [{"text": "You are X."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "old"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "a", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "a", "response": {"result": "1"}}}]},
                {"role": "user", "parts": [{"text": "list all"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "b", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "b", "response": {"result": "{\"count\": 2}"}}}]},
            ],
            "tools": [{"functionDeclarations": [{"name": "a"}, {"name": "b"}]}],
        });
        let call = GeminiCall::parse("m", None, body);
        assert_eq!(call.system, "You are X.");
        assert_eq!(call.user_text, "list all");
        assert_eq!(call.function_responses.len(), 1);
        let last = call.last_function_response().unwrap();
        assert_eq!(last.name, "b");
        assert_eq!(last.json().unwrap()["count"], 2);
        assert!(!last.is_error());
        assert_eq!(call.tools, ["a", "b"]);
        assert!(call.offers("b") && !call.offers("c"));
    }

    #[test]
    fn replies_use_the_generate_content_shape() {
        let (status, body) = GeminiReply::call("t", json!({"x": 1}))
            .with_text("hi")
            .to_response();
        assert_eq!(status, StatusCode::OK);
        let parts = &body["candidates"][0]["content"]["parts"];
        assert_eq!(parts[0]["text"], "hi");
        assert_eq!(parts[1]["functionCall"]["name"], "t");
        let (status, body) = GeminiReply::error(400, "no").to_response();
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["message"], "no");
        assert_eq!(
            model_of("/v1beta/models/gemini-2.5-flash:generateContent"),
            Some("gemini-2.5-flash")
        );
        assert_eq!(model_of("/v1beta/models/x:streamGenerateContent"), None);
    }
}
