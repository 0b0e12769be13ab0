//! In-memory index of conversations and approvals.
//!
//! Each conversation has a [`Slot`]: an async lock taken by the one task
//! that changes it, and the last saved snapshot, which readers clone as an
//! `Arc` without waiting for that task. Approval uuids map to their
//! conversation, resolved ones included, so a repeated decision is a
//! conflict rather than "not found".

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock, RwLock};

use asg_shared::events::{ConversationEvent, InboxEvent};
use asg_shared::{Conversation, Message};
use tokio::sync::{Mutex, OwnedMutexGuard, broadcast};
use uuid::Uuid;

use super::saved_feed;

/// Events buffered per conversation for slow subscribers.
const EVENT_CAPACITY: usize = 256;
/// Inbox events buffered for slow subscribers (across conversations).
const INBOX_CAPACITY: usize = 1024;

/// One conversation's lock, published snapshot and event channel.
pub(crate) struct Slot {
    turn: Arc<Mutex<()>>,
    snapshot: RwLock<Arc<Conversation>>,
    /// Created on the first subscription: a channel buffers
    /// `EVENT_CAPACITY` events up front, too much to keep for every
    /// stored conversation.
    events: OnceLock<broadcast::Sender<ConversationEvent>>,
    /// The operator inbox, shared by every slot.
    inbox: Inbox,
    /// Open event streams of this conversation.
    subscribers: Arc<AtomicUsize>,
    /// A follow of another replica's change is pending.
    following: AtomicBool,
}

impl Slot {
    fn new(conversation: Arc<Conversation>, inbox: Inbox) -> Slot {
        Slot {
            turn: Arc::default(),
            snapshot: RwLock::new(conversation),
            events: OnceLock::new(),
            inbox,
            subscribers: Arc::default(),
            following: AtomicBool::new(false),
        }
    }

    /// Live events from now on (no limit: engine-internal use).
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ConversationEvent> {
        self.events
            .get_or_init(|| broadcast::channel(EVENT_CAPACITY).0)
            .subscribe()
    }

    /// Live events for a client stream, counted against `limits`.
    pub(crate) fn subscribe_limited(
        &self,
        limits: &SubscriberLimits,
    ) -> Result<Subscription<ConversationEvent>, SubscribersFull> {
        let mut permit = limits.total_permit()?;
        if !take(&self.subscribers, limits.per_conversation) {
            return Err(SubscribersFull::Conversation(limits.per_conversation));
        }
        permit.also = Some(self.subscribers.clone());
        Ok(Subscription {
            receiver: self.subscribe(),
            _permit: permit,
        })
    }

    /// Sends an event to the current subscribers (none is fine).
    pub(crate) fn emit(&self, event: ConversationEvent) {
        if let Some(events) = self.events.get() {
            let _ = events.send(event);
        }
    }

    /// True while a task holds the change lock (a turn is running).
    pub(crate) fn is_busy(&self) -> bool {
        self.turn.try_lock().is_err()
    }

    /// Takes the conversation's change lock (see `claim.rs`).
    pub(crate) async fn lock_owned(&self) -> OwnedMutexGuard<()> {
        self.turn.clone().lock_owned().await
    }

    /// Whether anything but the index uses the slot now: a lock holder or
    /// waiter, a reference, an open event stream.
    fn in_use(self: &Arc<Self>) -> bool {
        Arc::strong_count(self) > 1
            || Arc::strong_count(&self.turn) > 1
            || self.is_busy()
            || self.subscribers.load(Ordering::SeqCst) > 0
            || self.events.get().is_some_and(|e| e.receiver_count() > 0)
    }

    /// Publishes the stored version, read under the conversation's lock
    /// (when claiming it, or following another replica's change), when
    /// it differs from this copy: to the conversation's event streams,
    /// with the start and end of another replica's turn as events (what a
    /// turn running here would send, when `turn_events`), never to the
    /// inbox (the replica that made the change reported it there).
    pub(crate) fn refresh(&self, stored: Arc<Conversation>, turn_events: bool) {
        let previous = self.snapshot();
        if *previous == *stored {
            return;
        }
        if turn_events && !previous.turn_in_progress && stored.turn_in_progress {
            self.emit(ConversationEvent::TurnStarted);
        }
        let finished = turn_events && previous.turn_in_progress && !stored.turn_in_progress;
        self.publish_to(stored, false);
        if finished {
            self.emit(ConversationEvent::TurnFinished {
                response: None,
                error: None,
            });
        }
    }

    /// Whether a conversation event stream listens here.
    pub(crate) fn is_followed(&self) -> bool {
        self.events.get().is_some_and(|e| e.receiver_count() > 0)
    }

    /// Marks a follow of another replica's change as pending; false when
    /// one already is (it reads the latest version anyway).
    pub(crate) fn start_following(&self) -> bool {
        !self.following.swap(true, Ordering::SeqCst)
    }

    /// The pending follow runs now: later changes need another.
    pub(crate) fn followed(&self) {
        self.following.store(false, Ordering::SeqCst);
    }

    /// The last saved version.
    pub(crate) fn snapshot(&self) -> Arc<Conversation> {
        match self.snapshot.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Publishes a saved version and emits what changed since the last
    /// one: new messages, approval requested/resolved, status (the last
    /// two also to the operator inbox).
    pub(crate) fn publish(&self, conversation: Arc<Conversation>) {
        self.publish_to(conversation, true);
    }

    /// Publishes a version, its changes to the operator inbox too when
    /// `inbox` (only the replica that made a change reports it there, so
    /// webhooks fire once).
    fn publish_to(&self, conversation: Arc<Conversation>, inbox: bool) {
        let previous = {
            let mut guard = self.snapshot.write().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *guard, conversation.clone())
        };
        let changes = changes(&previous, &conversation);
        if inbox {
            self.inbox.saved_here(&conversation);
        }
        if inbox && self.inbox.is_followed() {
            for change in &changes {
                self.inbox.send_local(change.for_inbox(conversation.id));
            }
        }
        if self.events.get().is_none_or(|e| e.receiver_count() == 0) {
            return;
        }
        for message in conversation.messages.iter().skip(previous.messages.len()) {
            self.emit(ConversationEvent::Message {
                message: Message::clone(message),
            });
        }
        for change in changes {
            self.emit(change.for_conversation());
        }
    }
}

/// An approval or status change between two saved versions.
enum Change {
    Resolved(Uuid, Option<Box<asg_shared::ApprovalDecision>>),
    Requested(Box<asg_shared::PendingApproval>),
    Status(asg_shared::ConversationStatus),
}

impl Change {
    fn for_inbox(&self, conversation_id: Uuid) -> InboxEvent {
        match self {
            Change::Resolved(uuid, decision) => InboxEvent::ApprovalResolved {
                uuid: *uuid,
                conversation_id,
                decision: decision.clone(),
            },
            Change::Requested(approval) => InboxEvent::ApprovalRequested {
                approval: (**approval).clone(),
            },
            Change::Status(status) => InboxEvent::Status {
                conversation_id,
                status: *status,
            },
        }
    }

    fn for_conversation(self) -> ConversationEvent {
        match self {
            Change::Resolved(uuid, decision) => {
                ConversationEvent::ApprovalResolved { uuid, decision }
            }
            Change::Requested(approval) => ConversationEvent::ApprovalRequested {
                approval: *approval,
            },
            Change::Status(status) => ConversationEvent::Status { status },
        }
    }
}

fn changes(previous: &Conversation, current: &Conversation) -> Vec<Change> {
    let mut changes = Vec::new();
    let was_pending = |uuid: Uuid| previous.pending().iter().any(|p| p.uuid == uuid);
    let is_pending = |uuid: Uuid| current.pending().iter().any(|p| p.uuid == uuid);
    for uuid in previous.pending().iter().map(|p| p.uuid) {
        if is_pending(uuid) {
            continue;
        }
        let decision = current.decision_for(uuid).cloned().map(Box::new);
        changes.push(Change::Resolved(uuid, decision));
    }
    for pending in current.pending() {
        if !was_pending(pending.uuid) {
            changes.push(Change::Requested(Box::new(pending.clone())));
        }
    }
    if previous.status != current.status {
        changes.push(Change::Status(current.status));
    }
    changes
}

/// The operator inbox: what this process changes (for its webhooks, and
/// sent on to the other replicas) and, for client streams, that plus what
/// the other replicas report.
#[derive(Clone)]
pub(crate) struct Inbox {
    local: broadcast::Sender<InboxEvent>,
    clients: broadcast::Sender<InboxEvent>,
    /// The versions saved here, to each follower (A2A push), bounded
    /// whatever the follower's pace (`saved_feed.rs`).
    saved: Arc<StdMutex<Vec<saved_feed::Follower>>>,
}

impl Default for Inbox {
    fn default() -> Inbox {
        Inbox {
            local: broadcast::channel(INBOX_CAPACITY).0,
            clients: broadcast::channel(INBOX_CAPACITY).0,
            saved: Arc::default(),
        }
    }
}

impl Inbox {
    /// Whether anybody listens.
    fn is_followed(&self) -> bool {
        self.local.receiver_count() > 0 || self.clients.receiver_count() > 0
    }

    /// A version saved here: to the followers still there.
    fn saved_here(&self, conversation: &Arc<Conversation>) {
        let mut followers = self.saved.lock().unwrap_or_else(|p| p.into_inner());
        followers.retain(saved_feed::Follower::is_followed);
        for follower in followers.iter() {
            follower.saved(conversation);
        }
    }

    /// A change made here: to everybody.
    pub(crate) fn send_local(&self, event: InboxEvent) {
        let _ = self.clients.send(event.clone());
        let _ = self.local.send(event);
    }
}

/// The conversations in use, by id, and the operator inbox.
///
/// A cache over the store: slots are added when used and dropped when idle
/// ([`ConversationIndex::evict_idle`]); approvals are looked up in the
/// store.
#[derive(Default)]
pub(crate) struct ConversationIndex {
    conversations: RwLock<HashMap<Uuid, Arc<Slot>>>,
    inbox: Inbox,
    /// How many times slots were dropped (a conversation read before a
    /// drop may be older than the dropped slot was).
    evictions: AtomicU64,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl ConversationIndex {
    /// Stamp to pass to [`ConversationIndex::cache`] for a conversation
    /// about to be read from the store.
    pub(crate) fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::SeqCst)
    }

    /// The slot of a conversation read from the store (after taking the
    /// stamp `read_after`): the cached one when there is one (it may be in
    /// use), else a new one. `None` when slots were dropped since the
    /// read: a slot dropped meanwhile may have held a newer version, so
    /// the caller reads again.
    pub(crate) fn cache(
        &self,
        conversation: Arc<Conversation>,
        read_after: u64,
    ) -> Option<Arc<Slot>> {
        let mut conversations = write(&self.conversations);
        if let Some(slot) = conversations.get(&conversation.id) {
            return Some(slot.clone());
        }
        if self.evictions() != read_after {
            return None;
        }
        let slot = Arc::new(Slot::new(conversation, self.inbox.clone()));
        conversations.insert(slot.snapshot().id, slot.clone());
        Some(slot)
    }

    /// Drops the cached slots nothing uses (they are read again when
    /// needed), handing each one's last saved version to `dropped` while
    /// no slot can be made again (the index is locked meanwhile). How
    /// many are left.
    pub(crate) fn evict_idle(&self, mut dropped: impl FnMut(Arc<Conversation>)) -> usize {
        let mut conversations = write(&self.conversations);
        let before = conversations.len();
        conversations.retain(|_, slot| {
            let keep = slot.in_use();
            if !keep {
                dropped(slot.snapshot());
            }
            keep
        });
        if conversations.len() != before {
            self.evictions.fetch_add(1, Ordering::SeqCst);
        }
        conversations.len()
    }

    /// The operator inbox from now on, for a client stream: every
    /// replica's changes.
    pub(crate) fn subscribe_inbox(&self) -> broadcast::Receiver<InboxEvent> {
        self.inbox.clients.subscribe()
    }

    /// The changes this process makes, from now on (its webhooks, and
    /// what it reports to the other replicas).
    pub(crate) fn subscribe_local_inbox(&self) -> broadcast::Receiver<InboxEvent> {
        self.inbox.local.subscribe()
    }

    /// The versions this process saves from now on (not those it reads
    /// from another replica) that `classify` wants.
    pub(crate) fn subscribe_saved(&self, classify: saved_feed::Classify) -> saved_feed::SavedFeed {
        let (follower, feed) = saved_feed::feed(classify);
        self.inbox
            .saved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(follower);
        feed
    }

    /// The operator inbox (to tell it of what is not saved: a question
    /// an MCP server asks during a call).
    pub(crate) fn inbox(&self) -> Inbox {
        self.inbox.clone()
    }

    /// Sends an event to the operator inbox (none listening is fine).
    pub(crate) fn notify_inbox(&self, event: InboxEvent) {
        self.inbox.send_local(event);
    }

    /// Whether a client stream follows the inbox here.
    pub(crate) fn inbox_has_clients(&self) -> bool {
        self.inbox.clients.receiver_count() > 0
    }

    /// An event another replica reported: to the client streams only
    /// (that replica's webhooks sent it).
    pub(crate) fn notify_remote(&self, event: InboxEvent) {
        let _ = self.inbox.clients.send(event);
    }

    /// Every slot (no order).
    pub(crate) fn slots(&self) -> Vec<Arc<Slot>> {
        read(&self.conversations).values().cloned().collect()
    }

    /// Adds a new conversation and returns its slot.
    pub(crate) fn insert_new(&self, conversation: Conversation) -> Arc<Slot> {
        let id = conversation.id;
        let slot = Arc::new(Slot::new(Arc::new(conversation), self.inbox.clone()));
        write(&self.conversations).insert(id, slot.clone());
        slot
    }

    pub(crate) fn get(&self, id: Uuid) -> Option<Arc<Slot>> {
        read(&self.conversations).get(&id).cloned()
    }
}

/// How many event streams may be open.
#[derive(Debug)]
pub(crate) struct SubscriberLimits {
    /// Per conversation.
    pub per_conversation: usize,
    /// In total (conversation streams and the inbox).
    pub total: usize,
    open: Arc<AtomicUsize>,
}

impl SubscriberLimits {
    pub(crate) fn new(per_conversation: usize, total: usize) -> SubscriberLimits {
        SubscriberLimits {
            per_conversation,
            total,
            open: Arc::default(),
        }
    }

    /// A permit counted in the total.
    pub(crate) fn total_permit(&self) -> Result<Permit, SubscribersFull> {
        if !take(&self.open, self.total) {
            return Err(SubscribersFull::Total(self.total));
        }
        Ok(Permit {
            total: self.open.clone(),
            also: None,
        })
    }
}

/// Too many event streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscribersFull {
    /// This conversation has its limit.
    Conversation(usize),
    /// The agent has its limit.
    Total(usize),
}

/// Takes one of `max` places; false when all are taken.
fn take(counter: &AtomicUsize, max: usize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .is_ok()
}

/// An open stream's place, given back when dropped.
pub(crate) struct Permit {
    total: Arc<AtomicUsize>,
    also: Option<Arc<AtomicUsize>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.total.fetch_sub(1, Ordering::SeqCst);
        if let Some(counter) = &self.also {
            counter.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A live event receiver holding its place among the open streams.
pub struct Subscription<E> {
    receiver: broadcast::Receiver<E>,
    _permit: Permit,
}

impl<E> Subscription<E> {
    pub(crate) fn new(receiver: broadcast::Receiver<E>, permit: Permit) -> Subscription<E> {
        Subscription {
            receiver,
            _permit: permit,
        }
    }
}

impl<E> Deref for Subscription<E> {
    type Target = broadcast::Receiver<E>;
    fn deref(&self) -> &Self::Target {
        &self.receiver
    }
}

impl<E> DerefMut for Subscription<E> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.receiver
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation(id: Uuid) -> Conversation {
        Conversation {
            id,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
            ..asg_shared::fixtures::conversation()
        }
    }

    fn approval(n: u128) -> asg_shared::PendingApproval {
        super::super::approval::pending(super::super::approval::NewApproval {
            uuid: Uuid::from_u128(n),
            conversation_id: Uuid::nil(),
            tool_name: "resources_add".into(),
            tool_args: Default::default(),
            description: String::new(),
            call_id: format!("call_{n}"),
            node: None,
        })
    }

    #[test]
    fn each_approval_that_joins_or_leaves_the_list_is_one_event() {
        let mut before = conversation(Uuid::nil());
        before.status = asg_shared::ConversationStatus::WaitingApproval;
        before.set_pending(vec![approval(1), approval(2)]);
        let mut after = before.clone();
        after.set_pending(vec![approval(2), approval(3)]);
        let events: Vec<String> = changes(&before, &after)
            .into_iter()
            .map(|c| match c {
                Change::Resolved(uuid, _) => format!("resolved {}", uuid.as_u128()),
                Change::Requested(p) => format!("requested {}", p.uuid.as_u128()),
                Change::Status(s) => format!("status {}", s.as_str()),
            })
            .collect();
        assert_eq!(events, ["resolved 1", "requested 3"]);
        let mut done = after.clone();
        done.set_pending(Vec::new());
        done.status = asg_shared::ConversationStatus::Active;
        assert_eq!(
            changes(&after, &done).len(),
            3,
            "two resolved and the status"
        );
    }

    #[test]
    fn a_conversation_read_before_slots_were_dropped_is_read_again() {
        let index = ConversationIndex::default();
        let id = Uuid::new_v4();
        let read = || Arc::new(conversation(id));
        drop(index.cache(read(), index.evictions()).unwrap());
        let read_before_the_drop = index.evictions();
        assert_eq!(index.evict_idle(|_| {}), 0, "an idle slot is dropped");
        assert!(
            index.cache(read(), read_before_the_drop).is_none(),
            "the dropped slot may have been newer than this read"
        );
        let slot = index.cache(read(), index.evictions()).unwrap();
        assert_eq!(index.evict_idle(|_| {}), 1, "a slot in use is kept");
        let later = index.cache(read(), read_before_the_drop).unwrap();
        assert!(
            Arc::ptr_eq(&slot, &later),
            "the cached slot wins over any read"
        );
    }

    #[test]
    fn a_dropped_slot_hands_over_its_last_saved_version() {
        let index = ConversationIndex::default();
        let idle = index.insert_new(conversation(Uuid::new_v4()));
        let busy = index.insert_new(conversation(Uuid::new_v4()));
        let mut saved = conversation(idle.snapshot().id);
        saved.session_id = "after the last turn".into();
        idle.publish(Arc::new(saved));
        let last = idle.snapshot();
        drop(idle);
        let mut dropped = Vec::new();
        assert_eq!(index.evict_idle(|c| dropped.push(c)), 1);
        assert_eq!(dropped.len(), 1, "only the idle slot is dropped");
        assert!(Arc::ptr_eq(&dropped[0], &last), "its last saved version");
        assert!(index.get(busy.snapshot().id).is_some());
    }

    #[test]
    fn stream_places_are_limited_and_given_back() {
        let limits = SubscriberLimits::new(2, 3);
        let a = ConversationIndex::default();
        let one = a.insert_new(conversation(Uuid::new_v4()));
        let two = a.insert_new(conversation(Uuid::new_v4()));
        let first = one.subscribe_limited(&limits).unwrap();
        let _second = one.subscribe_limited(&limits).unwrap();
        assert_eq!(
            one.subscribe_limited(&limits).err(),
            Some(SubscribersFull::Conversation(2))
        );
        let _third = two.subscribe_limited(&limits).unwrap();
        assert_eq!(
            two.subscribe_limited(&limits).err(),
            Some(SubscribersFull::Total(3))
        );
        drop(first);
        assert!(two.subscribe_limited(&limits).is_ok());
    }
}
