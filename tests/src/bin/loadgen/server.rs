//! An anchor server (the axum hello-world, the a2a-sdk echo server): a
//! child process on a free loopback port, its output in a log file, ready
//! once a URL answers 2xx, killed when dropped.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A running anchor server.
pub struct ServerProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    log: PathBuf,
}

impl ServerProcess {
    /// Runs `program args... PORT` (a free port), its output appended to
    /// `log`, and waits up to `within` for `GET <url><ready_path>` to
    /// answer 2xx.
    pub async fn start(
        program: &Path,
        args: &[&Path],
        log: &Path,
        ready_path: &str,
        within: Duration,
        http: &reqwest::Client,
    ) -> Result<ServerProcess> {
        let port = free_port()?;
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("cannot open {}", log.display()))?;
        let child = Command::new(program)
            .args(args)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("cannot start {}", program.display()))?;
        let mut server = ServerProcess {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log: log.to_path_buf(),
        };
        server.wait_ready(http, ready_path, within).await?;
        Ok(server)
    }

    /// Polls `GET <url><path>` until it answers 2xx, the process exits or
    /// `within` has passed.
    async fn wait_ready(
        &mut self,
        http: &reqwest::Client,
        path: &str,
        within: Duration,
    ) -> Result<()> {
        let started = Instant::now();
        let url = format!("{}{path}", self.url);
        loop {
            if let Ok(response) = http.get(&url).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                bail!("it exited ({status}) before answering: {}", self.tail());
            }
            if started.elapsed() > within {
                bail!(
                    "GET {url} did not answer within {within:?}: {}",
                    self.tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The last lines of its output.
    pub fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n");
        if tail.is_empty() {
            "(no output)".into()
        } else {
            format!("its output:\n{tail}")
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port that was free a moment ago.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(listener.local_addr()?.port())
}
