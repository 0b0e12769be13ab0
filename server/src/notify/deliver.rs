//! Delivery of notifications: POSTs with retries and exponential backoff,
//! off the turn's path. Webhook events go through a bounded queue
//! ([`Deliveries::enqueue`]: full → dropped with a warning); A2A push
//! notifications await [`Deliveries::send`] in a sender task per task
//! (`a2a_push::outbox`). Every delivery
//! runs on one [`TaskTracker`], so shutdown can wait for them within a
//! bound ([`Deliveries::shutdown`]) and then stop the rest.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::ssrf;

/// Time one attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// One POST to make.
#[derive(Clone)]
pub struct Outgoing {
    /// Where.
    pub url: String,
    /// Extra headers (`Content-Type: application/json` is always sent).
    pub headers: Vec<(&'static str, String)>,
    /// The JSON body.
    pub body: Vec<u8>,
    /// What the log calls it (never a secret).
    pub label: String,
    /// `webhook` or `a2a_push`: the metric's label.
    pub kind: &'static str,
    /// Resolve and check the URL against this policy before every attempt
    /// and connect only to the checked addresses (caller-chosen URLs).
    pub ssrf: Option<Arc<ssrf::Policy>>,
}

/// How often and how patiently a delivery is tried.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Attempts in all.
    pub attempts: u32,
    /// Wait after the first failure; doubled after each.
    pub first_delay: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 5,
            first_delay: Duration::from_secs(1),
        }
    }
}

/// What one attempt's status means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx.
    Delivered,
    /// 408, 429, 5xx or a network error: try again later.
    Retry(String),
    /// Anything else: trying again would not help.
    GiveUp(String),
}

/// The verdict on an HTTP status.
pub fn judge(status: u16) -> Verdict {
    match status {
        200..=299 => Verdict::Delivered,
        408 | 429 | 500..=599 => Verdict::Retry(format!("HTTP {status}")),
        300..=399 => Verdict::GiveUp(format!("HTTP {status}: redirects are not followed")),
        _ => Verdict::GiveUp(format!("HTTP {status}")),
    }
}

/// The delivery machinery; cheap to clone.
#[derive(Clone)]
pub struct Deliveries {
    inner: Arc<Inner>,
}

struct Inner {
    client: reqwest::Client,
    retry: Retry,
    tracker: TaskTracker,
    queue: mpsc::Sender<Outgoing>,
    /// No new work; the queue is drained.
    closing: CancellationToken,
    /// Retries and requests still running stop.
    abort: CancellationToken,
}

impl Deliveries {
    /// Starts the queue worker: at most `capacity` queued deliveries and
    /// `concurrency` running at once.
    pub fn start(capacity: usize, concurrency: usize, retry: Retry) -> Deliveries {
        let (queue, receiver) = mpsc::channel(capacity.max(1));
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(ATTEMPT_TIMEOUT)
            .build()
            .unwrap_or_default();
        let deliveries = Deliveries {
            inner: Arc::new(Inner {
                client,
                retry,
                tracker: TaskTracker::new(),
                queue,
                closing: CancellationToken::new(),
                abort: CancellationToken::new(),
            }),
        };
        let worker = deliveries.clone();
        deliveries
            .inner
            .tracker
            .spawn(worker.work(receiver, Arc::new(Semaphore::new(concurrency.max(1)))));
        deliveries
    }

    /// Queues a delivery without waiting; a full queue drops it with a
    /// warning (a turn never waits for a notification).
    pub fn enqueue(&self, job: Outgoing) {
        if let Err(error) = self.inner.queue.try_send(job) {
            let job = match error {
                mpsc::error::TrySendError::Full(job) | mpsc::error::TrySendError::Closed(job) => {
                    job
                }
            };
            tracing::warn!(notification = %job.label, url = %shown(&job.url), "notification queue full; notification dropped");
            crate::metrics::metrics().notification(job.kind, "dropped");
        }
    }

    /// Runs `task` among the deliveries (waited for at shutdown).
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.inner.tracker.spawn(task);
    }

    /// Completes when shutdown starts.
    pub async fn closing(&self) {
        self.inner.closing.cancelled().await;
    }

    /// Shutdown started.
    pub fn is_closing(&self) -> bool {
        self.inner.closing.is_cancelled()
    }

    async fn work(self, mut receiver: mpsc::Receiver<Outgoing>, slots: Arc<Semaphore>) {
        loop {
            let job = tokio::select! {
                job = receiver.recv() => job,
                () = self.inner.closing.cancelled() => receiver.try_recv().ok(),
            };
            let Some(job) = job else { return };
            let Ok(permit) = slots.clone().acquire_owned().await else {
                return;
            };
            let deliveries = self.clone();
            self.inner.tracker.spawn(async move {
                deliveries.send(&job).await;
                drop(permit);
            });
        }
    }

    /// Delivers `job`, retrying with backoff; true when it was delivered.
    pub async fn send(&self, job: &Outgoing) -> bool {
        let delivered = self.try_hard(job).await;
        let result = if delivered { "delivered" } else { "failed" };
        crate::metrics::metrics().notification(job.kind, result);
        delivered
    }

    async fn try_hard(&self, job: &Outgoing) -> bool {
        let retry = self.inner.retry;
        let mut delay = retry.first_delay;
        for attempt in 1..=retry.attempts {
            let verdict = tokio::select! {
                verdict = self.attempt(job) => verdict,
                () = self.inner.abort.cancelled() => Verdict::GiveUp("the agent is shutting down".into()),
            };
            let why = match verdict {
                Verdict::Delivered => {
                    tracing::info!(notification = %job.label, attempt, "notification delivered");
                    return true;
                }
                Verdict::GiveUp(why) => {
                    tracing::warn!(notification = %job.label, url = %shown(&job.url), attempt, reason = %why, "notification not delivered; not retried");
                    return false;
                }
                Verdict::Retry(why) => why,
            };
            if attempt == retry.attempts {
                tracing::warn!(notification = %job.label, url = %shown(&job.url), attempts = attempt, reason = %why, "notification not delivered; giving up");
                return false;
            }
            tracing::info!(notification = %job.label, attempt, reason = %why, retry_in_ms = delay.as_millis() as u64, "notification attempt failed; retrying");
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = self.inner.abort.cancelled() => return false,
            }
            delay = delay.saturating_mul(2);
        }
        false
    }

    async fn attempt(&self, job: &Outgoing) -> Verdict {
        let client = match &job.ssrf {
            None => self.inner.client.clone(),
            Some(policy) => match ssrf::check(&job.url, policy).await {
                Ok(target) => match target.client(ATTEMPT_TIMEOUT) {
                    Ok(client) => client,
                    Err(e) => return Verdict::GiveUp(format!("cannot build a client: {e}")),
                },
                // A name that does not resolve (yet) may later: retried.
                Err(ssrf::Problem::Unresolved(why)) => return Verdict::Retry(why),
                Err(ssrf::Problem::Refused(why)) => {
                    return Verdict::GiveUp(format!("refused: {why}"));
                }
            },
        };
        let mut request = client
            .post(&job.url)
            .header("content-type", "application/json")
            .body(job.body.clone());
        for (name, value) in &job.headers {
            request = request.header(*name, value);
        }
        match request.send().await {
            Ok(response) => judge(response.status().as_u16()),
            Err(e) => Verdict::Retry(describe(&e)),
        }
    }

    /// Stops taking work, waits up to `bound` for queued and running
    /// deliveries, then stops what is left (retries are not waited for).
    pub async fn shutdown(&self, bound: Duration) {
        self.inner.closing.cancel();
        self.inner.tracker.close();
        if tokio::time::timeout(bound, self.inner.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                running = self.inner.tracker.len(),
                "notifications still being delivered at shutdown; stopped"
            );
        }
        self.inner.abort.cancel();
        self.inner.tracker.wait().await;
    }
}

/// A network error without the URL (which may carry a query token).
fn describe(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let mut source = std::error::Error::source(error);
    let mut last = None;
    while let Some(s) = source {
        last = Some(s.to_string());
        source = s.source();
    }
    match last {
        Some(cause) => format!("{kind}: {cause}"),
        None => kind.to_string(),
    }
}

/// A URL for the log: scheme, host, port and path; no query or
/// credentials.
pub fn shown(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}{}{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port().map(|p| format!(":{p}")).unwrap_or_default(),
            u.path()
        ),
        Err(_) => "(invalid URL)".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::sync::Mutex;

    use super::*;
    use crate::notify::A2aPushConfig;
    use ssrf::{Policy, Resolver};

    #[test]
    fn statuses_are_judged() {
        for ok in [200, 201, 202, 204, 299] {
            assert_eq!(judge(ok), Verdict::Delivered, "{ok}");
        }
        for again in [408, 429, 500, 502, 503, 504] {
            assert!(matches!(judge(again), Verdict::Retry(_)), "{again}");
        }
        for never in [301, 302, 307, 400, 401, 403, 404, 410, 422] {
            assert!(matches!(judge(never), Verdict::GiveUp(_)), "{never}");
        }
    }

    #[test]
    fn logged_urls_lose_query_and_credentials() {
        assert_eq!(
            shown("https://u:p@hooks.example.com:8443/a/b?token=s3cret#x"),
            "https://hooks.example.com:8443/a/b"
        );
        assert_eq!(shown("nope"), "(invalid URL)");
    }

    /// A resolver that knows only `late.test`, at the addresses in `now`.
    fn late_resolver(now: Arc<Mutex<Vec<IpAddr>>>) -> Resolver {
        Resolver::Table(Arc::new(move |host: &str| match host {
            "late.test" => now.lock().map(|a| a.clone()).unwrap_or_default(),
            _ => Vec::new(),
        }))
    }

    #[tokio::test]
    async fn a_callback_host_that_resolves_only_later_is_checked_at_each_delivery() {
        use wiremock::matchers::method;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let receiver = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&receiver)
            .await;
        let now = Arc::new(Mutex::new(Vec::new()));
        let strict = Arc::new(Policy {
            rules: A2aPushConfig::default(),
            resolver: late_resolver(now.clone()),
        });
        let url = format!("http://late.test:{}/cb", receiver.address().port());
        // Registration: accepted, with a warning saying why.
        let warning = ssrf::check_registration(&url, &strict).await.unwrap();
        let warning = warning.expect("a warning for a host that does not resolve");
        assert!(warning.contains("late.test"), "{warning}");
        let job = |policy: &Arc<Policy>| Outgoing {
            url: url.clone(),
            headers: Vec::new(),
            body: b"{}".to_vec(),
            label: "late callback".into(),
            kind: "a2a_push",
            ssrf: Some(policy.clone()),
        };
        let deliveries = Deliveries::start(4, 1, Retry::default());
        // Still no address at delivery: tried again later.
        let verdict = deliveries.attempt(&job(&strict)).await;
        assert!(matches!(verdict, Verdict::Retry(_)), "{verdict:?}");
        // It now resolves inside (loopback): refused, nothing sent.
        *now.lock().unwrap() = vec![IpAddr::from([127, 0, 0, 1])];
        match deliveries.attempt(&job(&strict)).await {
            Verdict::GiveUp(why) => assert!(why.contains("loopback"), "{why}"),
            other => panic!("a callback pointing inside was not refused: {other:?}"),
        }
        assert!(receiver.received_requests().await.unwrap().is_empty());
        // Where private networks are allowed, the late address is used.
        let private = Arc::new(Policy {
            rules: A2aPushConfig {
                allow_private_networks: true,
                ..A2aPushConfig::default()
            },
            resolver: late_resolver(now),
        });
        assert_eq!(deliveries.attempt(&job(&private)).await, Verdict::Delivered);
        assert_eq!(receiver.received_requests().await.unwrap().len(), 1);
        deliveries.shutdown(Duration::from_secs(1)).await;
    }
}
