//! A tool server binary (`mcp-resources --config`, `mcp-filesystem`)
//! running over streamable HTTP for a test: started on a port, its output
//! captured, stopped with SIGTERM or killed on drop.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{binary, capture_output, listening_port};

/// A running `NAME --config FILE --port PORT`.
pub struct ToolServer {
    name: &'static str,
    child: Child,
    /// `http://127.0.0.1:PORT` (append `/mcp` or `/health`).
    pub url: String,
    log: Arc<Mutex<String>>,
}

impl ToolServer {
    /// Starts binary `name` with `--config config --port port` (0: any
    /// free port) and waits for its "listening on" line.
    pub fn start(name: &'static str, config: &Path, port: u16) -> ToolServer {
        ToolServer::start_with_env(name, config, port, &[])
    }

    /// [`ToolServer::start`] with extra environment variables.
    pub fn start_with_env(
        name: &'static str,
        config: &Path,
        port: u16,
        env: &[(&str, &str)],
    ) -> ToolServer {
        let mut child = Command::new(binary(name))
            .arg("--config")
            .arg(config)
            .args(["--port", &port.to_string()])
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let log = Arc::new(Mutex::new(String::new()));
        let port = capture_output(&mut child, &log, listening_port)
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{name} did not start: {}", log.lock().unwrap()));
        ToolServer {
            name,
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    /// Everything it printed so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// SIGTERM, then the exit status (panics if it is still running
    /// after 10 s).
    pub fn terminate(&mut self) -> ExitStatus {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = self.child.kill();
        panic!("{} ignored SIGTERM: {}", self.name, self.log());
    }
}

impl Drop for ToolServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
