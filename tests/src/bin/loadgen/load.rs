//! The closed-loop load runner: N concurrent clients, each sending its next
//! request as soon as the previous one is answered, until a fixed number of
//! requests has been issued or a time limit has passed, whichever first.
//!
//! Each client records its latencies in its own `Vec<Duration>`; the vectors
//! are merged and sorted once at the end, and percentiles are read by the
//! nearest-rank method.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

/// When a phase stops.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Requests to issue in total, over all clients.
    pub requests: usize,
    /// Time limit.
    pub duration: Duration,
}

/// What one phase measured.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    /// Concurrent clients.
    pub clients: usize,
    /// The budget it ran with.
    pub budget: Budget,
    /// Successful requests; their latencies, sorted.
    pub latencies: Vec<Duration>,
    /// Failed requests.
    pub errors: usize,
    /// How long each failed request took (unsorted).
    pub failed_latencies: Vec<Duration>,
    /// Failed requests answered with an HTTP status, by status code.
    pub statuses: BTreeMap<u16, usize>,
    /// The first failure, for the report.
    pub first_error: Option<String>,
    /// Wall time from the first request to the last answer.
    pub elapsed: Duration,
}

impl PhaseResult {
    /// Successful requests.
    pub fn ok(&self) -> usize {
        self.latencies.len()
    }

    /// Successful requests per second of wall time.
    pub fn rate(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.ok() as f64 / secs
        } else {
            0.0
        }
    }

    /// Nearest-rank percentile (`p` in 0..=100); zero without samples.
    pub fn percentile(&self, p: f64) -> Duration {
        percentile(&self.latencies, p)
    }

    /// The slowest successful request.
    pub fn max(&self) -> Duration {
        self.latencies.last().copied().unwrap_or_default()
    }

    /// Mean latency.
    pub fn mean(&self) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        self.latencies.iter().sum::<Duration>() / self.latencies.len() as u32
    }

    /// Requests (answered or failed) that took longer than `limit`.
    pub fn slower_than(&self, limit: Duration) -> usize {
        let ok = self.latencies.len() - self.latencies.partition_point(|l| *l <= limit);
        ok + self.failed_latencies.iter().filter(|l| **l > limit).count()
    }

    /// Failed requests answered with `status`.
    pub fn answered(&self, status: u16) -> usize {
        self.statuses.get(&status).copied().unwrap_or(0)
    }

    /// Failed requests answered with any HTTP status (non-2xx answers).
    pub fn non_success(&self) -> usize {
        self.statuses.values().sum()
    }

    /// True when the phase stopped on its time limit.
    pub fn hit_time_limit(&self) -> bool {
        self.ok() + self.errors < self.budget.requests
    }
}

/// Picks which of `n` targets (agent replicas) the next request goes to:
/// round-robin over all clients, request by request.
#[derive(Debug, Clone)]
pub struct RoundRobin {
    next: Arc<AtomicUsize>,
    n: usize,
}

impl RoundRobin {
    /// Over `n` targets (at least one).
    pub fn new(n: usize) -> RoundRobin {
        RoundRobin {
            next: Arc::new(AtomicUsize::new(0)),
            n: n.max(1),
        }
    }

    /// The next target's index.
    pub fn pick(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.n
    }
}

/// Nearest-rank percentile of sorted samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs `op(client, iteration)` from `clients` concurrent tasks within
/// `budget`. A phase also stops early once a tenth of its requests (at least
/// 50) have failed, so a dead server does not spin until the time limit.
pub async fn run<F, Fut>(clients: usize, budget: Budget, op: F) -> Result<PhaseResult>
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    run_with(clients, budget, (budget.requests / 10).max(50), op).await
}

/// [`run`], stopping early once `max_errors` requests have failed (the
/// overload phases expect refusals and pass `usize::MAX`).
pub async fn run_with<F, Fut>(
    clients: usize,
    budget: Budget,
    max_errors: usize,
    op: F,
) -> Result<PhaseResult>
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let op = Arc::new(op);
    let issued = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + budget.duration;
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (op, issued, failed) = (op.clone(), issued.clone(), failed.clone());
            tokio::spawn(async move {
                let mut tally = Tally::new(budget.requests.div_ceil(clients.max(1)));
                let mut iteration = 0;
                loop {
                    if Instant::now() >= deadline
                        || failed.load(Ordering::Relaxed) >= max_errors
                        || issued.fetch_add(1, Ordering::Relaxed) >= budget.requests
                    {
                        break;
                    }
                    let sent = Instant::now();
                    let outcome = op(client, iteration).await;
                    iteration += 1;
                    if !tally.record(outcome, sent.elapsed()) {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                tally
            })
        })
        .collect();
    let mut all = Tally::new(0);
    for task in futures::future::join_all(tasks).await {
        all.merge(task.map_err(|e| anyhow!("a load client task failed: {e}"))?);
    }
    let elapsed = started.elapsed();
    all.latencies.sort_unstable();
    Ok(PhaseResult {
        clients,
        budget,
        errors: all.failed_latencies.len(),
        latencies: all.latencies,
        failed_latencies: all.failed_latencies,
        statuses: all.statuses,
        first_error: all.first_error,
        elapsed,
    })
}

/// What one client (then all of them, merged) saw.
struct Tally {
    latencies: Vec<Duration>,
    failed_latencies: Vec<Duration>,
    statuses: BTreeMap<u16, usize>,
    first_error: Option<String>,
}

impl Tally {
    /// Room for about `expected` answers (at most a few thousand up front).
    fn new(expected: usize) -> Tally {
        Tally {
            latencies: Vec::with_capacity(expected.min(4096) + 16),
            failed_latencies: Vec::new(),
            statuses: BTreeMap::new(),
            first_error: None,
        }
    }

    /// Records one request; false when it failed. A failure that is an
    /// [`HttpStatus`] is also counted by its status code.
    fn record(&mut self, outcome: Result<()>, latency: Duration) -> bool {
        match outcome {
            Ok(()) => {
                self.latencies.push(latency);
                true
            }
            Err(error) => {
                self.failed_latencies.push(latency);
                if let Some(answer) = error.downcast_ref::<HttpStatus>() {
                    *self.statuses.entry(answer.status).or_default() += 1;
                }
                self.first_error.get_or_insert_with(|| format!("{error:#}"));
                false
            }
        }
    }

    fn merge(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.failed_latencies.extend(other.failed_latencies);
        for (status, n) in other.statuses {
            *self.statuses.entry(status).or_default() += n;
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// A request answered with an unexpected HTTP status: the load runner
/// counts these by status (e.g. 503 under overload).
#[derive(Debug)]
pub struct HttpStatus {
    /// The status code.
    pub status: u16,
    /// `GET <url> answered 503 Service Unavailable: <start of the body>`.
    pub message: String,
}

impl std::fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HttpStatus {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&samples, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&samples, 100.0), Duration::from_millis(100));
        assert_eq!(percentile(&samples, 0.0), Duration::from_millis(1));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
    }

    #[test]
    fn round_robin_cycles_over_every_target() {
        let next = RoundRobin::new(3);
        let other = next.clone();
        let picks: Vec<usize> = (0..6)
            .map(|i| {
                if i % 2 == 0 {
                    next.pick()
                } else {
                    other.pick()
                }
            })
            .collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
        assert_eq!(RoundRobin::new(0).pick(), 0);
    }

    #[tokio::test]
    async fn refusals_are_counted_by_status_and_stalls_by_time() {
        // Every third request is refused with 503, every fifth other one
        // fails without an answer; the fourth is slow.
        let op = |_client: usize, i: usize| async move {
            if i == 3 {
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            match i {
                _ if i.is_multiple_of(3) => Err(HttpStatus {
                    status: 503,
                    message: "POST /x answered 503".into(),
                }
                .into()),
                _ if i.is_multiple_of(5) => Err(anyhow!("connection reset")),
                _ => Ok(()),
            }
        };
        let budget = Budget {
            requests: 12,
            duration: Duration::from_secs(30),
        };
        let r = run_with(1, budget, usize::MAX, op).await.unwrap();
        // i = 0..12: 503 for 0, 3, 6, 9; no answer for 5, 10.
        assert_eq!((r.ok(), r.errors), (6, 6));
        assert_eq!(r.answered(503), 4);
        assert_eq!(r.non_success(), 4);
        assert_eq!(r.slower_than(Duration::from_millis(20)), 1);
        assert_eq!(r.first_error.as_deref(), Some("POST /x answered 503"));
    }
}
