//! `mcp-resources --config FILE` over streamable HTTP (issue 11): an agent
//! reaches it by `url:`, sees its tools with their annotations, and the
//! approval flow creates a resource exactly once; `/health` answers; a
//! bad configuration key stops it at startup, naming the field; SIGTERM
//! stops it cleanly. An HTTP server that is down when the agent starts
//! does not stop the agent: `/health` reports it, a call to its tool
//! fails clearly, and its tools join once it answers.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use asg_tests::tool_server::ToolServer;
use asg_tests::{
    Agent, AgentOptions, approval_uuid, binary, conversation_id, destructive_hint, response_text,
    testdata, tool_messages,
};
use serde_json::json;

/// `mcp-resources --config` over HTTP with its own database, in a temp
/// dir kept as long as the server.
struct HttpResources {
    server: ToolServer,
    url: String,
    _dir: tempfile::TempDir,
}

impl HttpResources {
    fn start() -> HttpResources {
        HttpResources::start_on(0)
    }

    /// On `port` (0: any free port).
    fn start_on(port: u16) -> HttpResources {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mcp-resources.yaml");
        let db = dir.path().join("resources.db");
        std::fs::write(
            &config,
            format!("host: 127.0.0.1\nport: 8090\ndb_path: {}\n", db.display()),
        )
        .unwrap();
        let server = ToolServer::start("mcp-resources", &config, port);
        HttpResources {
            url: server.url.clone(),
            server,
            _dir: dir,
        }
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        self.server.terminate()
    }
}

/// An agent config (in `dir`) whose only MCP server is `url`.
fn agent_config(dir: &Path, url: &str) -> std::path::PathBuf {
    let path = dir.join("agent.yaml");
    std::fs::write(
        &path,
        format!(
            "name: resource-manager\nprompt: You are a resource manager.\nhost: 127.0.0.1\n\
             llm:\n  model: scripted:{}\nmcp_servers:\n  - name: resources\n    url: {url}/mcp\n",
            testdata("scripted/resources.yaml").display()
        ),
    )
    .unwrap();
    path
}

#[tokio::test]
async fn an_agent_uses_mcp_resources_over_streamable_http() {
    let mut server = HttpResources::start();
    let health = reqwest::get(format!("{}/health", server.url))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);

    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::start(
        &agent_config(dir.path(), &server.url),
        AgentOptions::default(),
    )
    .await;
    let (status, tools) = agent.get("/tools").await;
    assert_eq!(status, 200, "{tools}");
    let hint = |name: &str| destructive_hint(&tools, name);
    assert_eq!(hint("resources_list"), json!(false));
    assert_eq!(hint("resources_add"), json!(true));
    assert_eq!(hint("resources_remove"), json!(true));

    let (status, listed) = agent.say_new("list resources").await;
    assert_eq!(status, 201, "{listed}");
    assert_eq!(listed["result"]["waiting_approval"], false);
    assert!(
        response_text(&listed).starts_with("There are 0 resources"),
        "{listed}"
    );

    let (_, answer) = agent.say_new("add resource http-1 with value 5").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    assert_eq!(answer["result"]["approval"]["tool_name"], "resources_add");
    assert!(agent.resource_names().await.is_empty());
    let uuid = approval_uuid(&answer);
    let (status, approved) = agent.decide(&uuid, json!({"action": "approve"})).await;
    assert_eq!(status, 200, "{approved}");
    assert!(response_text(&approved).contains("http-1"), "{approved}");
    let (status, again) = agent.decide(&uuid, json!({"action": "approve"})).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(agent.resource_names().await, ["http-1"]);

    let health = reqwest::get(format!("{}/health", server.url))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    drop(agent);
    assert!(server.terminate().success());
}

#[test]
fn a_bad_configuration_key_stops_mcp_resources_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp-resources.yaml");
    std::fs::write(&config, "host: 127.0.0.1\nport: 0\ndb_pth: x.db\n").unwrap();
    let output = Command::new(binary("mcp-resources"))
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("db_pth"), "{stderr}");
    assert!(stderr.contains("mcp-resources.yaml"), "{stderr}");
}

/// A loopback port nothing listens on (yet).
fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The agent's `/health` body once `done` holds for it (30 s at most).
async fn health_when(
    agent: &Agent,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, health) = agent.get("/health").await;
        assert_eq!(status, 200, "{health}");
        if done(&health) {
            return health;
        }
        assert!(Instant::now() < deadline, "health never changed: {health}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_http_server_down_at_startup_joins_once_it_answers() {
    let port = unused_port();
    let url = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::start(&agent_config(dir.path(), &url), AgentOptions::default()).await;

    let (_, health) = agent.get("/health").await;
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(
        health["details"]["mcp_servers"],
        json!([{"name": "resources", "transport": "http", "status": "unavailable", "tools": 0}])
    );
    // Public: the reason (with the internal URL) is only in the log.
    assert!(!health.to_string().contains(&url), "{health}");
    let log = agent.wait_log("retries in the background").await;
    assert!(log.contains("resources"), "{log}");
    let (_, tools) = agent.get("/tools").await;
    assert_eq!(tools["tools"], json!([]), "{tools}");

    // Meanwhile a call to one of its tools fails clearly, and runs nothing.
    let (status, answer) = agent.say_new("add resource early-1 with value 1").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], false, "{answer}");
    let conversation = agent.conversation(&conversation_id(&answer)).await;
    let results = tool_messages(&conversation);
    let refusal = results
        .iter()
        .filter(|m| m["tool_result"]["name"] == "resources_add")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .next()
        .unwrap_or_else(|| panic!("no refusal recorded: {conversation}"));
    assert!(
        refusal.contains("\"resources\" could not be reached") && refusal.contains("not run"),
        "{refusal}"
    );

    let _server = HttpResources::start_on(port);
    let health = health_when(&agent, |h| h["status"] == "ok").await;
    assert_eq!(
        health["details"]["mcp_servers"][0]["status"], "ready",
        "{health}"
    );
    agent.wait_log("MCP server is available now").await;
    let (_, tools) = agent.get("/tools").await;
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "resources_add" && t["destructiveHint"] == true),
        "{tools}"
    );
    let (_, answer) = agent.say_new("add resource late-1 with value 2").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let (status, approved) = agent
        .decide(&approval_uuid(&answer), json!({"action": "approve"}))
        .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(agent.resource_names().await, ["late-1"]);
}

#[tokio::test]
async fn a_stdio_server_that_cannot_start_still_stops_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.yaml");
    std::fs::write(
        &config,
        format!(
            "name: broken\nprompt: p\nllm:\n  model: scripted:{}\nmcp_servers:\n  - name: missing\n    command: /nonexistent/mcp-server\n",
            testdata("scripted/resources.yaml").display()
        ),
    )
    .unwrap();
    let output = Command::new(binary("agent"))
        .arg("--config")
        .arg(&config)
        .args(["--port", "0", "--data-dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("\"missing\""), "{stderr}");
    assert!(stderr.contains("/nonexistent/mcp-server"), "{stderr}");
}
