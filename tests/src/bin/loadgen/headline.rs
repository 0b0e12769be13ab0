//! The issue's table: each figure of ours beside its anchor from the same
//! run, the ratio ours/anchor, the goal, and the load average while it was
//! measured: work | ours | anchor | ratio | goal | load average.
//!
//! The rows: the full turn (scripted model; its anchors, Google ADK and
//! ADK-Rust, need PyPI and crates.io: `scripts/bench-adk.sh`), A2A `message/send` beside the a2a-sdk echo
//! server, `GET /conversations/{id}` beside the axum hello-world, the web
//! chat bundle, and three rows (threads, RSS, answers) per overload phase.

use serde_json::{Value, json};

use crate::anchors::Anchor;
use crate::bundle::Bundle;
use crate::overload::{Overload, ProcSample, SLOW};
use crate::phase::{Phase, aligned_table, line, ms};

/// What the table is made of.
#[derive(Debug, Clone)]
pub struct Headline {
    /// Full turns (phase 4).
    pub turn: Phase,
    /// A2A `message/send` answered by the model (phase 5) and its anchor.
    pub a2a_reply: Phase,
    pub a2a_sdk: Anchor,
    /// A2A `message/send` through A -> B (phase 6), without an anchor.
    pub a2a: Phase,
    /// `GET /conversations/{id}` at full concurrency (phase 3) and its anchor.
    pub show: Phase,
    pub hello: Anchor,
    pub bundle: Bundle,
    pub overload: Vec<Overload>,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub work: String,
    pub ours: String,
    pub anchor: String,
    pub ratio: String,
    pub goal: &'static str,
    pub load: String,
}

/// Columns of the table.
const HEADER: [&str; 6] = [
    "work",
    "ours",
    "anchor in the same run",
    "ratio",
    "goal",
    "load average",
];
/// Where there is nothing to show.
const NONE: &str = "—";

impl Headline {
    /// The rows, in the issue's order.
    pub fn rows(&self) -> Vec<Row> {
        let mut rows = vec![
            self.turn_row(),
            self.a2a_row(),
            self.a2a_chain_row(),
            self.show_row(),
            self.bundle_row(),
        ];
        for overload in &self.overload {
            rows.extend(overload_rows(overload));
        }
        rows
    }

    /// The aligned Markdown table, then the anchors' notes.
    pub fn table(&self) -> String {
        let mut out = String::new();
        line(
            &mut out,
            "== Against the anchors (one run, same machine) ==".into(),
        );
        let mut cells: Vec<Vec<String>> = vec![HEADER.iter().map(|h| h.to_string()).collect()];
        for row in self.rows() {
            cells.push(vec![
                row.work,
                row.ours,
                row.anchor,
                row.ratio,
                row.goal.into(),
                row.load,
            ]);
        }
        aligned_table(&mut out, &cells, &|c| c != 3);
        for anchor in [&self.hello, &self.a2a_sdk] {
            if let Anchor::Measured { label, phase } = anchor
                && let Some(error) = &phase.result.first_error
            {
                line(&mut out, format!("first error of the {label}: {error}"));
            }
        }
        out
    }

    pub fn to_json(&self) -> Value {
        json!({
            "rows": self.rows().iter().map(|r| json!({
                "work": r.work, "ours": r.ours, "anchor": r.anchor,
                "ratio": r.ratio, "goal": r.goal, "load_average": r.load,
            })).collect::<Vec<_>>(),
            "hello_anchor": self.hello.to_json(),
            "a2a_sdk_anchor": self.a2a_sdk.to_json(),
            "bundle": self.bundle.to_json(),
            "overload": self.overload.iter().map(Overload::to_json).collect::<Vec<_>>(),
        })
    }

    fn turn_row(&self) -> Row {
        Row {
            work: format!(
                "agent turn (scripted model: 2 model calls + 1 MCP tool), {} clients",
                self.turn.result.clients
            ),
            ours: rate_p99(&self.turn),
            anchor: "scripts/bench-adk.sh (Google ADK api_server, ADK-Rust)".into(),
            ratio: NONE.into(),
            goal: "≥ 40× ADK api_server; ≥ 1× ADK-Rust",
            load: self.turn.load_text(),
        }
    }

    fn a2a_row(&self) -> Row {
        anchored_row(
            format!(
                "A2A message/send, model reply, {} clients",
                self.a2a_reply.result.clients
            ),
            &self.a2a_reply,
            &self.a2a_sdk,
            false,
            "≥ 5×",
        )
    }

    fn a2a_chain_row(&self) -> Row {
        Row {
            work: format!(
                "A2A message/send, A -> B chain (2 turns, 1 MCP tool), {} clients",
                self.a2a.result.clients
            ),
            ours: rate_p99(&self.a2a),
            anchor: NONE.into(),
            ratio: NONE.into(),
            goal: NONE,
            load: self.a2a.load_text(),
        }
    }

    fn show_row(&self) -> Row {
        anchored_row(
            format!(
                "GET /conversations/{{id}}, {} connections",
                self.show.result.clients
            ),
            &self.show,
            &self.hello,
            true,
            "≥ 0.7×, p99 ≤ 1.2×",
        )
    }

    fn bundle_row(&self) -> Row {
        Row {
            work: "web chat bundle (web/dist)".into(),
            ours: self.bundle.text(),
            anchor: NONE.into(),
            ratio: NONE.into(),
            goal: "≤ 200 KiB gz",
            load: NONE.into(),
        }
    }
}

/// A row of ours beside an anchor: the throughput ratio, and with
/// `p99_ratio` the p99 ratio too.
fn anchored_row(
    work: String,
    ours: &Phase,
    anchor: &Anchor,
    p99_ratio: bool,
    goal: &'static str,
) -> Row {
    let (anchor_text, ratio, load) = match anchor {
        Anchor::Measured { label, phase } => {
            let (o, a) = (&ours.result, &phase.result);
            let mut ratio = times(ratio_of(o.rate(), a.rate()));
            if p99_ratio {
                let p99 = ratio_of(ms(o.percentile(99.0)), ms(a.percentile(99.0)));
                ratio = format!("{ratio}, p99 {}", times(p99));
            }
            let load = format!("ours {}; anchor {}", ours.load_text(), phase.load_text());
            (format!("{label}: {}", rate_p99(phase)), ratio, load)
        }
        Anchor::Skipped(why) => (why.clone(), NONE.into(), ours.load_text()),
    };
    Row {
        work,
        ours: rate_p99(ours),
        anchor: anchor_text,
        ratio,
        goal,
        load,
    }
}

/// `874 turns/s, p99 70.0 ms` (and the errors, if any).
fn rate_p99(phase: &Phase) -> String {
    let r = &phase.result;
    let unit = if phase.unit == "turn" { "turns" } else { "req" };
    let errors = if r.errors > 0 {
        format!(", {} errors", r.errors)
    } else {
        String::new()
    };
    format!(
        "{:.0} {unit}/s, p99 {:.1} ms{errors}",
        r.rate(),
        ms(r.percentile(99.0))
    )
}

/// `ours / anchor`, None when the anchor measured nothing.
pub fn ratio_of(ours: f64, anchor: f64) -> Option<f64> {
    (anchor > 0.0 && ours.is_finite()).then(|| ours / anchor)
}

/// `0.26×`, `31×` (two significant digits below 10), `—` when unknown.
pub fn times(ratio: Option<f64>) -> String {
    match ratio {
        Some(r) if r >= 10.0 => format!("{r:.0}×"),
        Some(r) if r >= 1.0 => format!("{r:.1}×"),
        Some(r) => format!("{r:.2}×"),
        None => NONE.into(),
    }
}

/// Threads, RSS and the answers of one overload phase.
fn overload_rows(o: &Overload) -> Vec<Row> {
    let r = &o.phase.result;
    let what = format!(
        "{} clients, {}, {:.0} s",
        r.clients,
        o.work,
        r.budget.duration.as_secs_f64()
    );
    let idle = format!("{:.0} s idle", o.idle.as_secs_f64());
    let row = |aspect: &str, ours: String, goal: &'static str| Row {
        work: format!("{what}: {aspect}"),
        ours,
        anchor: NONE.into(),
        ratio: NONE.into(),
        goal,
        load: o.phase.load_text(),
    };
    let threads = |s: ProcSample| s.threads.to_string();
    let mib = |bytes: u64| format!("{:.0}", bytes as f64 / 1048576.0);
    vec![
        row(
            "agent threads",
            course(o, &threads, "", &idle),
            "a fixed few for storage (no growth to 512)",
        ),
        row(
            "agent RSS",
            course(o, &|s| mib(s.rss), " MiB", &idle),
            "≤ 64 MB under load, back near start when idle",
        ),
        row(
            "agent RSS without its code (RssAnon)",
            course(o, &|s| mib(s.anon), " MiB", &idle),
            NONE,
        ),
        row(
            "answers",
            answers(o),
            "no multi-second stalls: fair queueing or 503 + Retry-After",
        ),
    ]
}

/// `5 → peak 516, end 516, 516 after 20 s idle` for one figure.
fn course(o: &Overload, figure: &dyn Fn(ProcSample) -> String, unit: &str, idle: &str) -> String {
    let show = |s: Option<ProcSample>| s.map_or_else(|| "?".into(), figure);
    format!(
        "{} → peak {}, end {}, {}{unit} after {idle}",
        show(o.start),
        show(o.peak),
        show(o.end),
        show(o.after_idle)
    )
}

/// `74,000 ok (1,234/s, p99 3.1 ms), 1,525 over 2 s, 0 non-2xx (0 × 503), 0 unanswered`.
fn answers(o: &Overload) -> String {
    let r = &o.phase.result;
    format!(
        "{} ok ({:.0}/s, p99 {:.0} ms), {} over {} s, {} non-2xx ({} × 503), {} unanswered",
        r.ok(),
        r.rate(),
        ms(r.percentile(99.0)),
        r.slower_than(SLOW),
        SLOW.as_secs(),
        r.non_success(),
        r.answered(503),
        r.errors - r.non_success()
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use crate::load::{Budget, PhaseResult};

    /// A phase of `ok` answers of `ms` each over one second (so `ok`/s),
    /// load average 2.00 -> 3.00.
    fn phase(clients: usize, ok: usize, each_ms: u64, unit: &'static str) -> Phase {
        Phase {
            name: "p".into(),
            unit,
            p99_target: None,
            result: PhaseResult {
                clients,
                budget: Budget {
                    requests: 1_000_000,
                    duration: Duration::from_secs(30),
                },
                latencies: vec![Duration::from_millis(each_ms); ok],
                errors: 0,
                failed_latencies: Vec::new(),
                statuses: BTreeMap::new(),
                first_error: None,
                elapsed: Duration::from_secs(1),
            },
            load: (Some(2.0), Some(3.0)),
        }
    }

    fn headline(hello: Anchor, a2a_sdk: Anchor) -> Headline {
        Headline {
            turn: phase(100, 874, 70, "turn"),
            a2a_reply: phase(100, 1434, 54, "req"),
            a2a_sdk,
            a2a: phase(100, 600, 90, "req"),
            show: phase(100, 27_000, 10, "req"),
            hello,
            bundle: Bundle::Missing("web/dist".into()),
            overload: Vec::new(),
        }
    }

    #[test]
    fn ratios_read_like_the_issue() {
        assert_eq!(times(ratio_of(27_162.0, 106_248.0)), "0.26×");
        assert_eq!(times(ratio_of(1_434.0, 973.0)), "1.5×");
        assert_eq!(times(ratio_of(874.0, 28.2)), "31×");
        assert_eq!(times(ratio_of(1.0, 0.0)), "—");
    }

    #[test]
    fn each_figure_stands_beside_its_anchor_with_the_ratio() {
        let hello = Anchor::Measured {
            label: "axum hello-world".into(),
            phase: Box::new(phase(100, 108_000, 4, "req")),
        };
        let a2a_sdk = Anchor::Measured {
            label: "a2a-sdk 0.3.26 echo server".into(),
            phase: Box::new(phase(100, 956, 100, "req")),
        };
        let mut rows = headline(hello, a2a_sdk).rows();
        assert_eq!(rows.len(), 5);
        let chain = rows.remove(2);
        assert!(chain.work.contains("A -> B chain"), "{chain:?}");
        assert_eq!(chain.ours, "600 req/s, p99 90.0 ms");
        assert_eq!((chain.anchor.as_str(), chain.ratio.as_str()), ("—", "—"));
        assert_eq!(rows[0].ours, "874 turns/s, p99 70.0 ms");
        assert_eq!(rows[0].ratio, "—");
        assert_eq!(
            rows[1].anchor,
            "a2a-sdk 0.3.26 echo server: 956 req/s, p99 100.0 ms"
        );
        assert_eq!(rows[1].ratio, "1.5×");
        assert_eq!(rows[1].goal, "≥ 5×");
        assert_eq!(rows[2].work, "GET /conversations/{id}, 100 connections");
        assert_eq!(rows[2].ratio, "0.25×, p99 2.5×");
        assert_eq!(rows[2].load, "ours 2.00 -> 3.00; anchor 2.00 -> 3.00");
        assert_eq!(rows[3].ours, "not built (run scripts/build-web.sh)");
        let table = headline(rows_anchor(), rows_anchor()).table();
        assert!(table.contains("| work "), "{table}");
    }

    fn rows_anchor() -> Anchor {
        Anchor::Skipped("skipped: no venv".into())
    }

    #[test]
    fn a_skipped_anchor_says_why_and_has_no_ratio() {
        let rows = headline(rows_anchor(), rows_anchor()).rows();
        assert_eq!(rows[1].anchor, "skipped: no venv");
        assert_eq!(rows[1].ratio, "—");
        assert_eq!(rows[1].load, "2.00 -> 3.00");
    }

    #[test]
    fn overload_rows_show_the_course_of_threads_and_memory_and_every_stall() {
        let mut load = phase(1000, 3, 10, "turn");
        load.result.latencies = [10, 2500, 3000].map(Duration::from_millis).to_vec();
        load.result.failed_latencies = [5, 2100, 30_000].map(Duration::from_millis).to_vec();
        load.result.errors = 3;
        load.result.statuses = BTreeMap::from([(503, 1), (500, 1)]);
        let sample = |threads, mib: u64| {
            Some(ProcSample {
                threads,
                rss: mib * 1048576,
                anon: (mib - 20) * 1048576,
            })
        };
        let overload = Overload {
            work: "turns".into(),
            phase: load,
            start: sample(5, 25),
            peak: sample(516, 207),
            end: sample(516, 207),
            after_idle: sample(516, 198),
            idle: Duration::from_secs(20),
        };
        let rows = overload_rows(&overload);
        assert_eq!(rows[0].work, "1000 clients, turns, 30 s: agent threads");
        assert_eq!(rows[0].ours, "5 → peak 516, end 516, 516 after 20 s idle");
        assert_eq!(
            rows[1].ours,
            "25 → peak 207, end 207, 198 MiB after 20 s idle"
        );
        assert_eq!(
            rows[2].ours,
            "5 → peak 187, end 187, 178 MiB after 20 s idle"
        );
        assert_eq!(
            rows[3].ours,
            "3 ok (3/s, p99 3000 ms), 4 over 2 s, 2 non-2xx (1 × 503), 1 unanswered"
        );
        assert_eq!(rows[3].load, "2.00 -> 3.00");
    }
}
