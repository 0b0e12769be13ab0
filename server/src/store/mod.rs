//! Persistence of conversations behind the [`Store`] trait.
//!
//! Invariant: nothing but the store touches `data_dir/conversations`. The
//! default [`JsonFileStore`] keeps one JSON file per conversation, written
//! atomically (a fresh temporary file, fsync, rename, fsync of the
//! directory), so a crash leaves either the old or the new version, never a
//! torn file. Files are readable by the owner only. A file that cannot be
//! loaded at startup is moved to `data_dir/quarantine/`, never dropped.

mod group_sync;
mod json_files;
mod pg_commit;
pub mod postgres;

use asg_shared::Conversation;

pub use json_files::JsonFileStore;
pub use postgres::PgStore;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
#[error("storage error: {0}")]
pub struct StoreError(pub String);

/// What the engine needs from storage. Calls block: the engine runs them
/// on the blocking thread pool.
pub trait Store: Send + Sync + 'static {
    /// Every stored conversation. A file that cannot be read or parsed does
    /// not fail the whole load: it is set aside (see [`Store::quarantined`])
    /// with a logged error naming it.
    fn load_all(&self) -> Result<Vec<Conversation>, StoreError>;
    /// Durably replaces the stored version of `conversation`.
    fn save(&self, conversation: &Conversation) -> Result<(), StoreError>;
    /// How many unreadable files [`Store::load_all`] set aside (reported by
    /// `GET /health`). Stores that never set files aside answer 0.
    fn quarantined(&self) -> usize {
        0
    }
    /// Whether the store can be used now (`GET /health`), from what the
    /// store last saw: never blocks. The JSON files always can.
    fn health(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
