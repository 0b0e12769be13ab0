//! Conversations read recently, kept in memory so that reading one again
//! (`GET /conversations/{id}`, an A2A `tasks/get`) needs no file or
//! database read: a `quick_cache` cache bounded by an estimate of the
//! bytes the conversations take (`limits.read_cache_bytes`), the ones
//! read least out first (CLOCK-Pro).
//!
//! A conversation not read for about `limits.read_cache_idle_secs` leaves
//! it ([`ReadCache::sweep_if_due`], from the engine's idle sweep), so an
//! agent nobody reads gives that memory back rather than holding its
//! bytes' worth of old conversations.
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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use asg_shared::Conversation;
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use uuid::Uuid;

/// Stripes of the change counters (a change blocks the keeping of reads
/// of its stripe only).
const STRIPES: usize = 64;

/// The cache and its change counters.
pub(crate) struct ReadCache {
    cache: Cache<Uuid, Arc<Kept>, ByWeight>,
    changes: Vec<Mutex<u64>>,
    /// Sweeps for conversations not read: every half of the idle time
    /// (`None`: never).
    sweep_every: Option<Duration>,
    last_sweep: Mutex<Instant>,
}

/// A kept conversation, and whether it was read (or kept) since the
/// last sweep.
struct Kept {
    conversation: Arc<Conversation>,
    read: AtomicBool,
}

impl Kept {
    fn new(conversation: Arc<Conversation>) -> Arc<Kept> {
        Arc::new(Kept {
            conversation,
            read: AtomicBool::new(true),
        })
    }
}

/// Taken before a store read: the change count of the read's stripe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    stripe: usize,
    changes: u64,
}

impl ReadCache {
    /// A cache holding about `max_bytes` of conversations (0: none),
    /// each for about `idle` after it was last read (`None`: as long as
    /// the bytes allow).
    pub(crate) fn new(max_bytes: u64, idle: Option<Duration>) -> ReadCache {
        ReadCache {
            cache: Cache::with_weighter(estimated_items(max_bytes), max_bytes, ByWeight),
            changes: (0..STRIPES).map(|_| Mutex::new(0)).collect(),
            sweep_every: idle.map(|idle| idle / 2),
            last_sweep: Mutex::new(Instant::now()),
        }
    }

    /// The kept version of `id`.
    pub(crate) fn get(&self, id: Uuid) -> Option<Arc<Conversation>> {
        let kept = self.cache.get(&id)?;
        // Written once per sweep, not at every read of a busy one.
        if !kept.read.load(Ordering::Relaxed) {
            kept.read.store(true, Ordering::Relaxed);
        }
        Some(kept.conversation.clone())
    }

    /// Drops the conversations not read since the last sweep, when half
    /// the idle time has passed since it (so one not read for between
    /// half of it and all of it leaves). Nothing without an idle time.
    pub(crate) fn sweep_if_due(&self, now: Instant) {
        let Some(every) = self.sweep_every else {
            return;
        };
        {
            let mut last = self
                .last_sweep
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if now.saturating_duration_since(*last) < every {
                return;
            }
            *last = now;
        }
        self.drop_unread();
    }

    /// Drops the conversations not read (nor kept) since the last call.
    fn drop_unread(&self) {
        self.cache
            .retain(|_, kept| kept.read.swap(false, Ordering::Relaxed));
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
            self.cache.insert(conversation.id, Kept::new(conversation));
        }
    }

    /// Keeps the last saved version of a conversation whose slot was
    /// dropped idle (one process: nothing saved it since).
    pub(crate) fn keep(&self, conversation: Arc<Conversation>) {
        self.cache.insert(conversation.id, Kept::new(conversation));
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

impl Weighter<Uuid, Arc<Kept>> for ByWeight {
    fn weight(&self, _: &Uuid, kept: &Arc<Kept>) -> u64 {
        weight(&kept.conversation).into()
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
        let cache = ReadCache::new(1 << 20, None);
        let id = fixtures::uuid();
        let ticket = cache.ticket(id);
        cache.forget(id);
        cache.offer(ticket, version(id, "old"));
        assert!(cache.get(id).is_none());
    }

    #[test]
    fn a_read_older_than_another_replicas_change_is_not_kept() {
        let cache = ReadCache::new(1 << 20, None);
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
        let cache = ReadCache::new(64 * 1024, None);
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

    #[test]
    fn a_conversation_not_read_between_two_sweeps_leaves_and_a_read_one_stays() {
        let cache = ReadCache::new(1 << 20, Some(Duration::from_secs(10)));
        let (read, unread) = (fixtures::uuid(), Uuid::new_v4());
        cache.keep(version(read, "read"));
        cache.offer(cache.ticket(unread), version(unread, "unread"));
        let start = *cache.last_sweep.lock().unwrap();

        cache.sweep_if_due(start + Duration::from_secs(4));
        assert_eq!(cache.cache.len(), 2, "not due before half the idle time");
        cache.sweep_if_due(start + Duration::from_secs(5));
        assert_eq!(cache.cache.len(), 2, "kept or read since the last sweep");
        assert!(cache.get(read).is_some());
        cache.sweep_if_due(start + Duration::from_secs(9));
        assert_eq!(cache.cache.len(), 2, "not due yet");
        cache.sweep_if_due(start + Duration::from_secs(10));
        assert!(cache.get(unread).is_none(), "not read for 5 to 10 s: gone");
        assert!(cache.get(read).is_some(), "read since the last sweep");
        cache.sweep_if_due(start + Duration::from_secs(15));
        cache.sweep_if_due(start + Duration::from_secs(20));
        assert!(cache.get(read).is_none(), "gone once not read either");
    }

    #[test]
    fn without_an_idle_time_only_the_bytes_bound_the_cache() {
        let cache = ReadCache::new(1 << 20, None);
        let id = fixtures::uuid();
        cache.keep(version(id, "kept"));
        let start = Instant::now();
        for hours in 1..4 {
            cache.sweep_if_due(start + Duration::from_secs(3600 * hours));
        }
        assert!(cache.get(id).is_some());
    }
}
