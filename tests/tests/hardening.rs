//! Closing the holes in the gate (issue 12): bodies that are not JSON get
//! 415, foreign `Host` headers get 421 (DNS rebinding), and conversation
//! files that cannot be loaded are quarantined and reported, never
//! silently dropped, while the files the agent writes are owner-only.

use std::path::{Path, PathBuf};

use asg_tests::{Agent, AgentOptions, approval_uuid, assert_error, conversation_id, testdata};
use serde_json::{Value, json};

fn on(dir: &Path) -> AgentOptions {
    AgentOptions {
        data_dir: Some(dir.to_path_buf()),
        ..AgentOptions::default()
    }
}

/// POSTs `body` with a given content type (and no other).
async fn post_typed(agent: &Agent, path: &str, content_type: &str, body: &str) -> (u16, Value) {
    let response = agent
        .http
        .post(format!("{}{path}", agent.url))
        .header("content-type", content_type)
        .body(body.to_string())
        .send()
        .await
        .expect("POST failed");
    read(response).await
}

/// Sends a request with a given `Host` header.
async fn with_host(agent: &Agent, method: &str, path: &str, host: &str) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = agent
        .http
        .request(method.clone(), format!("{}{path}", agent.url))
        .header("host", host);
    if method == reqwest::Method::POST {
        request = request
            .header("content-type", "application/json")
            .body(json!({"message": "list resources"}).to_string());
    }
    read(request.send().await.expect("request failed")).await
}

async fn read(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn total_conversations(agent: &Agent) -> u64 {
    let (status, list) = agent.get("/conversations").await;
    assert_eq!(status, 200, "{list}");
    list["summary"]["total"].as_u64().unwrap()
}

fn port_of(agent: &Agent) -> &str {
    agent.url.rsplit(':').next().unwrap()
}

#[tokio::test]
async fn bodies_that_are_not_json_get_415_and_change_nothing() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let (status, answer) = agent.say_new("add resource guarded-1 with value 7").await;
    assert_eq!(status, 201, "{answer}");
    let uuid = approval_uuid(&answer);
    let id = conversation_id(&answer);

    let approve = post_typed(
        &agent,
        &format!("/approvals/{uuid}"),
        "text/plain",
        r#"{"approved": true}"#,
    )
    .await;
    assert_eq!(assert_error(&approve, 415), "unsupported_media_type");
    let message = approve.1["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("text/plain") && message.contains("application/json"),
        "{message}"
    );
    let created = post_typed(
        &agent,
        "/conversations",
        "text/plain;charset=UTF-8",
        r#"{"message": "list resources"}"#,
    )
    .await;
    assert_eq!(assert_error(&created, 415), "unsupported_media_type");
    let form = post_typed(
        &agent,
        &format!("/conversations/{id}/messages"),
        "application/x-www-form-urlencoded",
        "message=hi",
    )
    .await;
    assert_error(&form, 415);
    let rpc = post_typed(
        &agent,
        "/a2a",
        "text/plain",
        r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}"#,
    )
    .await;
    assert_error(&rpc, 415);

    // Nothing changed: the approval still waits, no conversation was added.
    assert_eq!(total_conversations(&agent).await, 1);
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(
        approvals["approvals"][0]["uuid"],
        uuid.as_str(),
        "{approvals}"
    );
    let conversation = agent.conversation(&id).await;
    assert_eq!(conversation["status"], "waiting_approval");
    // JSON still works, and so does a create without any body.
    let empty = agent
        .http
        .post(format!("{}/conversations", agent.url))
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status().as_u16(), 201);
    let (status, decided) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(agent.resource_names().await, ["guarded-1"]);
}

#[tokio::test]
async fn foreign_host_headers_get_421_and_loopback_names_work() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let port = port_of(&agent).to_string();
    for (method, path) in [
        ("GET", "/health"),
        ("GET", "/conversations"),
        ("POST", "/conversations"),
    ] {
        let got = with_host(&agent, method, path, &format!("evil.example:{port}")).await;
        assert_eq!(
            assert_error(&got, 421),
            "misdirected_request",
            "{method} {path}"
        );
        let message = got.1["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("evil.example") && message.contains("allowed_hosts"),
            "{message}"
        );
    }
    assert_eq!(
        total_conversations(&agent).await,
        0,
        "the refused POST created nothing"
    );
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "LocalHost".into(),
    ] {
        let (status, body) = with_host(&agent, "GET", "/health", &host).await;
        assert_eq!(status, 200, "{host}: {body}");
    }
    let (status, body) = with_host(
        &agent,
        "POST",
        "/conversations",
        &format!("localhost:{port}"),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}

/// The scenario config plus `allowed_hosts`, in a temp dir.
fn config_with_allowed_hosts(dir: &Path) -> PathBuf {
    let scripted = testdata("scripted/resources.yaml");
    let text = format!(
        "name: resource-manager\nhost: 127.0.0.1\nallowed_hosts: [Agent.Test]\n\
         llm:\n  model: \"scripted:{}\"\nmcp_servers:\n  - name: resources\n    command: mcp-resources\n",
        scripted.display()
    );
    let path = dir.join("agent.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn a_host_in_allowed_hosts_is_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let config = config_with_allowed_hosts(tmp.path());
    let agent = Agent::start(&config, on(&tmp.path().join("data"))).await;
    let port = port_of(&agent).to_string();
    let (status, body) = with_host(&agent, "GET", "/health", &format!("agent.test:{port}")).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = with_host(&agent, "POST", "/conversations", "AGENT.TEST").await;
    assert_eq!(status, 201, "{body}");
    let got = with_host(&agent, "GET", "/health", "other.test").await;
    assert_error(&got, 421);
}

#[tokio::test]
async fn unreadable_files_are_quarantined_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let conversations = tmp.path().join("conversations");
    std::fs::create_dir_all(&conversations).unwrap();
    let valid = uuid::Uuid::new_v4();
    let whole = serde_json::to_vec_pretty(&asg_tests::executing_conversation(
        valid,
        uuid::Uuid::new_v4(),
    ))
    .unwrap();
    std::fs::write(conversations.join(format!("{valid}.json")), &whole).unwrap();
    let corrupt = format!("{}.json", uuid::Uuid::new_v4());
    std::fs::write(conversations.join(&corrupt), b"{\"id\": oops, not json").unwrap();
    let truncated = format!("{}.json", uuid::Uuid::new_v4());
    let other = serde_json::to_vec_pretty(&asg_tests::executing_conversation(
        uuid::Uuid::new_v4(),
        uuid::Uuid::new_v4(),
    ))
    .unwrap();
    std::fs::write(conversations.join(&truncated), &other[..other.len() / 2]).unwrap();

    let agent = Agent::start(&testdata("agent-resources.yaml"), on(tmp.path())).await;
    let quarantine = tmp.path().join("quarantine");
    for name in [&corrupt, &truncated] {
        assert!(quarantine.join(name).is_file(), "{name} not quarantined");
        assert!(!conversations.join(name).exists(), "{name} left in place");
        assert!(agent.log().contains(name.as_str()), "the log names {name}");
    }
    assert_eq!(
        std::fs::read(quarantine.join(&truncated)).unwrap(),
        &other[..other.len() / 2],
        "kept as it was"
    );
    let (status, health) = agent.get("/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["details"]["quarantined_files"], 2, "{health}");

    let recovered = agent.conversation(&valid.to_string()).await;
    let interrupted = recovered["messages"].as_array().unwrap().iter().any(|m| {
        let text = m["content"].as_str().unwrap_or_default();
        m["role"] == "tool" && text.contains("Interrupted") && text.contains("NOT run again")
    });
    assert!(interrupted, "{recovered}");
    assert!(recovered["pending_approval"].is_null(), "{recovered}");
    assert_eq!(total_conversations(&agent).await, 1);

    #[cfg(unix)]
    {
        let (_, created) = agent.say_new("list resources").await;
        asg_tests::json_files_settled(tmp.path());
        let new = conversations.join(format!("{}.json", conversation_id(&created)));
        assert_eq!(mode(&new), 0o600, "a new conversation file");
        let rewritten = conversations.join(format!("{valid}.json"));
        assert_eq!(
            mode(&rewritten),
            0o600,
            "the recovered conversation, saved again"
        );
        assert_eq!(mode(&conversations), 0o700);
        assert_eq!(mode(&quarantine), 0o700);
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}
