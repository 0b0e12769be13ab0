//! The closed-loop load runner: N concurrent clients, each sending its next
//! request as soon as the previous one is answered, until a fixed number of
//! requests has been issued or a time limit has passed, whichever first.
//!
//! Each client records its latencies in its own `Vec<Duration>`; the vectors
//! are merged and sorted once at the end, and percentiles are read by the
//! nearest-rank method.

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
    let op = Arc::new(op);
    let issued = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let max_errors = (budget.requests / 10).max(50);
    let started = Instant::now();
    let deadline = started + budget.duration;
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (op, issued, failed) = (op.clone(), issued.clone(), failed.clone());
            tokio::spawn(async move {
                let mut latencies =
                    Vec::with_capacity(budget.requests.div_ceil(clients.max(1)) + 16);
                let mut first_error = None;
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
                    let latency = sent.elapsed();
                    iteration += 1;
                    match outcome {
                        Ok(()) => latencies.push(latency),
                        Err(error) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                            first_error.get_or_insert_with(|| format!("{error:#}"));
                        }
                    }
                }
                (latencies, first_error)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(budget.requests);
    let mut first_error = None;
    for task in futures::future::join_all(tasks).await {
        let (mine, error) = task.map_err(|e| anyhow!("a load client task failed: {e}"))?;
        latencies.extend(mine);
        if first_error.is_none() {
            first_error = error;
        }
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Ok(PhaseResult {
        clients,
        budget,
        latencies,
        errors: failed.load(Ordering::Relaxed),
        first_error,
        elapsed,
    })
}

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
}
