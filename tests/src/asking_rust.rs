//! The official Rust A2A SDK (a2a-rs, protocol v1.0 only) as an interop
//! peer: where its binaries are, and [`RustAskingAgent`], an "asking"
//! sub-agent built on its server side for our client's tests.
//!
//! The binaries come from `tests/interop-rust`, a Cargo project of its own
//! outside the workspace; `scripts/test.sh` builds them into
//! `target/interop-rust/debug/` (`a2a-rust-client`, `a2a-rust-asker`).
//! Tests look for them there (under the workspace root, whatever
//! `CARGO_TARGET_DIR` says) and, like the Python SDK tests, skip without
//! them on a developer machine and fail in CI ([`sdk_binary`]).
//!
//! ```ignore
//! let asker = RustAskingAgent::start(AskerBinding::Both).await;
//! // asker.url: its card is at {url}/.well-known/agent-card.json
//! // ... delegate to it, approve on our agent ...
//! assert_eq!(asker.executions(), ["executed delete_file notes.txt"]);
//! assert!(asker.auth_values().iter().all(|a| a == "Bearer ..."));
//! ```
//!
//! The asker's contract (shared with the Python and JS askers): a new
//! message with text T leaves the task `TASK_STATE_INPUT_REQUIRED` with the
//! text part `Approve delete_file for T?` and the data part
//! `{"approval_uuid", "tool_name": "delete_file", "tool_args": {"path": T},
//! "description": "delete T"}`; a continuation with `{"approved": true,
//! "approval_uuid": U}` (U matching) completes it with the artifact
//! `deleted T` and logs `executed delete_file T`; `approved: false`
//! completes with `kept T` and logs `rejected delete_file T`; a wrong or
//! missing uuid keeps it waiting; `CancelTask` cancels a waiting task
//! (nothing logged). Every request logs `auth <Authorization or ->`.
//! JSON-RPC is at `{url}/jsonrpc` (it refuses a request without
//! `A2A-Version: 1.0`), HTTP+JSON under `{url}/rest`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{capture_output, workspace_root};

/// Path of one of the SDK peer's binaries (`a2a-rust-client`,
/// `a2a-rust-asker`) under `target/interop-rust/debug/`.
pub fn sdk_binary_path(name: &str) -> PathBuf {
    workspace_root()
        .join("target/interop-rust/debug")
        .join(name)
}

/// The binary when built; `None` means skip (a developer machine without
/// it, with a message on stderr). In CI (`CI` set) a missing binary
/// panics: the test must run there.
pub fn sdk_binary(name: &str) -> Option<PathBuf> {
    let path = sdk_binary_path(name);
    if path.is_file() {
        return Some(path);
    }
    let why = format!(
        "{} is not built (scripts/test.sh builds tests/interop-rust)",
        path.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("CI must run the Rust A2A SDK interop tests, but {why}");
    }
    eprintln!("SKIPPED: the Rust A2A SDK peer: {why}");
    None
}

/// Which bindings the asker serves (its card lists one interface each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskerBinding {
    /// JSON-RPC only, at `{url}/jsonrpc`.
    JsonRpc,
    /// HTTP+JSON only, under `{url}/rest`.
    HttpJson,
    /// Both.
    Both,
}

impl AskerBinding {
    /// The `--binding` argument.
    pub fn arg(self) -> &'static str {
        match self {
            AskerBinding::JsonRpc => "jsonrpc",
            AskerBinding::HttpJson => "http_json",
            AskerBinding::Both => "both",
        }
    }
}

/// A running `a2a-rust-asker` on a free loopback port; killed on drop.
pub struct RustAskingAgent {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT` (no trailing slash); the card is at
    /// `{url}/.well-known/agent-card.json`.
    pub url: String,
    /// The file it appends its `auth` and `executed`/`rejected` lines to.
    pub log_path: PathBuf,
    output: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl RustAskingAgent {
    /// Starts the asker serving `binding` and waits for its `READY`.
    /// Panics when the binary is missing: check [`sdk_binary`] first
    /// (`try_start` does both).
    pub async fn start(binding: AskerBinding) -> RustAskingAgent {
        let binary = sdk_binary_path("a2a-rust-asker");
        assert!(binary.is_file(), "{} is not built", binary.display());
        let dir = tempfile::tempdir().expect("temp dir");
        let log_path = dir.path().join("asker.log");
        let port = crate::oidc::free_port();
        let mut child = Command::new(&binary)
            .args(["--port", &port.to_string(), "--binding", binding.arg()])
            .arg("--log")
            .arg(&log_path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start a2a-rust-asker");
        let output = Arc::new(Mutex::new(String::new()));
        let ready = capture_output(&mut child, &output, |line| (line == "READY").then_some(0));
        let started =
            tokio::task::spawn_blocking(move || ready.recv_timeout(Duration::from_secs(30)))
                .await
                .map(|r| r.is_ok())
                .unwrap_or(false);
        let asker = RustAskingAgent {
            child: Some(child),
            url: format!("http://127.0.0.1:{port}"),
            log_path,
            output,
            _dir: dir,
        };
        assert!(started, "a2a-rust-asker did not start:\n{}", asker.output());
        asker
    }

    /// [`RustAskingAgent::start`] when the binary is built; `None` to skip
    /// (see [`sdk_binary`]: in CI a missing binary panics).
    pub async fn try_start(binding: AskerBinding) -> Option<RustAskingAgent> {
        sdk_binary("a2a-rust-asker")?;
        Some(RustAskingAgent::start(binding).await)
    }

    /// Every line of its log so far.
    pub fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log_path)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Its decisions so far, in order: `executed delete_file T` and
    /// `rejected delete_file T` lines.
    pub fn executions(&self) -> Vec<String> {
        self.log_lines()
            .into_iter()
            .filter(|l| l.starts_with("executed ") || l.starts_with("rejected "))
            .collect()
    }

    /// The `Authorization` value of every request so far (`-` for none).
    pub fn auth_values(&self) -> Vec<String> {
        self.log_lines()
            .iter()
            .filter_map(|l| l.strip_prefix("auth "))
            .map(str::to_string)
            .collect()
    }

    /// What the process printed (stdout and stderr).
    pub fn output(&self) -> String {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }
}

impl Drop for RustAskingAgent {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
