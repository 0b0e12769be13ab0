//! `loadgen`: benchmark of the `agent` binary over loopback HTTP.
//!
//! Seeds a temporary data directory with stored conversations, then
//! measures, against a real `agent` process on 127.0.0.1:
//!
//! 1. startup time with the stored conversations (spawn -> first 200 from
//!    `GET /health`), repeated, min and median;
//! 2. `GET /health` under N concurrent clients;
//! 3. `GET /conversations/{id}` on random stored conversations;
//! 4. full turns: each client sends "list resources" to its own
//!    conversation (model step, MCP `resources_list` call, durable writes);
//! 5. A2A `message/send` straight to the agent, answered by its model
//!    (a new task, one model call, no tool), for 10 s (`--a2a-seconds`):
//!    2,000 requests took a third of a second, mostly before the tasks'
//!    files were written, and varied from run to run by 1.7×;
//! 6. A2A `message/send` through A -> B (A delegates every task to B).
//!
//! Beside 3 and 5, in the same run, their anchors (`loadgen/anchors.rs`):
//! the axum hello-world (`hello`) under the same GET load and the official
//! a2a-sdk echo server under the same A2A load. Phase 3 and the
//! hello-world run in alternating rounds (`--get-rounds`, 3), each
//! reported as its median round: both are short, and a change in the
//! machine's load falls on both, not on one. Then the overload phases
//! (`loadgen/overload.rs`: 1,000 clients doing turns, then GETs, with the
//! agent's threads and RSS sampled), and the web chat bundle's size. The
//! last table puts ours beside each anchor (`loadgen/headline.rs`).
//! Then the cost of telemetry: the turn phase on fresh agents with
//! telemetry off, `/metrics` scraped every second, and traces exported
//! over OTLP to a local sink (`loadgen/telemetry.rs`).
//!
//! Then, with `--store postgres|both` (the default), phases 4 and 5 again
//! on an agent whose store is PostgreSQL, and once more on three agents
//! (replicas) sharing one PostgreSQL database, the requests spread
//! round-robin over them; then the three columns side by side (see
//! `loadgen/stores.rs`). `--store postgres` skips the main run.
//!
//! Every phase is bounded by a request count and a time limit, the whole run
//! by an overall limit; the agent is stopped with SIGTERM at the end and
//! killed on any error path. Run it through `scripts/bench.sh`.

// The crate root is `loadgen.rs`, so its modules are named by path.
#[path = "loadgen/agent.rs"]
mod agent;
#[path = "loadgen/anchors.rs"]
mod anchors;
#[path = "loadgen/bundle.rs"]
mod bundle;
#[path = "loadgen/headline.rs"]
mod headline;
#[path = "loadgen/load.rs"]
mod load;
#[path = "loadgen/overload.rs"]
mod overload;
#[path = "loadgen/pg.rs"]
mod pg;
#[path = "loadgen/phase.rs"]
mod phase;
#[path = "loadgen/report.rs"]
mod report;
#[path = "loadgen/requests.rs"]
mod requests;
#[path = "loadgen/seed.rs"]
mod seed;
#[path = "loadgen/server.rs"]
mod server;
#[path = "loadgen/stores.rs"]
mod stores;
#[path = "loadgen/telemetry.rs"]
mod telemetry;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;

use agent::{AgentProcess, AgentSpec};
use headline::Headline;
use load::{Budget, RoundRobin};
use overload::OverloadSettings;
use phase::Phase;
use report::{Report, StartupRun};
use requests::{a2a_list, check_loaded, create_conversation, get_ok, http_client, list_resources};
use seed::Seeded;
use stores::{StoreChoice, StoreRun};
use uuid::Uuid;

/// Benchmark of the agent server: startup with many stored conversations,
/// `GET /health`, `GET /conversations/{id}` and full turns with a tool call.
#[derive(Debug, Parser)]
#[command(name = "loadgen")]
struct Args {
    /// The agent binary to benchmark. It starts the MCP server
    /// `mcp-resources` found beside it (else on PATH), so a copied agent
    /// needs its own `mcp-resources` in the same directory.
    #[arg(long, default_value = "target/dist/agent")]
    agent: PathBuf,
    /// The axum hello-world anchor [default: `hello` beside this loadgen].
    #[arg(long, value_name = "FILE")]
    hello: Option<PathBuf>,
    /// Python of the venv with the a2a-sdk 0.3 server SDK, for the echo
    /// server anchor (scripts/bench.sh makes it, as scripts/test.sh does).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "target/a2a-sdk-v03/bin/python"
    )]
    a2a_python: PathBuf,
    /// The a2a-sdk echo server anchor.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "tests/interop/echo_server.py"
    )]
    echo_server: PathBuf,
    /// Where the web chat's bundle is built (its `.wasm` is measured).
    #[arg(long, value_name = "DIR", default_value = "web/dist")]
    web_dist: PathBuf,
    /// Concurrent clients of the overload phases (0: skip them).
    #[arg(long, default_value_t = 1000)]
    overload_clients: usize,
    /// Length of each overload phase, seconds [default: 30, quick: 3].
    #[arg(long)]
    overload_seconds: Option<u64>,
    /// In the overload turn phase, each client starts a new conversation
    /// after this many turns (0: one conversation per client for the whole
    /// phase, which grows by 4 messages a turn). A conversation's length
    /// is data, not load: with a bound here, memory measures the load.
    #[arg(long, default_value_t = 0)]
    overload_turns_per_conversation: usize,
    /// Idle wait after each overload phase before the last sample of the
    /// agent's threads and RSS, seconds [default: 20, quick: 5].
    #[arg(long)]
    idle_seconds: Option<u64>,
    /// Agent configuration (must use the offline scripted model).
    #[arg(long, default_value = "testdata/agent-resources.yaml")]
    config: PathBuf,
    /// Stored conversations to seed [default: 10000, quick: 200].
    #[arg(long)]
    conversations: Option<usize>,
    /// Concurrent clients [default: 100, quick: 10].
    #[arg(long)]
    clients: Option<usize>,
    /// Requests per GET phase [default: 50000, quick: 1000].
    #[arg(long)]
    requests: Option<usize>,
    /// Time limit of each GET phase, seconds [default: 10, quick: 2].
    #[arg(long)]
    seconds: Option<u64>,
    /// Turns in the full-turn phase [default: 2000, quick: 40].
    #[arg(long)]
    turns: Option<usize>,
    /// Time limit of the full-turn phase, seconds [default: 60, quick: 10].
    #[arg(long)]
    turn_seconds: Option<u64>,
    /// Also run the GET phases with this few clients, to tell the server's
    /// own latency from queueing at full concurrency (0: skip).
    #[arg(long, default_value_t = 4)]
    low_clients: usize,
    /// Length of the A2A model-reply phase and of its anchor, seconds
    /// [default: 10; quick: the turns' budget]. Each request there is a
    /// new task, so a long phase does not grow one conversation, and it
    /// includes the writing of the tasks' files that follows a burst.
    #[arg(long)]
    a2a_seconds: Option<u64>,
    /// Rounds of `GET /conversations/{id}` and its hello-world anchor,
    /// one after the other, each reported as its median round (a change
    /// in the machine's load falls on both) [default: 3, quick: 1].
    #[arg(long)]
    get_rounds: Option<usize>,
    /// Agent starts timed in the startup phase [default: 3].
    #[arg(long, default_value_t = 3)]
    startup_runs: usize,
    /// Small numbers for a smoke run.
    #[arg(long)]
    quick: bool,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Give up after this many seconds in total.
    #[arg(long, default_value_t = 900)]
    max_seconds: u64,
    /// Stores to measure full turns and A2A on, side by side: `json` (the
    /// main run alone), `postgres` (that part alone: one agent, then three
    /// replicas on one database) or `both`.
    #[arg(long, value_enum, default_value_t = StoreChoice::Both)]
    store: StoreChoice,
    /// PostgreSQL server for the PostgreSQL part (a fresh database per
    /// agent is created there and dropped) [default:
    /// $ASG_BENCH_DATABASE_URL, else $ASG_TEST_DATABASE_URL, else
    /// postgres://postgres@127.0.0.1:5432/postgres].
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
}

/// Most requests of a time-bounded A2A phase (far more than 10 s take).
const A2A_REQUESTS_CAP: usize = 500_000;

/// The numbers a run uses, after `--quick` defaults.
#[derive(Debug, Clone)]
struct Settings {
    agent: PathBuf,
    config: PathBuf,
    hello: PathBuf,
    a2a_python: PathBuf,
    echo_server: PathBuf,
    web_dist: PathBuf,
    overload: OverloadSettings,
    conversations: usize,
    clients: usize,
    get_budget: Budget,
    get_warmup: Budget,
    get_rounds: usize,
    low_clients: usize,
    low_budget: Budget,
    turn_budget: Budget,
    a2a_budget: Budget,
    startup_runs: usize,
    rust_log: String,
    store: StoreChoice,
    database_url: String,
}

impl Settings {
    /// These settings for a repeated GET round: its full-concurrency
    /// phase alone.
    fn one_get_phase(&self) -> Settings {
        Settings {
            low_clients: 0,
            ..self.clone()
        }
    }

    fn from_args(args: &Args) -> Result<Settings> {
        let q = args.quick;
        let pick = |value: Option<usize>, full: usize, quick: usize| {
            value.unwrap_or(if q { quick } else { full })
        };
        let clients = pick(args.clients, 100, 10);
        let requests = pick(args.requests, 50_000, 1_000);
        let seconds = |value: Option<u64>, full: u64, quick: u64| {
            Duration::from_secs(value.unwrap_or(if q { quick } else { full }))
        };
        let turn_budget = Budget {
            requests: pick(args.turns, 2_000, 40),
            duration: Duration::from_secs(args.turn_seconds.unwrap_or(if q { 10 } else { 60 })),
        };
        let a2a_budget = match (args.a2a_seconds, q) {
            (None, true) => turn_budget,
            (seconds, _) => Budget {
                requests: A2A_REQUESTS_CAP,
                duration: Duration::from_secs(seconds.unwrap_or(10)),
            },
        };
        let settings = Settings {
            agent: locate(&args.agent)?,
            config: locate(&args.config)?,
            hello: args.hello.clone().unwrap_or_else(beside_me),
            a2a_python: in_workspace(&args.a2a_python),
            echo_server: in_workspace(&args.echo_server),
            web_dist: in_workspace(&args.web_dist),
            overload: OverloadSettings {
                clients: args.overload_clients,
                duration: seconds(args.overload_seconds, 30, 3),
                turns_per_conversation: args.overload_turns_per_conversation,
                idle: seconds(args.idle_seconds, 20, 5),
            },
            conversations: pick(args.conversations, 10_000, 200),
            clients,
            get_budget: Budget {
                requests,
                duration: Duration::from_secs(args.seconds.unwrap_or(if q { 2 } else { 10 })),
            },
            get_warmup: Budget {
                requests: (requests / 10).max(clients),
                duration: Duration::from_secs(1),
            },
            get_rounds: pick(args.get_rounds, 3, 1),
            low_clients: args.low_clients,
            low_budget: Budget {
                requests: (requests / 5).max(1),
                duration: Duration::from_secs(
                    (args.seconds.unwrap_or(if q { 2 } else { 10 }) / 2).max(1),
                ),
            },
            turn_budget,
            a2a_budget,
            startup_runs: args.startup_runs,
            rust_log: std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            store: args.store,
            database_url: pg::server_url(args.database_url.as_deref()),
        };
        ensure!(settings.clients > 0, "--clients must be at least 1");
        ensure!(settings.get_rounds > 0, "--get-rounds must be at least 1");
        ensure!(
            !settings.a2a_budget.duration.is_zero(),
            "--a2a-seconds must be at least 1"
        );
        ensure!(
            settings.conversations > 0,
            "--conversations must be at least 1"
        );
        ensure!(
            settings.startup_runs > 0,
            "--startup-runs must be at least 1"
        );
        Ok(settings)
    }
}

/// `hello` in the directory of this loadgen binary.
fn beside_me() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("hello")))
        .unwrap_or_else(|| PathBuf::from("target/dist/hello"))
}

/// A relative path as given when it exists, else relative to the
/// workspace root (where it may not exist: the caller says what is
/// missing).
fn in_workspace(path: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent();
    match root {
        Some(root) if !path.is_absolute() && !path.exists() => root.join(path),
        _ => path.to_path_buf(),
    }
}

/// Warnings about the machine: the agent's MCP server not beside it, too
/// few file descriptors for the overload clients even with the soft
/// limit raised to the hard one (as the agent raises its own).
fn preflight(s: &Settings) {
    let mcp = s.agent.with_file_name("mcp-resources");
    if !mcp.is_file() {
        eprintln!(
            "loadgen: warning: no {} (the agent then looks for mcp-resources on PATH)",
            mcp.display()
        );
    }
    asg_http::process::raise_open_files_limit();
    let wanted = 2 * s.overload.clients as u64 + 256;
    if let Some(limit) = open_files_limit()
        && limit < wanted
    {
        eprintln!(
            "loadgen: warning: the open-files limit is {limit}, the hard limit included; {} \
             overload clients want about {wanted} (raise it: ulimit -Hn, LimitNOFILE=)",
            s.overload.clients
        );
    }
}

/// The soft limit of open files of this process (and of the agents it
/// starts), from `/proc/self/limits`.
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A relative path as given, else relative to the workspace root.
fn locate(path: &Path) -> Result<PathBuf> {
    let candidates = [
        path.to_path_buf(),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path),
    ];
    for candidate in candidates
        .iter()
        .take(if path.is_absolute() { 1 } else { 2 })
    {
        if candidate.is_file() {
            return candidate
                .canonicalize()
                .with_context(|| format!("cannot resolve {}", candidate.display()));
        }
    }
    bail!(
        "{} not found (build it with `cargo build --profile dist -p asg-server -p asg-mcp-resources --bins`?)",
        path.display()
    )
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let limit = Duration::from_secs(args.max_seconds);
    let outcome = tokio::select! {
        outcome = tokio::time::timeout(limit, run(&args)) => match outcome {
            Ok(outcome) => outcome,
            Err(_) => Err(anyhow::anyhow!("gave up after {limit:?} (--max-seconds)")),
        },
        signal = interrupted() => Err(anyhow::anyhow!("interrupted by {signal}")),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("loadgen: error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Completes on Ctrl-C or SIGTERM, so the agent is still stopped (the
/// benchmark's guards run on the way out).
async fn interrupted() -> &'static str {
    let mut terminate =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return "Ctrl-C";
            }
        };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "Ctrl-C",
        _ = terminate.recv() => "SIGTERM",
    }
}

async fn run(args: &Args) -> Result<()> {
    let settings = Settings::from_args(args)?;
    preflight(&settings);
    let mut runs = Vec::new();
    let report = if settings.store.json() {
        let (report, json_files) = bench(&settings).await?;
        println!("{}", report.table());
        runs.push(json_files);
        Some(report)
    } else {
        None
    };
    let overhead = if settings.store.json() {
        let overhead = telemetry_overhead(&settings).await?;
        println!("{}", overhead.table());
        Some(overhead)
    } else {
        None
    };
    if settings.store.postgres() {
        let http = http_client(settings.clients)?;
        runs.extend(stores::postgres(&settings, &http).await?);
    }
    println!("{}", stores::table(&runs, settings.clients));
    if let Some(headline) = report.as_ref().map(|r| &r.headline) {
        println!("{}", headline.table());
    }
    if let Some(path) = &args.json {
        let mut json = report
            .as_ref()
            .map_or_else(|| serde_json::json!({}), Report::to_json);
        json["stores"] = stores::to_json(&runs);
        if let Some(overhead) = &overhead {
            json["telemetry"] = overhead.to_json();
        }
        let text = serde_json::to_string_pretty(&json)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("JSON written to {}", path.display());
    }
    let errors = report.as_ref().map_or(0, Report::total_errors)
        + overhead.as_ref().map_or(0, telemetry::Overhead::errors)
        + runs
            .iter()
            .filter(|run| run.key != "json")
            .map(StoreRun::errors)
            .sum::<usize>();
    ensure!(errors == 0, "{errors} requests failed (see the tables)");
    Ok(())
}

/// The turn phase with telemetry off, metrics scraped and traces on
/// (`loadgen/telemetry.rs`), on fresh agents in a temp dir.
async fn telemetry_overhead(s: &Settings) -> Result<telemetry::Overhead> {
    let tmp = tempfile::Builder::new()
        .prefix("asg-loadgen-telemetry-")
        .tempdir()
        .context("cannot create a temp dir")?;
    let http = http_client(s.clients)?;
    telemetry::run(s, &http, tmp.path()).await
}

/// The main run (phases 1 to 5) on the JSON files; its phases 4 and 5
/// are also the JSON column of the store comparison.
async fn bench(s: &Settings) -> Result<(Report, StoreRun)> {
    let load_before = phase::load_average();
    let tmp = tempfile::Builder::new()
        .prefix("asg-loadgen-")
        .tempdir()
        .context("cannot create a temp dir")?;
    let data_dir = tmp.path().join("data");
    let log_file = tmp.path().join("agent.log");
    let seeded = seed_data(s, &data_dir).await?;
    let spec = AgentSpec {
        binary: s.agent.clone(),
        config: s.config.clone(),
        data_dir,
        log_file: log_file.clone(),
        rust_log: s.rust_log.clone(),
        env: Vec::new(),
    };
    let http = http_client(s.clients)?;

    let (startup, agent) = startups(s, &spec, &http).await?;
    let base = Arc::new(agent.url.clone());
    let first_pages = (
        requests::timed_get(&http, &format!("{base}/conversations")).await?,
        requests::timed_get(&http, &format!("{base}/approvals")).await?,
    );
    check_loaded(&http, &base, seeded.pending)
        .await
        .with_context(|| format!("agent output:\n{}", agent.tail()))?;

    let (phases, mut headline) = load_phases(s, &http, &agent, &spec, tmp.path(), &seeded).await?;
    let json_files =
        StoreRun::json_files(headline.turn.clone(), headline.a2a.clone(), s.conversations);

    let rss_after_load = agent.rss_bytes();
    let (status, took) = agent.stop().await?;
    headline.overload = overload::run(s, &spec, &seeded.ids).await?;
    let report = Report {
        agent: s.agent.clone(),
        config: s.config.clone(),
        rust_log: s.rust_log.clone(),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        conversations: s.conversations,
        pending: seeded.pending,
        seed_bytes: seeded.bytes,
        seed_time: seeded.elapsed,
        startup_target: Duration::from_secs(1),
        startup,
        first_pages,
        phases,
        rss_after_load,
        load_average: (load_before, phase::load_average()),
        shutdown: Some((status.to_string(), took)),
        headline,
    };
    Ok((report, json_files))
}

/// Phases 2 to 5 on the running `agent`, the anchors beside 3 and 5 (their
/// logs in `tmp`), and the bundle's size: the phases and the headline
/// (without the overload phases yet).
async fn load_phases(
    s: &Settings,
    http: &reqwest::Client,
    agent: &AgentProcess,
    spec: &AgentSpec,
    tmp: &Path,
    seeded: &Seeded,
) -> Result<(Vec<Phase>, Headline)> {
    let base = agent.url.as_str();
    let mut phases = health_phases(s, http, base).await?;
    let (show, hello) = show_and_hello(s, http, base, &seeded.ids, tmp).await?;
    let turn = turn_phase(s, http, &[agent]).await?;
    let delegator = AgentSpec {
        data_dir: tmp.join("data-a"),
        ..spec.clone()
    };
    let a2a_reply = a2a_reply_phase(s, http, &agent.url).await?;
    let a2a = a2a_phase(s, http, delegator, std::slice::from_ref(&agent.url)).await?;
    let a2a_sdk = anchors::a2a_sdk(s, http, &tmp.join("a2a-sdk.log")).await;
    let headline = Headline {
        turn: turn.clone(),
        a2a_reply: a2a_reply.clone(),
        a2a: a2a.clone(),
        a2a_sdk,
        show: show[0].clone(),
        hello,
        bundle: bundle::Bundle::measure(&s.web_dist),
        overload: Vec::new(),
    };
    phases.extend(show);
    phases.extend([turn, a2a_reply, a2a]);
    Ok((phases, headline))
}

/// Writes the stored conversations into `data_dir`, off the runtime.
async fn seed_data(s: &Settings, data_dir: &Path) -> Result<Seeded> {
    eprintln!(
        "loadgen: seeding {} conversations in {}",
        s.conversations,
        data_dir.display()
    );
    let (conversations, dir) = (s.conversations, data_dir.to_path_buf());
    tokio::task::spawn_blocking(move || seed::seed(&dir, conversations))
        .await
        .context("the seeding task failed")?
}

/// Phase 1: startup, repeated; the last instance serves the load phases.
async fn startups(
    s: &Settings,
    spec: &AgentSpec,
    http: &reqwest::Client,
) -> Result<(Vec<StartupRun>, AgentProcess)> {
    let mut startup = Vec::new();
    let mut agent = None;
    for run in 1..=s.startup_runs {
        eprintln!("loadgen: startup run {run}/{}", s.startup_runs);
        let started = AgentProcess::start(spec, http).await?;
        let mut record = StartupRun {
            listening: started.listening_after,
            healthy: started.startup,
            rss: started.rss_bytes(),
            stop: None,
        };
        if run < s.startup_runs {
            let (status, took) = started.stop().await?;
            ensure!(
                status.success(),
                "the agent exited with {status} on SIGTERM"
            );
            record.stop = Some(took);
        } else {
            agent = Some(started);
        }
        startup.push(record);
    }
    let agent = agent.context("no agent instance is left for the load phases")?;
    Ok((startup, agent))
}

/// Phase 2: `GET /health`.
async fn health_phases(s: &Settings, http: &reqwest::Client, base: &str) -> Result<Vec<Phase>> {
    eprintln!("loadgen: GET /health");
    let health = {
        let (http, url) = (http.clone(), Arc::new(format!("{base}/health")));
        move |_client: usize, _iteration: usize| {
            let (http, url) = (http.clone(), url.clone());
            async move { get_ok(&http, &url, b"{\"status\":\"ok\"").await }
        }
    };
    get_phases(
        s,
        "2. GET /health".into(),
        "2b. GET /health, few clients",
        health,
    )
    .await
}

/// Phase 3: `GET /conversations/{id}` on random stored conversations.
async fn show_phases(
    s: &Settings,
    http: &reqwest::Client,
    base: &str,
    ids: &[Uuid],
) -> Result<Vec<Phase>> {
    eprintln!("loadgen: GET /conversations/{{id}}");
    let shows = requests::RandomShows::new(http, base, ids);
    let show = move |client: usize, iteration: usize| shows.get(client, iteration);
    get_phases(
        s,
        format!("3. GET /conversations/{{id}} ({} stored)", s.conversations),
        "3b. GET /conversations/{id}, few clients",
        show,
    )
    .await
}

/// Phase 3 and its anchor, the axum hello-world, in `s.get_rounds`
/// alternating rounds; each reported as its median round by rate.
async fn show_and_hello(
    s: &Settings,
    http: &reqwest::Client,
    base: &str,
    ids: &[Uuid],
    tmp: &Path,
) -> Result<(Vec<Phase>, anchors::Anchor)> {
    let mut show = show_phases(s, http, base, ids).await?;
    let mut shows = vec![show[0].clone()];
    let mut hellos = Vec::new();
    for round in 1..=s.get_rounds {
        if round > 1 {
            eprintln!("loadgen: GET /conversations/{{id}}, round {round}");
            let phases = show_phases(&s.one_get_phase(), http, base, ids).await?;
            shows.extend(phases);
        }
        let log = tmp.join(format!("hello-{round}.log"));
        hellos.push(anchors::hello(s, http, &log).await);
    }
    show[0] = phase::median_by_rate(shows);
    if s.get_rounds > 1 {
        show[0].name = format!("{} (median of {} rounds)", show[0].name, s.get_rounds);
    }
    Ok((show, anchors::Anchor::median(hellos)))
}

/// A GET phase: a warm-up, the measured run at full concurrency (p99
/// target 5 ms) and, unless `--low-clients 0`, one with few clients.
async fn get_phases<F, Fut>(s: &Settings, name: String, few_name: &str, op: F) -> Result<Vec<Phase>>
where
    F: Fn(usize, usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    load::run(s.clients, s.get_warmup, op.clone()).await?;
    let full = load::run(s.clients, s.get_budget, op.clone());
    let mut phases = vec![Phase::measure(name, "req", Some(Duration::from_millis(5)), full).await?];
    if s.low_clients > 0 {
        let few = load::run(s.low_clients, s.low_budget, op);
        phases.push(Phase::measure(few_name.into(), "req", None, few).await?);
    }
    Ok(phases)
}

/// The warm-up of the turn and A2A phases: one request per client.
fn turn_warmup(s: &Settings) -> Budget {
    Budget {
        requests: s.clients,
        duration: Duration::from_secs(30),
    }
}

/// Phase 4: full turns, one conversation per client, on `agents` (several:
/// replicas on one database): conversations are created and turns sent
/// round-robin over them, request by request.
async fn turn_phase(
    s: &Settings,
    http: &reqwest::Client,
    agents: &[&AgentProcess],
) -> Result<Phase> {
    eprintln!("loadgen: full turns (\"list resources\")");
    let bases: Vec<&str> = agents.iter().map(|a| a.url.as_str()).collect();
    let create = (0..s.clients).map(|c| create_conversation(http, bases[c % bases.len()]));
    let created = futures::future::try_join_all(create)
        .await
        .with_context(|| format!("agent output:\n{}", tails(agents)))?;
    // `send_urls[replica][client]`: the client's conversation on each.
    let send_urls: Arc<Vec<Vec<String>>> = Arc::new(
        bases
            .iter()
            .map(|base| {
                created
                    .iter()
                    .map(|id| format!("{base}/conversations/{id}/messages"))
                    .collect()
            })
            .collect(),
    );
    let next = RoundRobin::new(bases.len());
    let turn = {
        let http = http.clone();
        move |client: usize, _iteration: usize| {
            let (http, urls, replica) = (http.clone(), send_urls.clone(), next.pick());
            async move { list_resources(&http, &urls[replica][client]).await }
        }
    };
    load::run(s.clients, turn_warmup(s), turn.clone()).await?;
    let measured = load::run(s.clients, s.turn_budget, turn);
    Phase::measure(
        "4. full turn \"list resources\"".into(),
        "turn",
        None,
        measured,
    )
    .await
}

/// The last lines of each agent's output (with its URL when several).
fn tails(agents: &[&AgentProcess]) -> String {
    match agents {
        [agent] => agent.tail(),
        _ => agents
            .iter()
            .map(|a| format!("[{}]\n{}", a.url, a.tail()))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// Phase 5: A2A `message/send` to the agent at `base`, answered by its
/// model, with the same clients and budget as the turns.
async fn a2a_reply_phase(s: &Settings, http: &reqwest::Client, base: &str) -> Result<Phase> {
    eprintln!("loadgen: A2A message/send, model reply");
    let url = Arc::new(format!("{base}/a2a"));
    let reply = {
        let http = http.clone();
        move |_client: usize, _iteration: usize| {
            let (http, url) = (http.clone(), url.clone());
            async move { requests::a2a_reply(&http, &url).await }
        }
    };
    load::run(s.clients, turn_warmup(s), reply.clone()).await?;
    let measured = load::run(s.clients, s.a2a_budget, reply);
    Phase::measure(
        "5. A2A message/send, model reply".into(),
        "req",
        None,
        measured,
    )
    .await
}

/// Phase 6: A2A `message/send` through an A -> B chain: A (the delegator,
/// started here from `spec`: its data dir and store) hands every task to
/// this agent (B, at `bases[0]`) over A2A. With several B (replicas on one
/// database), one A per B (A_i delegating to B_i, the A on one store too),
/// and the requests go round-robin over the A.
async fn a2a_phase(
    s: &Settings,
    http: &reqwest::Client,
    spec: AgentSpec,
    bases: &[String],
) -> Result<Phase> {
    eprintln!("loadgen: A2A message/send through A -> B");
    let orchestrators = delegators(s, http, spec, bases).await?;
    let a2a_urls: Arc<Vec<String>> = Arc::new(
        orchestrators
            .iter()
            .map(|a| format!("{}/a2a", a.url))
            .collect(),
    );
    let next = RoundRobin::new(a2a_urls.len());
    let chain = {
        let http = http.clone();
        move |_client: usize, _iteration: usize| {
            let (http, urls, pick) = (http.clone(), a2a_urls.clone(), next.pick());
            async move { a2a_list(&http, &urls[pick]).await }
        }
    };
    load::run(s.clients, turn_warmup(s), chain.clone()).await?;
    let measured = load::run(s.clients, s.turn_budget, chain);
    let name = "6. A2A message/send, A -> B chain".into();
    let phase = Phase::measure(name, "req", None, measured).await?;
    for orchestrator in orchestrators {
        orchestrator.stop().await?;
    }
    Ok(phase)
}

/// One delegator (A) per B at `bases`, started one after the other from
/// `spec` (the i-th after the first with the data dir `<data dir>-<i>`).
async fn delegators(
    s: &Settings,
    http: &reqwest::Client,
    mut spec: AgentSpec,
    bases: &[String],
) -> Result<Vec<AgentProcess>> {
    spec.config = s.config.with_file_name("agent-delegator.yaml");
    let data_dir = spec.data_dir.clone();
    let mut started = Vec::new();
    for (i, base) in bases.iter().enumerate() {
        let mut one = spec.clone();
        if i > 0 {
            one.data_dir = PathBuf::from(format!("{}-{i}", data_dir.display()));
        }
        one.env.push(("DOWNSTREAM_URL".into(), base.clone()));
        started.push(AgentProcess::start(&one, http).await?);
    }
    Ok(started)
}
