//! Wire-format tests of the Anthropic client against a mock HTTP server.

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::llm::ToolSpec;

const KEY: &str = "test-anthropic-key";

fn client(server: &MockServer, timeout: Duration, max_tokens: Option<u32>) -> ClaudeClient {
    let settings = ProviderSettings {
        model: "claude-sonnet-4-5".into(),
        base_url: Some(server.uri()),
        temperature: None,
        max_tokens,
        timeout,
        max_response_bytes: 1024 * 1024,
    };
    match ClaudeClient::new(settings, KEY.into()) {
        Ok(client) => client,
        Err(e) => panic!("client: {e}"),
    }
}

fn request(messages: Vec<LlmMessage>) -> LlmRequest {
    LlmRequest {
        node: "root".into(),
        system: "Be brief.".into(),
        messages,
        tools: vec![
            ToolSpec {
                name: "resources_add".into(),
                description: "Adds a resource.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                }),
            },
            ToolSpec {
                name: "resources_list".into(),
                description: "Lists resources.".into(),
                input_schema: json!({}),
            },
        ]
        .into(),
    }
}

fn user(text: &str) -> Vec<LlmMessage> {
    vec![LlmMessage::User { text: text.into() }]
}

async fn reply(server: &MockServer, template: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("content-type", "application/json"))
        .respond_with(template)
        .mount(server)
        .await;
}

async fn sent_body(server: &MockServer) -> Value {
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1);
    assert!(!requests[0].url.as_str().contains(KEY));
    requests[0].body_json().unwrap()
}

fn text_reply(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn"
    }))
}

#[tokio::test]
async fn text_reply_is_parsed_and_body_has_system_and_tools() {
    let server = MockServer::start().await;
    reply(&server, text_reply("Hello.")).await;
    let answer = client(&server, Duration::from_secs(5), None)
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
    assert_eq!(
        sent_body(&server).await,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "tools": [
                {
                    "name": "resources_add",
                    "description": "Adds a resource.",
                    "input_schema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"]
                    }
                },
                {
                    "name": "resources_list",
                    "description": "Lists resources.",
                    "input_schema": {"type": "object", "properties": {}}
                }
            ]
        })
    );
}

#[tokio::test]
async fn tool_use_reply_is_parsed() {
    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(200).set_body_json(json!({
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "x"},
                {"type": "text", "text": "Adding it."},
                {"type": "tool_use", "id": "toolu_01", "name": "resources_add", "input": {"name": "a"}}
            ],
            "stop_reason": "tool_use"
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
            text: Some("Adding it.".into()),
            tool_calls: vec![LlmToolCall {
                id: "toolu_01".into(),
                name: "resources_add".into(),
                arguments: args,
                signature: None,
            }],
            usage: None,
        })
    );
}

#[tokio::test]
async fn tool_results_go_in_the_next_user_message() {
    let server = MockServer::start().await;
    reply(&server, text_reply("Done.")).await;
    let history = vec![
        LlmMessage::User {
            text: "add a, then list".into(),
        },
        LlmMessage::Assistant {
            text: None,
            tool_calls: vec![
                LlmToolCall {
                    id: "toolu_1".into(),
                    name: "resources_add".into(),
                    arguments: Map::new(),
                    signature: None,
                },
                LlmToolCall {
                    id: "toolu_2".into(),
                    name: "resources_list".into(),
                    arguments: Map::new(),
                    signature: None,
                },
            ],
        },
        LlmMessage::Tool {
            call_id: "toolu_1".into(),
            name: "resources_add".into(),
            content: "added".into(),
            is_error: false,
        },
        LlmMessage::Tool {
            call_id: "toolu_2".into(),
            name: "resources_list".into(),
            content: "database locked".into(),
            is_error: true,
        },
        LlmMessage::User {
            text: "and?".into(),
        },
    ];
    let _ = client(&server, Duration::from_secs(5), Some(100))
        .generate(&request(history))
        .await;
    let body = sent_body(&server).await;
    assert_eq!(body["max_tokens"], json!(100));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "add a, then list"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "resources_add", "input": {}},
                {"type": "tool_use", "id": "toolu_2", "name": "resources_list", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "added"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "database locked",
                 "is_error": true},
                {"type": "text", "text": "and?"}
            ]}
        ])
    );
}

#[tokio::test]
async fn http_errors_carry_the_provider_message() {
    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(400).set_body_json(json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: field required"}
        })),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5), None)
        .generate(&request(user("hi")))
        .await;
    assert_eq!(
        answer,
        Err(LlmError::Http {
            status: 400,
            message: "max_tokens: field required".into()
        })
    );

    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(500).set_body_json(json!({
            "type": "error",
            "error": {"type": "api_error", "message": "Internal server error"}
        })),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5), None)
        .generate(&request(user("hi")))
        .await;
    assert_eq!(
        answer,
        Err(LlmError::Http {
            status: 500,
            message: "Internal server error".into()
        })
    );
}

#[tokio::test]
async fn garbage_body_is_an_invalid_response() {
    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(200).set_body_string("not json"),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5), None)
        .generate(&request(user("hi")))
        .await;
    assert!(
        matches!(answer, Err(LlmError::InvalidResponse(_))),
        "{answer:?}"
    );

    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(200).set_body_json(json!({"ok": true})),
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
        text_reply("late").set_delay(Duration::from_secs(3)),
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
        "content": [{"type": "text", "text": "Hi."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 18, "output_tokens": 0}
    });
    let answer = parse(&body).unwrap();
    assert_eq!(
        answer.usage,
        Some(TokenUsage {
            input: 18,
            output: 0
        })
    );
}
