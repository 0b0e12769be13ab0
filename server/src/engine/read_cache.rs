//! Conversations read recently, kept in memory so that reading one again
//! (`GET /conversations/{id}`, an A2A `tasks/get`) needs no file or
//! database read: a `quick_cache` cache bounded by an estimate of the
//! bytes the conversations take (`limits.read_cache_bytes`), the ones
//! read least out first (CLOCK-Pro).
//!
//! In one process it also keeps the last saved version of each
//! conversation whose slot was dropped idle (`index.rs`,
//! [`ReadCache::keep`]), and a turn starts from that version: a
//! conversation used again after two idle seconds is not read from its
//! file and parsed again.
//!
//! It never answers with a version older than one this process saved or
//! was told of: every save here and every change another replica
//! announces removes the entry ([`ReadCache::forget`]), and a version read from the store is kept
//! only when no save or change of a conversation in its stripe came
//! between the read and the keeping ([`ReadCache::ticket`],
//! [`ReadCache::offer`]). Over a shared store a change note can come a
//! moment after another replica's answer, so there a kept version is
//! served only when the store says it was saved at the same microsecond
//! (`Store::saved_at`, one indexed column instead of the whole document;
//! `claim.rs`). Authorization is not the cache's business: the
//! engine's gate judges what it returns, as it judges a stored version.

use std::sync::{Arc, Mutex, PoisonError};

use asg_shared::Conversation;
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use uuid::Uuid;

/// Stripes of the change counters (a change blocks the keeping of reads
/// of its stripe only).
const STRIPES: usize = 64;

/// The cache and its change counters.
pub(crate) struct ReadCache {
    cache: Cache<Uuid, Arc<Conversation>, ByWeight>,
    changes: Vec<Mutex<u64>>,
}

/// Taken before a store read: the change count of the read's stripe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    stripe: usize,
    changes: u64,
}

impl ReadCache {
    /// A cache holding about `max_bytes` of conversations (0: none).
    pub(crate) fn new(max_bytes: u64) -> ReadCache {
        ReadCache {
            cache: Cache::with_weighter(estimated_items(max_bytes), max_bytes, ByWeight),
            changes: (0..STRIPES).map(|_| Mutex::new(0)).collect(),
        }
    }

    /// The kept version of `id`.
    pub(crate) fn get(&self, id: Uuid) -> Option<Arc<Conversation>> {
        self.cache.get(&id)
    }

    /// To take before reading `id` from the store.
    pub(crate) fn ticket(&self, id: Uuid) -> Ticket {
        let stripe = stripe(id);
        Ticket {
            stripe,
            changes: *self.lock(stripe),
        }
    }

    /// Keeps a version read from the store since `ticket`, unless a save
    /// or change in its stripe came meanwhile (it may be older).
    pub(crate) fn offer(&self, ticket: Ticket, conversation: Arc<Conversation>) {
        let changes = self.lock(ticket.stripe);
        if *changes == ticket.changes {
            self.cache.insert(conversation.id, conversation);
        }
    }

    /// Keeps the last saved version of a conversation whose slot was
    /// dropped idle (one process: nothing saved it since).
    pub(crate) fn keep(&self, conversation: Arc<Conversation>) {
        self.cache.insert(conversation.id, conversation);
    }

    /// Drops the kept version of `id`: a process (this one or another)
    /// changed it. While a conversation is in use here its slot answers
    /// reads (`index.rs`), so a saved version is not kept again until its
    /// slot is dropped idle (or, over a shared store, it is read again).
    pub(crate) fn forget(&self, id: Uuid) {
        let mut changes = self.lock(stripe(id));
        *changes += 1;
        self.cache.remove(&id);
    }

    fn lock(&self, stripe: usize) -> std::sync::MutexGuard<'_, u64> {
        self.changes[stripe]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// How many conversations `max_bytes` holds, for the cache's table
/// (a few KiB each; at least one).
pub(crate) fn estimated_items(max_bytes: u64) -> usize {
    usize::try_from(max_bytes / 4096)
        .unwrap_or(usize::MAX)
        .max(1)
}

/// Weighs a conversation by [`weight`].
#[derive(Clone)]
struct ByWeight;

impl Weighter<Uuid, Arc<Conversation>> for ByWeight {
    fn weight(&self, _: &Uuid, conversation: &Arc<Conversation>) -> u64 {
        weight(conversation).into()
    }
}

fn stripe(id: Uuid) -> usize {
    (id.as_u128() % STRIPES as u128) as usize
}

/// About how many bytes a conversation takes in memory: what its texts
/// and arguments take, plus a fixed cost per message and approval.
fn weight(conversation: &Conversation) -> u32 {
    let messages: usize = conversation
        .messages
        .iter()
        .map(|m| {
            256 + m.content.len()
                + m.tool_call
                    .as_ref()
                    .map_or(0, |c| 128 + 256 * c.arguments.len())
        })
        .sum();
    let approvals = 512 * conversation.pending().len();
    u32::try_from(512 + messages + approvals).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use asg_shared::fixtures;

    use super::*;

    fn version(id: Uuid, text: &str) -> Arc<Conversation> {
        let mut conversation = fixtures::conversation();
        conversation.id = id;
        conversation
            .messages
            .push(fixtures::message(asg_shared::Role::User, text).into());
        Arc::new(conversation)
    }

    #[test]
    fn a_read_older_than_a_save_here_is_not_kept() {
        let cache = ReadCache::new(1 << 20);
        let id = fixtures::uuid();
        let ticket = cache.ticket(id);
        cache.forget(id);
        cache.offer(ticket, version(id, "old"));
        assert!(cache.get(id).is_none());
    }

    #[test]
    fn a_read_older_than_another_replicas_change_is_not_kept() {
        let cache = ReadCache::new(1 << 20);
        let id = fixtures::uuid();
        let ticket = cache.ticket(id);
        cache.forget(id);
        cache.offer(ticket, version(id, "old"));
        assert!(cache.get(id).is_none());
        let ticket = cache.ticket(id);
        cache.offer(ticket, version(id, "read after"));
        assert!(cache.get(id).is_some());
        cache.forget(id);
        assert!(cache.get(id).is_none(), "a change drops the kept version");
    }

    #[test]
    fn the_cache_holds_about_its_bytes() {
        let cache = ReadCache::new(64 * 1024);
        let big = "x".repeat(8 * 1024);
        for _ in 0..100 {
            let id = fixtures::uuid();
            cache.offer(cache.ticket(id), version(id, &big));
        }
        let kept = cache.cache.len();
        assert!(
            (1..=8).contains(&kept),
            "{kept} conversations of 8 KiB kept in 64 KiB"
        );
    }
}
