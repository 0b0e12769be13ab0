use asg_shared::a2a::TaskState;
use serde_json::json;

use super::*;
use crate::config::{A2aBinding, A2aProtocol};

#[test]
fn input_required_tasks_become_remote_approvals() {
    let task: Task = serde_json::from_value(json!({
        "id": "t1", "contextId": "c1", "kind": "task",
        "status": {"state": "input-required", "message": {
            "role": "agent", "messageId": "m", "kind": "message",
            "parts": [
                {"kind": "text", "text": "Approve resources_add?"},
                {"kind": "data", "data": {"approval_uuid": "u", "tool_name": "resources_add",
                    "tool_args": {"name": "x", "value": 1}, "description": "add x"}}
            ]}}
    }))
    .unwrap();
    let Delegation::InputRequired(approval) = delegation_of(&task) else {
        panic!("not input-required");
    };
    assert_eq!(approval.task_id, "t1");
    assert_eq!(approval.approval_uuid.as_deref(), Some("u"));
    assert_eq!(approval.tool_name, "resources_add");
    assert_eq!(json!(approval.tool_args), json!({"name": "x", "value": 1}));
    assert_eq!(approval.description, "add x");
}

#[tokio::test]
async fn the_card_is_found_on_the_older_path_and_its_endpoint_used() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/.well-known/agent-card.json"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    let card = json!({"name": "old", "description": "d", "url": format!("{}/rpc", server.uri()),
        "skills": [{"id": "x", "name": "x", "description": "x", "tags": []}]});
    Mock::given(method("GET"))
        .and(path("/.well-known/agent.json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(card))
        .mount(&server)
        .await;
    let task = json!({"jsonrpc": "2.0", "id": "1", "result": {"kind": "task", "id": "t",
        "contextId": "c", "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "old path ok"}]}]}});
    Mock::given(method("POST"))
        .and(path("/rpc"))
        .respond_with(ResponseTemplate::new(200).set_body_json(task))
        .expect(1)
        .mount(&server)
        .await;
    let config = SubAgentConfig {
        name: "old".into(),
        url: server.uri(),
        description: None,
        destructive_hint: false,
        timeout_secs: 5,
        bearer_env: None,
        protocol: None,
        binding: None,
    };
    let client = A2aClient::start(&[config], 4).await;
    let agent = client.agent("old").unwrap();
    assert_eq!(client.card(agent).await.unwrap().name, "old");
    let outcome = client
        .send(agent, "hi", None, None, &RequestContext::default())
        .await
        .unwrap();
    assert_eq!(outcome, Delegation::Completed("old path ok".into()));
}

#[test]
fn completed_and_failed_tasks() {
    let completed: Task = serde_json::from_value(json!({
        "id": "t", "contextId": "c", "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "done"}]}]
    }))
    .unwrap();
    assert_eq!(
        delegation_of(&completed),
        Delegation::Completed("done".into())
    );
    let failed: Task = serde_json::from_value(json!({
        "id": "t", "contextId": "c", "status": {"state": "failed", "message": {
            "role": "agent", "messageId": "m", "parts": [{"kind": "text", "text": "boom"}]}}
    }))
    .unwrap();
    assert_eq!(delegation_of(&failed), Delegation::Failed("boom".into()));
}

#[test]
fn an_auth_required_task_is_not_a_failure() {
    let waiting: Task = serde_json::from_value(json!({
        "id": "t", "contextId": "c", "status": {"state": "auth-required", "message": {
            "role": "agent", "messageId": "m", "parts": [{"kind": "text", "text": "log in first"}]}}
    }))
    .unwrap();
    assert_eq!(
        delegation_of(&waiting),
        Delegation::AuthRequired("log in first".into())
    );
}

fn entry(
    name: &str,
    url: String,
    protocol: Option<A2aProtocol>,
    binding: Option<A2aBinding>,
) -> SubAgentConfig {
    SubAgentConfig {
        name: name.into(),
        url,
        description: None,
        destructive_hint: false,
        timeout_secs: 5,
        bearer_env: None,
        protocol,
        binding,
    }
}

/// A card offering v1.0 JSON-RPC at `/rpc`, HTTP+JSON at `/api` and
/// v0.3 JSON-RPC at `/old`, all at `base`.
fn v1_card(base: &str) -> serde_json::Value {
    json!({"name": "peer", "description": "a v1.0 peer", "supportedInterfaces": [
        {"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": format!("{base}/api"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": format!("{base}/old"), "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]})
}

fn context_with_token() -> RequestContext {
    RequestContext {
        bearer: Some(BearerToken::new("caller-token")),
        ..RequestContext::default()
    }
}

async fn serve_card(server: &wiremock::MockServer, card: serde_json::Value) {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    Mock::given(method("GET"))
        .and(path("/.well-known/agent-card.json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(card))
        .mount(server)
        .await;
}

#[tokio::test]
async fn a_v1_card_is_reached_over_v1_jsonrpc_with_the_version_header() {
    use wiremock::matchers::{body_partial_json, header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    serve_card(&server, v1_card(&server.uri())).await;
    let asking = json!({"jsonrpc": "2.0", "id": "1", "result": {"task": {"id": "t9", "contextId": "c",
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"messageId": "m", "role": "ROLE_AGENT",
            "parts": [{"text": "Approve delete_file?"},
                {"data": {"approval_uuid": "u9", "tool_name": "delete_file", "tool_args": {"path": "x"}}}]}}}}});
    Mock::given(method("POST"))
        .and(path("/rpc"))
        .and(header("a2a-version", "1.0"))
        .and(header("authorization", "Bearer caller-token"))
        .and(body_partial_json(
            json!({"method": "SendMessage", "params": {"message": {"role": "ROLE_USER"}}}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(asking))
        .expect(1)
        .mount(&server)
        .await;
    let client = A2aClient::start(&[entry("peer", server.uri(), None, None)], 4).await;
    let agent = client.agent("peer").unwrap();
    let outcome = client
        .send(agent, "delete x", None, None, &context_with_token())
        .await
        .unwrap();
    let Delegation::InputRequired(approval) = outcome else {
        panic!("not input-required: {outcome:?}");
    };
    assert_eq!(
        (approval.task_id.as_str(), approval.approval_uuid.as_deref()),
        ("t9", Some("u9"))
    );
    assert_eq!(approval.tool_name, "delete_file");
    assert_eq!(agent.tool_info().description, "a v1.0 peer");
}

#[tokio::test]
async fn an_http_json_pin_sends_rest_requests_and_reads_problems() {
    use wiremock::matchers::{body_partial_json, header, method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    serve_card(&server, v1_card(&server.uri())).await;
    let done = json!({"task": {"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a", "parts": [{"text": "deleted x"}]}]}});
    Mock::given(method("POST"))
        .and(path("/api/message:send"))
        .and(header("a2a-version", "1.0"))
        .and(body_partial_json(
            json!({"message": {"taskId": "t1", "contextId": "c1",
            "parts": [{"text": "approved"}, {"data": {"approved": true, "approval_uuid": "u1"}}]}}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(done))
        .expect(1)
        .mount(&server)
        .await;
    let problem = json!({"type": "about:blank", "title": "Task not found", "status": 404,
        "detail": "no task gone"});
    Mock::given(method("GET"))
        .and(path("/api/tasks/gone"))
        .and(query_param("historyLength", "0"))
        .respond_with(ResponseTemplate::new(404).set_body_json(problem))
        .mount(&server)
        .await;
    let pinned = entry("peer", server.uri(), None, Some(A2aBinding::HttpJson));
    let client = A2aClient::start(&[pinned], 4).await;
    let agent = client.agent("peer").unwrap();
    let decision = RemoteDecision {
        approve: true,
        approval_uuid: Some("u1".into()),
        reason: None,
        reply: None,
    };
    let ctx = RequestContext::default();
    let outcome = client
        .send(
            agent,
            "approved",
            Some(Continuation {
                task_id: "t1",
                context_id: Some("c1"),
            }),
            Some(&decision),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(outcome, Delegation::Completed("deleted x".into()));
    let error = client.get_task(agent, "gone", &ctx).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "sub-agent \"peer\" refused the request: no task gone (HTTP 404)"
    );
}

#[tokio::test]
async fn a_v03_pin_uses_the_cards_v03_interface() {
    use wiremock::matchers::{body_partial_json, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    serve_card(&server, v1_card(&server.uri())).await;
    let task = json!({"jsonrpc": "2.0", "id": "1", "result": {"kind": "task", "id": "t", "contextId": "c",
        "status": {"state": "completed"}, "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "v0.3 ok"}]}]}});
    Mock::given(method("POST"))
        .and(path("/old"))
        .and(body_partial_json(json!({"method": "tasks/get"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(task))
        .expect(1)
        .mount(&server)
        .await;
    let pinned = entry("peer", server.uri(), Some(A2aProtocol::V03), None);
    let client = A2aClient::start(&[pinned], 4).await;
    let agent = client.agent("peer").unwrap();
    let task = client
        .get_task(agent, "t", &RequestContext::default())
        .await
        .unwrap();
    assert_eq!(
        (task.status.state, task.artifacts_text()),
        (TaskState::Completed, "v0.3 ok".to_string())
    );
}

/// Abuse: a card whose interfaces point at another origin. The caller's
/// token must not go there; the configured origin is used instead.
#[tokio::test]
async fn interfaces_on_another_origin_are_not_followed_with_the_token() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let configured = MockServer::start().await;
    let elsewhere = MockServer::start().await;
    serve_card(&configured, v1_card(&elsewhere.uri())).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"jsonrpc": "2.0", "id": "1",
            "result": {"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "stolen"}]}}})))
        .mount(&elsewhere)
        .await;
    Mock::given(method("POST"))
        .and(path("/rpc"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"jsonrpc": "2.0", "id": "1",
            "result": {"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "configured"}]}}})))
        .expect(1)
        .mount(&configured)
        .await;
    let client = A2aClient::start(&[entry("peer", configured.uri(), None, None)], 4).await;
    let agent = client.agent("peer").unwrap();
    let outcome = client
        .send(agent, "hi", None, None, &context_with_token())
        .await
        .unwrap();
    assert_eq!(outcome, Delegation::Completed("configured".into()));
    let reached = elsewhere.received_requests().await.unwrap_or_default();
    assert!(
        reached.is_empty(),
        "the other origin was reached: {reached:?}"
    );
}

#[tokio::test]
async fn a_pin_the_card_cannot_meet_is_a_clear_error() {
    use wiremock::MockServer;

    let server = MockServer::start().await;
    serve_card(
        &server,
        json!({"name": "old", "url": format!("{}/a2a", server.uri())}),
    )
    .await;
    let pinned = entry("peer", server.uri(), Some(A2aProtocol::V1), None);
    let client = A2aClient::start(&[pinned], 4).await;
    let agent = client.agent("peer").unwrap();
    let error = client
        .send(agent, "hi", None, None, &RequestContext::default())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("unavailable") && text.contains("protocol: v1"),
        "{text}"
    );
    assert!(text.contains("v0.3 JSON-RPC at"), "{text}");
}
