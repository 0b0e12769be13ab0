//! "Asking" sub-agents built on the official A2A SDKs' *server* side, in
//! their native v1.0 mode, for the interop tests of our A2A client: an
//! agent that wants approval before a destructive action.
//!
//! - JavaScript: `tests/interop-js/asking_agent.mjs` on `@a2a-js/sdk`
//!   1.3.x (Express), run by `node` from `PATH` (`scripts/test.sh` installs
//!   the packages with `npm ci`);
//! - Python: `tests/interop/a2a_sdk_v1_asking_server.py` on `a2a-sdk` 1.3.0
//!   (Starlette, uvicorn), run by the venv `target/a2a-sdk-v1`.
//!
//! Both serve their card at `/.well-known/agent-card.json` (v1.0 form,
//! `supportedInterfaces` with protocolVersion `1.0`), JSON-RPC at
//! [`AskingAgent::jsonrpc_url`] and HTTP+JSON at [`AskingAgent::rest_url`],
//! and behave alike:
//! - a new message with text T: the task goes to
//!   `TASK_STATE_INPUT_REQUIRED`; its status message has the text part
//!   `Approve delete_file for T?` and the data part `{"approval_uuid":
//!   <fresh uuid>, "tool_name": "delete_file", "tool_args": {"path": T},
//!   "description": "delete T"}` (our approval keys,
//!   `asg_shared::a2a::approval_keys`);
//! - a continuation (a message with that `taskId`) with the data part
//!   `{"approved": true, "approval_uuid": U}`, U matching: completed, the
//!   artifact text `deleted T`, and one log line `executed delete_file T`
//!   ([`AskingAgent::executions`]); `approved: false`: completed with
//!   `kept T`, logged `rejected delete_file T`; a wrong or missing uuid:
//!   the task stays input-required (asked again, same uuid), nothing logged;
//! - every HTTP request logs `auth <Authorization header or ->`
//!   ([`AskingAgent::auth_headers`]);
//! - `GetTask` answers the task's current state.
//!
//! A test first asks whether the SDK is there ([`js_sdk_version`],
//! [`super::sdk_version`]) and hands the answer to [`sdk_present`], which
//! skips on a developer machine and fails in CI; then it starts the agent:
//!
//! ```no_run
//! # async fn demo() {
//! use asg_tests::a2a::{AskingAgent, Binding, js_sdk_version, sdk_present};
//! if !sdk_present("my_test", js_sdk_version()) {
//!     return;
//! }
//! let sub = AskingAgent::start_js(Binding::Both);
//! // ... an `a2a:` entry with url: sub.url, then approve on our agent ...
//! assert_eq!(sub.executions(), vec!["executed delete_file /tmp/a.txt"]);
//! # }
//! ```

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{capture_output, workspace_root};

/// The v1.0 binding(s) an asking agent serves (`--binding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// JSON-RPC only, at `/a2a/jsonrpc`.
    JsonRpc,
    /// HTTP+JSON (REST) only, under `/a2a/rest`.
    HttpJson,
    /// Both; the card lists JSON-RPC first.
    Both,
}

impl Binding {
    /// The `--binding` value of the scripts.
    pub fn arg(self) -> &'static str {
        match self {
            Binding::JsonRpc => "jsonrpc",
            Binding::HttpJson => "http_json",
            Binding::Both => "both",
        }
    }
}

/// A running SDK-built asking sub-agent on 127.0.0.1 (killed on drop).
pub struct AskingAgent {
    child: Child,
    /// `http://127.0.0.1:PORT`: its card is at
    /// `/.well-known/agent-card.json` (what an `a2a:` entry's url names).
    pub url: String,
    /// The log file: `auth ...`, `executed ...`, `rejected ...` lines.
    pub log: PathBuf,
    output: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

/// The installed `@a2a-js/sdk` version (from
/// `tests/interop-js/node_modules`), or why it cannot run: no `node` on
/// `PATH`, or `npm ci` not run there (`scripts/test.sh` does it).
pub fn js_sdk_version() -> Result<String, String> {
    let node = Command::new("node")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run node: {e}"))?;
    if !node.status.success() {
        return Err("node --version failed".into());
    }
    let manifest = js_dir().join("node_modules/@a2a-js/sdk/package.json");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| format!("{}: {e} (run scripts/test.sh)", manifest.display()))?;
    let package: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", manifest.display()))?;
    package["version"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{}: no version", manifest.display()))
}

/// Whether a test needing an SDK runs: `true` when `available` is `Ok`;
/// else `false` with a SKIPPED line naming `test` on a developer machine,
/// and a panic in CI (`CI` set), where every interop test must run.
pub fn sdk_present(test: &str, available: Result<String, String>) -> bool {
    match available {
        Ok(version) => {
            eprintln!("{test}: SDK {version}");
            true
        }
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED {test}: the SDK is not installed ({why}); run scripts/test.sh");
            false
        }
        Err(why) => panic!("CI must run {test}, but the SDK is missing: {why}"),
    }
}

/// `tests/interop-js`: the npm package with the JS SDK and its scripts.
pub fn js_dir() -> PathBuf {
    workspace_root().join("tests/interop-js")
}

impl AskingAgent {
    /// Starts the `@a2a-js/sdk` asking agent serving `binding`; waits
    /// (up to 30 s) for its `READY`. Panics when it does not start.
    pub fn start_js(binding: Binding) -> AskingAgent {
        let script = js_dir().join("asking_agent.mjs");
        AskingAgent::start(Command::new("node").arg(script), binding)
    }

    /// Starts the `a2a-sdk` (Python) asking agent serving `binding`;
    /// waits (up to 30 s) for its `READY`. Panics when it does not start.
    pub fn start_python(binding: Binding) -> AskingAgent {
        let script = workspace_root().join("tests/interop/a2a_sdk_v1_asking_server.py");
        let mut command = Command::new(super::client_sdk_python());
        command.arg(script);
        AskingAgent::start(&mut command, binding)
    }

    fn start(command: &mut Command, binding: Binding) -> AskingAgent {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("asking.log");
        let port = free_port();
        let mut child = command
            .args(["--port", &port.to_string(), "--log"])
            .arg(&log)
            .args(["--binding", binding.arg()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start the asking agent");
        let output = Arc::new(Mutex::new(String::new()));
        let ready = capture_output(&mut child, &output, |line| {
            (line.trim() == "READY").then_some(0)
        });
        let agent = AskingAgent {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            output,
            _dir: dir,
        };
        if ready.recv_timeout(Duration::from_secs(30)).is_err() {
            panic!(
                "the asking agent ({binding:?}) did not print READY:\n{}",
                agent.output()
            );
        }
        agent
    }

    /// Its JSON-RPC endpoint (served with [`Binding::JsonRpc`] or `Both`).
    pub fn jsonrpc_url(&self) -> String {
        format!("{}/a2a/jsonrpc", self.url)
    }

    /// Its HTTP+JSON base (served with [`Binding::HttpJson`] or `Both`):
    /// `POST {rest_url}/message:send`, `GET {rest_url}/tasks/{id}`, ...
    pub fn rest_url(&self) -> String {
        format!("{}/a2a/rest", self.url)
    }

    /// Every line of its log so far.
    pub fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The `executed delete_file T` lines: one per approved action run.
    pub fn executions(&self) -> Vec<String> {
        self.lines_starting("executed ")
    }

    /// The `rejected delete_file T` lines: one per rejected action.
    pub fn rejections(&self) -> Vec<String> {
        self.lines_starting("rejected ")
    }

    /// The Authorization header of every request, in order (`-`: none).
    pub fn auth_headers(&self) -> Vec<String> {
        self.log_lines()
            .iter()
            .filter_map(|line| line.strip_prefix("auth ").map(str::to_string))
            .collect()
    }

    /// What the process printed (stdout and stderr), for failure messages.
    pub fn output(&self) -> String {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }

    fn lines_starting(&self, prefix: &str) -> Vec<String> {
        self.log_lines()
            .into_iter()
            .filter(|line| line.starts_with(prefix))
            .collect()
    }
}

impl Drop for AskingAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port free right now (the scripts take a fixed `--port`).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("no free loopback port")
}
