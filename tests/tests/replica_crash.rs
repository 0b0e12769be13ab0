//! Replicas killed at random moments while approvals are decided
//! concurrently: whatever the moment, every conversation ends in a final
//! state someone can act on — no approval left `executing`, no turn left
//! marked in progress, no call run twice, and a call that may have run
//! without its result being recorded reported "may have run".
//!
//! Three replicas on one database share one `mcp-resources` SQLite file,
//! so the test counts what the tool really did. Each round raises a few
//! approvals, approves each on two replicas at once, SIGKILLs a random
//! replica at a random moment and starts it again. The choices come from
//! a seeded generator: the seed is printed, `ASG_CRASH_SEED=<seed>`
//! replays them (the timings of a loaded machine still vary) and
//! `ASG_CRASH_ROUNDS=<n>` runs more rounds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use asg_tests::pg::TestDb;
use asg_tests::{Agent, AgentOptions, approval_uuid, conversation_id, testdata};
use futures::future::join_all;
use serde_json::{Value, json};

/// Rounds by default: one to two minutes on a loaded two-core machine.
const ROUNDS: usize = 20;
/// Conversations raised and approved per round.
const PER_ROUND: usize = 3;
/// How long each tool call takes (a window to be killed in).
const TOOL_DELAY_MS: &str = "300";
/// The kill lands this long (at most) after the approvals were sent.
const KILL_WINDOW_MS: u64 = 900;
/// How long a round may take to settle: the lease of a killed holder
/// (10 s) plus a sweep (2 s), with room for a loaded machine.
const SETTLE: Duration = Duration::from_secs(45);

/// A small seeded generator (SplitMix64): replayable choices, no crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The three replicas, their shared tool database and how to restart one.
struct Cluster {
    agents: Vec<Agent>,
    config: PathBuf,
    env: Vec<(String, String)>,
    tool_db: PathBuf,
}

impl Cluster {
    async fn start(db: &TestDb, dir: &Path) -> Cluster {
        let tool_db = dir.join("resources.db");
        let env = vec![
            ("DATABASE_URL".to_string(), db.url.clone()),
            (
                "MCP_RESOURCES_DB".to_string(),
                tool_db.display().to_string(),
            ),
            (
                "MCP_RESOURCES_DELAY_MS".to_string(),
                TOOL_DELAY_MS.to_string(),
            ),
        ];
        let mut cluster = Cluster {
            agents: Vec::new(),
            config: testdata("agent-resources.yaml"),
            env,
            tool_db,
        };
        for _ in 0..3 {
            let agent = cluster.spawn().await;
            cluster.agents.push(agent);
        }
        cluster
    }

    async fn spawn(&self) -> Agent {
        let options = AgentOptions {
            env: self.env.clone(),
            ..Default::default()
        };
        Agent::start(&self.config, options).await
    }

    /// SIGKILL replica `n`, then a fresh process in its place.
    async fn crash(&mut self, n: usize) {
        self.agents[n].kill();
        self.agents[n] = self.spawn().await;
    }

    /// Rows the tool wrote under `name`.
    fn rows_named(&self, name: &str) -> i64 {
        let db = rusqlite::Connection::open(&self.tool_db).expect("open the tool's database");
        db.busy_timeout(Duration::from_secs(5)).unwrap();
        db.query_row(
            "SELECT count(*) FROM resources WHERE name = ?1",
            [name],
            |row| row.get(0),
        )
        .unwrap_or(0)
    }
}

/// One approval raised in a round.
struct Raised {
    name: String,
    id: String,
    uuid: String,
}

/// `POST /approvals/{uuid}` to `url`; `None` when the replica died.
async fn approve(http: reqwest::Client, url: String, uuid: String) -> Option<u16> {
    let response = http
        .post(format!("{url}/approvals/{uuid}"))
        .json(&json!({"approved": true}))
        .send()
        .await
        .ok()?;
    Some(response.status().as_u16())
}

/// Raises `PER_ROUND` approvals on random replicas.
async fn raise(cluster: &Cluster, rng: &mut Rng, round: usize) -> Vec<Raised> {
    let mut raised = Vec::new();
    for n in 0..PER_ROUND {
        let name = format!("crash-{round}-{n}");
        let agent = &cluster.agents[rng.below(3) as usize];
        let (status, answer) = agent
            .say_new(&format!("add resource {name} with value {n}"))
            .await;
        assert_eq!(status, 201, "{answer}");
        assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
        raised.push(Raised {
            name,
            id: conversation_id(&answer),
            uuid: approval_uuid(&answer),
        });
    }
    raised
}

/// The resources_add results recorded in `conversation`.
fn results(conversation: &Value) -> Vec<Value> {
    conversation["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["tool_result"]["name"] == "resources_add")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Nothing in flight: no turn marked running, no approval executing.
fn settled(conversation: &Value) -> bool {
    let executing = conversation["pending_approvals"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(std::iter::once(&conversation["pending_approval"]))
        .any(|p| p["state"] == "executing");
    conversation["turn_in_progress"] != true && !executing
}

/// Polls a live replica until `id` is settled, or panics after `SETTLE`.
async fn wait_settled(cluster: &Cluster, id: &str, context: &str) -> Value {
    let deadline = Instant::now() + SETTLE;
    let mut turn = 0;
    loop {
        let conversation = cluster.agents[turn % 3].conversation(id).await;
        if settled(&conversation) {
            return conversation;
        }
        assert!(
            Instant::now() < deadline,
            "{context}: still in flight after {SETTLE:?} (a state with no way out): {conversation}"
        );
        turn += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How an approval of a round ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Ran once, its result recorded.
    Ran,
    /// Its replica died in the call: "may have run", not run again.
    Interrupted,
    /// No decision took effect (e.g. the survivor's was refused as busy):
    /// still pending, then decided.
    DecidedAfter,
}

/// The final state of one approval, checked against what the tool did.
async fn check(cluster: &Cluster, raised: &Raised, context: &str) -> Outcome {
    let mut shown = wait_settled(cluster, &raised.id, context).await;
    let mut outcome = Outcome::Ran;
    if shown["status"] == "waiting_approval" {
        // No decision took effect: still decidable, and then it runs once.
        let pending = &shown["pending_approval"];
        assert_eq!(pending["state"], "pending", "{context}: {shown}");
        assert!(results(&shown).is_empty(), "{context}: {shown}");
        assert_eq!(cluster.rows_named(&raised.name), 0, "{context}: {shown}");
        let (status, answer) = cluster.agents[0]
            .decide(&raised.uuid, json!({"approved": true}))
            .await;
        assert_eq!(
            status, 200,
            "{context}: a pending approval is decidable: {answer}"
        );
        shown = wait_settled(cluster, &raised.id, context).await;
        outcome = Outcome::DecidedAfter;
    }
    assert_ne!(shown["status"], "waiting_approval", "{context}: {shown}");
    let results = results(&shown);
    assert_eq!(results.len(), 1, "{context}: one recorded outcome: {shown}");
    let rows = cluster.rows_named(&raised.name);
    assert!(rows <= 1, "{context}: the call ran {rows} times: {shown}");
    let content = results[0]["content"].as_str().unwrap_or("");
    let interrupted = content.contains("may have run");
    if rows == 1 {
        assert!(
            results[0]["tool_result"]["is_error"] == false || interrupted,
            "{context}: it ran, so its result or 'may have run' is recorded: {shown}"
        );
    } else {
        assert!(
            interrupted,
            "{context}: not run, so only an interruption may be recorded: {shown}"
        );
    }
    if interrupted {
        Outcome::Interrupted
    } else {
        outcome
    }
}

/// One round: raise, approve each twice at once, kill a replica at a
/// random moment, restart it, and check every approval's final state.
async fn round(cluster: &mut Cluster, rng: &mut Rng, round: usize, seed: u64) -> Vec<Outcome> {
    let raised = raise(cluster, rng, round).await;
    let mut decisions = Vec::new();
    for one in &raised {
        let first = rng.below(3) as usize;
        let second = (first + 1 + rng.below(2) as usize) % 3;
        for n in [first, second] {
            let agent = &cluster.agents[n];
            let call = approve(agent.http.clone(), agent.url.clone(), one.uuid.clone());
            decisions.push(tokio::spawn(call));
        }
    }
    tokio::time::sleep(Duration::from_millis(rng.below(KILL_WINDOW_MS + 1))).await;
    let victim = rng.below(3) as usize;
    cluster.crash(victim).await;
    let answered = join_all(decisions).await;
    let statuses: Vec<Option<u16>> = answered.into_iter().map(|a| a.ok().flatten()).collect();
    let context = format!("seed {seed}, round {round}, replica {victim} killed, {statuses:?}");
    assert!(
        statuses.iter().flatten().all(|s| [200, 409].contains(s)),
        "{context}"
    );
    let mut outcomes = Vec::new();
    for one in &raised {
        outcomes.push(check(cluster, one, &format!("{context}, {}", one.name)).await);
    }
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_killed_at_any_moment_of_concurrent_approvals_leaves_no_state_without_a_way_out()
{
    let seed = env_number("ASG_CRASH_SEED").unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    let rounds = env_number("ASG_CRASH_ROUNDS").map_or(ROUNDS, |n| n as usize);
    println!("replica crash test: seed {seed} (ASG_CRASH_SEED={seed} replays it), {rounds} rounds");
    let mut rng = Rng(seed);
    let db = TestDb::create().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cluster = Cluster::start(&db, dir.path()).await;
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for n in 0..rounds {
        outcomes.extend(round(&mut cluster, &mut rng, n, seed).await);
        println!("round {n} settled after {:?}", started.elapsed());
    }
    let count = |kind| outcomes.iter().filter(|o| **o == kind).count();
    println!(
        "outcomes: {} ran, {} interrupted (may have run), {} decided after the crash",
        count(Outcome::Ran),
        count(Outcome::Interrupted),
        count(Outcome::DecidedAfter)
    );
}
