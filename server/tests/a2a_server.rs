//! The A2A server against the real `mcp-resources` tool server and the
//! resource manager's scripted model (`testdata/scripted/resources.yaml`):
//! skills from MCP tools (TS-011), a read-only request completing with an
//! artifact (TS-012), a destructive request stopping as `input-required`
//! and approved over REST (TS-013), continuations that approve and reject
//! (TS-020), cancellation that never runs the tool, the stream of a tool
//! call, and a sequential pipeline behind A2A (TS-028). Requests go
//! through the full router with `oneshot`.

use std::path::{Path, PathBuf};

use agent_server::app::App;
use agent_server::config::AgentConfig;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

/// The `mcp-resources` binary: another package's, so built and found by
/// `asg_tests::binary` (Cargo sets `CARGO_BIN_EXE_*` for a package's own
/// binaries only).
fn mcp_resources() -> String {
    asg_tests::binary("mcp-resources").display().to_string()
}

struct Agent {
    app: App,
    router: Router,
    _dir: tempfile::TempDir,
}

async fn agent() -> Agent {
    let yaml = "name: resource-manager\n\
                description: Resource manager used by the A2A server tests.\n\
                prompt: You are a resource manager.\n\
                public_url: http://agent.test:9000\n\
                llm: { model: 'scripted:scripted/resources.yaml' }\n";
    start(AgentConfig::parse(yaml, Path::new("a2a_server.yaml")).unwrap()).await
}

/// Builds the agent from `config` with a fresh data dir and the real
/// `mcp-resources` as its only tool server.
async fn start(mut config: AgentConfig) -> Agent {
    let dir = tempfile::tempdir().unwrap();
    config.data_dir = dir.path().to_path_buf();
    let db = dir.path().join("res.db").display().to_string();
    let bin = mcp_resources();
    let tools = format!("{{ name: resources, command: '{bin}', args: ['--db', '{db}'] }}");
    config.mcp_servers = vec![serde_yaml_server(&tools)];
    let testdata = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata");
    let app = App::build(config, &testdata, &|_| None).await.unwrap();
    let router = app.router(9000, agent_server::api::never_shutdown());
    Agent {
        app,
        router,
        _dir: dir,
    }
}

fn serde_yaml_server(yaml: &str) -> agent_server::config::McpServerConfig {
    let text = format!("mcp_servers: [{yaml}]\n");
    let mut config = AgentConfig::parse(&text, Path::new("tools.yaml")).unwrap();
    config.mcp_servers.remove(0)
}

impl Agent {
    async fn http(&self, method: &str, uri: &str, body: Value) -> (StatusCode, String) {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
            .body(if body.is_null() {
                Body::empty()
            } else {
                Body::from(body.to_string())
            })
            .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    async fn rpc(&self, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (status, text) = self.http("POST", "/a2a", request).await;
        assert_eq!(status, StatusCode::OK);
        serde_json::from_str(&text).unwrap()
    }

    async fn send(&self, text: &str, task: Option<&str>) -> Value {
        let answer = self.rpc("message/send", message(text, task)).await;
        assert!(answer.get("error").is_none(), "{answer}");
        answer["result"].clone()
    }

    async fn get(&self, id: &str) -> Value {
        self.rpc("tasks/get", json!({"id": id})).await["result"].clone()
    }

    /// The text of the answer to "list all resources".
    async fn listing(&self) -> String {
        answer(&self.send("list all resources", None).await)
    }

    async fn stop(self) {
        self.app.engine.tools().shutdown().await;
    }
}

fn message(text: &str, task: Option<&str>) -> Value {
    let mut message = json!({
        "kind": "message", "role": "user", "messageId": uuid::Uuid::new_v4().to_string(),
        "parts": [{"kind": "text", "text": text}],
    });
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({ "message": message })
}

fn answer(task: &Value) -> String {
    assert_eq!(task["status"]["state"], "completed", "{task}");
    task["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no artifact text: {task}"))
        .to_string()
}

fn approval(task: &Value) -> Value {
    assert_eq!(task["status"]["state"], "input-required", "{task}");
    task["status"]["message"]["parts"]
        .as_array()
        .and_then(|parts| parts.iter().find(|p| p["kind"] == "data"))
        .map(|p| p["data"].clone())
        .unwrap_or_else(|| panic!("no approval data part: {task}"))
}

#[tokio::test]
async fn card_skills_come_from_the_mcp_tools() {
    let agent = agent().await;
    let (status, card) = agent
        .http("GET", "/.well-known/agent.json", Value::Null)
        .await;
    assert_eq!(status, StatusCode::OK);
    let card: Value = serde_json::from_str(&card).unwrap();
    assert_eq!(card["name"], "resource-manager");
    assert_eq!(card["url"], "http://agent.test:9000/a2a");
    let skill = |id: &str| {
        card["skills"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no skill {id}: {card}"))
    };
    assert!(skill("resources_list")["tags"] == json!(["mcp", "read-only"]));
    let add = skill("resources_add");
    assert!(
        add["tags"]
            .as_array()
            .unwrap()
            .contains(&json!("destructive"))
    );
    assert!(!add["description"].as_str().unwrap().is_empty());
    agent.stop().await;
}

#[tokio::test]
async fn destructive_request_waits_and_a_rest_approval_completes_it() {
    let agent = agent().await;
    assert!(answer(&agent.send("list all resources", None).await).contains("There are 0"));
    let task = agent
        .send("add resource a2a-test-item with value 77", None)
        .await;
    let data = approval(&task);
    assert_eq!(data["tool_name"], "resources_add");
    assert_eq!(
        data["tool_args"],
        json!({"name": "a2a-test-item", "value": 77})
    );
    let text = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with("Approval required"), "{text}");
    assert!(!agent.listing().await.contains("a2a-test-item"));

    let uuid = data["approval_uuid"].as_str().unwrap();
    let uri = format!("/approvals/{uuid}");
    let (status, _) = agent.http("POST", &uri, json!({"approved": true})).await;
    assert_eq!(status, StatusCode::OK);
    let done = agent.get(task["id"].as_str().unwrap()).await;
    assert!(answer(&done).contains("Created the resource"), "{done}");
    assert!(agent.listing().await.contains("a2a-test-item"));
    agent.stop().await;
}

#[tokio::test]
async fn continuations_approve_and_reject() {
    let agent = agent().await;
    let first = agent.send("add resource kept-1 with value 1", None).await;
    approval(&first);
    let id = first["id"].as_str().unwrap();
    let done = agent.send("approved", Some(id)).await;
    assert!(answer(&done).contains("Created the resource"), "{done}");
    assert!(agent.listing().await.contains("kept-1"));

    let second = agent
        .send("add resource dropped-1 with value 2", None)
        .await;
    approval(&second);
    let id = second["id"].as_str().unwrap();
    let done = agent.send("rejected", Some(id)).await;
    let text = answer(&done);
    assert!(
        text.starts_with("Cancelled: Rejected by the user"),
        "{done}"
    );
    assert_eq!(text.matches("not run").count(), 1, "{done}");
    assert!(!agent.listing().await.contains("dropped-1"));
    agent.stop().await;
}

#[tokio::test]
async fn cancel_while_waiting_never_runs_the_tool() {
    let agent = agent().await;
    let task = agent.send("add resource never-1 with value 3", None).await;
    approval(&task);
    let id = task["id"].as_str().unwrap();
    let canceled = agent.rpc("tasks/cancel", json!({"id": id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    assert_eq!(agent.get(id).await["status"]["state"], "canceled");
    assert!(!agent.listing().await.contains("never-1"));
    let again = agent.rpc("tasks/cancel", json!({"id": id})).await;
    assert_eq!(again["error"]["code"], -32002);
    let approve = agent
        .rpc("message/send", message("approved", Some(id)))
        .await;
    assert_eq!(approve["error"]["code"], -32602);
    assert!(!agent.listing().await.contains("never-1"));
    agent.stop().await;
}

async fn stream(agent: &Agent, params: Value) -> Vec<Value> {
    let request = json!({"jsonrpc": "2.0", "id": 2, "method": "message/stream", "params": params});
    let (status, text) = agent.http("POST", "/a2a", request).await;
    assert_eq!(status, StatusCode::OK);
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str::<Value>(data.trim()).unwrap()["result"].clone())
        .collect()
}

#[tokio::test]
async fn streams_report_tool_calls_and_approvals() {
    let agent = agent().await;
    let events = stream(&agent, message("list all resources", None)).await;
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| e["status"]["message"]["parts"][0]["text"].as_str())
        .collect();
    assert!(texts.contains(&"Calling resources_list"), "{events:?}");
    assert!(texts.contains(&"resources_list finished"), "{events:?}");
    let last = events.last().unwrap();
    assert_eq!(
        (last["status"]["state"].as_str(), last["final"].as_bool()),
        (Some("completed"), Some(true))
    );
    assert!(events.iter().any(|e| e["kind"] == "artifact-update"));

    let events = stream(
        &agent,
        message("add resource streamed-1 with value 5", None),
    )
    .await;
    let last = events.last().unwrap();
    assert_eq!(last["final"], true);
    assert_eq!(approval(last)["tool_name"], "resources_add");
    let id = last["taskId"].as_str().unwrap();
    let events = stream(&agent, message("yes", Some(id))).await;
    let last = events.last().unwrap();
    assert_eq!(
        (last["status"]["state"].as_str(), last["final"].as_bool()),
        (Some("completed"), Some(true))
    );
    assert!(agent.listing().await.contains("streamed-1"));
    agent.stop().await;
}

#[tokio::test]
async fn ts028_a_sequential_pipeline_answers_over_a2a() {
    let config = AgentConfig::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/e2e-sequential.yaml"),
    )
    .unwrap();
    let agent = start(config).await;
    let task = agent.send("list all resources", None).await;
    let text = answer(&task);
    assert!(
        text.starts_with("REPORT: EXECUTED resources_list"),
        "{text}"
    );
    let id = task["id"].as_str().unwrap();
    let (_, rest) = agent
        .http("GET", &format!("/conversations/{id}"), Value::Null)
        .await;
    let rest: Value = serde_json::from_str(&rest).unwrap();
    let nodes: Vec<&str> = rest["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["node"].as_str())
        .collect();
    for node in ["analyzer", "executor", "reporter"] {
        assert!(nodes.contains(&node), "{node} did not run: {nodes:?}");
    }
    // The pipeline pauses for approval and resumes on an A2A continuation.
    let paused = agent.send("add resource piped-1 with value 4", None).await;
    assert_eq!(approval(&paused)["tool_name"], "resources_add");
    let done = agent
        .send("approved", Some(paused["id"].as_str().unwrap()))
        .await;
    assert!(
        answer(&done).starts_with("REPORT: EXECUTED resources_add"),
        "{done}"
    );
    agent.stop().await;
}
