//! Bounded under overload: many concurrent clients (1,000 by default) on a
//! fresh agent, first doing full turns, then (on another fresh agent)
//! `GET /conversations/{id}`, each for a fixed time, with the agent's
//! thread count and resident memory (`Threads`, `VmRSS` of
//! `/proc/<pid>/status`) sampled at the start, at their peak during the
//! load, at its end, and after an idle wait once the clients have gone
//! (their connections closed). Every request is counted:
//! slower than 2 s, answered non-2xx (503 apart), or never answered.
//!
//! Refusals are expected here, so a phase does not stop on errors; it is
//! bounded by its time alone.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::Settings;
use crate::agent::{AgentProcess, AgentSpec};
use crate::load::{self, Budget};
use crate::phase::{Phase, ms};
use crate::requests::{RandomShows, create_conversation, http_client, list_resources};

/// A request slower than this is a stall.
pub const SLOW: Duration = Duration::from_secs(2);
/// How often the sampler reads `/proc/<pid>/status`.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// Conversations created at once before the turn load.
const CREATE_AT_ONCE: usize = 100;

/// How the overload phases run (`--overload-*`).
#[derive(Debug, Clone, Copy)]
pub struct OverloadSettings {
    /// Concurrent clients (0: no overload phases).
    pub clients: usize,
    /// Length of each load.
    pub duration: Duration,
    /// Turns after which a client starts a new conversation (0: never).
    pub turns_per_conversation: usize,
    /// Idle wait before the last sample.
    pub idle: Duration,
}

/// Threads and resident memory of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcSample {
    pub threads: u64,
    /// Bytes.
    pub rss: u64,
    /// Bytes of `rss` that are the process's own (`RssAnon`: heap,
    /// stacks). The rest is mostly the binary's code (`RssFile`): pages
    /// shared with the page cache, which the kernel may take back.
    pub anon: u64,
}

impl ProcSample {
    /// Reads `/proc/<pid>/status` (Linux only).
    pub fn of(pid: u32) -> Option<ProcSample> {
        parse_status(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
    }

    /// The larger of each figure.
    fn max(self, other: ProcSample) -> ProcSample {
        ProcSample {
            threads: self.threads.max(other.threads),
            rss: self.rss.max(other.rss),
            anon: self.anon.max(other.anon),
        }
    }
}

/// `Threads:`, `VmRSS:` and `RssAnon:` (kB) of a `/proc/<pid>/status`
/// text.
pub fn parse_status(text: &str) -> Option<ProcSample> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].split_whitespace().next()?.parse().ok()
    };
    Some(ProcSample {
        threads: field("Threads:")?,
        rss: field("VmRSS:")? * 1024,
        anon: field("RssAnon:")? * 1024,
    })
}

/// One overload phase's figures.
#[derive(Debug, Clone)]
pub struct Overload {
    /// `turns` or `GET /conversations/{id}`.
    pub work: String,
    /// The requests.
    pub phase: Phase,
    /// The fresh agent, before any request.
    pub start: Option<ProcSample>,
    /// The largest thread count and RSS seen during the load (each its own
    /// maximum).
    pub peak: Option<ProcSample>,
    /// Right after the load.
    pub end: Option<ProcSample>,
    /// After `idle` without requests.
    pub after_idle: Option<ProcSample>,
    pub idle: Duration,
}

impl Overload {
    pub fn to_json(&self) -> Value {
        let sample = |s: Option<ProcSample>| {
            s.map(|s| json!({"threads": s.threads, "rss_bytes": s.rss, "rss_anon_bytes": s.anon}))
        };
        let r = &self.phase.result;
        json!({
            "work": self.work,
            "clients": r.clients,
            "seconds": r.budget.duration.as_secs_f64(),
            "ok": r.ok(),
            "rate_per_second": r.rate(),
            "p99_ms": ms(r.percentile(99.0)),
            "max_ms": ms(r.max()),
            "slower_than_2s": r.slower_than(SLOW),
            "non_2xx": r.non_success(),
            "status_503": r.answered(503),
            "statuses": r.statuses,
            "no_answer": r.errors - r.non_success(),
            "first_error": r.first_error,
            "start": sample(self.start),
            "peak": sample(self.peak),
            "end": sample(self.end),
            "after_idle": sample(self.after_idle),
            "idle_seconds": self.idle.as_secs_f64(),
            "load_average_before": self.phase.load.0,
            "load_average_after": self.phase.load.1,
        })
    }
}

/// Both overload phases on fresh agents started from `spec` (the seeded
/// data directory, whose conversations `ids` the GETs read).
pub async fn run(s: &Settings, spec: &AgentSpec, ids: &[Uuid]) -> Result<Vec<Overload>> {
    if s.overload.clients == 0 {
        return Ok(Vec::new());
    }
    // A client each: its connections close before the idle wait.
    let turns = turn_overload(s, spec, http_client(s.overload.clients)?).await?;
    let gets = get_overload(s, spec, http_client(s.overload.clients)?, ids).await?;
    Ok(vec![turns, gets])
}

/// Full turns, each client on a conversation of its own (created first,
/// [`CREATE_AT_ONCE`] at a time, while the sampler already runs).
async fn turn_overload(
    s: &Settings,
    spec: &AgentSpec,
    client: reqwest::Client,
) -> Result<Overload> {
    let clients = s.overload.clients;
    let work = match s.overload.turns_per_conversation {
        0 => "turns".to_string(),
        n => format!("turns, a new conversation every {n}"),
    };
    eprintln!("loadgen: overload, {clients} clients doing {work}");
    let http = &client;
    let agent = AgentProcess::start(spec, http).await?;
    let (start, sampler) = (ProcSample::of(agent.pid), Sampler::start(agent.pid));
    let ids: Vec<Uuid> = futures::stream::iter(0..clients)
        .map(|_| create_conversation(http, &agent.url))
        .buffered(CREATE_AT_ONCE)
        .try_collect()
        .await
        .with_context(|| {
            format!(
                "cannot create the overload conversations; agent output:\n{}",
                agent.tail()
            )
        })?;
    let base = agent.url.clone();
    let urls: Arc<Vec<std::sync::Mutex<String>>> = Arc::new(
        ids.iter()
            .map(|id| std::sync::Mutex::new(messages_url(&base, *id)))
            .collect(),
    );
    let every = s.overload.turns_per_conversation;
    let turn = {
        let http = http.clone();
        move |client: usize, iteration: usize| {
            let (http, urls, base) = (http.clone(), urls.clone(), base.clone());
            async move {
                if every > 0 && iteration > 0 && iteration.is_multiple_of(every) {
                    let id = create_conversation(&http, &base).await?;
                    *lock(&urls[client]) = messages_url(&base, id);
                }
                let url = lock(&urls[client]).clone();
                list_resources(&http, &url).await
            }
        }
    };
    let phase = measure(s, &work, "turn", turn).await?;
    settle(s, agent, &work, phase, (start, sampler), client).await
}

fn messages_url(base: &str, id: Uuid) -> String {
    format!("{base}/conversations/{id}/messages")
}

fn lock(url: &std::sync::Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    url.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `GET /conversations/{id}` on random seeded conversations.
async fn get_overload(
    s: &Settings,
    spec: &AgentSpec,
    client: reqwest::Client,
    ids: &[Uuid],
) -> Result<Overload> {
    let http = &client;
    let work = "GET /conversations/{id}";
    eprintln!(
        "loadgen: overload, {} clients doing {work}",
        s.overload.clients
    );
    let agent = AgentProcess::start(spec, http).await?;
    let (start, sampler) = (ProcSample::of(agent.pid), Sampler::start(agent.pid));
    let shows = RandomShows::new(http, &agent.url, ids);
    let show = move |client: usize, iteration: usize| shows.get(client, iteration);
    let phase = measure(s, work, "req", show).await?;
    settle(s, agent, work, phase, (start, sampler), client).await
}

/// The load itself: every client for the whole duration, errors or not.
async fn measure<F, Fut>(s: &Settings, work: &str, unit: &'static str, op: F) -> Result<Phase>
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    let o = s.overload;
    let budget = Budget {
        requests: u32::MAX as usize,
        duration: o.duration,
    };
    let run = load::run_with(o.clients, budget, usize::MAX, op);
    let name = format!("overload: {} clients, {work}", o.clients);
    Phase::measure(name, unit, None, run).await
}

/// Samples the end, closes the clients' connections (drops `client`),
/// waits idle, samples again and stops the agent.
async fn settle(
    s: &Settings,
    agent: AgentProcess,
    work: &str,
    phase: Phase,
    (start, sampler): (Option<ProcSample>, Sampler),
    client: reqwest::Client,
) -> Result<Overload> {
    let end = ProcSample::of(agent.pid);
    let peak = sampler.finish().await;
    drop(client);
    eprintln!("loadgen: idle for {:?}", s.overload.idle);
    tokio::time::sleep(s.overload.idle).await;
    let after_idle = ProcSample::of(agent.pid);
    agent.stop().await?;
    Ok(Overload {
        work: work.to_string(),
        phase,
        start,
        peak,
        end,
        after_idle,
        idle: s.overload.idle,
    })
}

/// Reads a process's threads and RSS every [`SAMPLE_EVERY`] in the
/// background, keeping each one's maximum.
struct Sampler {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Option<ProcSample>>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut peak: Option<ProcSample> = None;
            loop {
                if let Some(now) = ProcSample::of(pid) {
                    peak = Some(peak.map_or(now, |p| p.max(now)));
                }
                tokio::select! {
                    _ = &mut stopped => return peak,
                    _ = tokio::time::sleep(SAMPLE_EVERY) => {}
                }
            }
        });
        Sampler { stop, task }
    }

    /// Stops sampling; the peaks (None when nothing could be read).
    async fn finish(self) -> Option<ProcSample> {
        let _ = self.stop.send(());
        self.task.await.ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_and_rss_are_read_from_proc_status() {
        let status = "Name:\tagent\nVmPeak:\t  900000 kB\nVmRSS:\t   25600 kB\n\
                      RssAnon:\t    6400 kB\nRssFile:\t   19200 kB\nThreads:\t5\n";
        assert_eq!(
            parse_status(status),
            Some(ProcSample {
                threads: 5,
                rss: 25600 * 1024,
                anon: 6400 * 1024,
            })
        );
        assert_eq!(parse_status("Name:\tzombie\nThreads:\t1\n"), None);
        let me = ProcSample::of(std::process::id()).expect("this process's status");
        assert!(me.threads >= 1 && me.rss > me.anon && me.anon > 0, "{me:?}");
    }

    #[tokio::test]
    async fn the_sampler_keeps_each_peak() {
        let sampler = Sampler::start(std::process::id());
        tokio::time::sleep(SAMPLE_EVERY * 2).await;
        let peak = sampler.finish().await.expect("samples of this process");
        assert!(peak.threads >= 1 && peak.rss > 0, "{peak:?}");
        let a = ProcSample {
            threads: 9,
            rss: 10,
            anon: 7,
        };
        let b = ProcSample {
            threads: 5,
            rss: 20,
            anon: 6,
        };
        assert_eq!(
            a.max(b),
            ProcSample {
                threads: 9,
                rss: 20,
                anon: 7,
            }
        );
    }
}
