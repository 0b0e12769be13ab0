//! A2A push notifications (`tasks/pushNotificationConfig/*`): a client
//! registers callback URLs for a task it owns; whenever the task reaches
//! `input-required`, `completed`, `failed`, `canceled` (or `rejected`,
//! `auth-required`), the task object, as `tasks/get` returns it, is
//! POSTed to each callback with `X-A2A-Notification-Token` (the client's
//! token) and, for `authentication: {schemes: ["Bearer"], credentials}`,
//! `Authorization: Bearer <credentials>`.
//!
//! The configs live where the conversations do (`store.rs`: the
//! database's `a2a_push` table, shared by the replicas, or
//! `data_dir/a2a-push.json`). **The replica that changes a task notifies
//! it:** every version this process saves (`Engine::saved_here`: its
//! turns, decisions, cancels, expiries and recoveries, each under the
//! conversation's claim) goes to one dispatcher, which, for a notable
//! state, moves the task's notified mark in the store
//! (`PushStore::mark_notified`, atomic) and sends only when it moved it:
//! each state is sent once, whichever replica saved it or saw it, and
//! never after a newer one. No replica follows another's changes for
//! this. Deliveries of one task go out in order (`Outbox`). Callback URLs
//! pass `notify::ssrf` when set (a host that does not resolve yet is
//! accepted with a warning) and before every attempt; delivery retries
//! with backoff (`notify::deliver`).

mod outbox;
mod pg_store;
pub mod store;

use std::path::Path;
use std::sync::{Arc, Mutex};

use asg_shared::Conversation;
use asg_shared::a2a::{NOTIFY_AS_V1, PushNotificationConfig, Task, TaskState, v1};
use uuid::Uuid;

use crate::a2a::mapping;
use crate::engine::Engine;
use crate::engine::saved_feed::SavedFeed;
use crate::notify::deliver::{Deliveries, Outgoing, shown};
use crate::notify::{A2aPushConfig, ssrf};
use outbox::Outbox;
use pg_store::PgPushStore;
use store::{FilePushStore, Notified, PushStore};

/// Most configs per task.
pub const MAX_CONFIGS_PER_TASK: usize = 10;
/// Longest callback URL.
const MAX_URL: usize = 2048;
/// Longest token, credentials or config id.
const MAX_FIELD: usize = 1024;

/// The push registrations and their dispatcher; cheap to clone.
#[derive(Clone)]
pub struct PushService {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    policy: Arc<ssrf::Policy>,
    deliveries: Deliveries,
    store: PushStore,
    outbox: Outbox,
    /// The versions this process saves, from the build on; taken by
    /// [`PushService::start`].
    saved: Mutex<Option<SavedFeed>>,
    /// With PostgreSQL, the `data_dir` whose `a2a-push.json` (from before
    /// the configs moved to the database) `start` imports.
    import_from: Option<std::path::PathBuf>,
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
/// two answers in a row are two notifications; and how many messages
/// that version had (its place among the conversation's versions).
fn fingerprint(conversation: &Conversation) -> (TaskState, Notified) {
    let at = mapping::TaskRef {
        task_id: conversation.id.to_string(),
        context_id: String::new(),
    };
    let status = mapping::status(conversation, &at);
    let notified = Notified {
        state: status.state.as_str().to_string(),
        message: status.message.map(|m| m.message_id),
        messages: i64::try_from(conversation.messages.len()).unwrap_or(i64::MAX),
    };
    (status.state, notified)
}

/// The config as the A2A methods return it: the credentials are
/// write-only.
pub fn public(config: &PushNotificationConfig) -> PushNotificationConfig {
    let mut config = config.clone();
    if let Some(auth) = &mut config.authentication {
        auth.credentials = None;
    }
    config.notify_as = None;
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

/// What a callback is sent: the v0.3 task, or for a config created over
/// v1.0 a v1.0 `StreamResponse` holding the task in the v1.0 form.
fn notification_body(config: &PushNotificationConfig, task: &Task) -> Vec<u8> {
    let body = if config.notify_as.as_deref() == Some(NOTIFY_AS_V1) {
        serde_json::to_vec(&v1::StreamResponse::Task(task.into()))
    } else {
        serde_json::to_vec(task)
    };
    body.unwrap_or_default()
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
        body: notification_body(config, task),
        kind: "a2a_push",
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
    /// Opens the configs: the database's `a2a_push` table when `database`
    /// is the PostgreSQL store's pool, else `data_dir/a2a-push.json`; and
    /// follows what this process saves from now on.
    pub fn open(
        data_dir: &Path,
        database: Option<sqlx::PgPool>,
        engine: Engine,
        policy: A2aPushConfig,
        deliveries: Deliveries,
    ) -> Result<PushService, String> {
        let import_from = database.as_ref().map(|_| data_dir.to_path_buf());
        let store = match database {
            Some(pool) => PushStore::Postgres(PgPushStore::new(pool)),
            None => PushStore::File(Arc::new(FilePushStore::open(data_dir).map_err(|e| {
                format!(
                    "cannot open {}: {e}",
                    data_dir.join(store::FILE_NAME).display()
                )
            })?)),
        };
        let saved = engine.saved_here(Box::new(|conversation: &Conversation| {
            let state = mapping::task_state(conversation);
            notable(state).then_some(state.as_str())
        }));
        Ok(PushService {
            inner: Arc::new(Inner {
                engine,
                policy: Arc::new(ssrf::Policy::from(policy)),
                outbox: Outbox::new(deliveries.clone()),
                deliveries,
                store,
                saved: Mutex::new(Some(saved)),
                import_from,
            }),
        })
    }

    /// Starts notifying the changes this process makes (once), after
    /// importing a replica's own `a2a-push.json` into the database.
    pub async fn start(&self) {
        if let Some(data_dir) = &self.inner.import_from {
            self.import(data_dir).await;
        }
        let saved = self
            .inner
            .saved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(saved) = saved {
            let service = self.clone();
            self.inner.deliveries.spawn(service.dispatch(saved));
        }
    }

    /// Moves the configs this replica kept in `data_dir/a2a-push.json`
    /// before they lived in the database into the table (merged by config
    /// id, within the per-task limit), then renames the file
    /// `a2a-push.json.imported`; on an error the file stays for the next
    /// start.
    async fn import(&self, data_dir: &Path) {
        if !data_dir.join(store::FILE_NAME).exists() {
            return;
        }
        let file = match FilePushStore::open(data_dir) {
            Ok(file) => file,
            Err(error) => {
                tracing::error!(%error, "cannot read a2a-push.json to import it into the database");
                return;
            }
        };
        let mut failed = 0;
        let tasks = file.tasks();
        for task in &tasks {
            let Some(old) = file.task(*task) else {
                continue;
            };
            let now = self.inner.engine.get(*task).await.ok().flatten();
            let seen = now.as_deref().map(|c| fingerprint(c).1);
            let merged = self.inner.store.update(*task, move |entry| {
                if entry.configs.is_empty() {
                    entry.context_id = old.context_id;
                    entry.notified = seen;
                }
                for config in old.configs {
                    let known = entry.configs.iter().any(|c| c.id == config.id);
                    if !known && entry.configs.len() < MAX_CONFIGS_PER_TASK {
                        entry.configs.push(config);
                    }
                }
                Ok(())
            });
            failed += usize::from(merged.await.is_err());
        }
        let path = data_dir.join(store::FILE_NAME);
        let done = path.with_extension("json.imported");
        if failed == 0 && std::fs::rename(&path, &done).is_ok() {
            tracing::info!(tasks = tasks.len(), moved_to = %done.display(), "A2A push configs imported into the database");
        } else {
            tracing::error!(
                tasks = tasks.len(),
                failed,
                "A2A push configs not all imported into the database; a2a-push.json is kept and imported again at the next start"
            );
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
    /// notification; a task's first config marks that state notified.
    /// Returns the config as stored (credentials hidden).
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
        let now = self.inner.engine.get(task).await.ok().flatten();
        let seen = now.as_deref().map(|c| fingerprint(c).1);
        let (stored, context) = (config.clone(), context_id.to_string());
        let context = self
            .inner
            .store
            .update(task, move |entry| {
                if entry.configs.is_empty() {
                    entry.context_id = context;
                    entry.notified = seen;
                }
                entry.configs.retain(|c| c.id != stored.id);
                if entry.configs.len() >= MAX_CONFIGS_PER_TASK {
                    return Err(format!(
                        "task {task} already has {MAX_CONFIGS_PER_TASK} push notification configs; delete one first"
                    ));
                }
                entry.configs.push(stored);
                Ok(entry.context_id.clone())
            })
            .await?;
        if let Some(now) = now
            && notable(mapping::task_state(&now))
        {
            let current = mapping::to_task(&now, &context, None);
            let job = outgoing(&config, &current, &self.inner.policy);
            self.inner.outbox.post(task, vec![job]);
        }
        Ok(public(&config))
    }

    /// One config of a task (`None`: the first one).
    pub async fn get(
        &self,
        task: Uuid,
        id: Option<&str>,
    ) -> Result<Option<PushNotificationConfig>, String> {
        let entry = self.inner.store.task(task).await?;
        Ok(entry.and_then(|entry| {
            entry
                .configs
                .iter()
                .find(|c| id.is_none() || c.id.as_deref() == id)
                .map(public)
        }))
    }

    /// Every config of a task.
    pub async fn list(&self, task: Uuid) -> Result<Vec<PushNotificationConfig>, String> {
        let entry = self.inner.store.task(task).await?;
        Ok(entry
            .map(|entry| entry.configs.iter().map(public).collect())
            .unwrap_or_default())
    }

    /// Removes a config; false when there was none with that id.
    pub async fn delete(&self, task: Uuid, id: &str) -> Result<bool, String> {
        if self.inner.store.task(task).await?.is_none() {
            return Ok(false);
        }
        let id = id.to_string();
        self.inner
            .store
            .update(task, move |entry| {
                let before = entry.configs.len();
                entry
                    .configs
                    .retain(|c| c.id.as_deref() != Some(id.as_str()));
                Ok(entry.configs.len() != before)
            })
            .await
    }

    /// Notifies the versions this process saves, in order, until shutdown
    /// (what was saved before it started is still looked at).
    async fn dispatch(self, saved: SavedFeed) {
        loop {
            let next = tokio::select! {
                biased;
                next = saved.next() => Some(next),
                () = self.inner.deliveries.closing() => saved.try_next(),
            };
            let Some(conversation) = next else {
                return;
            };
            self.on_saved(&conversation).await;
        }
    }

    /// One saved version: a notable state that is news for a task with
    /// configs is sent to each of them, by this process only (the store's
    /// mark moved here).
    async fn on_saved(&self, conversation: &Conversation) {
        let (state, seen) = fingerprint(conversation);
        if !notable(state) {
            return;
        }
        let task = conversation.id;
        // A store error is logged by the store; the state is not sent.
        let Ok(Some(entry)) = self.inner.store.mark_notified(task, &seen).await else {
            return;
        };
        let context = match entry.context_id.as_str() {
            "" => mapping::context_of(conversation),
            known => known.to_string(),
        };
        let now = mapping::to_task(conversation, &context, None);
        let jobs = entry
            .configs
            .iter()
            .map(|config| outgoing(config, &now, &self.inner.policy))
            .collect();
        self.inner.outbox.post(task, jobs);
    }
}

#[cfg(test)]
mod tests;
