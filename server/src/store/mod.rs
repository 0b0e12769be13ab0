//! Persistence of conversations behind the [`Store`] trait.
//!
//! Invariant: nothing but the store touches `data_dir/conversations`. The
//! default [`JsonFileStore`] keeps one JSON file per conversation, written
//! atomically (temp file, fsync, rename, fsync of the directory), so a
//! crash leaves either the old or the new version, never a torn file.

mod json_files;

use asg_shared::Conversation;

pub use json_files::JsonFileStore;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
#[error("storage error: {0}")]
pub struct StoreError(pub String);

/// What the engine needs from storage. Calls block: the engine runs them
/// on the blocking thread pool.
pub trait Store: Send + Sync + 'static {
    /// Every stored conversation. Unreadable files are skipped with a
    /// logged error instead of failing the whole load.
    fn load_all(&self) -> Result<Vec<Conversation>, StoreError>;
    /// Durably replaces the stored version of `conversation`.
    fn save(&self, conversation: &Conversation) -> Result<(), StoreError>;
}
