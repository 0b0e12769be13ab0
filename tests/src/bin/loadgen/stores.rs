//! The store comparison (`--store json|postgres|both`): full turns and A2A
//! `message/send` through A -> B, side by side, each figure with the
//! machine's load average before and after it. Three columns:
//!
//! - "JSON files": phases 4 and 5 of the main run (one agent).
//! - "PostgreSQL": a fresh agent on a fresh database seeded with as many
//!   stored conversations; its A2A delegator (A) has a database of its own.
//! - "PostgreSQL, 3 replicas" (`postgres_3`): three agents (B) on one fresh
//!   seeded database, as replicas (any of them serves any conversation);
//!   the turns go round-robin over the three, request by request, and the
//!   A2A requests round-robin over three delegators (A, replicas on a
//!   database of their own), the i-th delegating to the i-th B.
//!
//! `--store json` measures the first column alone, `--store postgres` the
//! two PostgreSQL ones alone. Without a reachable server the PostgreSQL
//! columns are reported as skipped, not failed. Every database is dropped
//! at the end, every agent stopped.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::agent::{AgentProcess, AgentSpec};
use crate::pg::{self, BenchDb};
use crate::phase::{self, Phase, line, load_text};
use crate::report;
use crate::requests::check_loaded;
use crate::seed::Seeded;
use crate::{Settings, a2a_phase, turn_phase};

/// Which stores the comparison covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreChoice {
    /// The JSON files only (the main run, phases 1 to 5).
    Json,
    /// PostgreSQL only (one agent, then three replicas; no main run).
    Postgres,
    /// Both, side by side.
    Both,
}

impl StoreChoice {
    /// Whether the JSON files are measured (with the main run).
    pub fn json(self) -> bool {
        self != StoreChoice::Postgres
    }

    /// Whether PostgreSQL is measured.
    pub fn postgres(self) -> bool {
        self != StoreChoice::Json
    }
}

/// One store's column.
pub struct StoreRun {
    /// `JSON files`, `PostgreSQL`, `PostgreSQL, 3 replicas`.
    pub label: &'static str,
    /// `json`, `postgres`, `postgres_3` (in the JSON output).
    pub key: &'static str,
    /// Its figures, or why there are none.
    pub outcome: Outcome,
}

/// What a store's part gave.
pub enum Outcome {
    /// Its figures.
    Measured(Box<Measured>),
    /// Not measured: the "skipped: ..." line.
    Skipped(String),
}

/// A store's figures.
pub struct Measured {
    /// Full turns.
    pub turn: Phase,
    /// A2A `message/send` through A -> B.
    pub a2a: Phase,
    /// On what they were measured.
    pub details: String,
    /// Whether the phases' notes are not already in the main report.
    pub own_notes: bool,
}

impl StoreRun {
    /// The JSON files' column: the main run's phases 4 and 5.
    pub fn json_files(turn: Phase, a2a: Phase, conversations: usize) -> StoreRun {
        StoreRun {
            label: "JSON files",
            key: "json",
            outcome: Outcome::Measured(Box::new(Measured {
                turn,
                a2a,
                details: format!(
                    "the main run's phases 4 and 5 ({conversations} stored conversations)"
                ),
                own_notes: false,
            })),
        }
    }

    /// Failed requests in its phases.
    pub fn errors(&self) -> usize {
        match &self.outcome {
            Outcome::Measured(m) => m.turn.result.errors + m.a2a.result.errors,
            Outcome::Skipped(_) => 0,
        }
    }
}

/// A PostgreSQL column: how many agents (B) share its database.
struct PgColumn {
    label: &'static str,
    key: &'static str,
    replicas: usize,
}

/// The PostgreSQL columns, each on fresh databases of its own.
const PG_COLUMNS: [PgColumn; 2] = [
    PgColumn {
        label: "PostgreSQL",
        key: "postgres",
        replicas: 1,
    },
    PgColumn {
        label: "PostgreSQL, 3 replicas",
        key: "postgres_3",
        replicas: 3,
    },
];

/// The PostgreSQL columns; skipped when no server answers at the URL.
pub async fn postgres(s: &Settings, http: &reqwest::Client) -> Result<Vec<StoreRun>> {
    let server = &s.database_url;
    let unreachable = pg::reach(server).await.err().map(|error| {
        let reason = format!(
            "skipped: no PostgreSQL at {} ({})",
            pg::describe(server),
            error.root_cause()
        );
        eprintln!("loadgen: PostgreSQL part {reason}");
        reason
    });
    let mut runs = Vec::new();
    for column in &PG_COLUMNS {
        let outcome = match &unreachable {
            Some(reason) => Outcome::Skipped(reason.clone()),
            None => Outcome::Measured(Box::new(postgres_column(s, http, column).await?)),
        };
        runs.push(StoreRun {
            label: column.label,
            key: column.key,
            outcome,
        });
    }
    Ok(runs)
}

/// One column: `column.replicas` agents (B) on a fresh seeded database,
/// full turns round-robin over them, then A2A through A -> B.
async fn postgres_column(
    s: &Settings,
    http: &reqwest::Client,
    column: &PgColumn,
) -> Result<Measured> {
    let tmp = tempfile::Builder::new()
        .prefix("asg-loadgen-pg-")
        .tempdir()
        .context("cannot create a temp dir")?;
    // Declared before the agents, so dropped after them.
    let (db_b, db_a, seeded) = databases(s).await?;
    let agents = replicas(s, http, tmp.path(), &db_b.url, column.replicas).await?;
    for agent in &agents {
        check_loaded(http, &agent.url, seeded.pending)
            .await
            .with_context(|| format!("agent output:\n{}", agent.tail()))?;
    }
    let startups: Vec<Duration> = agents.iter().map(|a| a.startup).collect();
    let bases: Vec<String> = agents.iter().map(|a| a.url.clone()).collect();
    let mut turn = turn_phase(s, http, &agents.iter().collect::<Vec<_>>()).await?;
    let delegator = store_spec(s, tmp.path(), "data-a", &db_a.url);
    let mut a2a = a2a_phase(s, http, delegator, &bases).await?;
    for agent in agents {
        agent.stop().await?;
    }
    turn.name.push_str(&format!(" ({})", column.label));
    a2a.name.push_str(&format!(" ({})", column.label));
    Ok(Measured {
        turn,
        a2a,
        details: details(s, &seeded, &startups),
        own_notes: true,
    })
}

/// `count` agents (B) on the database at `url`, started one after the
/// other, each with a data dir of its own (`<tmp>/data`, `data-1`, ...).
async fn replicas(
    s: &Settings,
    http: &reqwest::Client,
    tmp: &Path,
    url: &str,
    count: usize,
) -> Result<Vec<AgentProcess>> {
    let mut agents = Vec::new();
    for i in 0..count {
        let dir = if i == 0 {
            "data".into()
        } else {
            format!("data-{i}")
        };
        let spec = store_spec(s, tmp, &dir, url);
        agents.push(AgentProcess::start(&spec, http).await?);
    }
    Ok(agents)
}

/// What a column was measured on (one B, or several on one database).
fn details(s: &Settings, seeded: &Seeded, startups: &[Duration]) -> String {
    let stored = format!(
        "{} stored conversations ({:.1} MiB of JSON, inserted in {:.2} s)",
        s.conversations,
        seeded.bytes as f64 / 1048576.0,
        seeded.elapsed.as_secs_f64(),
    );
    let times: Vec<String> = startups
        .iter()
        .map(|t| format!("{:.0}", phase::ms(*t)))
        .collect();
    match startups.len() {
        1 => format!(
            "{stored}, startup {} ms; A and B each on a database of its own",
            times[0]
        ),
        n => format!(
            "{n} agents (B) on one database with {stored}, startups {} ms; \
             full turns: client c's conversation created on B c mod {n}, then each \
             turn sent to the next B round-robin (one counter over all clients, so \
             a conversation's turns move between the B); A2A: {n} delegators (A, \
             replicas on one database of their own), the i-th delegating to the \
             i-th B, each message/send sent to the next A round-robin",
            times.join("/")
        ),
    }
}

/// B's and A's databases, B's migrated and seeded.
async fn databases(s: &Settings) -> Result<(BenchDb, BenchDb, Seeded)> {
    let db_b = BenchDb::create(&s.database_url, "b").await?;
    let db_a = BenchDb::create(&s.database_url, "a").await?;
    eprintln!(
        "loadgen: PostgreSQL at {}: seeding {} conversations",
        pg::describe(&db_b.url),
        s.conversations
    );
    pg::migrate(&s.agent, &s.config, &db_b.url).await?;
    let seeded = pg::seed(&db_b.url, s.conversations).await?;
    Ok((db_b, db_a, seeded))
}

/// An agent on the database at `url`, with `<tmp>/<dir>` as its data dir.
fn store_spec(s: &Settings, tmp: &Path, dir: &str, url: &str) -> AgentSpec {
    AgentSpec {
        binary: s.agent.clone(),
        config: s.config.clone(),
        data_dir: tmp.join(dir),
        log_file: tmp.join("agent.log"),
        rust_log: s.rust_log.clone(),
        env: vec![("DATABASE_URL".into(), url.to_string())],
    }
}

/// Per store: rate, p50, p99, load before -> after.
const PER_STORE: [&str; 4] = ["rate/s", "p50 ms", "p99 ms", "load"];

/// The side-by-side table, its caption and notes.
pub fn table(runs: &[StoreRun], clients: usize) -> String {
    let mut out = String::new();
    line(
        &mut out,
        "== Stores: full turns and A2A, side by side ==".into(),
    );
    let with_pg = runs
        .iter()
        .any(|r| matches!(r.outcome, Outcome::Measured(_)) && r.key.starts_with("postgres"));
    let replicated = runs.iter().any(|r| r.key == "postgres_3");
    line(
        &mut out,
        format!(
            "one agent per store{}, {clients} clients, {} CPUs shared with the load generator{}; \
             load = one-minute load average before -> after each phase (Linux counts the \
             agents' own threads waiting on disk or database too; now {})",
            if replicated {
                " (three on one database in \"PostgreSQL, 3 replicas\")"
            } else {
                ""
            },
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            if with_pg { " and PostgreSQL" } else { "" },
            load_text(phase::load_average())
        ),
    );
    line(&mut out, String::new());
    let mut header = vec!["Measure".to_string()];
    for run in runs {
        header.extend(PER_STORE.iter().map(|c| format!("{} {c}", run.label)));
    }
    let mut rows = vec![header];
    for (measure, pick) in [
        ("full turn \"list resources\"", 0),
        ("A2A message/send, A -> B", 1),
    ] {
        let mut row = vec![measure.to_string()];
        for run in runs {
            row.extend(cells(run, pick));
        }
        rows.push(row);
    }
    phase::aligned_table(&mut out, &rows, &|c| c == 0);
    for run in runs {
        run_notes(&mut out, run);
    }
    out
}

/// A store's four cells for its turn (0) or A2A (1) phase.
fn cells(run: &StoreRun, pick: usize) -> Vec<String> {
    let Outcome::Measured(m) = &run.outcome else {
        return vec!["skipped".into(), "-".into(), "-".into(), "-".into()];
    };
    let phase = if pick == 0 { &m.turn } else { &m.a2a };
    let r = &phase.result;
    let errors = match r.errors {
        0 => String::new(),
        n => format!(" ({n} errors)"),
    };
    vec![
        format!("{:.1} {}/s{errors}", r.rate(), phase.unit),
        format!("{:.2}", phase::ms(r.percentile(50.0))),
        format!("{:.2}", phase::ms(r.percentile(99.0))),
        phase.load_text(),
    ]
}

/// What a column was measured on, or why it was skipped.
fn run_notes(out: &mut String, run: &StoreRun) {
    match &run.outcome {
        Outcome::Measured(m) => {
            line(out, format!("{}: {}", run.label, m.details));
            if m.own_notes {
                report::phase_notes(out, &[m.turn.clone(), m.a2a.clone()]);
            }
        }
        Outcome::Skipped(reason) => line(out, format!("{}: {reason}", run.label)),
    }
}

/// The comparison as JSON: one object per store.
pub fn to_json(runs: &[StoreRun]) -> Value {
    let stores: Vec<Value> = runs
        .iter()
        .map(|run| match &run.outcome {
            Outcome::Measured(m) => json!({
                "store": run.key,
                "measured": true,
                "details": m.details,
                "full_turn": phase::phase_json(&m.turn),
                "a2a_message_send": phase::phase_json(&m.a2a),
            }),
            Outcome::Skipped(reason) => json!({
                "store": run.key,
                "measured": false,
                "skipped": reason,
            }),
        })
        .collect();
    Value::Array(stores)
}
