//! `mcp-resources --config FILE` over streamable HTTP (issue 11): an agent
//! reaches it by `url:`, sees its tools with their annotations, and the
//! approval flow creates a resource exactly once; `/health` answers; a
//! bad configuration key stops it at startup, naming the field; SIGTERM
//! stops it cleanly.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use asg_tests::{
    Agent, AgentOptions, approval_uuid, binary, capture_output, listening_port, response_text,
    testdata,
};
use serde_json::json;

/// A running `mcp-resources --config ... --port 0`.
struct HttpResources {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl HttpResources {
    fn start() -> HttpResources {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mcp-resources.yaml");
        let db = dir.path().join("resources.db");
        std::fs::write(
            &config,
            format!("host: 127.0.0.1\nport: 8090\ndb_path: {}\n", db.display()),
        )
        .unwrap();
        let mut child = Command::new(binary("mcp-resources"))
            .arg("--config")
            .arg(&config)
            .args(["--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start mcp-resources");
        let log = Arc::new(Mutex::new(String::new()));
        let port = capture_output(&mut child, &log, listening_port)
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("mcp-resources did not start: {}", log.lock().unwrap()));
        HttpResources {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        }
    }

    /// SIGTERM, then the exit status (killed after 10 s).
    fn terminate(&mut self) -> std::process::ExitStatus {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = self.child.kill();
        panic!(
            "mcp-resources ignored SIGTERM: {}",
            self.log.lock().unwrap()
        );
    }
}

impl Drop for HttpResources {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    let hint = |name: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing from {tools}"))["destructiveHint"]
            .clone()
    };
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
