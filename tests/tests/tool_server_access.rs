//! Who may call the tool servers over HTTP (`mcp-resources --config`,
//! `mcp-filesystem`): a page rebound to their address must not reach the
//! tools. On every listen address (here `0.0.0.0`) a `Host` that is
//! neither a loopback name nor in `allowed_hosts` gets 421; with
//! `auth_token_env`, `/mcp` needs `Authorization: Bearer <token>` (401
//! otherwise; `/health` stays open); a missing or short token stops the
//! start naming the variable; an agent whose `mcp_servers` entry names the
//! same variable uses the tools end to end, sending the service token and
//! never its caller's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use asg_tests::tool_server::ToolServer;
use asg_tests::{Agent, AgentOptions, approval_uuid, binary, response_text, testdata};
use serde_json::{Value, json};

const TOKEN: &str = "service-token-for-the-tests-0123456789";

/// The two tool servers, each with its config and scripted agent rules.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Resources,
    Filesystem,
}

const KINDS: [Kind; 2] = [Kind::Resources, Kind::Filesystem];

impl Kind {
    fn binary(self) -> &'static str {
        match self {
            Kind::Resources => "mcp-resources",
            Kind::Filesystem => "mcp-filesystem",
        }
    }

    /// `DIR/NAME.yaml` on `0.0.0.0` with `extra` lines, and what it needs
    /// (a database path, a root).
    fn config(self, dir: &Path, extra: &str) -> PathBuf {
        let specific = match self {
            Kind::Resources => format!("db_path: {}\n", dir.join("resources.db").display()),
            Kind::Filesystem => {
                let root = dir.join("workspace");
                std::fs::create_dir_all(root.join("notes")).unwrap();
                std::fs::write(root.join("notes/hello.txt"), "Hello, files!\n").unwrap();
                format!(
                    "roots:\n  - {{name: workspace, path: {}, allowed_tools: [\"*\"]}}\n",
                    root.display()
                )
            }
        };
        let path = dir.join(format!("{}.yaml", self.binary()));
        std::fs::write(&path, format!("host: 0.0.0.0\nport: 0\n{specific}{extra}")).unwrap();
        path
    }

    fn start(self, dir: &Path, extra: &str, env: &[(&str, &str)]) -> ToolServer {
        ToolServer::start_with_env(self.binary(), &self.config(dir, extra), 0, env)
    }
}

/// `POST /mcp` `initialize` with this `Host` and bearer token: the status
/// and the body.
async fn initialize(server: &ToolServer, host: &str, bearer: Option<&str>) -> (u16, String) {
    let port = server.url.rsplit(':').next().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "access-test", "version": "0"}}});
    let mut request = reqwest::Client::new()
        .post(format!("{}/mcp", server.url))
        .header("host", host.replace("PORT", port))
        .header("accept", "application/json, text/event-stream")
        .json(&init);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// `GET /health` with this `Host`.
async fn health(server: &ToolServer, host: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{}/health", server.url))
        .header("host", host)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_foreign_host_is_refused_by_each_tool_server_listening_on_every_address() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let allowed = format!("allowed_hosts: [{}]\n", kind.binary());
        let server = kind.start(dir.path(), &allowed, &[]);
        let (status, body) = initialize(&server, "evil.example:PORT", None).await;
        assert_eq!(status, 421, "{kind:?}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], "misdirected_request", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("evil.example") && message.contains("allowed_hosts"),
            "{message}"
        );
        let named = format!("{}:PORT", kind.binary().to_uppercase());
        for host in ["127.0.0.1:PORT", "localhost:PORT", "[::1]:PORT", &named] {
            let (status, body) = initialize(&server, host, None).await;
            assert_eq!(status, 200, "{kind:?} {host}: {body}");
            assert!(body.contains(kind.binary()), "{kind:?}: {body}");
        }
        // Probes reach /health by any name; it tells nothing but "ok".
        assert_eq!(health(&server, "10.1.2.3:8090").await, 200);
        // Without allowed_hosts, a service name is foreign too.
        let dir = tempfile::tempdir().unwrap();
        let bare = kind.start(dir.path(), "", &[]);
        let (status, _) = initialize(&bare, &format!("{}:PORT", kind.binary()), None).await;
        assert_eq!(status, 421, "{kind:?}");
    }
}

#[tokio::test]
async fn with_auth_token_env_mcp_needs_the_token() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let server = kind.start(
            dir.path(),
            "auth_token_env: TOOL_TOKEN\n",
            &[("TOOL_TOKEN", TOKEN)],
        );
        for bearer in [None, Some("wrong-token-wrong-token-wrong"), Some("")] {
            let (status, body) = initialize(&server, "127.0.0.1:PORT", bearer).await;
            assert_eq!(status, 401, "{kind:?} {bearer:?}: {body}");
            assert!(body.contains("unauthenticated"), "{body}");
            assert!(!body.contains(TOKEN), "{body}");
        }
        let (status, body) = initialize(&server, "127.0.0.1:PORT", Some(TOKEN)).await;
        assert_eq!(status, 200, "{kind:?}: {body}");
        // The host is judged first, whatever the token.
        let (status, _) = initialize(&server, "evil.example", Some(TOKEN)).await;
        assert_eq!(status, 421, "{kind:?}");
        assert_eq!(health(&server, "localhost").await, 200, "{kind:?}");
        let log = server.log();
        assert!(log.contains("service token required"), "{log}");
        assert!(!log.contains(TOKEN), "the token is never logged: {log}");
    }
}

/// Runs the server with `env` and waits for it to exit (it must, within
/// 10 s): its exit code and its output.
fn failed_start(kind: Kind, config: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut child = Command::new(binary(kind.binary()))
        .arg("--config")
        .arg(config)
        .env_remove("TOOL_TOKEN")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            let output = child.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&output.stderr).into_owned()
                + &String::from_utf8_lossy(&output.stdout);
            return (output.status.code(), text);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("{} started without a valid token", kind.binary());
}

#[test]
fn a_missing_empty_or_short_token_stops_the_start_naming_the_variable() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let config = kind.config(dir.path(), "auth_token_env: TOOL_TOKEN\n");
        for env in [
            &[][..],
            &[("TOOL_TOKEN", "")][..],
            &[("TOOL_TOKEN", "short-token")][..],
        ] {
            let (code, output) = failed_start(kind, &config, env);
            assert_eq!(code, Some(2), "{kind:?} {env:?}: {output}");
            assert!(
                output.contains("auth_token_env") && output.contains("TOOL_TOKEN"),
                "{kind:?}: {output}"
            );
            assert!(!output.contains("short-token"), "{output}");
        }
    }
}

/// An agent on the offline model whose one MCP server is `url`, reached
/// with the token in `AGENT_TOOL_TOKEN`.
fn agent_config(dir: &Path, kind: Kind, url: &str) -> PathBuf {
    let rules = match kind {
        Kind::Resources => "scripted/resources.yaml",
        Kind::Filesystem => "scripted/filesystem.yaml",
    };
    let path = dir.join("agent.yaml");
    std::fs::write(
        &path,
        format!(
            "name: token-agent\nhost: 127.0.0.1\nllm:\n  model: scripted:{}\n\
             mcp_servers:\n  - name: tools\n    url: {url}/mcp\n    \
             auth_token_env: AGENT_TOOL_TOKEN\n",
            testdata(rules).display()
        ),
    )
    .unwrap();
    path
}

/// A destructive call through the agent, approved, with the caller's own
/// bearer token on every request: the tool server accepts only the
/// service token, so the call runs only if the agent sends that one.
async fn write_through_the_agent(agent: &Agent, kind: Kind) -> Value {
    let caller = [(
        "authorization",
        "Bearer the-callers-own-token-not-the-service-one",
    )];
    let message = match kind {
        Kind::Resources => "add resource token-1 with value 5",
        Kind::Filesystem => "write file notes/token.txt with content via the token",
    };
    let body = json!({ "message": message }).to_string();
    let (status, asked) = agent.post_with("/conversations", body, &caller).await;
    assert_eq!(status, 201, "{asked}");
    assert_eq!(asked["result"]["waiting_approval"], true, "{asked}");
    let uuid = approval_uuid(&asked);
    let decision = json!({"action": "approve"}).to_string();
    let (status, done) = agent
        .post_with(&format!("/approvals/{uuid}"), decision, &caller)
        .await;
    assert_eq!(status, 200, "{done}");
    done
}

#[tokio::test]
async fn an_agent_with_the_service_token_uses_the_tools_end_to_end() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let server = kind.start(
            dir.path(),
            "auth_token_env: TOOL_TOKEN\n",
            &[("TOOL_TOKEN", TOKEN)],
        );
        let config = agent_config(dir.path(), kind, &server.url);
        let agent = Agent::start(
            &config,
            AgentOptions::with_env(&[("AGENT_TOOL_TOKEN", TOKEN)]),
        )
        .await;
        let (status, health) = agent.get("/health").await;
        assert_eq!((status, &health["status"]), (200, &json!("ok")), "{health}");
        let done = write_through_the_agent(&agent, kind).await;
        let text = response_text(&done);
        match kind {
            Kind::Resources => {
                assert!(text.contains("token-1"), "{done}");
                assert_eq!(agent.resource_names().await, ["token-1"]);
            }
            Kind::Filesystem => {
                let written = dir.path().join("workspace/notes/token.txt");
                let content = std::fs::read_to_string(&written).unwrap_or_default();
                assert_eq!(content, "via the token", "{done}");
                let (status, read) = agent.say_new("read file notes/hello.txt").await;
                assert_eq!(status, 201, "{read}");
                assert!(response_text(&read).contains("Hello, files!"), "{read}");
            }
        }
        assert!(!agent.log().contains(TOKEN), "the agent never logs it");
    }
}

#[tokio::test]
async fn an_agent_without_the_variable_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = agent_config(dir.path(), Kind::Resources, "http://127.0.0.1:9");
    let output = Command::new(binary("agent"))
        .arg("--config")
        .arg(&config)
        .args(["--host", "127.0.0.1", "--port", "0", "--data-dir"])
        .arg(dir.path().join("data"))
        .env_remove("AGENT_TOOL_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let text = String::from_utf8_lossy(&output.stderr).into_owned()
        + &String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("AGENT_TOOL_TOKEN") && text.contains("auth_token_env"),
        "{text}"
    );
}
