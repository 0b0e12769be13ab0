//! The Gemini client: [`LlmRequest`] to a `generateContent` body and the
//! answer back to an [`LlmResponse`]. The only code that knows Gemini's JSON.
//!
//! The key travels in the `x-goog-api-key` header, never in the URL, so it
//! cannot leak through logged URLs or reqwest error messages.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::provider::{self, ProviderSettings};
use super::schema::gemini_parameters;
use super::{LlmClient, LlmError, LlmMessage, LlmRequest, LlmResponse, LlmToolCall, TokenUsage};

/// Gemini's public endpoint.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// A Gemini model reached over the `generateContent` REST API. Not `Debug`,
/// so the key cannot end up in a log by accident.
pub struct GeminiClient {
    http: reqwest::Client,
    settings: ProviderSettings,
    base_url: String,
    api_key: String,
}

impl GeminiClient {
    /// A client for `settings.model`; the base URL defaults to Google's.
    pub fn new(settings: ProviderSettings, api_key: String) -> Result<GeminiClient, String> {
        Ok(GeminiClient {
            http: provider::http_client()?,
            base_url: provider::base_url(&settings, DEFAULT_BASE_URL),
            settings,
            api_key,
        })
    }

    fn url(&self) -> String {
        // Accept the `models/x` spelling Google's own docs use as well.
        let model = self.settings.model.trim_start_matches("models/");
        format!("{}/v1beta/models/{model}:generateContent", self.base_url)
    }

    /// The `generateContent` body for a request.
    fn body(&self, request: &LlmRequest) -> Value {
        let mut body = Map::new();
        if !request.system.is_empty() {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": request.system}]}),
            );
        }
        body.insert("contents".into(), Value::Array(contents(&request.messages)));
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    let mut declaration = json!({
                        "name": tool.name,
                        "description": tool.description,
                    });
                    if let Some(parameters) = gemini_parameters(&tool.input_schema) {
                        declaration["parameters"] = parameters;
                    }
                    declaration
                })
                .collect();
            body.insert(
                "tools".into(),
                json!([{"functionDeclarations": declarations}]),
            );
        }
        let mut generation = Map::new();
        if let Some(temperature) = self.settings.temperature {
            generation.insert("temperature".into(), provider::temperature(temperature));
        }
        if let Some(max_tokens) = self.settings.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(max_tokens));
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        Value::Object(body)
    }
}

/// The history as Gemini `contents`. Consecutive tool results share one
/// `user` turn, because Gemini wants as many `functionResponse` parts in
/// the turn after a `model` turn as that turn had `functionCall` parts.
fn contents(messages: &[LlmMessage]) -> Vec<Value> {
    let mut contents: Vec<Value> = Vec::new();
    let mut responses: Vec<Value> = Vec::new();
    for message in messages {
        if !matches!(message, LlmMessage::Tool { .. }) && !responses.is_empty() {
            contents.push(json!({"role": "user", "parts": std::mem::take(&mut responses)}));
        }
        match message {
            LlmMessage::User { text } => {
                contents.push(json!({"role": "user", "parts": [{"text": text}]}));
            }
            LlmMessage::Assistant { text, tool_calls } => {
                let mut parts: Vec<Value> = Vec::new();
                if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                    parts.push(json!({"text": text}));
                }
                for call in tool_calls {
                    let mut part = json!({
                        "functionCall": {"name": call.name, "args": call.arguments}
                    });
                    // Without its signature the call is refused with a 400
                    // by thinking models on the next request.
                    if let Some(signature) = &call.signature {
                        part["thoughtSignature"] = json!(signature);
                    }
                    parts.push(part);
                }
                // Gemini rejects a turn with no parts.
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            LlmMessage::Tool {
                name,
                content,
                is_error,
                ..
            } => {
                let key = if *is_error { "error" } else { "result" };
                responses.push(json!({
                    "functionResponse": {"name": name, "response": {key: content}}
                }));
            }
        }
    }
    if !responses.is_empty() {
        contents.push(json!({"role": "user", "parts": responses}));
    }
    contents
}

/// One `functionCall` part (`part` holds its thought signature).
fn function_call(part: &Value, call: &Value) -> Result<LlmToolCall, LlmError> {
    let invalid = |what: &str| LlmError::InvalidResponse(what.to_string());
    let name = call
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("a functionCall has no name"))?;
    let arguments = match call.get("args") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args.clone(),
        Some(_) => return Err(invalid("functionCall args is not an object")),
    };
    let id = match call.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_string(),
        // Gemini usually gives no id; the engine needs one that stays
        // unique across turns and restarts.
        _ => format!("call_{}", uuid::Uuid::new_v4().simple()),
    };
    Ok(LlmToolCall {
        id,
        name: name.to_string(),
        arguments,
        signature: part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// Reads a `generateContent` answer.
fn parse(body: &Value) -> Result<LlmResponse, LlmError> {
    let invalid = |what: &str| LlmError::InvalidResponse(what.to_string());
    let Some(candidate) = body
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        return Err(
            match body
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str)
            {
                Some(reason) => {
                    LlmError::InvalidResponse(format!("the prompt was blocked ({reason})"))
                }
                None => invalid("no candidates in the answer"),
            },
        );
    };
    let finish = candidate.get("finishReason").and_then(Value::as_str);
    let parts = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array);
    let Some(parts) = parts else {
        // A plain STOP with nothing to say is an empty answer; any other
        // reason (SAFETY, MALFORMED_FUNCTION_CALL, ...) is a failure.
        return match finish {
            Some("STOP") | None => Ok(LlmResponse::default()),
            Some(reason) => Err(LlmError::InvalidResponse(format!(
                "the model stopped without content ({reason})"
            ))),
        };
    };

    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for part in parts {
        // Thought summaries are the model's reasoning, not its answer.
        if part.get("thought") == Some(&Value::Bool(true)) {
            continue;
        }
        if let Some(t) = part.get("text").and_then(Value::as_str) {
            text.push_str(t);
        }
        if let Some(call) = part.get("functionCall") {
            tool_calls.push(function_call(part, call)?);
        }
    }
    Ok(LlmResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage: TokenUsage::read(
            body,
            "usageMetadata",
            "promptTokenCount",
            "candidatesTokenCount",
        ),
    })
}

#[async_trait]
impl LlmClient for GeminiClient {
    fn describe(&self) -> String {
        format!("gemini:{}", self.settings.model)
    }

    async fn generate(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let http = self
            .http
            .post(self.url())
            .header("x-goog-api-key", &self.api_key)
            .json(&self.body(request));
        let answer = provider::send_json(http, &self.settings, Some(&self.api_key)).await?;
        parse(&answer)
    }
}

#[cfg(test)]
mod tests;
