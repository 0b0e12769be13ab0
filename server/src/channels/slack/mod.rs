//! The Slack channel: each approval request and question of the engine's
//! operator inbox is posted as a Block Kit message ([`blocks`]) with
//! buttons; the message is updated in place once the approval is decided
//! anywhere (chat, REST, A2A, Slack, expiry), and a reminder is replied
//! in its thread. A click comes back signed ([`signature`]) to
//! `POST /channels/slack/actions` as a payload ([`payload`]); the Slack
//! user is mapped to a principal (`user_map` by id, else by the email
//! `users.info` gives) and the decision goes to the engine like any
//! other door's ([`interact`]). Posting never blocks a turn: it goes
//! through a bounded queue worked in order with retries ([`outbox`])
//! over a thin Web API client ([`web_api`]). The bot token and signing
//! secret are read from the environment at startup and never logged.

pub mod blocks;
mod interact;
pub mod outbox;
pub mod payload;
pub mod shown;
pub mod signature;
pub mod web_api;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use asg_shared::PendingApproval;
use asg_shared::events::InboxEvent;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::directory::Directory;
use crate::config::channels::SlackConfig;
use crate::engine::Engine;
use blocks::Presentation;
use outbox::{Backoff, Job, Outbox};
use shown::{Shown, ShownMessages};
use web_api::WebApi;

pub use interact::Reply;
pub use signature::SignatureError;

/// How long shutdown waits for posts in flight.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(5);

/// The Slack channel; cheap to clone.
#[derive(Clone)]
pub struct Slack {
    inner: Arc<Inner>,
}

struct Inner {
    config: SlackConfig,
    api: WebApi,
    /// No `Debug` anywhere on the way: never logged.
    signing_secret: Vec<u8>,
    directory: Arc<Directory>,
    engine: Engine,
    shown: Arc<Mutex<ShownMessages>>,
    outbox: Outbox,
    /// Taken by [`Slack::start`].
    queue: Mutex<Option<mpsc::Receiver<Job>>>,
    /// Subscribed at build time, so nothing between build and serve is
    /// missed; taken by [`Slack::start`].
    inbox: Mutex<Option<broadcast::Receiver<InboxEvent>>>,
    /// The web chat's base URL for links (`approval.web_url`, else the
    /// public URL given to `start`).
    link_base: OnceLock<String>,
    web_url: Option<String>,
    tasks: TaskTracker,
    closing: CancellationToken,
    abort: CancellationToken,
}

impl Slack {
    /// Reads the bot token and signing secret from `env` (unset or empty:
    /// an error naming the field and the variable) and subscribes to the
    /// engine's inbox.
    pub fn build(
        config: &SlackConfig,
        engine: &Engine,
        directory: Arc<Directory>,
        env: &dyn Fn(&str) -> Option<String>,
        web_url: Option<String>,
    ) -> Result<Slack, String> {
        let read = |field: &str, variable: &str, what: &str| {
            env(variable).filter(|v| !v.trim().is_empty()).ok_or_else(|| {
                format!("channels.slack.{field}: environment variable {variable} is not set ({what})")
            })
        };
        let token = read(
            "bot_token_env",
            &config.bot_token_env,
            "the Slack bot token",
        )?;
        let secret = read(
            "signing_secret_env",
            &config.signing_secret_env,
            "the Slack app's signing secret",
        )?;
        let (outbox, queue) = Outbox::new();
        Ok(Slack {
            inner: Arc::new(Inner {
                config: config.clone(),
                api: WebApi::new(&config.api_url, token),
                signing_secret: secret.into_bytes(),
                directory,
                engine: engine.clone(),
                shown: Arc::new(Mutex::new(ShownMessages::default())),
                outbox,
                queue: Mutex::new(Some(queue)),
                inbox: Mutex::new(Some(engine.inbox_receiver())),
                link_base: OnceLock::new(),
                web_url,
                tasks: TaskTracker::new(),
                closing: CancellationToken::new(),
                abort: CancellationToken::new(),
            }),
        })
    }

    /// Starts posting; `public_url` is the link base when
    /// `approval.web_url` is not set.
    pub fn start(&self, public_url: &str) {
        let inner = &self.inner;
        let base = inner
            .web_url
            .clone()
            .unwrap_or_else(|| public_url.to_string());
        let _ = inner.link_base.set(base.trim_end_matches('/').to_string());
        let queue = inner.queue.lock().unwrap_or_else(|p| p.into_inner()).take();
        let inbox = inner.inbox.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(queue) = queue {
            let worker = outbox::Worker {
                api: inner.api.clone(),
                shown: inner.shown.clone(),
                backoff: Backoff::default(),
                closing: inner.closing.clone(),
                abort: inner.abort.clone(),
            };
            inner.tasks.spawn(outbox::work(worker, queue));
        }
        if let Some(inbox) = inbox {
            inner.tasks.spawn(self.clone().dispatch(inbox));
        }
        tracing::info!(channel = %inner.config.channel, "Slack channel enabled");
    }

    /// Stops taking events, posts what is queued within a short bound,
    /// then stops (call after the engine's shutdown, so the decisions it
    /// records are posted too).
    pub async fn shutdown(&self) {
        let inner = &self.inner;
        inner.closing.cancel();
        inner.tasks.close();
        if tokio::time::timeout(SHUTDOWN_BOUND, inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("Slack posts still pending at shutdown were dropped");
            inner.abort.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(1), inner.tasks.wait()).await;
        }
    }

    /// Checks a request's signature headers against its raw body, now.
    pub fn verify(
        &self,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<(), SignatureError> {
        let now = chrono::Utc::now().timestamp();
        signature::verify(&self.inner.signing_secret, timestamp, signature, body, now)
    }

    /// Posts the inbox's events until shutdown (then what is buffered).
    async fn dispatch(self, mut inbox: broadcast::Receiver<InboxEvent>) {
        loop {
            let event = tokio::select! {
                event = inbox.recv() => event,
                () = self.inner.closing.cancelled() => match inbox.try_recv() {
                    Ok(event) => Ok(event),
                    Err(_) => return,
                },
            };
            match event {
                Ok(event) => self.on_event(event),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "Slack missed inbox events (too many at once)");
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    fn on_event(&self, event: InboxEvent) {
        match event {
            InboxEvent::ApprovalRequested { approval } => self.post_request(approval),
            InboxEvent::ApprovalReminder { approval } => self.post_reminder(&approval),
            InboxEvent::ApprovalResolved { uuid, decision, .. } => {
                let Some(shown) = self.shown_messages().get(uuid) else {
                    // Never shown here: nothing to update.
                    return;
                };
                let message = blocks::decided_message(
                    Some(&shown.approval),
                    decision.as_deref(),
                    &shown.presentation,
                );
                self.inner.outbox.push(Job::Update {
                    approval: uuid,
                    channel: shown.channel,
                    message,
                });
            }
            InboxEvent::Pending { .. } | InboxEvent::Status { .. } => {}
        }
    }

    fn post_request(&self, approval: PendingApproval) {
        let (channel, presentation) = self.route(&approval);
        let message = blocks::request_message(&approval, &presentation);
        let uuid = approval.uuid;
        self.shown_messages().insert(Shown {
            approval,
            channel: channel.clone(),
            ts: None,
            presentation,
        });
        self.inner.outbox.push(Job::Post {
            approval: uuid,
            channel,
            message,
        });
    }

    fn post_reminder(&self, approval: &PendingApproval) {
        let (channel, presentation) = match self.shown_messages().get(approval.uuid) {
            Some(shown) => (shown.channel, shown.presentation),
            None => self.route(approval),
        };
        self.inner.outbox.push(Job::Reply {
            approval: approval.uuid,
            channel,
            text: blocks::reminder_text(approval, &presentation),
        });
    }

    /// The channel and presentation of an approval: its rule's route, if
    /// one names it.
    fn route(&self, approval: &PendingApproval) -> (String, Presentation) {
        let config = &self.inner.config;
        let route = rule_index(approval.rule.as_deref())
            .and_then(|index| config.routes.iter().find(|r| r.rule == index));
        let channel = route
            .and_then(|r| r.channel.clone())
            .unwrap_or_else(|| config.channel.clone());
        let link = self
            .inner
            .link_base
            .get()
            .map(|base| format!("{base}/?c={}", approval.conversation_id));
        let presentation = Presentation {
            mention: route.and_then(|r| r.mention.clone()),
            link,
        };
        (channel, presentation)
    }

    fn shown_messages(&self) -> std::sync::MutexGuard<'_, ShownMessages> {
        self.inner.shown.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `N` of a rule label `approval.rules[N] (…)`.
fn rule_index(label: Option<&str>) -> Option<usize> {
    let rest = label?.strip_prefix("approval.rules[")?;
    let (index, _) = rest.split_once(']')?;
    index.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_label_gives_its_index() {
        assert_eq!(
            rule_index(Some("approval.rules[3] (ask resources_add)")),
            Some(3)
        );
        assert_eq!(rule_index(Some("approval.rules[x] (ask t)")), None);
        assert_eq!(rule_index(Some("the tool's gate")), None);
        assert_eq!(rule_index(None), None);
    }
}
