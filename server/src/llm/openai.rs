//! The OpenAI-compatible client: [`LlmRequest`] to a chat-completions body
//! and the answer back to an [`LlmResponse`]. It serves OpenAI itself and
//! the local servers that copy its API (Ollama, vLLM, llama.cpp, LM Studio).
//!
//! The key is optional because local servers take none; when it is absent no
//! `Authorization` header is sent at all.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::provider::{self, ProviderSettings};
use super::schema::object_schema;
use super::{LlmClient, LlmError, LlmMessage, LlmRequest, LlmResponse, LlmToolCall, TokenUsage};

/// OpenAI's public endpoint, version path included.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A chat-completions model. Not `Debug`, so the key cannot end up in a log
/// by accident.
pub struct OpenAiClient {
    http: reqwest::Client,
    settings: ProviderSettings,
    base_url: String,
    api_key: Option<String>,
}

impl OpenAiClient {
    /// A client for `settings.model`; the base URL (which includes `/v1`)
    /// defaults to OpenAI's.
    pub fn new(
        settings: ProviderSettings,
        api_key: Option<String>,
    ) -> Result<OpenAiClient, String> {
        Ok(OpenAiClient {
            http: provider::http_client()?,
            base_url: provider::base_url(&settings, DEFAULT_BASE_URL),
            settings,
            api_key,
        })
    }

    /// The chat-completions body for a request.
    fn body(&self, request: &LlmRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.settings.model));
        body.insert("messages".into(), Value::Array(messages(request)));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": object_schema(&tool.input_schema),
                        }
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(temperature) = self.settings.temperature {
            body.insert("temperature".into(), provider::temperature(temperature));
        }
        // `max_tokens` rather than `max_completion_tokens`: it is the one
        // every compatible server understands.
        if let Some(max_tokens) = self.settings.max_tokens {
            body.insert("max_tokens".into(), json!(max_tokens));
        }
        Value::Object(body)
    }
}

/// The system prompt and history as chat-completions `messages`.
fn messages(request: &LlmRequest) -> Vec<Value> {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        match message {
            LlmMessage::User { text } => messages.push(json!({"role": "user", "content": text})),
            LlmMessage::Assistant { text, tool_calls } => {
                let text = text.as_deref().filter(|t| !t.is_empty());
                if text.is_none() && tool_calls.is_empty() {
                    continue;
                }
                let mut entry = json!({"role": "assistant", "content": text});
                // Some compatible servers reject an empty `tool_calls` array.
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|call| {
                            json!({
                                "id": call.id,
                                "type": "function",
                                "function": {
                                    "name": call.name,
                                    "arguments": Value::Object(call.arguments.clone()).to_string(),
                                }
                            })
                        })
                        .collect();
                    entry["tool_calls"] = Value::Array(calls);
                }
                messages.push(entry);
            }
            LlmMessage::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                // The format has no error flag, so the model is told in words.
                let content = if *is_error {
                    format!("Error: {content}")
                } else {
                    content.clone()
                };
                messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": content}));
            }
        }
    }
    messages
}

/// Reads a chat-completions answer.
fn parse(body: &Value) -> Result<LlmResponse, LlmError> {
    let invalid = |what: String| LlmError::InvalidResponse(what);
    let message = body
        .pointer("/choices/0/message")
        .ok_or_else(|| invalid("the answer has no choices[0].message".into()))?;
    let text = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        // A few servers answer with a list of content parts.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    };
    let mut tool_calls = Vec::new();
    let calls = message.get("tool_calls").and_then(Value::as_array);
    for call in calls.into_iter().flatten() {
        let function = call
            .get("function")
            .ok_or_else(|| invalid("a tool call has no function".into()))?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("a tool call has no function name".into()))?;
        let arguments = match function.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::String(raw)) if raw.trim().is_empty() => Map::new(),
            Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
                Ok(Value::Object(args)) => args,
                Ok(_) => return Err(invalid(format!("arguments of {name} are not an object"))),
                Err(e) => return Err(invalid(format!("arguments of {name} are not JSON: {e}"))),
            },
            // Some servers send the object itself instead of a string.
            Some(Value::Object(args)) => args.clone(),
            Some(_) => return Err(invalid(format!("arguments of {name} are not an object"))),
        };
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => format!("call_{}", uuid::Uuid::new_v4().simple()),
        };
        tool_calls.push(LlmToolCall {
            id,
            name: name.to_string(),
            arguments,
            signature: None,
        });
    }
    Ok(LlmResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage: TokenUsage::read(body, "usage", "prompt_tokens", "completion_tokens"),
    })
}

#[async_trait]
impl LlmClient for OpenAiClient {
    fn describe(&self) -> String {
        format!("openai:{}", self.settings.model)
    }

    async fn generate(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let mut http = self
            .http
            .post(format!("{}/chat/completions", self.base_url))
            .json(&self.body(request));
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key);
        }
        let answer = provider::send_json(http, &self.settings, self.api_key.as_deref()).await?;
        parse(&answer)
    }
}

#[cfg(test)]
mod tests;
