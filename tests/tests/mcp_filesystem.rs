//! `mcp-filesystem` (issue 11): the real server over streamable HTTP with a
//! real agent on the offline model. Reading runs at once; a write waits
//! for approval and runs exactly once; a rejected write never touches the
//! disk; every way out of the root is refused (through the agent and by
//! direct MCP calls); `GET /tools` shows read-only tools ungated and
//! mutating ones gated; `/health` answers; SIGTERM stops it; a bad
//! configuration stops it at startup with a clear message; `--stdio`
//! speaks MCP on stdin/stdout, and an agent can spawn it that way.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use asg_tests::tool_server::ToolServer;
use asg_tests::{Agent, AgentOptions, approval_uuid, binary, response_text, testdata};
use serde_json::{Value, json};

const SECRET: &str = "TOP SECRET outside the root";

/// A temp dir with `workspace/` (the root, every tool), `docs/` (a
/// read-only root) and `outside/secret.txt`.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["workspace/notes", "docs", "outside"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("outside/secret.txt"), SECRET).unwrap();
        std::fs::write(
            dir.path().join("workspace/notes/hello.txt"),
            "Hello, files!\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("docs/guide.md"), "# Guide\n").unwrap();
        Tree { dir }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// `mcp-filesystem.yaml` for this tree.
    fn config(&self) -> PathBuf {
        let path = self.path("mcp-filesystem.yaml");
        std::fs::write(
            &path,
            format!(
                "host: 127.0.0.1\nport: 8091\nmax_full_read_size: 4096\nroots:\n  \
                 - {{name: workspace, path: {ws}, allowed_tools: [\"*\"]}}\n  \
                 - {{name: docs, path: {docs}, allowed_tools: [list_roots, read_file, grep]}}\n",
                ws = self.path("workspace").display(),
                docs = self.path("docs").display()
            ),
        )
        .unwrap();
        path
    }

    /// What `outside/` holds (name, content), to check nothing changed.
    fn outside(&self) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = std::fs::read_dir(self.path("outside"))
            .unwrap()
            .flatten()
            .map(|e| {
                let content = std::fs::read_to_string(e.path()).unwrap_or_default();
                (e.file_name().to_string_lossy().into_owned(), content)
            })
            .collect();
        found.sort();
        found
    }
}

/// A running `mcp-filesystem --config ... --port 0`.
fn start_server(config: &Path) -> ToolServer {
    ToolServer::start("mcp-filesystem", config, 0)
}

/// A bare MCP client over streamable HTTP (JSON-RPC POSTs, answers as
/// JSON or server-sent events), enough to call tools directly.
struct McpHttp {
    http: reqwest::Client,
    url: String,
    session: String,
    next_id: u64,
}

const PROTOCOL: &str = "2025-06-18";

impl McpHttp {
    async fn connect(base: &str) -> McpHttp {
        let http = reqwest::Client::new();
        let url = format!("{base}/mcp");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "mcp-filesystem-test", "version": "0"}}});
        let response = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_string();
        let answer = rpc_answer(&response.text().await.unwrap(), 0);
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "mcp-filesystem",
            "{answer}"
        );
        let client = McpHttp {
            http,
            url,
            session,
            next_id: 1,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let status = client.post(&initialized).await.status();
        assert!(status.is_success(), "{status}");
        client
    }

    async fn post(&self, body: &Value) -> reqwest::Response {
        self.http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", PROTOCOL)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// `tools/call`: (is_error, text).
    async fn call(&mut self, tool: &str, arguments: Value) -> (bool, String) {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                             "params": {"name": tool, "arguments": arguments}});
        let text = self.post(&request).await.text().await.unwrap();
        let result = &rpc_answer(&text, id)["result"];
        let content = result["content"][0]["text"].as_str().unwrap_or_default();
        (result["isError"] == true, content.to_string())
    }
}

/// The JSON-RPC answer with `id` in a JSON or SSE body.
fn rpc_answer(body: &str, id: u64) -> Value {
    let candidates = std::iter::once(body).chain(
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim),
    );
    candidates
        .filter_map(|text| serde_json::from_str::<Value>(text).ok())
        .find(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("no answer with id {id} in {body}"))
}

/// An agent config (in `dir`) whose only MCP server is `url`.
fn agent_config(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("agent.yaml");
    std::fs::write(
        &path,
        format!(
            "name: file-manager\nprompt: You manage files.\nhost: 127.0.0.1\n\
             llm:\n  model: scripted:{}\nmcp_servers:\n  - name: filesystem\n    url: {url}/mcp\n",
            testdata("scripted/filesystem.yaml").display()
        ),
    )
    .unwrap();
    path
}

#[tokio::test]
async fn an_agent_reads_and_writes_files_through_mcp_filesystem_with_approval() {
    let tree = Tree::new();
    let mut server = start_server(&tree.config());
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
    let tools = tools["tools"].as_array().unwrap();
    let gated = |name: &str| {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(tool["server"], "filesystem");
        tool["destructiveHint"].as_bool().unwrap()
    };
    for name in [
        "list_roots",
        "list_folder",
        "read_file",
        "stat_file",
        "hash_file",
        "permissions_file",
        "grep",
        "glob",
    ] {
        assert!(!gated(name), "{name} should run without approval");
    }
    for name in [
        "write_file",
        "remove_file",
        "patch_file",
        "create_folder",
        "remove_folder",
        "copy",
        "move",
    ] {
        assert!(gated(name), "{name} should need approval");
    }

    let (status, read) = agent.say_new("read file notes/hello.txt").await;
    assert_eq!(status, 201, "{read}");
    assert_eq!(read["result"]["waiting_approval"], false);
    assert!(response_text(&read).contains("Hello, files!"), "{read}");

    let target = tree.path("workspace/notes/new.txt");
    let (_, asked) = agent
        .say_new("write file notes/new.txt with content Written by the agent")
        .await;
    assert_eq!(asked["result"]["waiting_approval"], true, "{asked}");
    assert_eq!(asked["result"]["approval"]["tool_name"], "write_file");
    assert!(!target.exists(), "written before the approval");
    let uuid = approval_uuid(&asked);
    let (status, approved) = agent.decide(&uuid, json!({"action": "approve"})).await;
    assert_eq!(status, 200, "{approved}");
    assert!(
        response_text(&approved).starts_with("Wrote the file"),
        "{approved}"
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "Written by the agent"
    );
    let (status, again) = agent.decide(&uuid, json!({"action": "approve"})).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "Written by the agent"
    );

    let (_, asked) = agent
        .say_new("write file notes/rejected.txt with content nope")
        .await;
    let uuid = approval_uuid(&asked);
    let (status, rejected) = agent.decide(&uuid, json!({"action": "reject"})).await;
    assert_eq!(status, 200, "{rejected}");
    assert!(
        response_text(&rejected).starts_with("Cancelled"),
        "{rejected}"
    );
    assert!(!tree.path("workspace/notes/rejected.txt").exists());

    drop(agent);
    assert!(server.terminate().success());
}

#[tokio::test]
async fn every_way_out_of_the_root_is_refused() {
    let tree = Tree::new();
    let before = tree.outside();
    let server = start_server(&tree.config());
    // Planted after startup: links leading out of the root.
    std::os::unix::fs::symlink(tree.path("outside"), tree.path("workspace/outlink")).unwrap();
    std::os::unix::fs::symlink(
        tree.path("outside/secret.txt"),
        tree.path("workspace/secret-link"),
    )
    .unwrap();
    std::os::unix::fs::symlink("/etc", tree.path("workspace/etc")).unwrap();
    std::os::unix::fs::symlink(
        tree.path("outside/planted.txt"),
        tree.path("workspace/dangling"),
    )
    .unwrap();

    // Through the agent: reads run at once and fail; a write fails after
    // its approval.
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::start(
        &agent_config(dir.path(), &server.url),
        AgentOptions::default(),
    )
    .await;
    let reads = [
        (
            "read file ../outside/secret.txt",
            "`..` components are not allowed",
        ),
        ("read file outlink/secret.txt", "leads outside the root"),
        ("read file etc/passwd", "leads outside the root"),
        ("hash file secret-link", "leads outside the root"),
    ];
    for (message, needle) in reads {
        let (_, answer) = agent.say_new(message).await;
        let text = response_text(&answer);
        assert!(
            text.starts_with("The tool") && text.contains(needle),
            "{message}: {text}"
        );
        assert!(!text.contains(SECRET), "{message}: {text}");
    }
    let (_, asked) = agent
        .say_new("write file outlink/pwned.txt with content pwned")
        .await;
    let (_, done) = agent
        .decide(&approval_uuid(&asked), json!({"action": "approve"}))
        .await;
    assert!(
        response_text(&done).contains("leads outside the root"),
        "{done}"
    );

    // Direct MCP calls.
    let mut mcp = McpHttp::connect(&server.url).await;
    let attempts = [
        (
            "read_file",
            json!({"root": "workspace", "path": tree.path("outside/secret.txt")}),
            "absolute paths are not allowed",
        ),
        (
            "write_file",
            json!({"root": "workspace", "path": "dangling", "content": "x"}),
            "leads outside the root",
        ),
        (
            "write_file",
            json!({"root": "workspace", "path": "secret-link", "content": "x"}),
            "leads outside the root",
        ),
        (
            "patch_file",
            json!({"root": "workspace", "path": "secret-link", "patch": "--- a\n+++ b\n@@ -1 +1 @@\n-TOP SECRET outside the root\n+changed\n"}),
            "leads outside the root",
        ),
        (
            "create_folder",
            json!({"root": "workspace", "path": "outlink/made"}),
            "leads outside the root",
        ),
        (
            "copy",
            json!({"source_root": "workspace", "source_path": "secret-link", "dest_root": "workspace", "dest_path": "stolen.txt"}),
            "leads outside the root",
        ),
        (
            "copy",
            json!({"source_root": "workspace", "source_path": "notes/hello.txt", "dest_root": "workspace", "dest_path": "outlink/hello.txt"}),
            "leads outside the root",
        ),
        (
            "move",
            json!({"source_root": "workspace", "source_path": "outlink/secret.txt", "dest_root": "workspace", "dest_path": "moved.txt"}),
            "leads outside the root",
        ),
        (
            "move",
            json!({"source_root": "workspace", "source_path": "notes/hello.txt", "dest_root": "workspace", "dest_path": "../outside/hello.txt"}),
            "`..` components are not allowed",
        ),
        (
            "remove_folder",
            json!({"root": "workspace", "path": "."}),
            "the root itself cannot be removed",
        ),
        (
            "remove_folder",
            json!({"root": "workspace", "path": ""}),
            "the root itself cannot be removed",
        ),
        (
            "remove_folder",
            json!({"root": "workspace", "path": "outlink"}),
            "is a symlink",
        ),
        (
            "remove_file",
            json!({"root": "workspace", "path": "outlink/secret.txt"}),
            "leads outside the root",
        ),
        (
            "list_folder",
            json!({"root": "workspace", "path": "outlink"}),
            "leads outside the root",
        ),
        (
            "grep",
            json!({"root": "workspace", "pattern": "x", "path": "outlink"}),
            "leads outside the root",
        ),
        (
            "write_file",
            json!({"root": "docs", "path": "new.md", "content": "x"}),
            "not allowed in root \"docs\"",
        ),
        (
            "copy",
            json!({"source_root": "workspace", "source_path": "notes/hello.txt", "dest_root": "docs", "dest_path": "hello.txt"}),
            "not allowed in root \"docs\"",
        ),
    ];
    for (tool, args, needle) in attempts {
        let (is_error, text) = mcp.call(tool, args.clone()).await;
        assert!(is_error, "{tool} {args} should fail: {text}");
        assert!(text.contains(needle), "{tool} {args}: {text}");
    }
    // Searches see the links but never what is behind them.
    let (is_error, text) = mcp
        .call(
            "grep",
            json!({"root": "workspace", "pattern": "TOP SECRET"}),
        )
        .await;
    assert!(!is_error, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["count"],
        0,
        "{text}"
    );
    let (_, text) = mcp
        .call(
            "glob",
            json!({"root": "workspace", "pattern": "**/secret*"}),
        )
        .await;
    let found: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        found["matches"],
        json!([{"path": "secret-link", "type": "symlink"}]),
        "{text}"
    );

    assert_eq!(tree.outside(), before, "something changed outside the root");
    assert!(tree.path("workspace/notes/hello.txt").exists());
}

fn refused_config(yaml: &str) -> String {
    let tree = Tree::new();
    let config = tree.path("mcp-filesystem.yaml");
    let yaml = yaml.replace("{ws}", &tree.path("workspace").display().to_string());
    std::fs::write(&config, yaml).unwrap();
    let output = Command::new(binary("mcp-filesystem"))
        .arg("--config")
        .arg(&config)
        .args(["--port", "0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(stderr.contains("mcp-filesystem.yaml"), "{stderr}");
    stderr
}

#[test]
fn a_bad_configuration_stops_mcp_filesystem_at_startup() {
    let root = "roots:\n  - {name: workspace, path: {ws}, allowed_tools: [\"*\"]}\n";
    let cases = [
        (format!("{root}prot: 1\n"), "prot"),
        ("host: 127.0.0.1\n".to_string(), "no roots are configured"),
        ("roots: []\n".to_string(), "no roots are configured"),
        (
            "roots:\n  - {name: w, path: {ws}/missing, allowed_tools: [\"*\"]}\n".to_string(),
            "the directory does not exist",
        ),
        (
            "roots:\n  - {name: w, path: {ws}/notes/hello.txt, allowed_tools: [\"*\"]}\n"
                .to_string(),
            "not a directory",
        ),
        (
            "roots:\n  - {name: w, path: {ws}, allowed_tools: [read_file, delete_everything]}\n"
                .to_string(),
            "unknown tool \"delete_everything\"",
        ),
        (
            format!("{root}  - {{name: workspace, path: /tmp, allowed_tools: [grep]}}\n"),
            "used twice",
        ),
    ];
    for (yaml, needle) in cases {
        let stderr = refused_config(&yaml);
        assert!(stderr.contains(needle), "{yaml}: {stderr}");
    }
}

#[test]
fn stdio_mode_speaks_mcp_on_stdin_and_stdout() {
    let tree = Tree::new();
    let mut child = Command::new(binary("mcp-filesystem"))
        .arg("--config")
        .arg(tree.config())
        .arg("--stdio")
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "stdio-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"root": "workspace", "path": "notes/hello.txt"}}}),
    ];
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let line = lines.next().expect("stdout closed").unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        answers.push(answer);
    }
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "mcp-filesystem");
    let text = answers[1]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Hello, files!"), "{text}");
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "mcp-filesystem --stdio did not stop when stdin closed"
        );
        std::thread::sleep(Duration::from_millis(25));
    };
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn an_agent_spawns_mcp_filesystem_over_stdio() {
    let tree = Tree::new();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.yaml");
    std::fs::write(
        &config,
        format!(
            "name: file-manager\nprompt: You manage files.\nhost: 127.0.0.1\n\
             llm:\n  model: scripted:{}\nmcp_servers:\n  - name: filesystem\n    \
             command: {}\n    args: [--config, {}, --stdio]\n",
            testdata("scripted/filesystem.yaml").display(),
            binary("mcp-filesystem").display(),
            tree.config().display()
        ),
    )
    .unwrap();
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let (status, read) = agent.say_new("read file notes/hello.txt").await;
    assert_eq!(status, 201, "{read}");
    assert!(response_text(&read).contains("Hello, files!"), "{read}");
    let (_, asked) = agent
        .say_new("write file notes/stdio.txt with content over stdio")
        .await;
    let (status, done) = agent
        .decide(&approval_uuid(&asked), json!({"action": "approve"}))
        .await;
    assert_eq!(status, 200, "{done}");
    let written = std::fs::read_to_string(tree.path("workspace/notes/stdio.txt")).unwrap();
    assert_eq!(written, "over stdio");
}
