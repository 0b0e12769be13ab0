//! Wire-format tests of the OpenAI-compatible client against a mock HTTP
//! server.

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::llm::ToolSpec;

const KEY: &str = "test-openai-key";

fn client(server: &MockServer, timeout: Duration, key: Option<&str>) -> OpenAiClient {
    let settings = ProviderSettings {
        model: "gpt-4o-mini".into(),
        base_url: Some(format!("{}/v1", server.uri())),
        temperature: Some(0.0),
        max_tokens: Some(256),
        timeout,
        max_response_bytes: 1024 * 1024,
    };
    match OpenAiClient::new(settings, key.map(str::to_string)) {
        Ok(client) => client,
        Err(e) => panic!("client: {e}"),
    }
}

fn request(messages: Vec<LlmMessage>) -> LlmRequest {
    LlmRequest {
        node: "root".into(),
        system: "Be brief.".into(),
        messages,
        tools: vec![ToolSpec {
            name: "resources_add".into(),
            description: "Adds a resource.".into(),
            input_schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        }]
        .into(),
    }
}

fn user(text: &str) -> Vec<LlmMessage> {
    vec![LlmMessage::User { text: text.into() }]
}

async fn reply(server: &MockServer, template: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(template)
        .mount(server)
        .await;
}

async fn only_request(server: &MockServer) -> wiremock::Request {
    let mut requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1);
    requests.remove(0)
}

fn message_reply(message: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]
    }))
}

#[tokio::test]
async fn text_reply_is_parsed_and_bearer_key_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(message_reply(
            json!({"role": "assistant", "content": "Hello."}),
        ))
        .mount(&server)
        .await;
    let answer = client(&server, Duration::from_secs(5), Some(KEY))
        .generate(&request(user("hi")))
        .await;
    assert_eq!(
        answer,
        Ok(LlmResponse {
            text: Some("Hello.".into()),
            tool_calls: vec![],
            usage: None,
        })
    );
    let sent = only_request(&server).await;
    assert!(!sent.url.as_str().contains(KEY));
    assert_eq!(
        sent.body_json::<Value>().unwrap(),
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "resources_add",
                "description": "Adds a resource.",
                "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}
            }}],
            "temperature": 0.0,
            "max_tokens": 256
        })
    );
}

#[tokio::test]
async fn no_key_means_no_authorization_header() {
    let server = MockServer::start().await;
    reply(
        &server,
        message_reply(json!({"role": "assistant", "content": "hi"})),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5), None)
        .generate(&request(user("hi")))
        .await;
    assert!(answer.is_ok(), "{answer:?}");
    assert!(
        !only_request(&server)
            .await
            .headers
            .contains_key("authorization")
    );
}

#[tokio::test]
async fn tool_call_reply_is_parsed() {
    let server = MockServer::start().await;
    reply(
        &server,
        message_reply(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": "call_abc", "type": "function",
                "function": {"name": "resources_add", "arguments": "{\"name\":\"a\"}"}}]
        })),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5), None)
        .generate(&request(user("add a")))
        .await;
    let mut args = Map::new();
    args.insert("name".into(), json!("a"));
    assert_eq!(
        answer,
        Ok(LlmResponse {
            text: None,
            tool_calls: vec![LlmToolCall {
                id: "call_abc".into(),
                name: "resources_add".into(),
                arguments: args,
                signature: None,
            }],
            usage: None,
        })
    );
}

#[tokio::test]
async fn invalid_arguments_are_an_invalid_response() {
    let server = MockServer::start().await;
    reply(
        &server,
        message_reply(json!({
            "role": "assistant",
            "tool_calls": [{"id": "call_abc", "type": "function",
                "function": {"name": "resources_add", "arguments": "{\"name\": "}}]
        })),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5), None)
        .generate(&request(user("add a")))
        .await;
    assert!(
        matches!(answer, Err(LlmError::InvalidResponse(_))),
        "{answer:?}"
    );
}

#[tokio::test]
async fn tool_call_history_round_trips() {
    let server = MockServer::start().await;
    reply(
        &server,
        message_reply(json!({"role": "assistant", "content": "Done."})),
    )
    .await;
    let mut args = Map::new();
    args.insert("name".into(), json!("a"));
    let history = vec![
        LlmMessage::User {
            text: "add a".into(),
        },
        LlmMessage::Assistant {
            text: None,
            tool_calls: vec![LlmToolCall {
                id: "call_1".into(),
                name: "resources_add".into(),
                arguments: args,
                signature: None,
            }],
        },
        LlmMessage::Tool {
            call_id: "call_1".into(),
            name: "resources_add".into(),
            content: "exists already".into(),
            is_error: true,
        },
    ];
    let _ = client(&server, Duration::from_secs(5), None)
        .generate(&request(history))
        .await;
    let body: Value = only_request(&server).await.body_json().unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "add a"},
            {"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_1",
                "type": "function",
                "function": {"name": "resources_add", "arguments": "{\"name\":\"a\"}"}
            }]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Error: exists already"}
        ])
    );
}

#[tokio::test]
async fn http_errors_carry_the_provider_message() {
    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "Invalid 'messages[1].tool_call_id'.",
            "type": "invalid_request_error"
        }})),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5), Some(KEY))
        .generate(&request(user("hi")))
        .await;
    assert_eq!(
        answer,
        Err(LlmError::Http {
            status: 400,
            message: "Invalid 'messages[1].tool_call_id'.".into()
        })
    );

    // Ollama's shape, and a server that echoes the key back.
    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(500).set_body_json(json!({"error": format!("bad key {KEY}")})),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5), Some(KEY))
        .generate(&request(user("hi")))
        .await;
    assert_eq!(
        answer,
        Err(LlmError::Http {
            status: 500,
            message: "bad key [redacted]".into()
        })
    );
}

#[tokio::test]
async fn garbage_body_is_an_invalid_response() {
    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(200).set_body_string("{\"choices\": ["),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5), None)
        .generate(&request(user("hi")))
        .await;
    assert!(
        matches!(answer, Err(LlmError::InvalidResponse(_))),
        "{answer:?}"
    );
}

#[tokio::test]
async fn slow_server_times_out() {
    let server = MockServer::start().await;
    reply(
        &server,
        message_reply(json!({"role": "assistant", "content": "late"}))
            .set_delay(Duration::from_secs(3)),
    )
    .await;
    let timeout = Duration::from_millis(300);
    let answer = client(&server, timeout, None)
        .generate(&request(user("hi")))
        .await;
    assert_eq!(answer, Err(LlmError::Timeout(timeout)));
}

#[test]
fn token_usage_is_read_from_the_usage_object() {
    let body = json!({
        "choices": [{"message": {"role": "assistant", "content": "Hi."}}],
        "usage": {"prompt_tokens": 31, "completion_tokens": 4, "total_tokens": 35}
    });
    let answer = parse(&body).unwrap();
    assert_eq!(
        answer.usage,
        Some(TokenUsage {
            input: 31,
            output: 4
        })
    );
    let without = json!({"choices": [{"message": {"role": "assistant", "content": "Hi."}}]});
    assert_eq!(parse(&without).unwrap().usage, None);
}
