//! The push configs, durable: `data_dir/a2a-push.json` (owner-only,
//! replaced atomically on every change), so registrations survive a
//! restart. The REST API never reads this file: a callback's token and
//! credentials are seen only by the task's owner through the A2A methods.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use asg_shared::a2a::PushNotificationConfig;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The file's name under `data_dir`.
pub const FILE_NAME: &str = "a2a-push.json";

/// A task's registrations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskPush {
    /// The context id the task had when the first config was set.
    pub context_id: String,
    /// Its configs, each with an id.
    pub configs: Vec<PushNotificationConfig>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    tasks: BTreeMap<Uuid, TaskPush>,
}

/// The configs in memory, written through to the file.
pub struct PushStore {
    path: PathBuf,
    tasks: Mutex<BTreeMap<Uuid, TaskPush>>,
}

impl PushStore {
    /// Reads the file (none: empty). A file that cannot be parsed is
    /// moved aside (`.bad`) with an error in the log, and the agent
    /// starts without push configs rather than not at all.
    pub fn open(data_dir: &Path) -> std::io::Result<PushStore> {
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
        Ok(PushStore {
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
        let mut next = tasks.clone();
        if entry.configs.is_empty() {
            next.remove(&task);
        } else {
            next.insert(task, entry);
        }
        self.save(&next).map_err(|e| {
            tracing::error!(file = %self.path.display(), error = %e, "cannot save the A2A push configs");
            "internal error: the push notification config could not be saved".to_string()
        })?;
        *tasks = next;
        Ok(result)
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
        }
    }

    #[test]
    fn configs_survive_a_reopen_and_a_bad_file_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let store = PushStore::open(dir.path()).unwrap();
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
        let reopened = PushStore::open(dir.path()).unwrap();
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
        assert!(PushStore::open(dir.path()).unwrap().tasks().is_empty());
        std::fs::write(dir.path().join(FILE_NAME), b"{not json").unwrap();
        assert!(PushStore::open(dir.path()).unwrap().tasks().is_empty());
        assert!(dir.path().join("a2a-push.json.bad").exists());
    }
}
