//! The benchmark report: an aligned text table (also valid Markdown) and
//! the same numbers as JSON for `--json <file>`.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::headline::Headline;
use crate::load::percentile;
use crate::phase::{Phase, aligned_table, line, load_text, ms, phase_json};

/// One start of the agent on the seeded data directory.
#[derive(Debug, Clone)]
pub struct StartupRun {
    /// Spawn to the "listening on" line.
    pub listening: Duration,
    /// Spawn to the first 200 from `GET /health`.
    pub healthy: Duration,
    /// Resident memory right after startup.
    pub rss: Option<u64>,
    /// SIGTERM to exit, when this run was stopped before the load phases.
    pub stop: Option<Duration>,
}

/// Everything the benchmark measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// Agent binary.
    pub agent: PathBuf,
    /// Its config.
    pub config: PathBuf,
    /// `RUST_LOG` given to the agent.
    pub rust_log: String,
    /// CPUs of this machine.
    pub cpus: usize,
    /// Stored conversations.
    pub conversations: usize,
    /// Of which waiting for an approval.
    pub pending: usize,
    /// Bytes of conversation files.
    pub seed_bytes: u64,
    /// Time to write them.
    pub seed_time: Duration,
    /// Startup target.
    pub startup_target: Duration,
    /// Each start.
    pub startup: Vec<StartupRun>,
    /// One first page, after startup: `GET /conversations` (with its
    /// counts) and `GET /approvals`.
    pub first_pages: (Duration, Duration),
    /// Load phases, in order.
    pub phases: Vec<Phase>,
    /// Agent memory after the load phases.
    pub rss_after_load: Option<u64>,
    /// One-minute load average of the machine before and after the run.
    pub load_average: (Option<f64>, Option<f64>),
    /// Final SIGTERM: exit status and time to exit.
    pub shutdown: Option<(String, Duration)>,
    /// Ours beside the anchors, the bundle and the overload phases.
    pub headline: Headline,
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "?".into(),
        |b| format!("{:.1} MiB", b as f64 / 1048576.0),
    )
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

/// Columns of the phase table.
const HEADER: [&str; 12] = [
    "Phase", "Clients", "OK", "Errors", "Wall s", "Rate/s", "p50 ms", "p90 ms", "p99 ms", "max ms",
    "Target", "Result",
];

/// A phase's row in the table.
fn phase_row(phase: &Phase) -> Vec<String> {
    let r = &phase.result;
    let (target, result) = match phase.p99_target {
        Some(t) => (
            format!("p99 < {:.0} ms", ms(t)),
            verdict(r.errors == 0 && r.percentile(99.0) < t).to_string(),
        ),
        None => (
            "-".into(),
            if r.errors == 0 { "ok" } else { "ERRORS" }.into(),
        ),
    };
    vec![
        phase.name.clone(),
        r.clients.to_string(),
        r.ok().to_string(),
        r.errors.to_string(),
        format!("{:.2}", r.elapsed.as_secs_f64()),
        format!("{:.0} {}/s", r.rate(), phase.unit),
        format!("{:.2}", ms(r.percentile(50.0))),
        format!("{:.2}", ms(r.percentile(90.0))),
        format!("{:.2}", ms(r.percentile(99.0))),
        format!("{:.2}", ms(r.max())),
        target,
        result,
    ]
}

impl Report {
    fn startup_sorted(&self) -> Vec<Duration> {
        let mut times: Vec<Duration> = self.startup.iter().map(|r| r.healthy).collect();
        times.sort_unstable();
        times
    }

    /// Fastest and median startup.
    pub fn startup_min_median(&self) -> (Duration, Duration) {
        let times = self.startup_sorted();
        (
            times.first().copied().unwrap_or_default(),
            percentile(&times, 50.0),
        )
    }

    /// Failed requests over all phases.
    pub fn total_errors(&self) -> usize {
        self.phases.iter().map(|p| p.result.errors).sum()
    }

    /// The human-readable report.
    pub fn table(&self) -> String {
        let mut out = String::new();
        self.run_lines(&mut out);
        line(&mut out, String::new());
        self.startup_lines(&mut out);
        line(&mut out, String::new());
        self.phase_table(&mut out);
        self.phase_notes(&mut out);
        line(&mut out, String::new());
        self.shutdown_lines(&mut out);
        out
    }

    /// The title, and what ran where on which data.
    fn run_lines(&self, out: &mut String) {
        line(out, "== Agent Stop and Go benchmark ==".into());
        line(
            out,
            format!(
                "agent:  {} (config {}, RUST_LOG={})",
                self.agent.display(),
                self.config.display(),
                self.rust_log
            ),
        );
        line(
            out,
            format!(
                "host:   {} CPUs, shared by the agent and the load generator; loopback only; \
                 load average {} before, {} after",
                self.cpus,
                load_text(self.load_average.0),
                load_text(self.load_average.1),
            ),
        );
        line(
            out,
            format!(
                "data:   {} stored conversations ({} waiting approval), {:.1} MiB, written in {:.2} s",
                self.conversations,
                self.pending,
                self.seed_bytes as f64 / 1048576.0,
                self.seed_time.as_secs_f64()
            ),
        );
    }

    /// Phase 1: each start, then min and median against the target.
    fn startup_lines(&self, out: &mut String) {
        line(
            out,
            format!(
                "1. Startup with {} stored conversations (spawn -> first 200 from GET /health):",
                self.conversations
            ),
        );
        for (i, run) in self.startup.iter().enumerate() {
            let stop = run
                .stop
                .map(|d| format!(", SIGTERM exit {:.0} ms", ms(d)))
                .unwrap_or_default();
            line(
                out,
                format!(
                    "   run {}: {:7.1} ms  (listening after {:.1} ms, RSS {}{stop})",
                    i + 1,
                    ms(run.healthy),
                    ms(run.listening),
                    mib(run.rss)
                ),
            );
        }
        line(
            out,
            "   (on the JSON files, run 1 builds the store's catalog from the seeded files, \
             as the first start after an upgrade does; later runs open it)"
                .into(),
        );
        line(
            out,
            format!(
                "   first page after startup: GET /conversations (50, with the counts) {:.1} ms, \
                 GET /approvals (50) {:.1} ms",
                ms(self.first_pages.0),
                ms(self.first_pages.1)
            ),
        );
        let (min, median) = self.startup_min_median();
        line(
            out,
            format!(
                "   min {:.1} ms, median {:.1} ms; target median < {:.0} ms: {}",
                ms(min),
                ms(median),
                ms(self.startup_target),
                verdict(median < self.startup_target)
            ),
        );
    }

    /// The load phases as an aligned Markdown table.
    fn phase_table(&self, out: &mut String) {
        let mut rows: Vec<Vec<String>> = vec![HEADER.iter().map(|s| s.to_string()).collect()];
        rows.extend(self.phases.iter().map(phase_row));
        aligned_table(out, &rows, &|c| c == 0 || c >= 10);
    }

    /// Phases cut short by their time limit, and each phase's first error.
    fn phase_notes(&self, out: &mut String) {
        phase_notes(out, &self.phases);
    }

    /// Memory after the load and the final SIGTERM.
    fn shutdown_lines(&self, out: &mut String) {
        line(
            out,
            format!(
                "agent RSS after the load phases: {}",
                mib(self.rss_after_load)
            ),
        );
        if let Some((status, took)) = &self.shutdown {
            line(
                out,
                format!(
                    "SIGTERM at the end: exited ({status}) after {:.0} ms",
                    ms(*took)
                ),
            );
        }
    }

    /// The same numbers as JSON (milliseconds as floats).
    pub fn to_json(&self) -> Value {
        let (min, median) = self.startup_min_median();
        json!({
            "agent": self.agent.display().to_string(),
            "config": self.config.display().to_string(),
            "rust_log": self.rust_log,
            "cpus": self.cpus,
            "load_average_before": self.load_average.0,
            "load_average_after": self.load_average.1,
            "conversations": self.conversations,
            "pending_approvals": self.pending,
            "seed_bytes": self.seed_bytes,
            "seed_ms": ms(self.seed_time),
            "startup": {
                "runs": self.startup.iter().map(|r| json!({
                    "healthy_ms": ms(r.healthy),
                    "listening_ms": ms(r.listening),
                    "rss_bytes": r.rss,
                    "sigterm_exit_ms": r.stop.map(ms),
                })).collect::<Vec<_>>(),
                "min_ms": ms(min),
                "median_ms": ms(median),
                "target_ms": ms(self.startup_target),
                "pass": median < self.startup_target,
            },
            "first_page_ms": {
                "conversations": ms(self.first_pages.0),
                "approvals": ms(self.first_pages.1),
            },
            "phases": self.phases.iter().map(phase_json).collect::<Vec<_>>(),
            "rss_after_load_bytes": self.rss_after_load,
            "shutdown": self.shutdown.as_ref().map(|(status, took)| json!({
                "status": status,
                "ms": ms(*took),
            })),
            "headline": self.headline.to_json(),
        })
    }
}

/// Phases cut short by their time limit, and each phase's first error.
pub fn phase_notes(out: &mut String, phases: &[Phase]) {
    for phase in phases {
        let r = &phase.result;
        if r.hit_time_limit() {
            line(
                out,
                format!(
                    "note: {} stopped on its {:.0} s time limit before {} requests",
                    phase.name,
                    r.budget.duration.as_secs_f64(),
                    r.budget.requests
                ),
            );
        }
        if let Some(error) = &r.first_error {
            line(out, format!("first error in {}: {error}", phase.name));
        }
    }
}
