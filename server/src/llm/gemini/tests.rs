//! Wire-format tests of the Gemini client against a mock HTTP server.

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;
use crate::llm::ToolSpec;

const KEY: &str = "test-gemini-key";
const PATH: &str = "/v1beta/models/gemini-2.5-flash:generateContent";

fn client(server: &MockServer, timeout: Duration) -> GeminiClient {
    let settings = ProviderSettings {
        model: "gemini-2.5-flash".into(),
        base_url: Some(format!("{}/", server.uri())),
        temperature: Some(0.2),
        max_tokens: Some(512),
        timeout,
        max_response_bytes: 1024 * 1024,
    };
    match GeminiClient::new(settings, KEY.into()) {
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
                    "additionalProperties": false,
                    "properties": {"name": {"type": "string"}, "value": {"type": "integer"}},
                    "required": ["name"]
                }),
            },
            ToolSpec {
                name: "resources_list".into(),
                description: "Lists resources.".into(),
                input_schema: json!({"type": "object", "properties": {}}),
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
        .and(path(PATH))
        .and(header("x-goog-api-key", KEY))
        .respond_with(template)
        .mount(server)
        .await;
}

async fn sent_body(server: &MockServer) -> Value {
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1);
    requests[0].body_json().unwrap()
}

fn text_reply(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP"
        }]
    }))
}

#[tokio::test]
async fn key_goes_in_the_header_never_in_the_url() {
    let server = MockServer::start().await;
    reply(&server, text_reply("Hello.")).await;
    let answer = client(&server, Duration::from_secs(5))
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
    let requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].url.path(), PATH);
    assert!(!requests[0].url.as_str().contains(KEY));
    assert_eq!(requests[0].url.query(), None);
}

#[tokio::test]
async fn body_has_system_tools_and_generation_config() {
    let server = MockServer::start().await;
    reply(&server, text_reply("ok")).await;
    let _ = client(&server, Duration::from_secs(5))
        .generate(&request(user("hi")))
        .await;
    assert_eq!(
        sent_body(&server).await,
        json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [
                {
                    "name": "resources_add",
                    "description": "Adds a resource.",
                    "parameters": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "value": {"type": "integer"}},
                        "required": ["name"]
                    }
                },
                {"name": "resources_list", "description": "Lists resources."}
            ]}],
            "generationConfig": {"temperature": 0.2, "maxOutputTokens": 512}
        })
    );
}

#[tokio::test]
async fn function_call_reply_is_parsed_with_its_signature() {
    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "Checking.", "thought": true},
                {"functionCall": {"name": "resources_add", "args": {"name": "a", "value": 3}},
                 "thoughtSignature": "c2lnLTE="},
                {"functionCall": {"name": "resources_list", "id": "given-id"}}
            ]}}]
        })),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5))
        .generate(&request(user("add a with value 3")))
        .await
        .unwrap();
    assert_eq!(answer.text, None);
    assert_eq!(answer.tool_calls.len(), 2);
    let first = &answer.tool_calls[0];
    assert!(first.id.starts_with("call_"), "{}", first.id);
    assert_eq!(first.name, "resources_add");
    assert_eq!(
        Value::Object(first.arguments.clone()),
        json!({"name": "a", "value": 3})
    );
    assert_eq!(first.signature.as_deref(), Some("c2lnLTE="));
    let second = &answer.tool_calls[1];
    assert_eq!(second.id, "given-id");
    assert!(second.arguments.is_empty());
    assert_eq!(second.signature, None);
    assert_ne!(first.id, second.id);
}

#[tokio::test]
async fn tool_call_history_round_trips() {
    let server = MockServer::start().await;
    reply(&server, text_reply("Done.")).await;
    let mut args = Map::new();
    args.insert("name".into(), json!("a"));
    let history = vec![
        LlmMessage::User {
            text: "add a, then list".into(),
        },
        LlmMessage::Assistant {
            text: Some("Sure.".into()),
            tool_calls: vec![
                LlmToolCall {
                    id: "call_1".into(),
                    name: "resources_add".into(),
                    arguments: args,
                    signature: Some("c2lnLTE=".into()),
                },
                LlmToolCall {
                    id: "call_2".into(),
                    name: "resources_list".into(),
                    arguments: Map::new(),
                    signature: None,
                },
            ],
        },
        LlmMessage::Tool {
            call_id: "call_1".into(),
            name: "resources_add".into(),
            content: "added".into(),
            is_error: false,
        },
        LlmMessage::Tool {
            call_id: "call_2".into(),
            name: "resources_list".into(),
            content: "database locked".into(),
            is_error: true,
        },
    ];
    let answer = client(&server, Duration::from_secs(5))
        .generate(&request(history))
        .await;
    assert_eq!(answer.map(|a| a.text), Ok(Some("Done.".into())));
    assert_eq!(
        sent_body(&server).await["contents"],
        json!([
            {"role": "user", "parts": [{"text": "add a, then list"}]},
            {"role": "model", "parts": [
                {"text": "Sure."},
                {"functionCall": {"name": "resources_add", "args": {"name": "a"}},
                 "thoughtSignature": "c2lnLTE="},
                {"functionCall": {"name": "resources_list", "args": {}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "resources_add", "response": {"result": "added"}}},
                {"functionResponse": {"name": "resources_list",
                                      "response": {"error": "database locked"}}}
            ]}
        ])
    );
}

#[tokio::test]
async fn http_errors_carry_the_provider_message() {
    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(400).set_body_json(json!({"error": {
            "code": 400,
            "message": "Function calling config is invalid.",
            "status": "INVALID_ARGUMENT"
        }})),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5))
        .generate(&request(user("hi")))
        .await;
    assert_eq!(
        answer,
        Err(LlmError::Http {
            status: 400,
            message: "Function calling config is invalid.".into()
        })
    );

    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(500).set_body_string("upstream exploded"),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5))
        .generate(&request(user("hi")))
        .await;
    assert_eq!(
        answer,
        Err(LlmError::Http {
            status: 500,
            message: "upstream exploded".into()
        })
    );
}

#[tokio::test]
async fn garbage_body_is_an_invalid_response() {
    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(200).set_body_string("<html>oops"),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5))
        .generate(&request(user("hi")))
        .await;
    assert!(
        matches!(answer, Err(LlmError::InvalidResponse(_))),
        "{answer:?}"
    );

    let server = MockServer::start().await;
    reply(
        &server,
        ResponseTemplate::new(200).set_body_json(json!({"candidates": []})),
    )
    .await;
    let answer = client(&server, Duration::from_secs(5))
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
    let answer = client(&server, timeout)
        .generate(&request(user("hi")))
        .await;
    assert_eq!(answer, Err(LlmError::Timeout(timeout)));
}

#[tokio::test]
async fn unreachable_server_is_a_transport_error() {
    let server = MockServer::start().await;
    let mut unreachable = client(&server, Duration::from_secs(5));
    unreachable.base_url = "http://127.0.0.1:1".into();
    let answer = unreachable.generate(&request(user("hi"))).await;
    match answer {
        Err(LlmError::Transport(message)) => assert!(!message.contains(KEY), "{message}"),
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[test]
fn token_usage_is_read_from_usage_metadata() {
    let body = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi."}]}}],
        "usageMetadata": {"promptTokenCount": 52, "candidatesTokenCount": 7, "totalTokenCount": 59}
    });
    let answer = parse(&body).unwrap();
    assert_eq!(
        answer.usage,
        Some(TokenUsage {
            input: 52,
            output: 7
        })
    );
}
