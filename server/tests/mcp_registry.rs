//! The MCP client side ([`ToolRegistry`]) against the real `mcp-resources`
//! binary: tool discovery and approval hints, calls, concurrency, crash
//! recovery, timeouts, shutdown; plus Bearer forwarding to an HTTP server
//! faked with wiremock.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_server::config::{ApprovalConfig, McpServerConfig};
use agent_server::context::BearerToken;
use agent_server::mcp::registry::RegistryOptions;
use agent_server::mcp::{ToolCallError, ToolRegistry};
use agent_server::tool::ToolKind;
use serde_json::{Map, Value, json};

/// The `mcp-resources` binary: another package's, so built and found by
/// `asg_tests::binary` (Cargo sets `CARGO_BIN_EXE_*` for a package's own
/// binaries only).
fn mcp_resources() -> String {
    asg_tests::binary("mcp-resources").display().to_string()
}

fn resources(dir: &Path, env: &[(&str, &str)], timeout_secs: u64) -> McpServerConfig {
    McpServerConfig {
        name: "resources".into(),
        command: Some(mcp_resources()),
        args: vec!["--db".into(), db_path(dir).display().to_string()],
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        url: None,
        auth_token_env: None,
        timeout_secs,
    }
}

fn db_path(dir: &Path) -> PathBuf {
    dir.join("res.db")
}

fn options(dir: &Path, approval: ApprovalConfig) -> RegistryOptions {
    RegistryOptions {
        approval,
        data_dir: dir.to_path_buf(),
        reserved: Vec::new(),
    }
}

async fn start(dir: &Path, env: &[(&str, &str)], timeout_secs: u64) -> Arc<ToolRegistry> {
    ToolRegistry::start(
        &[resources(dir, env, timeout_secs)],
        options(dir, ApprovalConfig::default()),
    )
    .await
    .unwrap()
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

async fn call_json(registry: &ToolRegistry, tool: &str, arguments: Value) -> Value {
    let out = registry.call(tool, args(arguments), None).await.unwrap();
    assert!(!out.is_error, "{tool} failed: {}", out.content);
    serde_json::from_str(&out.content).unwrap()
}

/// Pids of live processes whose command line mentions `marker`.
fn processes_mentioning(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            pids.push(pid);
        }
    }
    pids
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_tools_with_the_right_hints() {
    let dir = tempfile::tempdir().unwrap();
    let registry = start(dir.path(), &[], 10).await;
    let tools = registry.tools();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        ["resources_add", "resources_list", "resources_remove"]
    );
    let list = registry.tool("resources_list").unwrap();
    assert!(!list.gated && list.read_only);
    assert_eq!(
        (list.kind, list.server.as_str()),
        (ToolKind::Mcp, "resources")
    );
    assert!(list.description.contains("LIKE"));
    assert_eq!(list.input_schema["type"], "object");
    for name in ["resources_add", "resources_remove"] {
        let tool = registry.tool(name).unwrap();
        assert!(tool.gated && !tool.read_only, "{name}");
    }
    assert!(registry.tool("nope").is_none());
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn add_list_remove_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let registry = start(dir.path(), &[], 10).await;
    let created = call_json(
        &registry,
        "resources_add",
        json!({"name": "alpha", "value": 5}),
    )
    .await;
    let id = created["created"]["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("res_"));
    call_json(
        &registry,
        "resources_add",
        json!({"name": "beta", "value": -1}),
    )
    .await;
    let listed = call_json(&registry, "resources_list", json!({})).await;
    assert_eq!(listed["count"], 2);
    assert_eq!(listed["resources"][0]["name"], "alpha");
    assert_eq!(listed["resources"][0]["value"], 5);
    let filtered = call_json(&registry, "resources_list", json!({"pattern": "bet"})).await;
    assert_eq!(filtered["count"], 1);

    let empty_name = registry
        .call(
            "resources_add",
            args(json!({"name": " ", "value": 1})),
            None,
        )
        .await
        .unwrap();
    assert!(
        empty_name.is_error && empty_name.content.contains("name"),
        "{}",
        empty_name.content
    );
    let no_target = registry
        .call("resources_remove", args(json!({})), None)
        .await
        .unwrap();
    assert!(
        no_target.is_error && no_target.content.contains("id"),
        "{}",
        no_target.content
    );
    let missing = registry
        .call(
            "resources_remove",
            args(json!({"id": "res_00000000"})),
            None,
        )
        .await
        .unwrap();
    assert!(
        missing.is_error && missing.content.contains("res_00000000"),
        "{}",
        missing.content
    );

    let removed = call_json(&registry, "resources_remove", json!({"id": id})).await;
    assert_eq!(removed["count"], 1);
    assert_eq!(
        call_json(&registry, "resources_list", json!({})).await["count"],
        1
    );
    // The data is in the file given by --db.
    assert!(db_path(dir.path()).is_file());

    let unknown = registry.call("nope", Map::new(), None).await.unwrap_err();
    assert!(
        matches!(unknown, ToolCallError::UnknownTool(ref n) if n == "nope"),
        "{unknown}"
    );
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_from_ten_tasks_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(start(dir.path(), &[], 10).await);
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let registry = Arc::clone(&registry);
            tokio::spawn(async move {
                let (tool, arguments) = match i % 2 {
                    0 => (
                        "resources_add",
                        json!({"name": format!("r{i}"), "value": i}),
                    ),
                    _ => ("resources_list", json!({})),
                };
                registry.call(tool, args(arguments), None).await
            })
        })
        .collect();
    for task in tasks {
        let out = task.await.unwrap().unwrap();
        assert!(!out.is_error, "{}", out.content);
    }
    assert_eq!(
        call_json(&registry, "resources_list", json!({})).await["count"],
        5
    );
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crashed_server_reports_unavailable_then_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let registry = start(
        dir.path(),
        &[("MCP_RESOURCES_CRASH_ON", "resources_add")],
        20,
    )
    .await;
    let before = Instant::now();
    let err = registry
        .call(
            "resources_add",
            args(json!({"name": "x", "value": 1})),
            None,
        )
        .await
        .unwrap_err();
    assert!(
        before.elapsed() < Duration::from_secs(5),
        "took {:?}",
        before.elapsed()
    );
    match &err {
        ToolCallError::ServerUnavailable { server, message } => {
            assert_eq!(server, "resources");
            assert!(message.contains("stopped"), "{message}");
        }
        other => panic!("expected ServerUnavailable, got {other:?}"),
    }
    assert!(err.to_string().contains("\"resources\""), "{err}");
    // The next call runs on a restarted server.
    let listed = call_json(&registry, "resources_list", json!({})).await;
    assert_eq!(listed["count"], 0);
    // And the tool list from startup is kept.
    assert_eq!(registry.tools().len(), 3);
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_call_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let registry = start(dir.path(), &[("MCP_RESOURCES_DELAY_MS", "4000")], 1).await;
    let before = Instant::now();
    let err = registry
        .call("resources_list", Map::new(), None)
        .await
        .unwrap_err();
    assert!(
        before.elapsed() < Duration::from_secs(3),
        "took {:?}",
        before.elapsed()
    );
    assert!(
        matches!(&err, ToolCallError::Timeout { tool, secs: 1 } if tool == "resources_list"),
        "{err:?}"
    );
    assert!(err.to_string().contains("resources_list"), "{err}");
    registry.shutdown().await;
    assert!(processes_mentioning(&db_path(dir.path()).display().to_string()).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_policy_changes_destructive_hint() {
    let dir = tempfile::tempdir().unwrap();
    let approval = ApprovalConfig {
        unannotated_is_destructive: true,
        always: vec!["resources_list".into()],
        never: vec!["resources_remove".into()],
        ..ApprovalConfig::default()
    };
    let registry = ToolRegistry::start(
        &[resources(dir.path(), &[], 10)],
        options(dir.path(), approval),
    )
    .await
    .unwrap();
    let hint = |name: &str| registry.tool(name).unwrap().gated;
    assert!(hint("resources_list"));
    assert!(hint("resources_add"));
    assert!(!hint("resources_remove"));
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_leaves_no_child_process() {
    let dir = tempfile::tempdir().unwrap();
    let marker = db_path(dir.path()).display().to_string();
    let registry = start(dir.path(), &[], 10).await;
    assert_eq!(processes_mentioning(&marker).len(), 1);
    registry.shutdown().await;
    assert!(processes_mentioning(&marker).is_empty());
    let err = registry
        .call("resources_list", Map::new(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolCallError::ServerUnavailable { .. }),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn start_errors_name_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut twin = resources(dir.path(), &[], 10);
    twin.name = "twin".into();
    twin.args = vec![
        "--db".into(),
        dir.path().join("twin.db").display().to_string(),
    ];
    let both = [resources(dir.path(), &[], 10), twin];
    let err = ToolRegistry::start(&both, options(dir.path(), ApprovalConfig::default()))
        .await
        .err()
        .unwrap();
    assert!(
        err.contains("\"resources\"") && err.contains("\"twin\""),
        "{err}"
    );
    assert!(processes_mentioning(&dir.path().display().to_string()).is_empty());

    let broken = McpServerConfig {
        name: "broken".into(),
        command: Some("/nonexistent/mcp-server".into()),
        timeout_secs: 5,
        ..McpServerConfig::default()
    };
    let err = ToolRegistry::start(&[broken], options(dir.path(), ApprovalConfig::default()))
        .await
        .err()
        .unwrap();
    assert!(
        err.contains("broken") && err.contains("/nonexistent/mcp-server"),
        "{err}"
    );
}

/// A minimal streamable-HTTP MCP server: answers each JSON-RPC request with
/// the same id.
struct FakeMcp;

impl wiremock::Respond for FakeMcp {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let Some(id) = body.get("id").cloned() else {
            return wiremock::ResponseTemplate::new(202);
        };
        let result = match body["method"].as_str().unwrap_or_default() {
            "initialize" => json!({
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"}
            }),
            "tools/list" => json!({"tools": [{
                "name": "echo_auth",
                "description": "echo",
                "inputSchema": {"type": "object"},
                "annotations": {"destructiveHint": false}
            }]}),
            "tools/call" => {
                json!({"content": [{"type": "text", "text": "called"}], "isError": false})
            }
            _ => json!({}),
        };
        wiremock::ResponseTemplate::new(200)
            .insert_header("mcp-session-id", "session-1")
            .set_body_json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn http_server_gets_the_bearer_token() {
    use wiremock::matchers::{method, path};
    let fake = wiremock::MockServer::start().await;
    wiremock::Mock::given(method("POST"))
        .and(path("/mcp"))
        .respond_with(FakeMcp)
        .mount(&fake)
        .await;
    wiremock::Mock::given(method("GET"))
        .respond_with(wiremock::ResponseTemplate::new(405))
        .mount(&fake)
        .await;
    wiremock::Mock::given(method("DELETE"))
        .respond_with(wiremock::ResponseTemplate::new(200))
        .mount(&fake)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let config = McpServerConfig {
        name: "remote".into(),
        url: Some(format!("{}/mcp", fake.uri())),
        timeout_secs: 5,
        ..McpServerConfig::default()
    };
    let registry = ToolRegistry::start(&[config], options(dir.path(), ApprovalConfig::default()))
        .await
        .unwrap();
    assert_eq!(registry.tool("echo_auth").unwrap().server, "remote");
    let plain = registry.call("echo_auth", Map::new(), None).await.unwrap();
    assert_eq!(plain.content, "called");
    let token = BearerToken::new("secret-token");
    let out = registry
        .call("echo_auth", Map::new(), Some(&token))
        .await
        .unwrap();
    assert_eq!(out.content, "called");
    let calls: Vec<Option<String>> = fake
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| String::from_utf8_lossy(&r.body).contains("tools/call"))
        .map(|r| {
            r.headers
                .get("authorization")
                .map(|v| v.to_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(calls, vec![None, Some("Bearer secret-token".to_string())]);
    registry.shutdown().await;
}

/// `mcp-resources --config` serving HTTP on `port` (killed on drop).
struct LateServer(std::process::Child);

impl LateServer {
    fn start(dir: &Path, port: u16) -> LateServer {
        let config = dir.join("late.yaml");
        std::fs::write(
            &config,
            format!(
                "host: 127.0.0.1\nport: {port}\ndb_path: {}\n",
                dir.join("late.db").display()
            ),
        )
        .unwrap();
        let child = std::process::Command::new(mcp_resources())
            .arg("--config")
            .arg(&config)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        LateServer(child)
    }
}

impl Drop for LateServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A registry whose only server is HTTP on a port nothing listens on yet.
async fn registry_waiting_for(dir: &Path, port: u16, reserved: &[&str]) -> Arc<ToolRegistry> {
    let config = McpServerConfig {
        name: "late".into(),
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        timeout_secs: 5,
        ..McpServerConfig::default()
    };
    let mut options = options(dir, ApprovalConfig::default());
    options.reserved = reserved.iter().map(|r| r.to_string()).collect();
    let registry = ToolRegistry::start(&[config], options).await.unwrap();
    assert_eq!(registry.health()[0].label(), "unavailable");
    assert!(!registry.all_ready());
    assert!(registry.tools().is_empty());
    let error = registry.call("resources_list", Map::new(), None).await;
    assert!(
        matches!(&error, Err(ToolCallError::NotYetAvailable { servers, .. }) if servers == "\"late\""),
        "{error:?}"
    );
    registry
}

/// Waits until the server is no longer `unavailable`; its status then.
async fn settled_status(registry: &ToolRegistry) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = registry.health()[0].label().to_string();
        if status != "unavailable" || Instant::now() > deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_server_down_at_startup_is_retried_and_joins() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let registry = registry_waiting_for(dir.path(), port, &[]).await;
    let version = registry.version();
    let _server = LateServer::start(dir.path(), port);
    assert_eq!(settled_status(&registry).await, "ready");
    assert!(registry.all_ready());
    assert_ne!(registry.version(), version, "readers must see the change");
    assert_eq!(registry.health()[0].tools(), 3);
    let listed = call_json(&registry, "resources_list", json!({})).await;
    assert_eq!(listed["count"], 0, "{listed}");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_late_server_whose_tool_clashes_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let registry = registry_waiting_for(dir.path(), port, &["resources_add"]).await;
    let _server = LateServer::start(dir.path(), port);
    assert_eq!(settled_status(&registry).await, "refused");
    assert!(registry.tools().is_empty(), "all of its tools or none");
    let error = registry.call("resources_list", Map::new(), None).await;
    assert!(
        matches!(error, Err(ToolCallError::UnknownTool(_))),
        "{error:?}"
    );
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_ends_the_background_retries() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_waiting_for(dir.path(), free_port(), &[]).await;
    tokio::time::timeout(Duration::from_secs(5), registry.shutdown())
        .await
        .expect("shutdown waits for no retry");
    assert_eq!(Arc::strong_count(&registry), 1, "the retry task let go");
}
