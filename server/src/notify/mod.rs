//! Notifications out of the agent, never on a turn's path:
//!
//! - [`webhook`]: approval events (requested, reminded, decided,
//!   expired) from the engine's operator inbox, POSTed as signed JSON
//!   ([`sign`]) to `approval.webhooks`.
//! - A2A push notifications ([`a2a_push`]): task states POSTed to
//!   the callbacks A2A clients registered, after the SSRF check of
//!   [`ssrf`].
//!
//! Both go through [`deliver`]: retries with exponential backoff, a
//! bounded queue, and a shutdown that waits a short bound.

pub mod a2a_push;
pub mod deliver;
pub mod sign;
pub mod ssrf;
pub mod webhook;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use asg_shared::events::InboxEvent;
use tokio::sync::broadcast;

pub use crate::config::notify::{A2aPushConfig, WebhookConfig};

use crate::config::AgentConfig;
use crate::engine::Engine;
use a2a_push::PushService;
use deliver::{Deliveries, Retry};
use webhook::{Source, Webhook};

/// Deliveries waiting to start, at most.
const QUEUE_CAPACITY: usize = 256;
/// Deliveries running at once, at most.
const CONCURRENCY: usize = 16;
/// How long shutdown waits for deliveries in flight.
pub const SHUTDOWN_BOUND: Duration = Duration::from_secs(5);

/// The agent's notifiers.
pub struct Notifier {
    deliveries: Deliveries,
    webhooks: Arc<Vec<Webhook>>,
    /// Subscribed at build time, so no event between build and serve is
    /// missed; taken by [`Notifier::start`].
    inbox: Mutex<Option<broadcast::Receiver<InboxEvent>>>,
    push: PushService,
    agent: String,
    web_url: Option<String>,
}

impl Notifier {
    /// Reads the webhook secrets from `env` and opens the push configs
    /// (in `database`, the PostgreSQL store's pool, else under
    /// `data_dir`); an unset or short secret is a startup error naming its
    /// field.
    pub fn build(
        config: &AgentConfig,
        engine: &Engine,
        env: &dyn Fn(&str) -> Option<String>,
        database: Option<sqlx::PgPool>,
    ) -> Result<Notifier, String> {
        let webhooks = Webhook::load(&config.approval.webhooks, env)?;
        let deliveries = Deliveries::start(QUEUE_CAPACITY, CONCURRENCY, Retry::default());
        let push = PushService::open(
            &config.data_dir,
            database,
            engine.clone(),
            config.a2a_push.clone(),
            deliveries.clone(),
        )?;
        let inbox = (!webhooks.is_empty()).then(|| engine.inbox_receiver());
        Ok(Notifier {
            deliveries,
            webhooks: Arc::new(webhooks),
            inbox: Mutex::new(inbox),
            push,
            agent: config.name.clone(),
            web_url: config.approval.web_url.clone(),
        })
    }

    /// The A2A push registrations (for the JSON-RPC methods).
    pub fn push(&self) -> PushService {
        self.push.clone()
    }

    /// Starts delivering; `public_url` is the link base when
    /// `approval.web_url` is not set.
    pub async fn start(&self, public_url: &str) {
        let inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(inbox) = inbox {
            let source = Source {
                agent: self.agent.clone(),
                link_base: self
                    .web_url
                    .clone()
                    .unwrap_or_else(|| public_url.to_string()),
            };
            tracing::info!(webhooks = self.webhooks.len(), "approval webhooks enabled");
            for hook in self.webhooks.iter() {
                let url = hook.url().to_string();
                self.deliveries.spawn(async move {
                    if let Some(why) = ssrf::unresolved(&url, &ssrf::Resolver::System).await {
                        tracing::warn!(url = %deliver::shown(&url), reason = %why, "webhook host does not resolve now; each delivery resolves it again");
                    }
                });
            }
            self.deliveries.spawn(webhook::dispatch(
                inbox,
                self.webhooks.clone(),
                self.deliveries.clone(),
                source,
            ));
        }
        self.push.start().await;
    }

    /// Stops taking events and waits up to [`SHUTDOWN_BOUND`] for the
    /// deliveries in flight (call after the engine's shutdown, so the
    /// decisions it records are sent too).
    pub async fn shutdown(&self) {
        self.deliveries.shutdown(SHUTDOWN_BOUND).await;
    }
}
