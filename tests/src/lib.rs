//! Helpers for the black-box scenario tests: build and start the real
//! binaries, capture their logs, and speak HTTP to them.
//!
//! The binaries are built once per test run with `cargo build --bins`
//! (fast when up to date), so `cargo test` alone always tests fresh code.

pub mod fake_http;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

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

/// Path of a freshly built debug binary of the server crate.
pub fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "asg-server", "--bins"])
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

/// Options for [`Agent::start`].
#[derive(Debug, Default, Clone)]
pub struct AgentOptions {
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Data directory to reuse (e.g. across a restart); a fresh one if None.
    pub data_dir: Option<PathBuf>,
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
    /// Starts `agent --config <config>` and waits until it serves `/health`.
    pub async fn start(config: &Path, options: AgentOptions) -> Agent {
        let (tmp, data_dir) = match options.data_dir {
            Some(dir) => (None, dir),
            None => {
                let tmp = tempfile::tempdir().expect("temp dir");
                let dir = tmp.path().to_path_buf();
                (Some(tmp), dir)
            }
        };
        let mut command = Command::new(binary("agent"));
        command
            .arg("--config")
            .arg(config)
            .args(["--host", "127.0.0.1", "--port", "0", "--data-dir"])
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
        let mut child = command.spawn().expect("cannot start the agent binary");
        let log = Arc::new(Mutex::new(String::new()));
        let (port_tx, port_rx) = std::sync::mpsc::channel::<u16>();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let log = log.clone();
            let port_tx = port_tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if let Some(port) = line
                        .split("listening on http://127.0.0.1:")
                        .nth(1)
                        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                        .and_then(|p| p.parse().ok())
                    {
                        let _ = port_tx.send(port);
                    }
                    if let Ok(mut log) = log.lock() {
                        log.push_str(&line);
                        log.push('\n');
                    }
                }
            });
        }
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

/// Names of resources in the resources database of a data dir, via the
/// agent's own list tool output in a conversation answer.
pub fn tool_messages(conversation: &Value) -> Vec<Value> {
    conversation["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").cloned().collect())
        .unwrap_or_default()
}
