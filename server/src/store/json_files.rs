//! One JSON file per conversation: `<data_dir>/conversations/<uuid>.json`.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use asg_shared::Conversation;
use uuid::Uuid;

use super::{Store, StoreError};

/// Conversations as JSON files under a directory.
#[derive(Debug, Clone)]
pub struct JsonFileStore {
    dir: PathBuf,
}

impl JsonFileStore {
    /// Opens (and creates) `<data_dir>/conversations`.
    pub fn open(data_dir: &Path) -> Result<JsonFileStore, StoreError> {
        let dir = data_dir.join("conversations");
        fs::create_dir_all(&dir)
            .map_err(|e| StoreError(format!("cannot create {}: {e}", dir.display())))?;
        Ok(JsonFileStore { dir })
    }

    /// The file of a conversation. Built from a parsed [`Uuid`] only, so no
    /// request text ever becomes part of a path.
    fn path_of(&self, id: Uuid) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn write_atomically(&self, id: Uuid, bytes: &[u8]) -> std::io::Result<()> {
        let tmp = self.dir.join(format!(".{id}.json.tmp"));
        {
            let mut file = File::create(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
        }
        fs::rename(&tmp, self.path_of(id))?;
        File::open(&self.dir)?.sync_all()
    }
}

impl Store for JsonFileStore {
    fn load_all(&self) -> Result<Vec<Conversation>, StoreError> {
        let entries = fs::read_dir(&self.dir)
            .map_err(|e| StoreError(format!("cannot list {}: {e}", self.dir.display())))?;
        let mut conversations = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(stem) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
            else {
                continue;
            };
            let Ok(id) = Uuid::parse_str(stem) else {
                continue;
            };
            let parsed = fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    serde_json::from_slice::<Conversation>(&bytes).map_err(|e| e.to_string())
                });
            match parsed {
                Ok(conversation) if conversation.id == id => conversations.push(conversation),
                Ok(_) => {
                    tracing::error!(file = %path.display(), "conversation id does not match its file name; skipped")
                }
                Err(error) => {
                    tracing::error!(file = %path.display(), %error, "unreadable conversation file; skipped")
                }
            }
        }
        Ok(conversations)
    }

    fn save(&self, conversation: &Conversation) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(conversation)
            .map_err(|e| StoreError(format!("cannot encode conversation: {e}")))?;
        self.write_atomically(conversation.id, &bytes).map_err(|e| {
            StoreError(format!(
                "cannot write conversation {} to {}: {e}",
                conversation.id,
                self.dir.display()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use asg_shared::{ConversationStatus, Message, Role};
    use chrono::Utc;

    use super::*;

    fn conversation() -> Conversation {
        let now = Utc::now();
        Conversation {
            id: Uuid::new_v4(),
            session_id: "abcd1234".into(),
            status: ConversationStatus::Active,
            messages: vec![Message {
                id: Uuid::new_v4(),
                role: Role::System,
                content: "prompt".into(),
                tool_call: None,
                tool_result: None,
                node: None,
                is_error: false,
                created_at: now,
            }],
            pending_approval: None,
            pipeline_state: None,
            turn_in_progress: false,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn saved_conversations_load_back_and_junk_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonFileStore::open(dir.path()).unwrap();
        let mut first = conversation();
        store.save(&first).unwrap();
        first.status = ConversationStatus::WaitingApproval;
        store.save(&first).unwrap();
        let second = conversation();
        store.save(&second).unwrap();
        let conv_dir = dir.path().join("conversations");
        fs::write(
            conv_dir.join(format!("{}.json", Uuid::new_v4())),
            b"{not json",
        )
        .unwrap();
        fs::write(conv_dir.join("notes.txt"), b"x").unwrap();

        let mut loaded = store.load_all().unwrap();
        loaded.sort_by_key(|c| c.id != first.id);
        assert_eq!(loaded, vec![first, second]);
        let leftovers: Vec<_> = fs::read_dir(&conv_dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
