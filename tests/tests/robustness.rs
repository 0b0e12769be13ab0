//! Bad input, failing dependencies and bad startups: the agent answers
//! with a JSON error, records what happened, and changes nothing else.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use asg_tests::fake_http::{FakeHttp, Reply};
use asg_tests::{
    Agent, AgentOptions, approval_uuid, assert_error, binary, conversation_id, files_under,
    response_text, testdata, tool_messages,
};
use serde_json::{Value, json};

#[tokio::test]
async fn bad_requests_answer_json_errors_and_change_nothing() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let (status, answer) = agent.say_new("add resource guarded-1 with value 1").await;
    assert_eq!(status, 201);
    let id = conversation_id(&answer);
    let uuid = approval_uuid(&answer);
    asg_tests::json_files_settled(&agent.data_dir);
    let before = files_under(&agent.data_dir);
    let conversation_file = agent
        .data_dir
        .join("conversations")
        .join(format!("{id}.json"));
    let file_before = std::fs::read(&conversation_file).unwrap();

    let messages = format!("/conversations/{id}/messages");
    let approve = format!("/approvals/{uuid}");
    let unknown_messages = format!("/conversations/{}/messages", uuid::Uuid::new_v4());
    let big = format!(r#"{{"message": "{}"}}"#, "a".repeat(300 * 1024));
    let cases: Vec<(&str, String, u16)> = vec![
        // Malformed JSON.
        ("/conversations", r#"{"message": "#.into(), 400),
        (&messages, "not json at all".into(), 400),
        (&approve, r#"{"approved": tru"#.into(), 400),
        (&messages, String::new(), 400),
        // Valid JSON of the wrong shape.
        ("/conversations", r#"{"message": 42}"#.into(), 422),
        (&messages, r#"{"message": ["list"]}"#.into(), 422),
        (&messages, r#"{"text": "list"}"#.into(), 422),
        (&messages, r#"{"message": "   "}"#.into(), 422),
        (&approve, r#"{"approved": "yes"}"#.into(), 422),
        (&approve, r#"{"approve": true}"#.into(), 422),
        (&approve, r#"{"action": "maybe"}"#.into(), 422),
        (&approve, "{}".into(), 422),
        (
            &approve,
            r#"{"approved": true, "answer": "no"}"#.into(),
            422,
        ),
        // serde can read a struct from an array; the API must not.
        (&approve, "[true]".into(), 422),
        (&approve, "[false]".into(), 422),
        (&messages, r#"["list"]"#.into(), 422),
        ("/conversations", r#"["list"]"#.into(), 422),
        (&approve, "true".into(), 422),
        // Ids that are not UUIDs.
        (
            "/conversations/not-a-uuid/messages",
            r#"{"message": "list"}"#.into(),
            400,
        ),
        ("/approvals/12345", r#"{"approved": true}"#.into(), 400),
        (
            "/approvals/..%2F..%2Fetc",
            r#"{"approved": true}"#.into(),
            400,
        ),
        // Unknown ids.
        (&unknown_messages, r#"{"message": "list"}"#.into(), 404),
        // Too big.
        ("/conversations", big.clone(), 413),
        (&messages, big.clone(), 413),
        (&approve, big, 413),
    ];
    for (path, body, status) in &cases {
        let got = agent.post_with(path, body.clone(), &[]).await;
        let shown: String = body.chars().take(60).collect();
        assert_eq!(got.0, *status, "POST {path} {shown:?}: {}", got.1);
        assert_error(&got, *status);
    }
    for (path, status) in [
        ("/conversations/not-a-uuid", 400),
        (
            &format!("/conversations/{}", uuid::Uuid::new_v4()) as &str,
            404,
        ),
        ("/no/such/route", 404),
    ] {
        let got = agent.get(path).await;
        assert_error(&got, status);
    }

    asg_tests::json_files_settled(&agent.data_dir);
    assert_eq!(std::fs::read(&conversation_file).unwrap(), file_before);
    let after = files_under(&agent.data_dir);
    assert_eq!(
        after.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        before.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        "no file created or removed"
    );
    let conversations_changed: Vec<_> = after
        .iter()
        .zip(&before)
        .filter(|(a, b)| a.0.starts_with(agent.data_dir.join("conversations")) && a.1 != b.1)
        .map(|(a, _)| a.0.clone())
        .collect();
    assert!(
        conversations_changed.is_empty(),
        "{conversations_changed:?}"
    );
    // The approval is still pending and works.
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(approvals["approvals"][0]["uuid"], uuid.as_str());
    let (status, _) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200);
    assert_eq!(agent.resource_names().await, ["guarded-1"]);
}

#[tokio::test]
async fn a_tool_server_crash_mid_call_is_recorded_and_it_restarts() {
    let agent = Agent::start(
        &testdata("agent-resources.yaml"),
        AgentOptions {
            env: vec![("MCP_RESOURCES_CRASH_ON".into(), "resources_add".into())],
            ..AgentOptions::default()
        },
    )
    .await;
    let (status, answer) = agent.say_new("add resource doomed-1 with value 1").await;
    assert_eq!(status, 201, "{answer}");
    let id = conversation_id(&answer);
    let (status, approved) = agent
        .decide(&approval_uuid(&answer), json!({"approved": true}))
        .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["conversation"]["status"], "active");
    let error = tool_messages(&approved["conversation"]).pop().unwrap();
    assert_eq!(error["tool_result"]["name"], "resources_add");
    assert_eq!(error["tool_result"]["is_error"], true, "{error}");
    let text = error["content"].as_str().unwrap();
    assert!(
        text.contains("MCP server") && text.contains("stopped"),
        "the error says the tool server stopped: {text}"
    );
    assert!(response_text(&approved).contains("failed"), "{approved}");

    // The next call restarts the server and works; nothing was added.
    let (status, listed) = agent.say(&id, "list resources").await;
    assert_eq!(status, 200, "{listed}");
    let result = tool_messages(&listed["conversation"]).pop().unwrap();
    assert_eq!(result["tool_result"]["is_error"], false, "{result}");
    assert!(
        response_text(&listed).contains("There are 0 resources"),
        "{listed}"
    );
}

/// The openai-compatible agent pointed at a fake that answers `reply`.
async fn openai_agent(reply: Reply) -> (Agent, FakeHttp) {
    let fake = FakeHttp::start(vec![reply]).await;
    let agent = Agent::start(
        &testdata("agent-openai.yaml"),
        AgentOptions {
            env: vec![("OPENAI_BASE_URL".into(), fake.url.clone())],
            ..AgentOptions::default()
        },
    )
    .await;
    (agent, fake)
}

/// Checks that the conversation in an LLM error answer recorded the error.
async fn assert_recorded_error(agent: &Agent, body: &Value) -> Value {
    let id = body["error"]["conversation"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no error.conversation in {body}"));
    let stored = agent.conversation(id).await;
    let last = stored["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["is_error"], true, "{stored}");
    assert_eq!(stored["status"], "active");
    let users: Vec<&Value> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users.len(), 1, "the user message is kept: {stored}");
    last
}

#[tokio::test]
async fn a_model_http_error_is_a_502_and_recorded() {
    let (agent, fake) = openai_agent(Reply::status(
        500,
        r#"{"error": {"message": "upstream exploded"}}"#,
    ))
    .await;
    let got = agent.say_new("hello").await;
    assert_eq!(assert_error(&got, 502), "llm_error");
    let recorded = assert_recorded_error(&agent, &got.1).await;
    assert!(
        recorded["content"].as_str().unwrap().contains("500"),
        "{recorded}"
    );
    let requests = fake.requests();
    assert!(!requests.is_empty());
    assert!(
        requests.iter().all(|r| r.uri == "/chat/completions"),
        "{requests:?}"
    );
}

#[tokio::test]
async fn a_model_timeout_is_a_504_and_recorded() {
    let (agent, _fake) = openai_agent(
        Reply::json(json!({"choices": [{"message": {"content": "too late"}}]}))
            .delayed(Duration::from_secs(5)),
    )
    .await;
    let started = Instant::now();
    let got = agent.say_new("hello").await;
    let took = started.elapsed();
    assert_eq!(assert_error(&got, 504), "llm_timeout");
    assert!(
        took < Duration::from_secs(4),
        "the 2 s model timeout answers in time, took {took:?}"
    );
    assert_recorded_error(&agent, &got.1).await;
}

#[tokio::test]
async fn a_garbage_model_answer_is_a_502() {
    let (agent, _fake) = openai_agent(Reply::status(200, "<html>definitely not json")).await;
    let got = agent.say_new("hello").await;
    assert_eq!(assert_error(&got, 502), "llm_error");
    assert_recorded_error(&agent, &got.1).await;
}

/// Runs the agent binary with `config`; it must fail within 15 s.
/// Returns its stderr.
fn failing_start(config: &Path, env: &[(&str, &str)]) -> String {
    let data = tempfile::tempdir().unwrap();
    let mut command = Command::new(binary("agent"));
    command
        .arg("--config")
        .arg(config)
        .args(["--host", "127.0.0.1", "--port", "0", "--data-dir"])
        .arg(data.path())
        .env_remove("GEMINI_API_KEY")
        .env_remove("AGENT_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let output = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            assert!(
                !status.success(),
                "the agent must refuse to start: {stderr}"
            );
            return stderr;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the agent did not exit with a bad configuration");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn startup_fails_on_an_unknown_config_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad-field.yaml");
    std::fs::write(
        &config,
        "name: bad\nprompt: p\nllm:\n  model: scripted:rules.yaml\n  temprature: 0.5\n",
    )
    .unwrap();
    let stderr = failing_start(&config, &[]);
    assert!(
        stderr.contains("bad-field.yaml"),
        "names the file: {stderr}"
    );
    assert!(stderr.contains("temprature"), "names the field: {stderr}");
}

#[test]
fn startup_fails_without_the_gemini_key() {
    let stderr = failing_start(&testdata("agent-gemini.yaml"), &[]);
    assert!(
        stderr.contains("GEMINI_API_KEY"),
        "names the variable: {stderr}"
    );
    // An empty key is no key.
    let stderr = failing_start(&testdata("agent-gemini.yaml"), &[("GEMINI_API_KEY", "")]);
    assert!(stderr.contains("GEMINI_API_KEY"), "{stderr}");
}

#[test]
fn startup_fails_on_a_missing_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("does-not-exist.yaml");
    let stderr = failing_start(&config, &[]);
    assert!(
        stderr.contains("does-not-exist.yaml"),
        "names the file: {stderr}"
    );
}
