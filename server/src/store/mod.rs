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

use asg_shared::rest::StatusSummary;
use asg_shared::{Conversation, ConversationStatus};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::auth::policy::ReadScope;

pub use json_files::JsonFileStore;
pub use pg_lease::LEASE_TTL;
pub use postgres::PgStore;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
#[error("storage error: {0}")]
pub struct StoreError(pub String);

/// What [`Store::list_page`] lists.
#[derive(Debug, Clone)]
pub struct ListQuery {
    /// Whose conversations.
    pub scope: ReadScope,
    /// Only these.
    pub status: Option<ConversationStatus>,
    /// After this `(created_at, id)` (a cursor).
    pub after: Option<(DateTime<Utc>, Uuid)>,
    /// At most this many.
    pub limit: usize,
}

/// One page of conversations.
#[derive(Debug, Default)]
pub struct ListPage {
    /// Newest first.
    pub conversations: Vec<Conversation>,
    /// When more follow: the key to list after (the last one's, as the
    /// store orders it).
    pub next: Option<(DateTime<Utc>, Uuid)>,
    /// Counts by status of every conversation in scope.
    pub summary: StatusSummary,
}

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
    /// One page of the conversations `scope` may read (of `status`, when
    /// given), newest first and ties by id: at most `limit` after `after`,
    /// plus whether more follow, and the counts of all in scope. Only the
    /// page is read whole.
    fn list_page(&self, _query: &ListQuery) -> Result<ListPage, StoreError> {
        Ok(ListPage::default())
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
    /// Tells the other processes a short note (best effort; they get it
    /// through [`Store::watch`]).
    fn announce(&self, _note: &str) {}
    /// From now on, calls `on_change` with the id of every conversation
    /// saved, and `on_note` with every note another process announced.
    fn watch(
        &self,
        _on_change: Arc<dyn Fn(Uuid) + Send + Sync>,
        _on_note: Arc<dyn Fn(&str) + Send + Sync>,
    ) {
    }
}

#[cfg(test)]
pub(crate) mod tests;
