//! Persistence of conversations behind the [`Store`] trait.
//!
//! Invariant: nothing but the store touches `data_dir/conversations`,
//! `data_dir/journal` and `data_dir/index`. The default [`JsonFileStore`]
//! keeps one JSON file per conversation and lists them through a SQLite
//! catalog (`json_catalog`). A save is durable once its checksummed
//! record is in the journal, synced together with the saves beside it
//! (group commit); checkpoints write the files later, once per change,
//! and the journal is replayed at open, so a crash loses nothing
//! acknowledged and a torn write never spoils a stored version. Files are
//! readable by the owner only. A file or journal that cannot be loaded is
//! moved or copied to `data_dir/quarantine/`, never dropped.
//!
//! Neither store is held in memory: the engine reads through the store
//! ([`Store::reads_through`]) and caches only the conversations in use
//! (the JSON store keeps only the versions its files do not hold yet).

mod group_sync;
mod json_catalog;
mod json_files;
mod pg_approvals;
mod pg_commit;
mod pg_lease;
pub mod postgres;

use std::sync::Arc;

use asg_shared::a2a::TaskState;
use asg_shared::{ApprovalState, Conversation, ConversationStatus, PendingApproval};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use asg_core::access::ReadScope;

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
    /// Filters on the A2A task view (`ListTasks`): on the page and on its
    /// counts alike.
    pub tasks: TaskFilter,
}

/// Filters on a conversation's A2A task view, which the stores keep in
/// listing columns at every save ([`task_columns`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskFilter {
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks of this context (`contextId`).
    pub context_id: Option<String>,
    /// Only tasks whose status changed at or after this time (the task's
    /// status timestamp is the conversation's `updated_at`).
    pub changed_since: Option<DateTime<Utc>>,
}

/// What [`TaskFilter`] reads of a conversation: its A2A task state and
/// its context id, as the A2A doors report them.
pub fn task_columns(conversation: &Conversation) -> (TaskState, String) {
    (
        crate::a2a::mapping::task_state(conversation),
        crate::a2a::mapping::context_of(conversation),
    )
}

/// One page of conversations.
#[derive(Debug, Default)]
pub struct ListPage {
    /// Newest first.
    pub conversations: Vec<Conversation>,
    /// When more follow: the key to list after (the last one's, as the
    /// store orders it).
    pub next: Option<(DateTime<Utc>, Uuid)>,
    /// Counts by status of every conversation in scope that passes the
    /// task filters (the `status` filter is the page's alone).
    pub summary: StatusCounts,
}

/// Counts of conversations by status (the REST door reports them as
/// `asg_shared::rest::StatusSummary`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// Every status.
    pub total: usize,
    /// Ready for a message.
    pub active: usize,
    /// Waiting for an approval.
    pub waiting_approval: usize,
    /// Closed.
    pub completed: usize,
    /// Canceled while waiting for an approval.
    pub canceled: usize,
}

impl StatusCounts {
    /// Counts `n` conversations of `status`.
    pub fn add(&mut self, status: ConversationStatus, n: usize) {
        self.total += n;
        match status {
            ConversationStatus::Active => self.active += n,
            ConversationStatus::WaitingApproval => self.waiting_approval += n,
            ConversationStatus::Completed => self.completed += n,
            ConversationStatus::Canceled => self.canceled += n,
        }
    }
}

/// The approvals' deadlines, from [`Store::deadlines`].
#[derive(Debug, Default)]
pub struct Deadlines {
    /// Conversations with a pending approval whose deadline (expiry, or a
    /// reminder not sent yet) has come.
    pub due: Vec<Conversation>,
    /// The earliest deadline still to come.
    pub next: Option<DateTime<Utc>>,
}

/// The earliest deadline among the pending approvals of `conversation`:
/// an expiry, or a reminder not sent yet.
pub fn next_deadline(conversation: &Conversation) -> Option<DateTime<Utc>> {
    conversation
        .pending()
        .iter()
        .filter(|p| p.state == ApprovalState::Pending)
        .flat_map(|p| [p.expires_at, p.remind_at.filter(|_| !p.reminded)])
        .flatten()
        .min()
}

/// What [`Store::pending_page`] lists: pending approvals, oldest first
/// (ties by uuid).
#[derive(Debug, Clone, Default)]
pub struct PendingQuery {
    /// Only the approvals this subject asked for (`None`: every one).
    pub requested_by: Option<String>,
    /// Only proxy approvals (a sub-agent's, with its task).
    pub proxies: bool,
    /// Only in this state.
    pub state: Option<ApprovalState>,
    /// Only questions (`Some(true)`), only approvals (`Some(false)`), or
    /// both.
    pub questions: Option<bool>,
    /// After this `(created_at, uuid)` (a cursor).
    pub after: Option<(DateTime<Utc>, Uuid)>,
    /// At most this many.
    pub limit: usize,
}

impl PendingQuery {
    /// Whether `approval` is listed (cursor aside).
    pub fn admits(&self, approval: &PendingApproval) -> bool {
        let asked = match &self.requested_by {
            Some(subject) => approval
                .requested_by
                .as_ref()
                .is_some_and(|by| &by.subject == subject),
            None => true,
        };
        asked
            && (!self.proxies || approval.remote_task_id.is_some())
            && self.state.is_none_or(|state| state == approval.state)
            && self.questions.is_none_or(|q| q == approval.is_question())
    }
}

/// One page of pending approvals.
#[derive(Debug, Default)]
pub struct PendingPage {
    /// Oldest first.
    pub approvals: Vec<PendingApproval>,
    /// When more follow: the key to list after.
    pub next: Option<(DateTime<Utc>, Uuid)>,
}

/// An approval state as stored (its JSON name).
pub(crate) fn state_name(state: ApprovalState) -> &'static str {
    match state {
        ApprovalState::Pending => "pending",
        ApprovalState::Executing => "executing",
    }
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

/// Told once a save is durable, or why it is not ([`Store::save_then`]).
pub type Saved = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// What the engine needs from storage. Calls block: the engine runs them
/// on its storage threads (`engine/store_call.rs`).
pub trait Store: Send + Sync + 'static {
    /// Every stored conversation, read whole (tests and tools: the engine
    /// reads through [`Store::load`] and [`Store::list_page`]). A file that
    /// cannot be read or parsed does not fail the whole load: it is set
    /// aside (see [`Store::quarantined`]) with a logged error naming it.
    fn load_all(&self) -> Result<Vec<Conversation>, StoreError>;
    /// Durably replaces the stored version of `conversation`.
    fn save(&self, conversation: &Conversation) -> Result<(), StoreError>;
    /// [`Store::save`] of a version the caller shares (the engine's):
    /// a store that keeps saved versions in memory keeps this one, not a
    /// copy of it.
    fn save_shared(&self, conversation: &Arc<Conversation>) -> Result<(), StoreError> {
        self.save(conversation)
    }
    /// [`Store::save_shared`] whose answer is given to `saved` once the
    /// version is durable (or cannot be): by default on this thread when
    /// the save returns. A store whose saves share a sync (the JSON
    /// store's group commit) may call `saved` later, from the thread whose
    /// sync covered it, so the calling thread does not wait for it.
    fn save_then(&self, conversation: &Arc<Conversation>, saved: Saved) {
        saved(self.save_shared(conversation))
    }
    /// How many unreadable files the store set aside since it was opened
    /// (reported by `GET /health`). Stores that never set files aside
    /// answer 0.
    fn quarantined(&self) -> usize {
        0
    }
    /// Whether the store can be used now (`GET /health`), from what the
    /// store last saw: never blocks. The JSON files always can.
    fn health(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Marks the store closed cleanly (at the end of a graceful shutdown).
    fn close(&self) {}

    // The engine reads through the store instead of holding every
    // conversation. A shared store (several processes on it) also claims a
    // conversation for one process at a time and tells the others of its
    // changes; a store of one process answers every claim with the stored
    // version and has no one to tell.

    /// Whether several agent processes may share this store.
    fn is_shared(&self) -> bool {
        false
    }
    /// The stored version of conversation `id`.
    fn load(&self, id: Uuid) -> Result<Option<Conversation>, StoreError>;
    /// When the stored version of conversation `id` was saved (its
    /// `updated_at`, to the microsecond at least): a cheap check that a
    /// version read earlier is still the stored one. By default, read
    /// from the whole conversation.
    fn saved_at(&self, id: Uuid) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(self.load(id)?.map(|c| c.updated_at))
    }
    /// The conversation approval `uuid` (pending or resolved) belongs to.
    fn conversation_of_approval(&self, uuid: Uuid) -> Result<Option<Uuid>, StoreError>;
    /// Every conversation waiting for approval.
    fn waiting(&self) -> Result<Vec<Conversation>, StoreError>;
    /// One page of the pending approvals `query` lists (only the page's
    /// conversations are read whole). By default, from every waiting
    /// conversation.
    fn pending_page(&self, query: &PendingQuery) -> Result<PendingPage, StoreError> {
        let mut listed: Vec<PendingApproval> = self
            .waiting()?
            .iter()
            .flat_map(|c| c.pending().to_vec())
            .filter(|p| query.admits(p))
            .filter(|p| {
                query
                    .after
                    .is_none_or(|after| (p.created_at, p.uuid) > after)
            })
            .collect();
        listed.sort_by_key(|p| (p.created_at, p.uuid));
        let next = (listed.len() > query.limit)
            .then(|| listed.get(query.limit.wrapping_sub(1)))
            .flatten()
            .map(|p| (p.created_at, p.uuid));
        listed.truncate(query.limit);
        Ok(PendingPage {
            approvals: listed,
            next,
        })
    }
    /// The conversations whose approvals have a deadline that came by
    /// `now` (only those are read whole), and the next one after it. By
    /// default, from every waiting conversation.
    fn deadlines(&self, now: DateTime<Utc>) -> Result<Deadlines, StoreError> {
        let mut deadlines = Deadlines::default();
        for conversation in self.waiting()? {
            match next_deadline(&conversation) {
                Some(at) if at <= now => deadlines.due.push(conversation),
                Some(at) => deadlines.next = Some(deadlines.next.map_or(at, |n| n.min(at))),
                None => {}
            }
        }
        Ok(deadlines)
    }
    /// One page of the conversations `scope` may read (of `status`, when
    /// given), newest first and ties by id: at most `limit` after `after`,
    /// plus whether more follow, and the counts of all in scope. Only the
    /// page is read whole.
    fn list_page(&self, query: &ListQuery) -> Result<ListPage, StoreError>;
    /// Claims conversation `id` for a change by this process.
    fn claim(&self, id: Uuid) -> Result<Claim, StoreError>;
    /// Gives a claim back.
    fn release(&self, _id: Uuid) {}
    /// Whether another process holds a live claim on `id`.
    fn claimed_elsewhere(&self, _id: Uuid) -> bool {
        false
    }
    /// Conversations whose claim outlived its process (it died in the
    /// middle of a turn). A store of one process answers, once, those it
    /// found in the middle of a turn when it was opened.
    fn abandoned(&self) -> Result<Vec<Uuid>, StoreError>;
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
