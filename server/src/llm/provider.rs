//! Provider selection and the HTTP plumbing the provider clients share: which
//! provider a model name means, where its key and endpoint come from, and how
//! a JSON POST is sent, timed out and turned into an [`LlmError`].
//!
//! Keys are read from the environment only, never from `agent.yaml`, and are
//! scrubbed from every error message before it leaves this module.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::claude::ClaudeClient;
use super::gemini::GeminiClient;
use super::openai::OpenAiClient;
use super::scripted::ScriptedModel;
use super::{LlmClient, LlmError};
use crate::config::LlmConfig;

/// Longest provider error message kept in an [`LlmError::Http`].
const MAX_ERROR_CHARS: usize = 300;

/// The model providers the server can talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Google Gemini `generateContent`.
    Gemini,
    /// Anthropic Messages API.
    Anthropic,
    /// Any OpenAI-compatible chat-completions server.
    OpenAi,
    /// The deterministic offline model.
    Scripted,
}

impl Provider {
    /// The provider a model name selects, and the model id to send to it
    /// (the name without its `provider:` prefix).
    ///
    /// Unprefixed names that match no known family go to Gemini, the
    /// default provider of the specification.
    pub fn from_model(model: &str) -> (Provider, String) {
        const PREFIXES: [(&str, Provider); 5] = [
            ("google:", Provider::Gemini),
            ("gemini:", Provider::Gemini),
            ("anthropic:", Provider::Anthropic),
            ("openai:", Provider::OpenAi),
            ("scripted:", Provider::Scripted),
        ];
        let model = model.trim();
        for (prefix, provider) in PREFIXES {
            if let Some(rest) = model.strip_prefix(prefix) {
                return (provider, rest.to_string());
            }
        }
        let provider = if model.starts_with("claude-") {
            Provider::Anthropic
        } else {
            Provider::Gemini
        };
        (provider, model.to_string())
    }
}

/// What a provider client needs besides its key.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSettings {
    /// Model id, without the provider prefix.
    pub model: String,
    /// Endpoint override; `None` means the provider's public endpoint.
    pub base_url: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// How long one model call may take.
    pub timeout: Duration,
    /// Largest response body read (`llm.max_response_bytes`).
    pub max_response_bytes: usize,
}

/// Builds the client the configured model names. `env` looks variables up
/// (tests pass a map instead of the process environment); relative
/// `scripted:` paths are resolved against `config_dir`.
pub fn build_client(
    llm: &LlmConfig,
    config_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmClient>, String> {
    // An empty variable is as good as a missing one: `FOO= agent` is a
    // common way to unset a key and must not send an empty credential.
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let (provider, model) = Provider::from_model(&llm.model);
    let base_var = match provider {
        Provider::Gemini => Some("GEMINI_BASE_URL"),
        Provider::Anthropic => Some("ANTHROPIC_BASE_URL"),
        Provider::OpenAi => Some("OPENAI_BASE_URL"),
        Provider::Scripted => None,
    };
    let settings = ProviderSettings {
        model: model.clone(),
        base_url: llm.base_url.clone().or_else(|| base_var.and_then(var)),
        temperature: llm.temperature,
        max_tokens: llm.max_tokens,
        timeout: Duration::from_secs(llm.timeout_secs),
        max_response_bytes: llm.max_response_bytes,
    };
    let require = |name: &str| {
        var(name).ok_or_else(|| {
            format!(
                "llm.model {:?} needs the environment variable {name}",
                llm.model
            )
        })
    };
    Ok(match provider {
        Provider::Gemini => Arc::new(GeminiClient::new(settings, require("GEMINI_API_KEY")?)?),
        Provider::Anthropic => {
            Arc::new(ClaudeClient::new(settings, require("ANTHROPIC_API_KEY")?)?)
        }
        Provider::OpenAi => Arc::new(OpenAiClient::new(settings, var("OPENAI_API_KEY"))?),
        Provider::Scripted => {
            if model.is_empty() {
                return Err(format!(
                    "llm.model {:?} needs a file: scripted:<path>",
                    llm.model
                ));
            }
            Arc::new(ScriptedModel::load(&config_dir.join(&model))?)
        }
    })
}

/// The endpoint to use: the configured one without a trailing slash, else
/// the provider's public default.
pub(crate) fn base_url(settings: &ProviderSettings, default: &str) -> String {
    settings
        .base_url
        .as_deref()
        .unwrap_or(default)
        .trim_end_matches('/')
        .to_string()
}

/// A temperature as JSON. Going through its decimal spelling sends `0.2`
/// rather than the `0.20000000298023224` a direct f32 to f64 cast gives.
pub(crate) fn temperature(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .map_or_else(|_| Value::from(f64::from(value)), Value::from)
}

/// The HTTP client every provider uses. The per-call timeout is set on each
/// request, so one client serves any timeout.
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .build()
        .map_err(|e| format!("cannot create the HTTP client: {e}"))
}

/// Sends a prepared JSON request and returns the parsed JSON answer.
///
/// The timeout covers the whole exchange, body included, because a provider
/// that sends headers and then stalls must not hang a turn; a body larger
/// than `settings.max_response_bytes` is refused as it arrives. `secret` is
/// removed from every message, whatever the provider echoes back.
pub(crate) async fn send_json(
    request: reqwest::RequestBuilder,
    settings: &ProviderSettings,
    secret: Option<&str>,
) -> Result<Value, LlmError> {
    let timeout = settings.timeout;
    let limit = settings.max_response_bytes;
    let exchange = async {
        let mut trace = reqwest::header::HeaderMap::new();
        crate::telemetry::inject(&mut trace);
        let response = request
            .timeout(timeout)
            .headers(trace)
            .send()
            .await
            .map_err(|e| transport_error(&e, timeout, secret))?;
        let status = response.status();
        let body = read_body(response, limit)
            .await
            .map_err(|e| e.unwrap_or_else(|e| transport_error(&e, timeout, secret)))?;
        if !status.is_success() {
            return Err(LlmError::Http {
                status: status.as_u16(),
                message: redact(&error_message(&body, status), secret),
            });
        }
        serde_json::from_slice(&body).map_err(|e| {
            LlmError::InvalidResponse(format!("the body is not JSON ({e}): {}", snippet(&body)))
        })
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(LlmError::Timeout(timeout)),
    }
}

/// A response body of at most `limit` bytes; `Err(Ok(_))` when larger,
/// `Err(Err(_))` when the transport failed.
async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, Result<LlmError, reqwest::Error>> {
    let too_large = || {
        Ok(LlmError::InvalidResponse(format!(
            "the response is larger than {limit} bytes (llm.max_response_bytes)"
        )))
    };
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(Err)? {
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A reqwest failure as an [`LlmError`], with the causes spelled out since
/// reqwest's own message ("error sending request") says little.
fn transport_error(error: &reqwest::Error, timeout: Duration, secret: Option<&str>) -> LlmError {
    if error.is_timeout() {
        return LlmError::Timeout(timeout);
    }
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    LlmError::Transport(redact(&message, secret))
}

/// The provider's own error message from its JSON error body. Gemini,
/// Anthropic and OpenAI all use `{"error": {"message": ...}}`; some
/// OpenAI-compatible servers (Ollama) use `{"error": "..."}`.
fn error_message(body: &[u8], status: reqwest::StatusCode) -> String {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let from_json = json.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
    });
    let message = match from_json {
        Some(message) => message.to_string(),
        None if body.iter().all(u8::is_ascii_whitespace) => status
            .canonical_reason()
            .unwrap_or("no message")
            .to_string(),
        None => snippet(body),
    };
    truncate(message.trim())
}

/// The start of a body, for error messages.
fn snippet(body: &[u8]) -> String {
    truncate(String::from_utf8_lossy(body).trim())
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

fn redact(message: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => message.replace(secret, "[redacted]"),
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn from_model_picks_the_provider() {
        let cases = [
            ("gemini-2.5-flash", Provider::Gemini, "gemini-2.5-flash"),
            (
                "claude-sonnet-4-5",
                Provider::Anthropic,
                "claude-sonnet-4-5",
            ),
            ("google:gemini-2.5-pro", Provider::Gemini, "gemini-2.5-pro"),
            (
                "gemini:gemini-2.0-flash",
                Provider::Gemini,
                "gemini-2.0-flash",
            ),
            (
                "anthropic:claude-opus-4-1",
                Provider::Anthropic,
                "claude-opus-4-1",
            ),
            ("openai:gpt-4o-mini", Provider::OpenAi, "gpt-4o-mini"),
            ("openai:llama3.2", Provider::OpenAi, "llama3.2"),
            (
                "scripted:demo/script.yaml",
                Provider::Scripted,
                "demo/script.yaml",
            ),
            ("gpt-4o", Provider::Gemini, "gpt-4o"),
        ];
        for (name, provider, model) in cases {
            assert_eq!(
                Provider::from_model(name),
                (provider, model.to_string()),
                "{name}"
            );
        }
    }

    fn config(model: &str) -> LlmConfig {
        LlmConfig {
            model: model.to_string(),
            ..LlmConfig::default()
        }
    }

    fn build(model: &str, vars: &[(&str, &str)]) -> Result<Arc<dyn LlmClient>, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        build_client(&config(model), Path::new("."), &|name| {
            vars.get(name).cloned()
        })
    }

    #[test]
    fn missing_key_names_the_variable_and_the_model() {
        let err = build("gemini-2.5-flash", &[]).err();
        assert_eq!(
            err.as_deref(),
            Some("llm.model \"gemini-2.5-flash\" needs the environment variable GEMINI_API_KEY")
        );
        let err = build("claude-sonnet-4-5", &[("ANTHROPIC_API_KEY", " ")]).err();
        assert_eq!(
            err.as_deref(),
            Some(
                "llm.model \"claude-sonnet-4-5\" needs the environment variable ANTHROPIC_API_KEY"
            )
        );
    }

    #[test]
    fn clients_describe_provider_and_model() {
        let client = build("gemini-2.5-flash", &[("GEMINI_API_KEY", "k")]);
        assert_eq!(
            client.map(|c| c.describe()),
            Ok("gemini:gemini-2.5-flash".into())
        );
        let client = build("anthropic:claude-x", &[("ANTHROPIC_API_KEY", "k")]);
        assert_eq!(
            client.map(|c| c.describe()),
            Ok("anthropic:claude-x".into())
        );
        // Local OpenAI-compatible servers need no key.
        let client = build("openai:llama3.2", &[]);
        assert_eq!(client.map(|c| c.describe()), Ok("openai:llama3.2".into()));
    }

    #[test]
    fn error_message_prefers_the_provider_message() {
        let status = reqwest::StatusCode::BAD_REQUEST;
        let body = br#"{"error": {"code": 400, "message": "API key not valid"}}"#;
        assert_eq!(error_message(body, status), "API key not valid");
        assert_eq!(
            error_message(br#"{"error": "model not found"}"#, status),
            "model not found"
        );
        assert_eq!(error_message(b"", status), "Bad Request");
        let long = "x".repeat(1000);
        assert_eq!(error_message(long.as_bytes(), status).chars().count(), 301);
        assert_eq!(
            redact("key=abc123 bad", Some("abc123")),
            "key=[redacted] bad"
        );
    }
}
