//! The `agent` process under test: spawn it on a loopback port, time how
//! long it takes to answer `GET /health`, stop it with SIGTERM.
//!
//! The process is killed (SIGKILL) when an [`AgentProcess`] is dropped
//! without [`AgentProcess::stop`], so no error path leaves an orphan. Its
//! stdout and stderr are drained continuously (a full pipe would stall the
//! server) into a log file, keeping the last lines for error messages.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

/// Longest wait for a start: the first start on seeded JSON files builds
/// the store's catalog from every file (minutes with 1,000,000).
const START_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long the agent may take to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// Lines of output kept for error messages.
const TAIL_LINES: usize = 40;

/// How to start the agent.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    /// The `agent` binary.
    pub binary: PathBuf,
    /// Its `--config`.
    pub config: PathBuf,
    /// Its `--data-dir`.
    pub data_dir: PathBuf,
    /// Where its output goes (appended).
    pub log_file: PathBuf,
    /// `RUST_LOG` for the agent.
    pub rust_log: String,
    /// Extra environment (e.g. a sub-agent's URL, `DATABASE_URL`).
    pub env: Vec<(String, String)>,
}

/// A running agent.
pub struct AgentProcess {
    child: Option<Child>,
    /// Process id.
    pub pid: u32,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// From spawn to the "listening on" line.
    pub listening_after: Duration,
    /// From spawn to the first successful `GET /health`.
    pub startup: Duration,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl AgentProcess {
    /// Spawns the agent and waits until `GET /health` answers 200.
    pub async fn start(spec: &AgentSpec, http: &reqwest::Client) -> Result<AgentProcess> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&spec.log_file)
            .with_context(|| format!("cannot open {}", spec.log_file.display()))?;
        let log = Arc::new(Mutex::new(BufWriter::new(log)));
        let spawned_at = Instant::now();
        let mut child = Command::new(&spec.binary)
            .arg("--config")
            .arg(&spec.config)
            .args(["--host", "127.0.0.1", "--port", "0", "--data-dir"])
            .arg(&spec.data_dir)
            .env("RUST_LOG", &spec.rust_log)
            .env_remove("GEMINI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            // The JSON files unless the spec names a database.
            .env_remove("DATABASE_URL")
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", spec.binary.display()))?;
        let pid = child.id();
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
        let (port_tx, mut port_rx) = tokio::sync::mpsc::unbounded_channel::<u16>();
        let streams: [Option<Box<dyn std::io::Read + Send>>; 2] = [
            child.stdout.take().map(|s| Box::new(s) as _),
            child.stderr.take().map(|s| Box::new(s) as _),
        ];
        for stream in streams.into_iter().flatten() {
            let (log, tail, port_tx) = (log.clone(), tail.clone(), port_tx.clone());
            std::thread::spawn(move || drain(stream, &log, &tail, &port_tx));
        }
        drop(port_tx);
        let mut agent = AgentProcess {
            child: Some(child),
            pid,
            url: String::new(),
            listening_after: Duration::ZERO,
            startup: Duration::ZERO,
            tail,
        };

        agent.wait_listening(&mut port_rx, spawned_at).await?;
        agent.wait_healthy(http, spawned_at).await?;
        Ok(agent)
    }

    /// Waits for the "listening on" line; sets `url` and `listening_after`.
    async fn wait_listening(
        &mut self,
        port_rx: &mut tokio::sync::mpsc::UnboundedReceiver<u16>,
        spawned_at: Instant,
    ) -> Result<()> {
        let port = match tokio::time::timeout(START_TIMEOUT, port_rx.recv()).await {
            Ok(Some(port)) => port,
            Ok(None) => bail!(
                "the agent exited before listening ({}); its output:\n{}",
                self.exit_description(),
                self.tail()
            ),
            Err(_) => bail!(
                "the agent did not print its address within {START_TIMEOUT:?}; its output:\n{}",
                self.tail()
            ),
        };
        self.listening_after = spawned_at.elapsed();
        self.url = format!("http://127.0.0.1:{port}");
        Ok(())
    }

    /// Waits for the first 200 from `GET /health`; sets `startup`.
    async fn wait_healthy(&mut self, http: &reqwest::Client, spawned_at: Instant) -> Result<()> {
        let health = format!("{}/health", self.url);
        loop {
            if let Ok(response) = http.get(&health).send().await
                && response.status().is_success()
            {
                self.startup = spawned_at.elapsed();
                return Ok(());
            }
            if spawned_at.elapsed() > START_TIMEOUT {
                bail!(
                    "the agent never answered GET /health; its output:\n{}",
                    self.tail()
                );
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                bail!(
                    "the agent exited ({status}) before answering /health; its output:\n{}",
                    self.tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The last lines the agent printed.
    pub fn tail(&self) -> String {
        let lines = self.tail.lock().map(|t| t.clone()).unwrap_or_default();
        Vec::from(lines).join("\n")
    }

    fn exit_description(&mut self) -> String {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(Some(status))) => status.to_string(),
            _ => "still running".into(),
        }
    }

    /// Resident memory of the agent, in bytes (Linux only).
    pub fn rss_bytes(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Sends SIGTERM and waits for the exit; kills it if it does not stop.
    /// Returns the exit status and how long the shutdown took.
    pub async fn stop(mut self) -> Result<(ExitStatus, Duration)> {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| anyhow!("the agent was already stopped"))?;
        let asked_at = Instant::now();
        let signal = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        if !signal.as_ref().is_ok_and(ExitStatus::success) {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "cannot send SIGTERM to the agent (pid {}): {signal:?}",
                self.pid
            );
        }
        while asked_at.elapsed() < STOP_TIMEOUT {
            match child.try_wait() {
                Ok(Some(status)) => return Ok((status, asked_at.elapsed())),
                Ok(None) => tokio::time::sleep(Duration::from_millis(5)).await,
                Err(error) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    bail!("cannot wait for the agent: {error}");
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        bail!(
            "the agent did not exit within {STOP_TIMEOUT:?} of SIGTERM; killed. Its output:\n{}",
            self.tail()
        )
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Copies one output stream to the log, keeps its tail and reports the
/// port from the "listening on http://127.0.0.1:PORT" line.
fn drain(
    stream: Box<dyn std::io::Read + Send>,
    log: &Mutex<BufWriter<File>>,
    tail: &Mutex<VecDeque<String>>,
    port_tx: &tokio::sync::mpsc::UnboundedSender<u16>,
) {
    for line in BufReader::new(stream).lines().map_while(Result::ok) {
        if let Some(port) = asg_tests::listening_port(&line) {
            let _ = port_tx.send(port);
        }
        if let Ok(mut log) = log.lock() {
            let _ = writeln!(log, "{line}");
        }
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
    if let Ok(mut log) = log.lock() {
        let _ = log.flush();
    }
}
