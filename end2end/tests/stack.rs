//! `scripts/stack.sh` end to end: the compose topology as local processes
//! (mcp-resources, mcp-filesystem, agents A, B and C, web) on free ports,
//! on the offline model. A message in the chat (headless Chromium) is
//! delegated by agent A to agent B, B's approval shows in the chat as a
//! proxy approval, Approve creates the resource on B exactly once; then
//! the stack stops and leaves no process behind.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use asg_end2end::{Browser, web_dist};
use asg_tests::{binary, workspace_root};
use serde_json::{Value, json};

/// How long the stack may take to build nothing and start six processes.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// The six services' ports.
#[derive(Debug, Clone, Copy)]
struct Ports {
    web: u16,
    agent_a: u16,
    agent_b: u16,
    agent_c: u16,
    mcp_resources: u16,
    mcp_filesystem: u16,
}

impl Ports {
    /// Six distinct free loopback ports (held together while picked).
    fn free() -> Ports {
        let listeners: Vec<_> = (0..6)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("free port"))
            .collect();
        let port = |i: usize| listeners[i].local_addr().expect("address").port();
        Ports {
            web: port(0),
            agent_a: port(1),
            agent_b: port(2),
            agent_c: port(3),
            mcp_resources: port(4),
            mcp_filesystem: port(5),
        }
    }

    fn all(&self) -> [(&'static str, u16); 6] {
        [
            ("web", self.web),
            ("agent-a", self.agent_a),
            ("agent-b", self.agent_b),
            ("agent-c", self.agent_c),
            ("mcp-resources", self.mcp_resources),
            ("mcp-filesystem", self.mcp_filesystem),
        ]
    }

    /// Each service's health URL (the web server's is `/web/health`).
    fn health_urls(&self) -> Vec<(&'static str, String)> {
        self.all()
            .into_iter()
            .map(|(name, port)| {
                let path = if name == "web" {
                    "/web/health"
                } else {
                    "/health"
                };
                (name, format!("http://127.0.0.1:{port}{path}"))
            })
            .collect()
    }
}

/// A running `scripts/stack.sh`; stopped with SIGTERM on drop.
struct StackScript {
    child: Option<Child>,
    ports: Ports,
    dir: tempfile::TempDir,
    output: Arc<Mutex<String>>,
}

impl StackScript {
    /// Starts the script on free ports with the debug binaries, the built
    /// chat bundle and a temporary state directory, offline (no model
    /// keys), and waits for its "Stack ready." line.
    fn start() -> StackScript {
        let bin_dir = binary("agent")
            .parent()
            .map(Path::to_path_buf)
            .expect("binary directory");
        let dist = web_dist();
        let dir = tempfile::tempdir().expect("temp dir");
        let ports = Ports::free();
        let mut command = Command::new("bash");
        command
            .arg(workspace_root().join("scripts/stack.sh"))
            .current_dir(workspace_root())
            .env("STACK_BIN_DIR", &bin_dir)
            .env("STACK_DIST_DIR", &dist)
            .env("STACK_DIR", dir.path())
            .env("STACK_TIMEOUT", "60")
            .env("WEB_PORT", ports.web.to_string())
            .env("AGENT_A_PORT", ports.agent_a.to_string())
            .env("AGENT_B_PORT", ports.agent_b.to_string())
            .env("AGENT_C_PORT", ports.agent_c.to_string())
            .env("MCP_RESOURCES_PORT", ports.mcp_resources.to_string())
            .env("MCP_FILESYSTEM_PORT", ports.mcp_filesystem.to_string())
            .env("RUST_LOG", "info")
            .env_remove("STACK_PORT_BASE")
            .env_remove("AGENT_MODEL")
            .env_remove("GEMINI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("cannot run scripts/stack.sh");
        let output = Arc::new(Mutex::new(String::new()));
        let ready = asg_tests::capture_output(&mut child, &output, |line| {
            line.starts_with("Stack ready.").then_some(0)
        });
        let mut stack = StackScript {
            child: Some(child),
            ports,
            dir,
            output,
        };
        if ready.recv_timeout(START_TIMEOUT).is_err() {
            let status = stack.stop();
            panic!(
                "stack.sh did not get ready (exit {status:?}); its output:\n{}\n{}",
                stack.output(),
                stack.logs()
            );
        }
        stack
    }

    fn output(&self) -> String {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Every service's log.
    fn logs(&self) -> String {
        let mut all = String::new();
        for (name, _) in self.ports.all() {
            let path = self.dir.path().join(format!("logs/{name}.log"));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            all.push_str(&format!("--- {name}.log\n{text}\n"));
        }
        all
    }

    /// The processes the script started, from its `stack.pids`.
    fn pids(&self) -> Vec<(String, u32)> {
        let text = std::fs::read_to_string(self.dir.path().join("stack.pids")).expect("stack.pids");
        text.lines()
            .filter_map(|line| {
                let (name, pid) = line.split_once(' ')?;
                Some((name.to_string(), pid.trim().parse().ok()?))
            })
            .collect()
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("running")
    }

    /// SIGTERM to the script (as from a service manager or `kill`), then
    /// waits for it to end (SIGKILL after 30 s).
    fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        child.wait().ok();
        None
    }
}

impl Drop for StackScript {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether a process runs (a zombie does not count).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Running processes whose working directory is under `dir`.
fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let cwd: PathBuf = match std::fs::read_link(entry.path().join("cwd")) {
            Ok(cwd) => cwd,
            Err(_) => continue,
        };
        if cwd.starts_with(&dir) && alive(pid) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    found
}

/// POST JSON, answer status and body.
async fn post(url: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The resources on agent B, read through B's REST API: a conversation
/// saying "list resources", whose `resources_list` result is parsed.
async fn resources_on_b(ports: &Ports) -> Vec<Value> {
    let url = format!("http://127.0.0.1:{}/conversations", ports.agent_b);
    let (status, answer) = post(&url, json!({"message": "list resources"})).await;
    assert_eq!(status, 201, "{answer}");
    let messages = answer["conversation"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let result = messages
        .iter()
        .rev()
        .find(|m| m["tool_result"]["name"] == "resources_list")
        .unwrap_or_else(|| panic!("no resources_list result: {answer}"));
    let listed: Value = serde_json::from_str(result["content"].as_str().unwrap_or(""))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {result}"));
    listed["resources"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn stack_sh_runs_the_topology_and_a_proxy_approval_from_b_is_approved_in_the_chat() {
    let mut stack = StackScript::start();
    let ports = stack.ports;
    let output = stack.output();
    for (name, port) in ports.all() {
        assert!(
            output.contains(&format!("http://127.0.0.1:{port}")),
            "{name}'s URL is not printed:\n{output}"
        );
    }

    // Every service answers its health check.
    for (name, url) in ports.health_urls() {
        let response = reqwest::get(&url)
            .await
            .unwrap_or_else(|e| panic!("{name}: GET {url}: {e}"));
        assert_eq!(response.status().as_u16(), 200, "{name}: GET {url}");
    }
    // The chat's API is agent A's.
    let web = format!("http://127.0.0.1:{}", ports.web);
    let card: Value = reqwest::get(format!("{web}/api/.well-known/agent-card.json"))
        .await
        .expect("agent card through the web proxy")
        .json()
        .await
        .expect("card JSON");
    assert_eq!(card["name"], "orchestrator", "{card}");

    // The chat: A delegates to B, B's approval is a proxy approval here.
    let browser = Browser::start().await;
    browser.goto(&web).await;
    browser
        .send_message("add resource stack-e2e with value 7")
        .await;
    browser.wait_for("#approval-panel").await;
    browser
        .wait_text(".approval-remote", "resource_agent")
        .await;
    browser.wait_text(".approval-tool", "resources_add").await;
    let args = browser.wait_text(".approval-args", "stack-e2e").await;
    assert!(args.contains('7'), "{args}");
    browser.screenshot("stack-proxy-approval").await;
    assert!(
        resources_on_b(&ports).await.is_empty(),
        "created before the approval"
    );

    browser.wait_for("#approve").await.click().await.unwrap();
    browser.wait_gone("#approval-panel").await;
    browser
        .wait_text("#messages .message.assistant", "stack-e2e")
        .await;
    browser.screenshot("stack-proxy-approved").await;
    browser.close().await;

    // Created on B exactly once, and nothing is left pending anywhere.
    let resources = resources_on_b(&ports).await;
    let named: Vec<_> = resources
        .iter()
        .filter(|r| r["name"] == "stack-e2e")
        .collect();
    assert_eq!(named.len(), 1, "{resources:?}");
    assert_eq!(named[0]["value"], 7, "{resources:?}");
    for port in [ports.agent_a, ports.agent_b] {
        let pending: Value = reqwest::get(format!("http://127.0.0.1:{port}/approvals"))
            .await
            .expect("approvals")
            .json()
            .await
            .expect("approvals JSON");
        assert_eq!(
            pending["approvals"].as_array().map(Vec::len),
            Some(0),
            "{pending}"
        );
    }

    // Agent C through A over the API: a write waits for approval, then the
    // file is in the workspace root (the state directory's data/workspace).
    let a = format!("http://127.0.0.1:{}", ports.agent_a);
    let (status, answer) = post(
        &format!("{a}/conversations"),
        json!({"message": "write file notes.txt with content hello from the stack"}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let approval = &answer["result"]["approval"];
    assert_eq!(
        approval["remote_agent_name"], "filesystem_agent",
        "{answer}"
    );
    let workspace = stack.dir.path().join("data/workspace");
    assert!(!workspace.join("notes.txt").exists());
    let uuid = approval["uuid"].as_str().expect("approval uuid");
    let (status, decided) = post(&format!("{a}/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).expect("notes.txt written"),
        "hello from the stack"
    );
    let (status, listed) = post(
        &format!("{a}/conversations"),
        json!({"message": "list files"}),
    )
    .await;
    assert_eq!(status, 201, "{listed}");
    let text = listed["result"]["response"].as_str().unwrap_or_default();
    assert!(text.contains("notes.txt"), "{listed}");

    // SIGTERM stops everything: no process of the stack is left.
    let pids = stack.pids();
    assert_eq!(pids.len(), 6, "{pids:?}");
    let script = stack.pid();
    let status = stack.stop().expect("stack.sh did not stop within 30 s");
    assert!(!alive(script));
    assert_eq!(status.code(), Some(143), "{}", stack.output());
    for (name, pid) in &pids {
        assert!(!alive(*pid), "{name} (pid {pid}) still runs");
    }
    assert_eq!(processes_in(stack.dir.path()), Vec::new());
    for (name, port) in ports.all() {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "{name}'s port {port} still answers"
        );
    }
    assert!(stack.output().contains("stopped"), "{}", stack.output());
}

#[tokio::test]
async fn a_service_that_dies_stops_the_whole_stack() {
    let mut stack = StackScript::start();
    let pids = stack.pids();
    let (_, resources) = pids
        .iter()
        .find(|(name, _)| name == "mcp-resources")
        .cloned()
        .expect("mcp-resources pid");
    let _ = Command::new("kill")
        .args(["-KILL", &resources.to_string()])
        .status();
    let child = stack.child.as_mut().expect("running");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "stack.sh still runs");
        std::thread::sleep(Duration::from_millis(100));
    };
    stack.child = None;
    assert_eq!(status.code(), Some(1), "{}", stack.output());
    assert!(
        stack.output().contains("mcp-resources exited"),
        "{}",
        stack.output()
    );
    for (name, pid) in &pids {
        assert!(!alive(*pid), "{name} (pid {pid}) still runs");
    }
    assert_eq!(processes_in(stack.dir.path()), Vec::new());
}
