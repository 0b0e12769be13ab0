//! Helpers for the black-box scenario tests: build and start the real
//! binaries, capture their logs, and speak HTTP to them.
//!
//! The binaries are built once per test run with `cargo build --bins`
//! (fast when up to date), so `cargo test` alone always tests fresh code.

pub mod a2a;
pub mod asking_rust;
pub mod fake_gemini;
pub mod fake_http;
pub mod oidc;
pub mod otlp;
pub mod pg;
pub mod recording_proxy;
pub mod slack;
pub mod smtp;
pub mod sse;
pub mod tool_server;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The port in a binary's "listening on http://127.0.0.1:PORT" line.
pub fn listening_port(line: &str) -> Option<u16> {
    line.split("listening on http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
}

/// Reads a child's stdout and stderr line by line into `log` (so the
/// pipes never fill up), and sends the port that `port_of` finds in a
/// line (e.g. the binaries' "listening on http://127.0.0.1:PORT").
pub fn capture_output(
    child: &mut Child,
    log: &Arc<Mutex<String>>,
    port_of: fn(&str) -> Option<u16>,
) -> std::sync::mpsc::Receiver<u16> {
    let (port_tx, port_rx) = std::sync::mpsc::channel::<u16>();
    let streams = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ];
    for stream in streams.into_iter().flatten() {
        let (log, port_tx) = (log.clone(), port_tx.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let Some(port) = port_of(&line) {
                    let _ = port_tx.send(port);
                }
                if let Ok(mut log) = log.lock() {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
    }
    port_rx
}

/// Resident memory of a process (Linux, `VmRSS` of `/proc/<pid>/status`),
/// in bytes.
pub fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS in /proc/<pid>/status");
    let kib: u64 = line["VmRSS:".len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// [`rss`] once it stopped moving (two readings 200 ms apart within 64
/// KiB), at most 5 s.
pub fn settled_rss(pid: u32) -> u64 {
    let mut last = rss(pid);
    for _ in 0..25 {
        std::thread::sleep(Duration::from_millis(200));
        let now = rss(pid);
        if now.abs_diff(last) <= 64 << 10 {
            return now;
        }
        last = now;
    }
    last
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// A file under `testdata/`.
pub fn testdata(name: &str) -> PathBuf {
    workspace_root().join("testdata").join(name)
}

/// The packages of the binaries the scenarios run: the agent (`agent`),
/// the tool servers (`mcp-resources`, `mcp-filesystem`), the web server
/// (`web`) and the terminal client (`asg`).
pub const BINARY_PACKAGES: [&str; 5] = [
    "asg-server",
    "asg-mcp-resources",
    "asg-mcp-filesystem",
    "asg-web-server",
    "asg-cli",
];

/// Path of a freshly built debug binary (`agent`, `mcp-resources`,
/// `mcp-filesystem`, `web`, `asg`); the first call builds them all.
pub fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut args = vec!["build", "--quiet", "--bins"];
        for package in BINARY_PACKAGES {
            args.extend(["-p", package]);
        }
        let status = Command::new(cargo)
            .args(args)
            .current_dir(workspace_root())
            .status()
            .expect("cannot run cargo build for the server binaries");
        assert!(status.success(), "building the server binaries failed");
        let target = std::env::var("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| workspace_root().join("target"));
        target.join("debug")
    });
    dir.join(name)
}

/// A copy of `testdata/<base>` with `extra` YAML appended, in a temp dir
/// (kept alive by the returned guard); scripted-model paths still point
/// at `testdata/scripted/`.
pub fn config_with(base: &str, extra: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = std::fs::read_to_string(testdata(base)).expect("read the base config");
    let text = text.replace(
        "scripted:scripted/",
        &format!("scripted:{}/", testdata("scripted").display()),
    );
    let path = dir.path().join("agent.yaml");
    std::fs::write(&path, format!("{text}\n{extra}\n")).expect("write the config");
    (dir, path)
}

/// Options for [`Agent::start`].
#[derive(Debug, Default, Clone)]
pub struct AgentOptions {
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Data directory to reuse (e.g. across a restart); a fresh one if None.
    pub data_dir: Option<PathBuf>,
    /// Working directory of the process (relative paths in the config,
    /// such as `./bin/mcp-resources`, resolve against it); the test's own
    /// if None.
    pub cwd: Option<PathBuf>,
    /// How many files the process may have open (`ulimit -n`, soft and
    /// hard); the test's own limit if None.
    pub max_open_files: Option<u32>,
    /// The soft limit of open files alone (`ulimit -S -n`), the hard one
    /// left as it is; the test's own if None.
    pub soft_open_files: Option<u32>,
}

impl AgentOptions {
    /// Options with these extra environment variables.
    pub fn with_env(pairs: &[(&str, &str)]) -> AgentOptions {
        AgentOptions {
            env: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }
    }
}

/// A running `agent` process on a free loopback port.
pub struct Agent {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its data directory.
    pub data_dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    log: Arc<Mutex<String>>,
    /// The HTTP client.
    pub http: reqwest::Client,
}

impl Agent {
    /// Starts `agent --config <config>` on a free port and waits until it
    /// serves `/health`.
    pub async fn start(config: &Path, options: AgentOptions) -> Agent {
        Agent::start_on_port(config, options, 0).await
    }

    /// Like [`Agent::start`] on a given port (0: any free port).
    pub async fn start_on_port(config: &Path, options: AgentOptions, port: u16) -> Agent {
        let (tmp, data_dir) = match options.data_dir {
            Some(dir) => (None, dir),
            None => {
                let tmp = tempfile::tempdir().expect("temp dir");
                let dir = tmp.path().to_path_buf();
                (Some(tmp), dir)
            }
        };
        let limits: Vec<String> = [
            options.max_open_files.map(|n| format!("ulimit -n {n}")),
            options.soft_open_files.map(|n| format!("ulimit -S -n {n}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut command = if limits.is_empty() {
            Command::new(binary("agent"))
        } else {
            let mut shell = Command::new("sh");
            shell
                .arg("-c")
                .arg(format!("{} && exec \"$0\" \"$@\"", limits.join(" && ")))
                .arg(binary("agent"));
            shell
        };
        command
            .arg("--config")
            .arg(config)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--data-dir",
            ])
            .arg(&data_dir)
            .env("RUST_LOG", "info")
            .env_remove("GEMINI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &options.env {
            command.env(key, value);
        }
        if let Some(cwd) = &options.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().expect("cannot start the agent binary");
        let log = Arc::new(Mutex::new(String::new()));
        let port_rx = capture_output(&mut child, &log, listening_port);
        let port = match port_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(port) => port,
            Err(_) => {
                let _ = child.kill();
                std::thread::sleep(Duration::from_millis(200));
                panic!(
                    "the agent did not start; its output:\n{}",
                    log.lock().map(|l| l.clone()).unwrap_or_default()
                );
            }
        };
        let agent = Agent {
            child: Some(child),
            url: format!("http://127.0.0.1:{port}"),
            data_dir,
            _tmp: tmp,
            log,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("http client"),
        };
        agent.wait_healthy().await;
        agent
    }

    async fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(r) = self.http.get(format!("{}/health", self.url)).send().await
                && r.status().is_success()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("agent never became healthy; log:\n{}", self.log());
    }

    /// Everything the process printed so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// Graceful stop (SIGTERM), waiting for the exit.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = child.kill();
        child.wait().ok()
    }

    /// Hard stop (SIGKILL), as in a crash.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Creates `count` conversations, 16 at once, the `n`th with
    /// `message(n)` as its first message (each must answer 201); their ids.
    pub async fn create_conversations(
        &self,
        count: usize,
        message: fn(usize) -> String,
    ) -> Vec<String> {
        const AT_ONCE: usize = 16;
        let creators: Vec<_> = (0..AT_ONCE)
            .map(|first| {
                let (http, url) = (self.http.clone(), self.url.clone());
                tokio::spawn(async move {
                    let mut ids = Vec::new();
                    for n in (first..count).step_by(AT_ONCE) {
                        let response = http
                            .post(format!("{url}/conversations"))
                            .json(&serde_json::json!({ "message": message(n) }))
                            .send()
                            .await
                            .unwrap();
                        assert_eq!(response.status(), 201, "conversation {n}");
                        let answer: Value = response.json().await.unwrap();
                        ids.push(conversation_id(&answer));
                    }
                    ids
                })
            })
            .collect();
        let mut ids = Vec::new();
        for creator in creators {
            ids.extend(creator.await.unwrap());
        }
        assert_eq!(ids.len(), count);
        ids
    }

    /// GET, returning status and JSON (or the text as a JSON string).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .expect("GET failed");
        read(response).await
    }

    /// GET with extra headers (e.g. `authorization`).
    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
        let mut request = self.http.get(format!("{}{path}", self.url));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        read(request.send().await.expect("GET failed")).await
    }

    /// POST a JSON value.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.post_with(path, body.to_string(), &[]).await
    }

    /// POST a raw body with extra headers.
    pub async fn post_with(
        &self,
        path: &str,
        body: String,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut request = self
            .http
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        read(request.send().await.expect("POST failed")).await
    }

    /// Creates a conversation with a first message; returns the answer.
    pub async fn say_new(&self, message: &str) -> (u16, Value) {
        self.post("/conversations", serde_json::json!({ "message": message }))
            .await
    }

    /// Sends a message to a conversation.
    pub async fn say(&self, conversation: &str, message: &str) -> (u16, Value) {
        self.post(
            &format!("/conversations/{conversation}/messages"),
            serde_json::json!({ "message": message }),
        )
        .await
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn read(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

/// The conversation id in a create/send answer.
pub fn conversation_id(answer: &Value) -> String {
    answer["conversation"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no conversation id in {answer}"))
        .to_string()
}

/// The approval uuid in a turn answer.
pub fn approval_uuid(answer: &Value) -> String {
    answer["result"]["approval"]["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("no pending approval in {answer}"))
        .to_string()
}

/// `body` read as the wire type `T` (panics naming `what` when it is not
/// one), for assertions on typed fields.
pub fn typed<T: serde::de::DeserializeOwned>(what: &str, body: &Value) -> T {
    serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("{what}: not the expected body ({e}): {body}"))
}

/// Polls `check` every 50 ms until it yields a value; panics with `what`
/// after `limit`.
pub async fn poll<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The tool messages (results) of a conversation, in order.
pub fn tool_messages(conversation: &Value) -> Vec<Value> {
    conversation["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").cloned().collect())
        .unwrap_or_default()
}

impl Agent {
    /// `GET /conversations/{id}`: the conversation (panics unless 200 and
    /// a [`ConversationResponse`](asg_shared::rest::ConversationResponse)).
    pub async fn conversation(&self, id: &str) -> Value {
        let (status, body) = self.get(&format!("/conversations/{id}")).await;
        assert_eq!(status, 200, "GET /conversations/{id}: {body}");
        let _: asg_shared::rest::ConversationResponse =
            typed(&format!("GET /conversations/{id}"), &body);
        body["conversation"].clone()
    }

    /// The resources in the database, read through the agent itself: a new
    /// conversation saying "list resources", whose list-tool output is
    /// parsed. (It adds one conversation.)
    pub async fn list_resources(&self) -> Vec<Value> {
        self.list_resources_with(&[]).await
    }

    /// [`Agent::list_resources`] with extra headers (the credentials of an
    /// agent with `auth:`, e.g. `("x-api-key", KEY)`).
    pub async fn list_resources_with(&self, headers: &[(&str, &str)]) -> Vec<Value> {
        let body = serde_json::json!({ "message": "list resources" }).to_string();
        let (status, answer) = self.post_with("/conversations", body, headers).await;
        assert_eq!(status, 201, "list resources: {answer}");
        let tools = tool_messages(&answer["conversation"]);
        let last = tools
            .last()
            .unwrap_or_else(|| panic!("no tool result in {answer}"));
        assert_eq!(last["tool_result"]["name"], "resources_list", "{answer}");
        let listed: Value = serde_json::from_str(last["content"].as_str().unwrap_or(""))
            .unwrap_or_else(|e| panic!("list output is not JSON ({e}): {last}"));
        let resources = listed["resources"].as_array().cloned().unwrap_or_default();
        assert_eq!(listed["count"], resources.len(), "{listed}");
        resources
    }

    /// Names of the resources in the database (see [`Agent::list_resources`]).
    pub async fn resource_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .list_resources()
            .await
            .iter()
            .filter_map(|r| r["name"].as_str().map(str::to_string))
            .collect();
        names.sort();
        names
    }

    /// Approves or rejects with a body; returns status and answer.
    pub async fn decide(&self, uuid: &str, body: Value) -> (u16, Value) {
        self.post(&format!("/approvals/{uuid}"), body).await
    }

    /// The audit trail's lines (`<data dir>/audit.jsonl`), parsed; none
    /// before the first entry.
    pub fn audit_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(self.data_dir.join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// The `GET /metrics` text (an agent without `auth:`), checked to be
    /// OpenMetrics.
    pub async fn metrics(&self) -> String {
        let response = self
            .http
            .get(format!("{}/metrics", self.url))
            .send()
            .await
            .expect("GET /metrics");
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            content_type.starts_with("application/openmetrics-text"),
            "{content_type}"
        );
        response.text().await.expect("metrics text")
    }

    /// `asg_approvals_decided_total{outcome, channel}` now.
    pub async fn decisions_counted(&self, outcome: &str, channel: &str) -> Option<f64> {
        let series =
            format!(r#"asg_approvals_decided_total{{outcome="{outcome}",channel="{channel}"}}"#);
        sample(&self.metrics().await, &series)
    }

    /// Waits until the log contains `needle` (up to 5 s); returns the log.
    pub async fn wait_log(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            if Instant::now() > deadline {
                panic!("{needle:?} never appeared in the log:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// `(node, role, content)` of every message of a conversation, in order.
pub fn trace(conversation: &Value) -> Vec<(String, String, String)> {
    conversation["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages in {conversation}"))
        .iter()
        .map(|m| {
            (
                m["node"].as_str().unwrap_or("").to_string(),
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The agent-tree nodes in the order they first appear in the trace.
pub fn node_order(conversation: &Value) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for (node, _, _) in trace(conversation) {
        if !node.is_empty() && !order.contains(&node) {
            order.push(node);
        }
    }
    order
}

/// The `destructiveHint` of tool `name` in a `GET /tools` body.
pub fn destructive_hint(tools: &Value, name: &str) -> Value {
    tools["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools array in {tools}"))
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} missing from {tools}"))["destructiveHint"]
        .clone()
}

/// The answer text of a turn answer (`result.response`).
pub fn response_text(answer: &Value) -> String {
    answer["result"]["response"]
        .as_str()
        .unwrap_or_else(|| panic!("no result.response in {answer}"))
        .to_string()
}

/// Tool calls requested in a conversation, in order.
pub fn tool_calls(conversation: &Value) -> Vec<Value> {
    conversation["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "assistant" && !m["tool_call"].is_null())
                .map(|m| m["tool_call"].clone())
                .collect()
        })
        .unwrap_or_default()
}

/// Checks an error answer: the status and a JSON `{"error": {"code",
/// "message"}}` body with a non-empty message; returns the code.
pub fn assert_error(got: &(u16, Value), status: u16) -> String {
    let (code, body) = got;
    assert_eq!(*code, status, "expected HTTP {status}, got {code}: {body}");
    let message = body["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error.message in {body}"));
    assert!(!message.trim().is_empty(), "empty error message: {body}");
    body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error.code in {body}"))
        .to_string()
}

/// Waits (up to 10 s) until the JSON store in `data_dir` has written every
/// save so far to its conversation file: its journal (`data_dir/journal/`)
/// is empty. Saves are durable in the journal when they return and reach
/// the files at the store's next checkpoint, about a second later; tests
/// that read or count the files call this first.
pub fn json_files_settled(data_dir: &Path) {
    let journal = data_dir.join("journal");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pending: u64 = std::fs::read_dir(&journal)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        if pending == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the JSON store's journal in {} still holds {pending} bytes",
            journal.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every regular file under `dir`, recursively, with its bytes, sorted by
/// path.
pub fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => {
                    if let Ok(bytes) = std::fs::read(&path) {
                        files.push((path, bytes));
                    }
                }
                _ => {}
            }
        }
    }
    files.sort();
    files
}

/// Pids of live `mcp-resources` processes started for `data_dir` (their
/// environment has `ASG_DATA_DIR=<data_dir>`), found through /proc.
pub fn mcp_children_for(data_dir: &Path) -> Vec<u32> {
    children_named(data_dir, "mcp-resources")
}

/// The running processes whose command line names `program` and whose
/// environment has `ASG_DATA_DIR=data_dir` (an agent's stdio tool servers).
pub fn children_named(data_dir: &Path, program: &str) -> Vec<u32> {
    let wanted = format!("ASG_DATA_DIR={}", data_dir.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(program) {
            continue;
        }
        // A zombie keeps its cmdline for a while but no longer runs.
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        if stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        {
            continue;
        }
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        if environ
            .split(|b| *b == 0)
            .any(|var| var == wanted.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}

/// The value of the sample `series` (`name{labels}`, labels as written,
/// in order) in a metrics text.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.split(' ').next()?.parse().ok())
}

/// A running `web` process (the chat server) on a free port.
pub struct WebServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl WebServer {
    /// Starts `web` proxying to `agent_url`, serving `dist_dir`.
    pub fn start(agent_url: &str, dist_dir: &Path) -> WebServer {
        let config = workspace_root().join("config/web.yaml");
        WebServer::start_with(&config, "127.0.0.1", agent_url, dist_dir)
    }

    /// Starts `web --config config` listening on `host` (`0.0.0.0`: every
    /// address; the URL stays on 127.0.0.1).
    pub fn start_with(config: &Path, host: &str, agent_url: &str, dist_dir: &Path) -> WebServer {
        let mut child = Command::new(binary("web"))
            .arg("--config")
            .arg(config)
            .args([
                "--port",
                "0",
                "--host",
                host,
                "--agent-url",
                agent_url,
                "--dist-dir",
            ])
            .arg(dist_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start the web binary");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let port = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(port) = listening_port(&line) {
                        break port;
                    }
                }
                _ => {
                    let _ = child.kill();
                    panic!("the web binary did not start");
                }
            }
        };
        std::thread::spawn(move || for _ in lines.by_ref() {});
        WebServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A conversation whose approved call was running when the process died.
pub fn executing_conversation(id: uuid::Uuid, approval: uuid::Uuid) -> Value {
    let at = "2026-01-02T03:04:05Z";
    let args = serde_json::json!({"name": "crashed-1", "value": 5});
    serde_json::json!({
        "id": id,
        "session_id": "0badc0de",
        "status": "waiting_approval",
        "messages": [
            {"id": uuid::Uuid::new_v4(), "role": "system",
             "content": "You are a resource manager.", "created_at": at},
            {"id": uuid::Uuid::new_v4(), "role": "user",
             "content": "add resource crashed-1 with value 5", "created_at": at},
            {"id": uuid::Uuid::new_v4(), "role": "assistant", "content": "",
             "tool_call": {"id": "call_1", "name": "resources_add", "arguments": args,
                           "needs_approval": true, "approval_uuid": approval},
             "created_at": at},
        ],
        "pending_approval": {
            "uuid": approval, "conversation_id": id, "tool_name": "resources_add",
            "tool_args": args, "description": "resources_add with arguments {\"name\":\"crashed-1\",\"value\":5}", "created_at": at,
            "call_id": "call_1", "state": "executing",
        },
        "created_at": at,
        "updated_at": at,
    })
}
