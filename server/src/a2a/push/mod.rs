//! A2A push notifications (`tasks/pushNotificationConfig/*`): a client
//! registers callback URLs for a task it owns; whenever the task reaches
//! `input-required`, `completed`, `failed`, `canceled` (or `rejected`,
//! `auth-required`), the task object, as `tasks/get` returns it, is
//! POSTed to each callback with `X-A2A-Notification-Token` (the client's
//! token) and, for `authentication: {schemes: ["Bearer"], credentials}`,
//! `Authorization: Bearer <credentials>`.
//!
//! One watcher task per task with configs follows the conversation's
//! events (an unlimited engine receiver), re-reads the saved snapshot and
//! sends when the state (or the approval / answer it is about) changed.
//! Callback URLs pass `notify::ssrf` when set (a host that does not
//! resolve yet is accepted with a warning) and before every attempt;
//! delivery retries with backoff (`notify::deliver`).

pub mod store;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use asg_shared::a2a::{PushNotificationConfig, Task, TaskState};
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use super::mapping;
use crate::engine::Engine;
use crate::notify::deliver::{Deliveries, Outgoing, shown};
use crate::notify::{A2aPushConfig, ssrf};
use store::PushStore;

/// Most configs per task.
pub const MAX_CONFIGS_PER_TASK: usize = 10;
/// Longest callback URL.
const MAX_URL: usize = 2048;
/// Longest token, credentials or config id.
const MAX_FIELD: usize = 1024;

/// When a watcher starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Now: a task already final needs none.
    Now,
    /// Before a turn continues the task: it follows that turn whatever
    /// the state is now.
    BeforeATurn,
}

/// The push registrations and their watchers; cheap to clone.
#[derive(Clone)]
pub struct PushService {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    policy: Arc<ssrf::Policy>,
    deliveries: Deliveries,
    store: PushStore,
    /// Tasks with a running watcher.
    watching: Mutex<HashSet<Uuid>>,
}

/// What a state is worth a notification.
pub fn notable(state: TaskState) -> bool {
    matches!(
        state,
        TaskState::InputRequired
            | TaskState::Completed
            | TaskState::Failed
            | TaskState::Canceled
            | TaskState::Rejected
            | TaskState::AuthRequired
    )
}

/// What a notification is about: the state and the status message (the
/// approval asked for, the answer given), so two approvals in a row or
/// two answers in a row are two notifications.
fn fingerprint(task: &Task) -> (TaskState, Option<String>) {
    let message = task.status.message.as_ref().map(|m| m.message_id.clone());
    (task.status.state, message)
}

/// The config as the A2A methods return it: the credentials are
/// write-only.
pub fn public(config: &PushNotificationConfig) -> PushNotificationConfig {
    let mut config = config.clone();
    if let Some(auth) = &mut config.authentication {
        auth.credentials = None;
    }
    config
}

/// Field checks before the URL check; the problem for the caller.
pub fn check_fields(config: &PushNotificationConfig) -> Result<(), String> {
    if config.url.len() > MAX_URL {
        return Err(format!("url is longer than {MAX_URL} characters"));
    }
    let long = |value: &Option<String>| value.as_ref().is_some_and(|v| v.len() > MAX_FIELD);
    let credentials = config
        .authentication
        .as_ref()
        .and_then(|a| a.credentials.clone());
    if long(&config.id) || long(&config.token) || long(&credentials) {
        return Err(format!(
            "id, token and credentials must be at most {MAX_FIELD} characters"
        ));
    }
    if config.id.as_deref().is_some_and(|id| id.trim().is_empty()) {
        return Err("id must not be empty".into());
    }
    if let Some(auth) = &config.authentication
        && credentials.is_some()
        && !auth
            .schemes
            .iter()
            .any(|s| s.eq_ignore_ascii_case("bearer"))
    {
        return Err(format!(
            "authentication.schemes {:?} has no scheme this agent can use; only Bearer is supported",
            auth.schemes
        ));
    }
    Ok(())
}

/// The POST of `task` to `config`'s callback.
pub fn outgoing(
    config: &PushNotificationConfig,
    task: &Task,
    policy: &Arc<ssrf::Policy>,
) -> Outgoing {
    let mut headers = Vec::new();
    if let Some(token) = &config.token {
        headers.push(("X-A2A-Notification-Token", token.clone()));
    }
    if let Some(auth) = &config.authentication
        && let Some(credentials) = &auth.credentials
        && auth
            .schemes
            .iter()
            .any(|s| s.eq_ignore_ascii_case("bearer"))
    {
        headers.push(("Authorization", format!("Bearer {credentials}")));
    }
    Outgoing {
        url: config.url.clone(),
        headers,
        body: serde_json::to_vec(task).unwrap_or_default(),
        label: format!(
            "A2A push {} of task {} (config {})",
            task.status.state.as_str(),
            task.id,
            config.id.as_deref().unwrap_or("")
        ),
        ssrf: Some(policy.clone()),
    }
}

impl PushService {
    /// Opens the store under `data_dir`.
    pub fn open(
        data_dir: &Path,
        engine: Engine,
        policy: A2aPushConfig,
        deliveries: Deliveries,
    ) -> Result<PushService, String> {
        let store = PushStore::open(data_dir).map_err(|e| {
            format!(
                "cannot open {}: {e}",
                data_dir.join(store::FILE_NAME).display()
            )
        })?;
        Ok(PushService {
            inner: Arc::new(Inner {
                engine,
                policy: Arc::new(ssrf::Policy::from(policy)),
                deliveries,
                store,
                watching: Mutex::default(),
            }),
        })
    }

    /// Starts the watchers of the stored registrations.
    pub async fn start(&self) {
        for task in self.inner.store.tasks() {
            self.ensure_watcher(task).await;
        }
    }

    /// Checks `config`'s URL now (the same check runs before every send).
    /// A host that does not resolve now is accepted with a warning in the
    /// log: it is resolved and checked again at each delivery.
    pub async fn check(&self, config: &PushNotificationConfig) -> Result<(), String> {
        check_fields(config)?;
        if let Some(why) = ssrf::check_registration(&config.url, &self.inner.policy).await? {
            tracing::warn!(url = %shown(&config.url), reason = %why, "push callback accepted although its host does not resolve now; it is resolved and checked before each delivery");
        }
        Ok(())
    }

    /// Registers (or replaces, by id) a config for `task` after checking
    /// it; without an id it takes the task id. The callback gets the
    /// task's current state at once when that state is worth a
    /// notification. Returns the config as stored (credentials hidden).
    pub async fn set(
        &self,
        task: Uuid,
        context_id: &str,
        mut config: PushNotificationConfig,
    ) -> Result<PushNotificationConfig, String> {
        self.check(&config).await?;
        if config.id.is_none() {
            config.id = Some(task.to_string());
        }
        let stored = config.clone();
        self.inner.store.update(task, |entry| {
            if entry.context_id.is_empty() {
                entry.context_id = context_id.to_string();
            }
            entry.configs.retain(|c| c.id != stored.id);
            if entry.configs.len() >= MAX_CONFIGS_PER_TASK {
                return Err(format!(
                    "task {task} already has {MAX_CONFIGS_PER_TASK} push notification configs; delete one first"
                ));
            }
            entry.configs.push(stored);
            Ok(())
        })?;
        self.ensure_watcher(task).await;
        if let Some(now) = self.current(task).await
            && notable(now.status.state)
        {
            let job = outgoing(&config, &now, &self.inner.policy);
            let deliveries = self.inner.deliveries.clone();
            self.inner.deliveries.spawn(async move {
                deliveries.send(&job).await;
            });
        }
        Ok(public(&config))
    }

    /// One config of a task (`None`: the first one).
    pub fn get(&self, task: Uuid, id: Option<&str>) -> Option<PushNotificationConfig> {
        let entry = self.inner.store.task(task)?;
        entry
            .configs
            .iter()
            .find(|c| id.is_none() || c.id.as_deref() == id)
            .map(public)
    }

    /// Every config of a task.
    pub fn list(&self, task: Uuid) -> Vec<PushNotificationConfig> {
        self.inner
            .store
            .task(task)
            .map(|entry| entry.configs.iter().map(public).collect())
            .unwrap_or_default()
    }

    /// Removes a config; false when there was none with that id.
    pub fn delete(&self, task: Uuid, id: &str) -> Result<bool, String> {
        if self.inner.store.task(task).is_none() {
            return Ok(false);
        }
        self.inner.store.update(task, |entry| {
            let before = entry.configs.len();
            entry.configs.retain(|c| c.id.as_deref() != Some(id));
            Ok(entry.configs.len() != before)
        })
    }

    /// The task as `tasks/get` shows it, from the saved snapshot.
    async fn current(&self, task: Uuid) -> Option<Task> {
        self.read(task).await.ok().flatten()
    }

    /// The task as `tasks/get` shows it (`None`: no such task), or the
    /// store's error (the task may well exist: the watcher goes on).
    async fn read(&self, task: Uuid) -> Result<Option<Task>, crate::engine::EngineError> {
        let Some(conversation) = self.inner.engine.get(task).await? else {
            return Ok(None);
        };
        let context = self
            .inner
            .store
            .task(task)
            .map(|t| t.context_id)
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| task.to_string());
        Ok(Some(mapping::to_task(&conversation, &context, None)))
    }

    /// Watches `task` again when it has configs (a task continued after
    /// its watcher ended with a final state).
    pub async fn follow(&self, task: Uuid) {
        if self.inner.store.task(task).is_some() {
            self.watch_from(task, Start::BeforeATurn).await;
        }
    }

    async fn ensure_watcher(&self, task: Uuid) {
        self.watch_from(task, Start::Now).await;
    }

    async fn watch_from(&self, task: Uuid, start: Start) {
        let Ok(events) = self.inner.engine.watch(task).await else {
            return;
        };
        let mut watching = self
            .inner
            .watching
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !watching.insert(task) {
            return;
        }
        let service = self.clone();
        self.inner
            .deliveries
            .spawn(async move { service.watch(task, events, start).await });
    }

    /// Follows one task until it is closed, loses its configs, or the
    /// agent shuts down.
    async fn watch(
        self,
        task: Uuid,
        mut events: tokio::sync::broadcast::Receiver<asg_shared::events::ConversationEvent>,
        start: Start,
    ) {
        let mut last = self.current(task).await.map(|t| fingerprint(&t));
        if start == Start::Now && self.done(task).await {
            return; // already final: nothing more will change
        }
        loop {
            let received = tokio::select! {
                received = events.recv() => received,
                () = self.inner.deliveries.closing() => Err(RecvError::Closed),
            };
            if let Err(RecvError::Closed) = received {
                break;
            }
            let now = match self.read(task).await {
                Ok(Some(now)) => now,
                Ok(None) => break,
                Err(error) => {
                    // The store is away: the task is still there.
                    tracing::warn!(%task, %error, "cannot read a task for its push notifications; waiting for its next change");
                    continue;
                }
            };
            let seen = Some(fingerprint(&now));
            if seen != last {
                last = seen;
                if notable(now.status.state) {
                    self.notify(task, &now).await;
                }
            }
            if self.done(task).await {
                return;
            }
        }
        self.forget(task);
    }

    async fn notify(&self, task: Uuid, now: &Task) {
        let configs = self.inner.store.task(task).map(|t| t.configs);
        for config in configs.unwrap_or_default() {
            let job = outgoing(&config, now, &self.inner.policy);
            self.inner.deliveries.send(&job).await;
        }
    }

    /// Ends the watcher (true) when the task reached a final state (as
    /// A2A reports it: completed, failed, canceled, rejected) and no turn
    /// runs on it, or it has no configs; under the lock `set` and
    /// `follow` take to start one, so none is missed. A task continued
    /// later gets a new watcher (`follow`).
    async fn done(&self, task: Uuid) -> bool {
        let current = match self.inner.engine.get(task).await {
            Ok(current) => current,
            Err(_) => return false, // the store is away: not closed
        };
        let running = self.inner.engine.is_running(task).await;
        let mut watching = self
            .inner
            .watching
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let finished = current.is_none_or(|c| mapping::task_state(&c).is_terminal()) && !running;
        if finished || self.inner.store.task(task).is_none() {
            watching.remove(&task);
            tracing::info!(%task, "push watcher ended: the task reached a final state or has no configs");
            return true;
        }
        false
    }

    fn forget(&self, task: Uuid) {
        let mut watching = self
            .inner
            .watching
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        watching.remove(&task);
    }
}

#[cfg(test)]
mod tests;
