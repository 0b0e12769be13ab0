//! The LLM layer: one trait, [`LlmClient`], and one implementation per
//! provider. Only the files in this module know a provider's JSON.
//!
//! - [`gemini`]: Gemini `generateContent` (`gemini-*`, `google:`)
//! - [`claude`]: Anthropic Messages API (`claude-*`, `anthropic:`)
//! - [`openai`]: OpenAI-compatible chat completions (`openai:`)
//! - [`scripted`]: the deterministic offline model (`scripted:<file>`)
//!
//! [`build_client`] picks the provider from the model name.

pub mod claude;
pub mod gemini;
pub mod openai;
pub mod provider;
pub mod schema;
pub mod scripted;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};

pub use provider::{Provider, ProviderSettings, build_client};

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Name the model must use to call it.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments (as the MCP server declared it).
    pub input_schema: Value,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmToolCall {
    /// Call id (provider's, or generated when the provider has none).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments.
    pub arguments: Map<String, Value>,
    /// Gemini's `thoughtSignature`, sent back unchanged.
    pub signature: Option<String>,
}

/// One entry of the history sent to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmMessage {
    /// User text.
    User { text: String },
    /// The model's earlier output: text and/or tool calls.
    Assistant {
        text: Option<String>,
        tool_calls: Vec<LlmToolCall>,
    },
    /// A tool result answering the call `call_id`.
    Tool {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

/// Everything one model call needs.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmRequest {
    /// The agent-tree node making the call (the scripted model matches on it).
    pub node: String,
    /// System prompt, placeholders already resolved.
    pub system: String,
    /// History, oldest first. Consecutive tool results follow the assistant
    /// message that requested them.
    pub messages: Vec<LlmMessage>,
    /// Tools the model may call (shared by every request of a node's run,
    /// not copied for each).
    pub tools: std::sync::Arc<[ToolSpec]>,
}

/// The model's answer: text, tool calls, or both.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LlmResponse {
    /// Text, if any.
    pub text: Option<String>,
    /// Tool calls, in the order the model gave them.
    pub tool_calls: Vec<LlmToolCall>,
    /// Tokens the provider counted for this call, when it says.
    pub usage: Option<TokenUsage>,
}

/// The tokens one model call used, as the provider reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    /// Prompt tokens (history, tools, system prompt).
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
}

impl TokenUsage {
    /// Reads `input` and `output` counts under `object[key]`, when the
    /// provider sent them.
    pub(crate) fn read(
        body: &serde_json::Value,
        key: &str,
        input: &str,
        output: &str,
    ) -> Option<TokenUsage> {
        let usage = body.get(key)?;
        let count = |name: &str| usage.get(name).and_then(serde_json::Value::as_u64);
        match (count(input), count(output)) {
            (None, None) => None,
            (input, output) => Some(TokenUsage {
                input: input.unwrap_or(0),
                output: output.unwrap_or(0),
            }),
        }
    }
}

/// Why a model call failed. Messages never contain API keys.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// No answer within the configured timeout.
    #[error("the model did not answer within {0:?}")]
    Timeout(Duration),
    /// The provider answered with an HTTP error.
    #[error("the model provider answered HTTP {status}: {message}")]
    Http { status: u16, message: String },
    /// The provider's answer could not be understood.
    #[error("the model provider sent an answer that could not be read: {0}")]
    InvalidResponse(String),
    /// The provider could not be reached.
    #[error("the model provider could not be reached: {0}")]
    Transport(String),
    /// The scripted model has no rule for this request.
    #[error("{0}")]
    Script(String),
}

/// A language model with function calling.
#[async_trait]
pub trait LlmClient: Send + Sync {
    /// Provider and model, for logs (never a key).
    fn describe(&self) -> String;
    /// One model call.
    async fn generate(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError>;
}
