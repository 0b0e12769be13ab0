//! Everything we post to Slack goes through one bounded queue, worked in
//! order by one task, so a message is posted before it is updated or
//! replied to, and neither a turn nor a click ever waits for Slack. A
//! post that fails because Slack is unreachable, failing (5xx) or rate
//! limited (429: after its `Retry-After`) is tried again with exponential
//! backoff; one Slack refuses (`ok: false`) is logged and dropped. A full
//! queue drops the newest post with a warning.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::blocks::Message;
use super::shown::ShownMessages;
use super::web_api::{CallError, WebApi};

/// Posts waiting, at most.
pub const QUEUE_CAPACITY: usize = 512;

/// One thing to post.
#[derive(Debug, Clone)]
pub enum Job {
    /// A pending approval's message (`chat.postMessage`; its `ts` is kept).
    Post {
        /// The approval.
        approval: Uuid,
        /// Where.
        channel: String,
        /// What.
        message: Message,
    },
    /// The decided message in place of the pending one (`chat.update`; a
    /// new message when the first was never posted).
    Update {
        /// The approval.
        approval: Uuid,
        /// Its channel.
        channel: String,
        /// The decided message.
        message: Message,
    },
    /// A reply in the approval's thread (a reminder).
    Reply {
        /// The approval.
        approval: Uuid,
        /// Its channel.
        channel: String,
        /// The reply.
        text: String,
    },
    /// A message only `user` sees (`chat.postEphemeral`).
    Ephemeral {
        /// Where.
        channel: String,
        /// The Slack user id.
        user: String,
        /// The message.
        text: String,
    },
}

impl Job {
    /// What the log calls it.
    fn label(&self) -> String {
        match self {
            Job::Post { approval, .. } => format!("approval {approval}"),
            Job::Update { approval, .. } => format!("decision of {approval}"),
            Job::Reply { approval, .. } => format!("reminder of {approval}"),
            Job::Ephemeral { user, .. } => format!("note to {user}"),
        }
    }
}

/// How patiently a post is tried.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// Attempts in all.
    pub attempts: u32,
    /// Wait after the first failure; doubled after each.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Backoff {
    /// About three minutes of outage before a post is given up.
    fn default() -> Self {
        Backoff {
            attempts: 12,
            first: Duration::from_millis(250),
            max: Duration::from_secs(30),
        }
    }
}

/// The queue's sending end; cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    sender: mpsc::Sender<Job>,
}

impl Outbox {
    /// A queue and its receiving end (for [`work`]).
    pub fn new() -> (Outbox, mpsc::Receiver<Job>) {
        let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
        (Outbox { sender }, receiver)
    }

    /// Queues `job` without waiting.
    pub fn push(&self, job: Job) {
        if let Err(error) = self.sender.try_send(job) {
            let job = match error {
                mpsc::error::TrySendError::Full(job) | mpsc::error::TrySendError::Closed(job) => {
                    job
                }
            };
            tracing::warn!(slack = %job.label(), "Slack queue full; post dropped");
        }
    }
}

/// What the worker works with.
pub struct Worker {
    /// The Web API.
    pub api: WebApi,
    /// Where messages are.
    pub shown: Arc<Mutex<ShownMessages>>,
    /// Retry policy.
    pub backoff: Backoff,
    /// Shutdown started: the queue is drained, then the worker ends.
    pub closing: CancellationToken,
    /// Retries still waiting stop.
    pub abort: CancellationToken,
}

/// Works the queue in order until shutdown (then what is queued, until
/// aborted).
pub async fn work(worker: Worker, mut receiver: mpsc::Receiver<Job>) {
    loop {
        let job = tokio::select! {
            job = receiver.recv() => job,
            () = worker.closing.cancelled() => receiver.try_recv().ok(),
        };
        let Some(job) = job else { return };
        if worker.abort.is_cancelled() {
            return;
        }
        worker.deliver(&job).await;
    }
}

impl Worker {
    /// Posts `job`, retrying; true when Slack took it.
    async fn deliver(&self, job: &Job) -> bool {
        let mut delay = self.backoff.first;
        for attempt in 1..=self.backoff.attempts {
            let wait = match self.once(job).await {
                Ok(()) => {
                    tracing::debug!(slack = %job.label(), attempt, "posted to Slack");
                    return true;
                }
                Err(CallError::Refused(why)) => {
                    tracing::warn!(slack = %job.label(), reason = %why, "Slack refused the post; not retried");
                    self.forget(job);
                    return false;
                }
                Err(CallError::RateLimited(after)) => after,
                Err(CallError::Unavailable(why)) => {
                    tracing::warn!(slack = %job.label(), attempt, reason = %why, "Slack post failed; retrying");
                    let wait = delay;
                    delay = (delay * 2).min(self.backoff.max);
                    wait
                }
            };
            if attempt == self.backoff.attempts {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.abort.cancelled() => break,
            }
        }
        tracing::warn!(slack = %job.label(), "Slack post given up");
        self.forget(job);
        false
    }

    /// A decision that was not posted leaves nothing to update.
    fn forget(&self, job: &Job) {
        if let Job::Update { approval, .. } = job {
            self.shown_messages().remove(*approval);
        }
    }

    fn shown_messages(&self) -> std::sync::MutexGuard<'_, ShownMessages> {
        self.shown.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The message's `(channel, ts)`, once posted.
    fn posted_at(&self, approval: Uuid) -> Option<(String, String)> {
        let shown = self.shown_messages().get(approval)?;
        Some((shown.channel, shown.ts?))
    }

    async fn once(&self, job: &Job) -> Result<(), CallError> {
        match job {
            Job::Post {
                approval,
                channel,
                message,
            } => {
                let body =
                    json!({"channel": channel, "text": message.text, "blocks": message.blocks});
                let answer = self.api.call("chat.postMessage", &body).await?;
                let (channel, ts) = (
                    str_of(&answer, "channel", channel),
                    str_of(&answer, "ts", ""),
                );
                self.shown_messages().posted(*approval, &channel, &ts);
            }
            Job::Update {
                approval,
                channel,
                message,
            } => {
                let mut body =
                    json!({"channel": channel, "text": message.text, "blocks": message.blocks});
                let method = match self.posted_at(*approval) {
                    Some((channel, ts)) => {
                        body["channel"] = json!(channel);
                        body["ts"] = json!(ts);
                        "chat.update"
                    }
                    None => "chat.postMessage",
                };
                self.api.call(method, &body).await?;
                self.shown_messages().remove(*approval);
            }
            Job::Reply {
                approval,
                channel,
                text,
            } => {
                let mut body = json!({"channel": channel, "text": text});
                if let Some((channel, ts)) = self.posted_at(*approval) {
                    body["channel"] = json!(channel);
                    body["thread_ts"] = json!(ts);
                }
                self.api.call("chat.postMessage", &body).await?;
            }
            Job::Ephemeral {
                channel,
                user,
                text,
            } => {
                let body = json!({"channel": channel, "user": user, "text": text});
                self.api.call("chat.postEphemeral", &body).await?;
            }
        }
        Ok(())
    }
}

fn str_of(answer: &Value, field: &str, default: &str) -> String {
    answer[field].as_str().unwrap_or(default).to_string()
}

#[cfg(test)]
mod tests {
    use super::super::blocks::Presentation;
    use super::super::shown::Shown;
    use super::*;
    use asg_shared::fixtures::pending_approval;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn worker(server: &MockServer) -> Worker {
        Worker {
            api: WebApi::new(&format!("{}/api", server.uri()), "xoxb-t".into()),
            shown: Arc::new(Mutex::new(ShownMessages::default())),
            backoff: Backoff {
                attempts: 3,
                first: Duration::from_millis(1),
                max: Duration::from_millis(2),
            },
            closing: CancellationToken::new(),
            abort: CancellationToken::new(),
        }
    }

    fn ok(ts: &str) -> ResponseTemplate {
        ResponseTemplate::new(200).set_body_json(json!({"ok": true, "channel": "C1", "ts": ts}))
    }

    fn message() -> Message {
        Message {
            text: "t".into(),
            blocks: json!([]),
        }
    }

    async fn methods(server: &MockServer) -> Vec<String> {
        let requests = server.received_requests().await.unwrap_or_default();
        requests.iter().map(|r| r.url.path().to_string()).collect()
    }

    #[tokio::test]
    async fn a_rate_limited_post_is_sent_again_after_retry_after() {
        let server = MockServer::start().await;
        let limited = ResponseTemplate::new(429).insert_header("retry-after", "0");
        Mock::given(method("POST"))
            .respond_with(limited)
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ok("1.1"))
            .mount(&server)
            .await;
        let worker = worker(&server);
        let job = Job::Ephemeral {
            channel: "C1".into(),
            user: "U1".into(),
            text: "not allowed".into(),
        };
        assert!(worker.deliver(&job).await);
        assert_eq!(methods(&server).await, ["/api/chat.postEphemeral"; 2]);
    }

    #[tokio::test]
    async fn a_refused_post_is_not_retried_and_a_failing_one_is_given_up() {
        let server = MockServer::start().await;
        let refused = ResponseTemplate::new(200)
            .set_body_json(json!({"ok": false, "error": "channel_not_found"}));
        Mock::given(path("/api/chat.postEphemeral"))
            .respond_with(refused)
            .mount(&server)
            .await;
        Mock::given(path("/api/chat.postMessage"))
            .respond_with(ResponseTemplate::new(503))
            .mount(&server)
            .await;
        let worker = worker(&server);
        let note = Job::Ephemeral {
            channel: "C1".into(),
            user: "U1".into(),
            text: "x".into(),
        };
        assert!(!worker.deliver(&note).await);
        assert_eq!(methods(&server).await.len(), 1, "not retried");
        let post = Job::Post {
            approval: uuid::Uuid::nil(),
            channel: "C1".into(),
            message: message(),
        };
        assert!(!worker.deliver(&post).await);
        assert_eq!(methods(&server).await.len(), 1 + 3, "three attempts");
    }

    fn remember(worker: &Worker) -> uuid::Uuid {
        let approval = pending_approval("t");
        let uuid = approval.uuid;
        worker.shown_messages().insert(Shown {
            approval,
            channel: "C1".into(),
            ts: None,
            presentation: Presentation::default(),
        });
        uuid
    }

    #[tokio::test]
    async fn a_decision_updates_the_posted_message_or_posts_one_when_none_was() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ok("7.7"))
            .mount(&server)
            .await;
        let worker = worker(&server);
        let (posted, never_posted) = (remember(&worker), remember(&worker));
        let post = Job::Post {
            approval: posted,
            channel: "C1".into(),
            message: message(),
        };
        assert!(worker.deliver(&post).await);
        for approval in [posted, never_posted] {
            let update = Job::Update {
                approval,
                channel: "C1".into(),
                message: message(),
            };
            assert!(worker.deliver(&update).await);
            assert!(
                worker.shown_messages().get(approval).is_none(),
                "forgotten once decided"
            );
        }
        let requests = server.received_requests().await.unwrap_or_default();
        let calls: Vec<(String, serde_json::Value)> = requests
            .iter()
            .map(|r| {
                (
                    r.url.path().to_string(),
                    serde_json::from_slice(&r.body).unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(calls[0].0, "/api/chat.postMessage");
        assert_eq!(calls[1].0, "/api/chat.update");
        assert_eq!(calls[1].1["ts"], "7.7");
        assert_eq!(
            calls[2].0, "/api/chat.postMessage",
            "nothing to update: posted"
        );
        assert!(calls[2].1.get("ts").is_none());
    }
}
