//! A measured load phase and the table primitives every part of the
//! report uses (the report, the anchors, the overload phases, the
//! headline table): a leaf below them, so they import no one another.

use std::future::Future;
use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};

use crate::load::PhaseResult;

/// The median of `rounds` (the same phase measured several times) by
/// rate: the lower middle one of an even number. Panics on none.
pub fn median_by_rate(mut rounds: Vec<Phase>) -> Phase {
    rounds.sort_by(|a, b| a.result.rate().total_cmp(&b.result.rate()));
    rounds.swap_remove((rounds.len() - 1) / 2)
}

/// A measured load phase.
#[derive(Debug, Clone)]
pub struct Phase {
    /// E.g. `2. GET /health`.
    pub name: String,
    /// Unit of the rate column (`req` or `turn`).
    pub unit: &'static str,
    /// p99 target, if the phase has one.
    pub p99_target: Option<Duration>,
    /// The numbers.
    pub result: PhaseResult,
    /// One-minute load average of the machine before and after the phase.
    pub load: (Option<f64>, Option<f64>),
}

impl Phase {
    /// Runs `run` (a [`crate::load::run`] not yet started) with the load
    /// average taken before and after.
    pub async fn measure(
        name: String,
        unit: &'static str,
        p99_target: Option<Duration>,
        run: impl Future<Output = Result<PhaseResult>>,
    ) -> Result<Phase> {
        let before = load_average();
        let result = run.await?;
        Ok(Phase {
            name,
            unit,
            p99_target,
            result,
            load: (before, load_average()),
        })
    }

    /// `1.91 -> 2.40`: the load average before and after the phase.
    pub fn load_text(&self) -> String {
        format!("{} -> {}", load_text(self.load.0), load_text(self.load.1))
    }
}

/// The one-minute load average (Linux only): other work on the machine
/// skews the numbers.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A load average with two decimals, `?` when unknown.
pub fn load_text(load: Option<f64>) -> String {
    load.map_or_else(|| "?".into(), |l| format!("{l:.2}"))
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Appends `text` and a newline.
pub fn line(out: &mut String, text: String) {
    out.push_str(&text);
    out.push('\n');
}

/// `rows` (the first one the header) as an aligned Markdown table; columns
/// for which `left` holds are left-aligned, the others right-aligned.
pub fn aligned_table(out: &mut String, rows: &[Vec<String>], left: &dyn Fn(usize) -> bool) {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                if left(c) {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        line(out, format!("| {} |", cells.join(" | ")));
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            line(out, format!("|-{}-|", rule.join("-|-")));
        }
    }
}

/// One phase as JSON (milliseconds as floats).
pub fn phase_json(p: &Phase) -> Value {
    let r = &p.result;
    json!({
        "name": p.name,
        "clients": r.clients,
        "budget_requests": r.budget.requests,
        "budget_seconds": r.budget.duration.as_secs_f64(),
        "ok": r.ok(),
        "errors": r.errors,
        "first_error": r.first_error,
        "wall_seconds": r.elapsed.as_secs_f64(),
        "rate_per_second": r.rate(),
        "mean_ms": ms(r.mean()),
        "p50_ms": ms(r.percentile(50.0)),
        "p90_ms": ms(r.percentile(90.0)),
        "p99_ms": ms(r.percentile(99.0)),
        "max_ms": ms(r.max()),
        "p99_target_ms": p.p99_target.map(ms),
        "pass": p.p99_target.map(|t| r.errors == 0 && r.percentile(99.0) < t),
        "load_average_before": p.load.0,
        "load_average_after": p.load.1,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::load::Budget;

    /// A phase named `name` of `ok` answers over one second (`ok`/s).
    pub(crate) fn per_second(name: &str, ok: usize) -> Phase {
        Phase {
            name: name.into(),
            unit: "req",
            p99_target: None,
            result: PhaseResult {
                clients: 100,
                budget: Budget {
                    requests: 1_000_000,
                    duration: Duration::from_secs(10),
                },
                latencies: vec![Duration::from_millis(1); ok],
                errors: 0,
                failed_latencies: Vec::new(),
                statuses: BTreeMap::new(),
                first_error: None,
                elapsed: Duration::from_secs(1),
            },
            load: (Some(1.0), Some(1.0)),
        }
    }

    #[test]
    fn the_median_round_is_the_middle_one_by_rate() {
        let rounds = vec![
            per_second("fast", 90),
            per_second("slow", 10),
            per_second("middle", 50),
        ];
        assert_eq!(median_by_rate(rounds).name, "middle");
        let two = vec![per_second("fast", 90), per_second("slow", 10)];
        assert_eq!(median_by_rate(two).name, "slow");
        assert_eq!(median_by_rate(vec![per_second("one", 5)]).name, "one");
    }
}
