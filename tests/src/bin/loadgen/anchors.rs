//! The anchors measured in the same run, on the same machine, as the
//! agent's figures they stand beside:
//!
//! - the axum hello-world (`hello`, built from this crate) under exactly
//!   the `GET /conversations/{id}` load (clients, warm-up, budget);
//! - the official a2a-sdk 0.3 echo server (`tests/interop/echo_server.py`
//!   in the venv `target/a2a-sdk-v03` that `scripts/bench.sh` and the
//!   interop tests make) under the A2A `message/send` load (same requests,
//!   clients and budget).
//!
//! An anchor that cannot run (no binary, no venv) is reported as skipped,
//! not as a failure of the benchmark.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};

use crate::phase::{Phase, median_by_rate, phase_json};
use crate::requests::{a2a_echo, get_ok};
use crate::server::ServerProcess;
use crate::{Settings, load, turn_warmup};

/// Longest wait for an anchor to answer (Python imports are slow on a
/// busy machine).
const READY_WITHIN: Duration = Duration::from_secs(60);

/// An anchor's figures, or why there are none.
#[derive(Debug, Clone)]
pub enum Anchor {
    /// Measured; `label` says what it is (e.g. `a2a-sdk 0.3.26 echo server`).
    Measured { label: String, phase: Box<Phase> },
    /// The "skipped: ..." text.
    Skipped(String),
}

impl Anchor {
    pub fn to_json(&self) -> Value {
        match self {
            Anchor::Measured { label, phase } => json!({
                "label": label,
                "phase": phase_json(phase),
            }),
            Anchor::Skipped(why) => json!({ "skipped": why }),
        }
    }

    /// The median of an anchor measured in several rounds, its label
    /// saying so; skipped if any round was (that round's reason).
    pub fn median(rounds: Vec<Anchor>) -> Anchor {
        let count = rounds.len();
        let mut label = String::new();
        let mut phases = Vec::new();
        for round in rounds {
            match round {
                Anchor::Measured { label: l, phase } => {
                    label = l;
                    phases.push(*phase);
                }
                skipped @ Anchor::Skipped(_) => return skipped,
            }
        }
        if count > 1 {
            label = format!("{label} (median of {count} rounds)");
        }
        Anchor::Measured {
            label,
            phase: Box::new(median_by_rate(phases)),
        }
    }
}

/// The axum hello-world under the `GET /conversations/{id}` load.
pub async fn hello(s: &Settings, http: &reqwest::Client, log: &Path) -> Anchor {
    if !s.hello.is_file() {
        return Anchor::Skipped(format!(
            "skipped: no {} (cargo build --profile dist -p asg-tests --bin hello)",
            s.hello.display()
        ));
    }
    eprintln!("loadgen: anchor, axum hello-world GET /");
    let measured = async {
        let server = ServerProcess::start(&s.hello, &[], log, "/", READY_WITHIN, http).await?;
        let url = Arc::new(format!("{}/", server.url));
        let hello = {
            let http = http.clone();
            move |_client: usize, _iteration: usize| {
                let (http, url) = (http.clone(), url.clone());
                async move { get_ok(&http, &url, b"Hello, World!").await }
            }
        };
        load::run(s.clients, s.get_warmup, hello.clone()).await?;
        let run = load::run(s.clients, s.get_budget, hello);
        let name = "3a. axum hello-world GET / (anchor)".to_string();
        Phase::measure(name, "req", None, run).await
    };
    outcome("axum hello-world".into(), measured.await)
}

/// The a2a-sdk echo server under the A2A `message/send` load.
pub async fn a2a_sdk(s: &Settings, http: &reqwest::Client, log: &Path) -> Anchor {
    if !s.a2a_python.is_file() {
        return Anchor::Skipped(format!(
            "skipped: no a2a-sdk venv ({} is missing; scripts/bench.sh makes it with pip, \
             which needs PyPI)",
            s.a2a_python.display()
        ));
    }
    eprintln!("loadgen: anchor, a2a-sdk echo server message/send");
    let label = format!("a2a-sdk {} echo server", sdk_version(&s.a2a_python));
    let measured = async {
        let script = s.echo_server.as_path();
        let server = ServerProcess::start(
            &s.a2a_python,
            &[script],
            log,
            "/.well-known/agent-card.json",
            READY_WITHIN,
            http,
        )
        .await?;
        let url = Arc::new(format!("{}/", server.url));
        let echo = {
            let http = http.clone();
            move |_client: usize, _iteration: usize| {
                let (http, url) = (http.clone(), url.clone());
                async move { a2a_echo(&http, &url).await }
            }
        };
        load::run(s.clients, turn_warmup(s), echo.clone()).await?;
        let run = load::run(s.clients, s.a2a_budget, echo);
        let name = "5a. a2a-sdk echo server message/send (anchor)".to_string();
        Phase::measure(name, "req", None, run).await
    };
    outcome(label, measured.await)
}

/// A measured anchor, or "skipped: <error>" when it could not run.
fn outcome(label: String, measured: Result<Phase>) -> Anchor {
    match measured {
        Ok(phase) => Anchor::Measured {
            label,
            phase: Box::new(phase),
        },
        Err(error) => Anchor::Skipped(format!("skipped: {label} failed: {error:#}")),
    }
}

/// The a2a-sdk version in the venv of `python`, `?` when unknown.
fn sdk_version(python: &Path) -> String {
    let probe = "import importlib.metadata as m; print(m.version('a2a-sdk'))";
    std::process::Command::new(python)
        .args(["-c", probe])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phase::tests::per_second;

    fn measured(ok: usize) -> Anchor {
        Anchor::Measured {
            label: "axum hello-world".into(),
            phase: Box::new(per_second(&format!("{ok}/s"), ok)),
        }
    }

    #[test]
    fn an_anchor_in_rounds_is_its_median_round_and_says_so() {
        let Anchor::Measured { label, phase } =
            Anchor::median(vec![measured(70), measured(130), measured(100)])
        else {
            panic!("measured rounds give a measured anchor");
        };
        assert_eq!(label, "axum hello-world (median of 3 rounds)");
        assert_eq!(phase.name, "100/s");
        let Anchor::Measured { label, .. } = Anchor::median(vec![measured(70)]) else {
            panic!("one round is that round");
        };
        assert_eq!(label, "axum hello-world");
        let skipped = Anchor::median(vec![measured(70), Anchor::Skipped("skipped: no".into())]);
        assert!(matches!(skipped, Anchor::Skipped(why) if why == "skipped: no"));
    }
}
