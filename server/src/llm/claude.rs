//! The Anthropic client: [`LlmRequest`] to a Messages API body and the
//! answer back to an [`LlmResponse`]. The only code that knows Anthropic's
//! JSON.
//!
//! Anthropic is strict about turn order: every `tool_result` must sit in the
//! user message right after the assistant message holding its `tool_use`,
//! and two messages in a row may not share a role. The history is therefore
//! folded so that consecutive user-side entries become one message.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::provider::{self, ProviderSettings};
use super::schema::object_schema;
use super::{LlmClient, LlmError, LlmMessage, LlmRequest, LlmResponse, LlmToolCall, TokenUsage};

/// Anthropic's public endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version this client speaks.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is mandatory for Anthropic; this applies when none is set.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A Claude model reached over the Messages API. Not `Debug`, so the key
/// cannot end up in a log by accident.
pub struct ClaudeClient {
    http: reqwest::Client,
    settings: ProviderSettings,
    base_url: String,
    api_key: String,
}

impl ClaudeClient {
    /// A client for `settings.model`; the base URL defaults to Anthropic's.
    pub fn new(settings: ProviderSettings, api_key: String) -> Result<ClaudeClient, String> {
        Ok(ClaudeClient {
            http: provider::http_client()?,
            base_url: provider::base_url(&settings, DEFAULT_BASE_URL),
            settings,
            api_key,
        })
    }

    /// The Messages API body for a request.
    fn body(&self, request: &LlmRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.settings.model));
        body.insert(
            "max_tokens".into(),
            json!(self.settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        );
        if !request.system.is_empty() {
            body.insert("system".into(), json!(request.system));
        }
        body.insert("messages".into(), Value::Array(messages(&request.messages)));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": object_schema(&tool.input_schema),
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(temperature) = self.settings.temperature {
            body.insert("temperature".into(), provider::temperature(temperature));
        }
        Value::Object(body)
    }
}

/// The history as Anthropic `messages`, with content blocks of the same
/// role merged into one message.
fn messages(history: &[LlmMessage]) -> Vec<Value> {
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in history {
        let (role, blocks) = match message {
            LlmMessage::User { text } if text.is_empty() => ("user", Vec::new()),
            LlmMessage::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            LlmMessage::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": call.arguments,
                    }));
                }
                ("assistant", blocks)
            }
            LlmMessage::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                });
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        // Anthropic rejects empty text blocks and empty messages.
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// Reads a Messages API answer.
fn parse(body: &Value) -> Result<LlmResponse, LlmError> {
    let invalid = |what: &str| LlmError::InvalidResponse(what.to_string());
    let blocks = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("the answer has no content array"))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
            Some("tool_use") => {
                let field = |name: &str| {
                    block
                        .get(name)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| {
                            LlmError::InvalidResponse(format!("a tool_use block has no {name}"))
                        })
                };
                let arguments = match block.get("input") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(input)) => input.clone(),
                    Some(_) => return Err(invalid("tool_use input is not an object")),
                };
                tool_calls.push(LlmToolCall {
                    id: field("id")?,
                    name: field("name")?,
                    arguments,
                    signature: None,
                });
            }
            // Thinking and other block types are not part of the answer.
            _ => {}
        }
    }
    Ok(LlmResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage: TokenUsage::read(body, "usage", "input_tokens", "output_tokens"),
    })
}

#[async_trait]
impl LlmClient for ClaudeClient {
    fn describe(&self) -> String {
        format!("anthropic:{}", self.settings.model)
    }

    async fn generate(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let http = self
            .http
            .post(format!("{}/v1/messages", self.base_url))
            .header("x-api-key", &self.api_key)
            .header("anthropic-version", API_VERSION)
            .header("content-type", "application/json")
            .json(&self.body(request));
        let answer = provider::send_json(http, &self.settings, Some(&self.api_key)).await?;
        parse(&answer)
    }
}

#[cfg(test)]
mod tests;
