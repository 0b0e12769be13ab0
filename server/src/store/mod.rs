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
mod pg_lease;
pub mod postgres;

use std::sync::Arc;

use asg_shared::Conversation;
use uuid::Uuid;

pub use json_files::JsonFileStore;
pub use pg_lease::LEASE_TTL;
pub use postgres::PgStore;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
#[error("storage error: {0}")]
pub struct StoreError(pub String);

/// What [`Store::claim`] found.
#[derive(Debug)]
pub enum Claim {
    /// This process may change the conversation now; its stored version
    /// (`None`: not stored yet).
    Taken(Option<Box<Conversation>>),
    /// Another process (replica) is changing it.
    Busy,
}

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

    // A shared store (several processes on it) answers the rest; the
    // engine reads through it instead of holding every conversation, and
    // claims a conversation before changing it. The JSON files are one
    // process's and answer none of it (the engine does not ask).

    /// Whether several agent processes may share this store.
    fn is_shared(&self) -> bool {
        false
    }
    /// The stored version of conversation `id`.
    fn load(&self, _id: Uuid) -> Result<Option<Conversation>, StoreError> {
        Ok(None)
    }
    /// The conversation approval `uuid` (pending or resolved) belongs to.
    fn conversation_of_approval(&self, _uuid: Uuid) -> Result<Option<Uuid>, StoreError> {
        Ok(None)
    }
    /// Every conversation waiting for approval.
    fn waiting(&self) -> Result<Vec<Conversation>, StoreError> {
        Ok(Vec::new())
    }
    /// Visits every conversation, newest first and ties by id (the
    /// listing's order), one at a time: memory does not grow with their
    /// number.
    fn scan_newest(&self, _visit: &mut dyn FnMut(Conversation)) -> Result<(), StoreError> {
        Ok(())
    }
    /// Claims conversation `id` for a change by this process.
    fn claim(&self, _id: Uuid) -> Result<Claim, StoreError> {
        Ok(Claim::Taken(None))
    }
    /// Gives a claim back.
    fn release(&self, _id: Uuid) {}
    /// Whether another process holds a live claim on `id`.
    fn claimed_elsewhere(&self, _id: Uuid) -> bool {
        false
    }
    /// Conversations whose claim outlived its process (it died in the
    /// middle of a turn).
    fn abandoned(&self) -> Result<Vec<Uuid>, StoreError> {
        Ok(Vec::new())
    }
    /// Calls `on_change` with the id of every conversation another
    /// process saves, from now on.
    fn watch(&self, _on_change: Arc<dyn Fn(Uuid) + Send + Sync>) {}
}

#[cfg(test)]
pub(crate) mod tests;
