//! The push configs, durable, where the conversations are: the
//! `a2a_push` table with the PostgreSQL store (`pg_store.rs`, shared by
//! every replica), else `data_dir/a2a-push.json` (owner-only, replaced
//! atomically on every change), so registrations survive a restart. The
//! REST API never reads them: a callback's token and credentials are seen
//! only by the task's owner through the A2A methods.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use asg_shared::a2a::PushNotificationConfig;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::pg_store::PgPushStore;

/// The file's name under `data_dir`.
pub const FILE_NAME: &str = "a2a-push.json";

/// A task's registrations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskPush {
    /// The context id the task had when the first config was set.
    pub context_id: String,
    /// Its configs, each with an id.
    pub configs: Vec<PushNotificationConfig>,
    /// The last state the callbacks were sent (or the state when the
    /// first config was set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notified: Option<Notified>,
}

/// A state of a task as far as notifications go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notified {
    /// The A2A state (`completed`, `input-required`...).
    pub state: String,
    /// The status message's id (the approval asked for, the answer).
    pub message: Option<String>,
    /// How many messages the conversation's version had: they only grow,
    /// so this orders versions (whichever replica's clock saved them).
    pub messages: i64,
}

impl TaskPush {
    /// Whether `next` is a state the callbacks were not sent yet and not
    /// older than the last one sent.
    pub fn is_news(&self, next: &Notified) -> bool {
        self.notified.as_ref().is_none_or(|last| {
            (&last.state, &last.message) != (&next.state, &next.message)
                && last.messages <= next.messages
        })
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    tasks: BTreeMap<Uuid, TaskPush>,
}

/// Where the configs live.
pub enum PushStore {
    /// `data_dir/a2a-push.json` (one process), written on the blocking
    /// pool.
    File(Arc<FilePushStore>),
    /// The `a2a_push` table (every replica).
    Postgres(PgPushStore),
}

impl PushStore {
    /// A task's registrations.
    pub async fn task(&self, task: Uuid) -> Result<Option<TaskPush>, String> {
        match self {
            PushStore::File(file) => Ok(file.task(task)),
            PushStore::Postgres(table) => table.task(task).await,
        }
    }

    /// Changes a task's registrations with `change` (which returns its
    /// result, or an error that leaves everything unchanged) and saves;
    /// a task left without configs is removed.
    pub async fn update<T: Send + 'static>(
        &self,
        task: Uuid,
        change: impl FnOnce(&mut TaskPush) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        match self {
            PushStore::File(file) => {
                let file = file.clone();
                blocking(move || file.update(task, change)).await
            }
            PushStore::Postgres(table) => table.update(task, change).await,
        }
    }

    /// Records `next` as notified when it is news for a task with configs
    /// ([`TaskPush::is_news`]), atomically: the registrations to notify,
    /// or `None` (no configs, or sent already — by this process or
    /// another replica).
    pub async fn mark_notified(
        &self,
        task: Uuid,
        next: &Notified,
    ) -> Result<Option<TaskPush>, String> {
        match self {
            // Most tasks have no configs: known from memory, no write.
            PushStore::File(file) if !file.has_configs(task) => Ok(None),
            PushStore::File(file) => {
                let (file, next) = (file.clone(), next.clone());
                blocking(move || file.mark_notified(task, &next)).await
            }
            PushStore::Postgres(table) => table.mark_notified(task, next).await,
        }
    }
}

/// Runs a file write (and its fsyncs) on the blocking pool.
async fn blocking<T: Send + 'static>(
    write: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(write)
        .await
        .unwrap_or_else(|_| Err(CANNOT_SAVE.to_string()))
}

/// The message callers get when the configs cannot be saved.
pub(super) const CANNOT_SAVE: &str =
    "internal error: the push notification config could not be saved";
/// The message callers get when the configs cannot be read.
pub(super) const CANNOT_READ: &str =
    "internal error: the push notification configs could not be read";

/// The configs in memory, written through to the file.
pub struct FilePushStore {
    path: PathBuf,
    tasks: Mutex<BTreeMap<Uuid, TaskPush>>,
}

impl FilePushStore {
    /// Reads the file (none: empty). A file that cannot be parsed is
    /// moved aside (`.bad`) with an error in the log, and the agent
    /// starts without push configs rather than not at all.
    pub fn open(data_dir: &Path) -> std::io::Result<FilePushStore> {
        let path = data_dir.join(FILE_NAME);
        let tasks = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<File>(&bytes) {
                Ok(file) => file.tasks,
                Err(error) => {
                    let aside = path.with_extension("json.bad");
                    std::fs::rename(&path, &aside)?;
                    tracing::error!(file = %path.display(), moved_to = %aside.display(), %error, "cannot read the A2A push configs; set aside, starting without them");
                    BTreeMap::new()
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e),
        };
        Ok(FilePushStore {
            path,
            tasks: Mutex::new(tasks),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Uuid, TaskPush>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A task's registrations.
    pub fn task(&self, task: Uuid) -> Option<TaskPush> {
        self.lock().get(&task).cloned()
    }

    /// Every task with configs.
    pub fn tasks(&self) -> Vec<Uuid> {
        self.lock().keys().copied().collect()
    }

    /// Changes a task's registrations with `change` (which returns its
    /// result, or an error that leaves everything unchanged) and saves;
    /// a task left without configs is removed.
    pub fn update<T>(
        &self,
        task: Uuid,
        change: impl FnOnce(&mut TaskPush) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut tasks = self.lock();
        let mut entry = tasks.get(&task).cloned().unwrap_or_default();
        let result = change(&mut entry)?;
        self.replace(&mut tasks, task, entry)?;
        Ok(result)
    }

    /// Whether `task` has an entry (configs, or the mark of what was sent).
    pub fn has_configs(&self, task: Uuid) -> bool {
        self.lock().contains_key(&task)
    }

    /// [`PushStore::mark_notified`] on the file.
    pub fn mark_notified(&self, task: Uuid, next: &Notified) -> Result<Option<TaskPush>, String> {
        let mut tasks = self.lock();
        let Some(mut entry) = tasks.get(&task).cloned() else {
            return Ok(None);
        };
        if !entry.is_news(next) {
            return Ok(None);
        }
        entry.notified = Some(next.clone());
        self.replace(&mut tasks, task, entry.clone())?;
        Ok(Some(entry))
    }

    /// Saves the configs with `task`'s entry replaced (removed when it
    /// has no configs), then keeps them.
    fn replace(
        &self,
        tasks: &mut BTreeMap<Uuid, TaskPush>,
        task: Uuid,
        entry: TaskPush,
    ) -> Result<(), String> {
        let mut next = tasks.clone();
        if entry.configs.is_empty() {
            next.remove(&task);
        } else {
            next.insert(task, entry);
        }
        self.save(&next).map_err(|e| {
            tracing::error!(file = %self.path.display(), error = %e, "cannot save the A2A push configs");
            CANNOT_SAVE.to_string()
        })?;
        *tasks = next;
        Ok(())
    }

    fn save(&self, tasks: &BTreeMap<Uuid, TaskPush>) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let bytes = serde_json::to_vec_pretty(&File {
            tasks: tasks.clone(),
        })?;
        // A new temporary file is owner-only (0600).
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(&bytes)?;
        file.as_file().sync_all()?;
        file.persist(&self.path).map_err(|e| e.error)?;
        std::fs::File::open(dir)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(id: &str) -> PushNotificationConfig {
        PushNotificationConfig {
            id: Some(id.into()),
            url: "https://cb.example.com/x".into(),
            token: Some("tok".into()),
            authentication: None,
            notify_as: None,
        }
    }

    #[test]
    fn configs_survive_a_reopen_and_a_bad_file_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let store = FilePushStore::open(dir.path()).unwrap();
        let task = Uuid::new_v4();
        store
            .update(task, |t| {
                t.context_id = "ctx".into();
                t.configs.push(config("a"));
                Ok(())
            })
            .unwrap();
        let refused: Result<(), String> = store.update(task, |t| {
            t.configs.clear();
            Err("no".into())
        });
        assert!(refused.is_err());
        let reopened = FilePushStore::open(dir.path()).unwrap();
        assert_eq!(reopened.task(task).unwrap().configs, vec![config("a")]);
        assert_eq!(reopened.task(task).unwrap().context_id, "ctx");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE_NAME))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "owner-only: {mode:o}");
        }
        reopened
            .update(task, |t| {
                t.configs.clear();
                Ok(())
            })
            .unwrap();
        assert!(FilePushStore::open(dir.path()).unwrap().tasks().is_empty());
        std::fs::write(dir.path().join(FILE_NAME), b"{not json").unwrap();
        assert!(FilePushStore::open(dir.path()).unwrap().tasks().is_empty());
        assert!(dir.path().join("a2a-push.json.bad").exists());
    }

    fn mark(state: &str, message: &str, messages: i64) -> Notified {
        Notified {
            state: state.into(),
            message: Some(message.into()),
            messages,
        }
    }

    /// The same steps on a store of each kind; `second` is another
    /// replica's view of the same store (the file store's own, again).
    async fn marks_each_state_once(store: &PushStore, second: &PushStore) {
        let task = Uuid::new_v4();
        let first = mark("input-required", "a1", 0);
        assert_eq!(store.mark_notified(task, &first).await.unwrap(), None);
        let registered = first.clone();
        let context = store
            .update(task, move |t| {
                t.context_id = "ctx".into();
                t.notified = Some(registered);
                t.configs.push(config("a"));
                Ok(t.context_id.clone())
            })
            .await
            .unwrap();
        assert_eq!(context, "ctx");
        let seen = second.task(task).await.unwrap().unwrap();
        assert_eq!(seen.configs, vec![config("a")]);
        assert_eq!(seen.notified.as_ref(), Some(&first));
        // The state it was registered in is not news.
        assert_eq!(second.mark_notified(task, &first).await.unwrap(), None);
        let done = mark("completed", "m2", 5);
        let notify = store.mark_notified(task, &done).await.unwrap().unwrap();
        assert_eq!(notify.configs, vec![config("a")]);
        assert_eq!(notify.context_id, "ctx");
        // Whoever sees it next does not send it again, nor an older one.
        assert_eq!(second.mark_notified(task, &done).await.unwrap(), None);
        assert_eq!(second.mark_notified(task, &first).await.unwrap(), None);
        let refused: Result<(), String> = second
            .update(task, |t| {
                t.configs.clear();
                Err("no".into())
            })
            .await;
        assert!(refused.is_err());
        assert_eq!(store.task(task).await.unwrap().unwrap().configs.len(), 1);
        second
            .update(task, |t| {
                t.configs.clear();
                Ok(())
            })
            .await
            .unwrap();
        assert_eq!(store.task(task).await.unwrap(), None);
        let later = mark("input-required", "a3", 9);
        assert_eq!(store.mark_notified(task, &later).await.unwrap(), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_state_is_marked_notified_once_in_both_stores() {
        let dir = tempfile::tempdir().unwrap();
        let file = || PushStore::File(Arc::new(FilePushStore::open(dir.path()).unwrap()));
        let store = file();
        marks_each_state_once(&store, &store).await;
        let db = asg_tests::pg::TestDb::create().await;
        let pg = crate::store::PgStore::open(&db.url, 2).await.unwrap();
        let table = || PushStore::Postgres(PgPushStore::new(pg.pool()));
        marks_each_state_once(&table(), &table()).await;
        // The file store keeps the mark across a reopen.
        let task = Uuid::new_v4();
        store
            .update(task, |t| {
                t.configs.push(config("b"));
                Ok(())
            })
            .await
            .unwrap();
        let news = mark("completed", "m", 1);
        assert!(store.mark_notified(task, &news).await.unwrap().is_some());
        assert_eq!(file().mark_notified(task, &news).await.unwrap(), None);
    }
}
