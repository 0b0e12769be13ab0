//! In-memory index of conversations and approvals.
//!
//! Each conversation has a [`Slot`]: an async lock taken by the one task
//! that changes it, and the last saved snapshot, which readers clone as an
//! `Arc` without waiting for that task. Approval uuids map to their
//! conversation, resolved ones included, so a repeated decision is a
//! conflict rather than "not found".

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use asg_shared::Conversation;
use asg_shared::events::ConversationEvent;
use tokio::sync::{Mutex, MutexGuard, broadcast};
use uuid::Uuid;

/// Events buffered per conversation for slow subscribers.
const EVENT_CAPACITY: usize = 256;

/// One conversation's lock, published snapshot and event channel.
pub(crate) struct Slot {
    turn: Mutex<()>,
    snapshot: RwLock<Arc<Conversation>>,
    /// Created on the first subscription: a channel buffers
    /// `EVENT_CAPACITY` events up front, too much to keep for every
    /// stored conversation.
    events: OnceLock<broadcast::Sender<ConversationEvent>>,
}

impl Slot {
    fn new(conversation: Conversation) -> Slot {
        Slot {
            turn: Mutex::new(()),
            snapshot: RwLock::new(Arc::new(conversation)),
            events: OnceLock::new(),
        }
    }

    /// Live events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ConversationEvent> {
        self.events
            .get_or_init(|| broadcast::channel(EVENT_CAPACITY).0)
            .subscribe()
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

    /// Takes the conversation's change lock.
    pub(crate) async fn lock(&self) -> MutexGuard<'_, ()> {
        self.turn.lock().await
    }

    /// The last saved version.
    pub(crate) fn snapshot(&self) -> Arc<Conversation> {
        match self.snapshot.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Publishes a saved version and emits what changed since the last
    /// one: new messages, approval requested/resolved, status.
    pub(crate) fn publish(&self, conversation: Arc<Conversation>) {
        let previous = {
            let mut guard = self.snapshot.write().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *guard, conversation.clone())
        };
        if self.events.get().is_none_or(|e| e.receiver_count() == 0) {
            return;
        }
        for message in conversation.messages.iter().skip(previous.messages.len()) {
            self.emit(ConversationEvent::Message {
                message: message.clone(),
            });
        }
        let old = previous.pending_approval.as_ref().map(|p| p.uuid);
        let new = conversation.pending_approval.as_ref();
        if let Some(uuid) = old
            && new.is_none_or(|p| p.uuid != uuid)
        {
            self.emit(ConversationEvent::ApprovalResolved { uuid });
        }
        if let Some(pending) = new
            && old != Some(pending.uuid)
        {
            self.emit(ConversationEvent::ApprovalRequested {
                approval: pending.clone(),
            });
        }
        if previous.status != conversation.status {
            self.emit(ConversationEvent::Status {
                status: conversation.status,
            });
        }
    }
}

/// Conversations by id, approvals by uuid.
#[derive(Default)]
pub(crate) struct ConversationIndex {
    conversations: RwLock<HashMap<Uuid, Arc<Slot>>>,
    approvals: RwLock<HashMap<Uuid, Uuid>>,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl ConversationIndex {
    /// Adds a loaded conversation and every approval it ever had.
    pub(crate) fn insert(&self, conversation: Conversation) {
        let id = conversation.id;
        {
            let mut approvals = write(&self.approvals);
            for uuid in approval_uuids(&conversation) {
                approvals.insert(uuid, id);
            }
        }
        write(&self.conversations).insert(id, Arc::new(Slot::new(conversation)));
    }

    /// Adds a new conversation and returns its slot.
    pub(crate) fn insert_new(&self, conversation: Conversation) -> Arc<Slot> {
        let id = conversation.id;
        let slot = Arc::new(Slot::new(conversation));
        write(&self.conversations).insert(id, slot.clone());
        slot
    }

    /// Records which conversation an approval belongs to.
    pub(crate) fn add_approval(&self, uuid: Uuid, conversation: Uuid) {
        write(&self.approvals).insert(uuid, conversation);
    }

    pub(crate) fn get(&self, id: Uuid) -> Option<Arc<Slot>> {
        read(&self.conversations).get(&id).cloned()
    }

    pub(crate) fn conversation_of_approval(&self, uuid: Uuid) -> Option<Uuid> {
        read(&self.approvals).get(&uuid).copied()
    }

    pub(crate) fn len(&self) -> usize {
        read(&self.conversations).len()
    }

    /// Snapshots of every conversation (no order).
    pub(crate) fn snapshots(&self) -> Vec<Arc<Conversation>> {
        read(&self.conversations)
            .values()
            .map(|slot| slot.snapshot())
            .collect()
    }
}

fn approval_uuids(conversation: &Conversation) -> impl Iterator<Item = Uuid> + '_ {
    conversation.pending_approval.iter().map(|p| p.uuid).chain(
        conversation
            .messages
            .iter()
            .filter_map(|m| m.tool_call.as_ref().and_then(|c| c.approval_uuid)),
    )
}
