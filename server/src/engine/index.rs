//! In-memory index of conversations and approvals.
//!
//! Each conversation has a [`Slot`]: an async lock taken by the one task
//! that changes it, and the last saved snapshot, which readers clone as an
//! `Arc` without waiting for that task. Approval uuids map to their
//! conversation, resolved ones included, so a repeated decision is a
//! conflict rather than "not found".

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use asg_shared::Conversation;
use tokio::sync::{Mutex, MutexGuard};
use uuid::Uuid;

/// One conversation's lock and published snapshot.
pub(crate) struct Slot {
    turn: Mutex<()>,
    snapshot: RwLock<Arc<Conversation>>,
}

impl Slot {
    fn new(conversation: Conversation) -> Slot {
        Slot {
            turn: Mutex::new(()),
            snapshot: RwLock::new(Arc::new(conversation)),
        }
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

    /// Publishes a saved version.
    pub(crate) fn publish(&self, conversation: Arc<Conversation>) {
        match self.snapshot.write() {
            Ok(mut guard) => *guard = conversation,
            Err(poisoned) => *poisoned.into_inner() = conversation,
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
