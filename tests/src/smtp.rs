//! A real SMTP server for the email approval tests: `tests/smtp/sink.py`
//! (aiosmtpd) on a loopback port, writing each message it accepts to a
//! directory as JSON (subject, addresses, decoded parts), read back here.
//!
//! aiosmtpd comes from the venv `scripts/smtp-venv.sh` makes under
//! `target/smtp-venv` (called by `scripts/test.sh`); [`sink_python`]
//! says why it is missing when it is.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::{capture_output, poll, workspace_root};

/// The venv's Python, when aiosmtpd is installed there; else why not.
pub fn sink_python() -> Result<PathBuf, String> {
    let python = workspace_root().join("target/smtp-venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import aiosmtpd"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    match ok {
        true => Ok(python),
        false => Err(format!(
            "aiosmtpd is not installed in {}; run scripts/smtp-venv.sh",
            python.display()
        )),
    }
}

/// One received mail.
#[derive(Debug, Clone)]
pub struct Mail {
    /// The whole record (`mail_from`, `rcpt_tos`, `subject`, `from`,
    /// `to`, `content_type`, `parts`).
    pub record: Value,
}

impl Mail {
    /// The decoded body of the first part of `content_type`.
    pub fn part(&self, content_type: &str) -> Option<String> {
        self.record["parts"]
            .as_array()?
            .iter()
            .find(|p| p["content_type"] == content_type)
            .and_then(|p| p["body"].as_str())
            .map(str::to_string)
    }

    /// The envelope recipients.
    pub fn recipients(&self) -> Vec<String> {
        self.record["rcpt_tos"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The subject.
    pub fn subject(&self) -> String {
        self.record["subject"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// A running sink; stopped on drop.
pub struct SmtpSink {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: tempfile::TempDir,
    log: Arc<Mutex<String>>,
}

impl SmtpSink {
    /// Starts the sink on `port` (e.g. [`crate::oidc::free_port`], to
    /// know it before the server runs) and waits until it accepts.
    pub async fn start_on(python: &std::path::Path, port: u16) -> SmtpSink {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(python)
            .arg(workspace_root().join("tests/smtp/sink.py"))
            .arg(port.to_string())
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tests/smtp/sink.py");
        let log = Arc::new(Mutex::new(String::new()));
        let _ports = capture_output(&mut child, &log, |_| None);
        let sink = SmtpSink {
            child,
            port,
            dir,
            log,
        };
        poll(
            "the SMTP sink to be ready",
            Duration::from_secs(15),
            || async { sink.log.lock().ok()?.contains("ready").then_some(()) },
        )
        .await;
        sink
    }

    /// The mails received so far, in order.
    pub fn mails(&self) -> Vec<Mail> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        names.retain(|p| p.extension().is_some_and(|e| e == "json"));
        names.sort();
        names
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .filter_map(|text| serde_json::from_str(&text).ok())
            .map(|record| Mail { record })
            .collect()
    }

    /// Waits until `n` mails arrived (at most `limit`).
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Mail> {
        poll(&format!("{n} mail(s)"), limit, || async {
            let mails = self.mails();
            (mails.len() >= n).then_some(mails)
        })
        .await
    }

    /// What the sink printed.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
