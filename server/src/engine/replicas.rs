//! What the engine does over a shared store (several replicas on one
//! PostgreSQL): follow changes made by other replicas, take over the
//! conversations of a replica that died mid-turn, drop idle cached
//! conversations.
//!
//! - Live events: every commit is notified (`LISTEN/NOTIFY`); a replica
//!   with an open event stream on that conversation reads the new version
//!   and publishes it (its messages, approvals and status, and the turn's
//!   start and end), so a stream on replica 2 follows a turn on replica 1.
//! - The operator inbox: a change made here goes to this replica's
//!   webhooks and inbox streams, and as a short note (`NOTIFY`) to the
//!   other replicas, whose inbox streams read it back from the store (their
//!   webhooks do not send it again).
//! - Abandoned turns: a lease that outlived its holder (no renewal for
//!   `store::LEASE_TTL`), or that a holder gave back with something still
//!   in flight (the store then leaves it expired, never cleared), is
//!   taken over every [`SWEEP`] by some replica, which records the turn as
//!   interrupted: an approved call that was executing is reported "may
//!   have run" and never run again. A decision or message that claims
//!   such a conversation first does the same (every claim starts from a
//!   settled version, `claim.rs`), so no state is left with something in
//!   flight and neither a holder nor a way out.

use std::sync::Arc;
use std::time::Duration;

use asg_shared::Conversation;
use asg_shared::events::InboxEvent;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use super::index::Slot;
use super::store_call::stored;
use super::{Engine, EngineError, Inner};

/// How often abandoned leases are looked for and idle slots dropped.
const SWEEP: Duration = Duration::from_secs(2);

impl Engine {
    /// Starts following other replicas' changes and the sweep.
    pub(crate) fn start_replica_tasks(&self) {
        let (changes, notes) = (Arc::downgrade(&self.inner), Arc::downgrade(&self.inner));
        self.inner.store.watch(
            Arc::new(move |id| {
                if let Some(inner) = changes.upgrade() {
                    inner.follow_change(id);
                }
            }),
            Arc::new(move |note| {
                if let Some(inner) = notes.upgrade() {
                    inner.hear(note);
                }
            }),
        );
        let mut local = self.inner.index.subscribe_local_inbox();
        let inner = self.inner.clone();
        self.inner.expiry.spawn_background(async move {
            loop {
                match local.recv().await {
                    Ok(event) => inner.tell_others(&event),
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        });
        let engine = self.clone();
        self.inner.expiry.spawn_background(async move {
            loop {
                tokio::time::sleep(SWEEP).await;
                engine.sweep().await;
            }
        });
    }

    /// Takes over abandoned conversations; drops idle cached slots.
    async fn sweep(&self) {
        let inner = &self.inner;
        let abandoned = match stored(&inner.store, |s| s.abandoned()).await {
            Ok(ids) => ids,
            Err(error) => {
                tracing::debug!(%error, "cannot look for abandoned conversations");
                Vec::new()
            }
        };
        for id in abandoned {
            if inner.index.get(id).is_some_and(|slot| slot.is_busy()) {
                continue; // in use here: looked at again next sweep
            }
            tracing::warn!(conversation = %id, "a replica stopped in the middle of a turn on this conversation; taking it over");
            let taken = match inner.slot(id).await {
                Ok(slot) => inner.record_interrupted(&slot).await,
                Err(error) => Err(error),
            };
            match taken {
                Ok(()) => crate::metrics::metrics().store_takeover(),
                Err(error) => {
                    tracing::warn!(conversation = %id, %error, "cannot take over an abandoned conversation yet")
                }
            }
        }
        inner.evict_idle();
    }
}

/// An operator inbox event told to the other replicas: what it is
/// about; they read the rest from the store (a note stays short).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Note {
    kind: NoteKind,
    conversation: Uuid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approval: Option<Uuid>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum NoteKind {
    Requested,
    Reminder,
    Resolved,
    Status,
}

impl Note {
    /// The note of `event` (none for a `pending` list: each stream
    /// makes its own).
    fn of(event: &InboxEvent) -> Option<Note> {
        let (kind, conversation, approval) = match event {
            InboxEvent::Pending { .. } => return None,
            InboxEvent::ApprovalRequested { approval } => (
                NoteKind::Requested,
                approval.conversation_id,
                Some(approval.uuid),
            ),
            InboxEvent::ApprovalReminder { approval } => (
                NoteKind::Reminder,
                approval.conversation_id,
                Some(approval.uuid),
            ),
            InboxEvent::ApprovalResolved {
                uuid,
                conversation_id,
                ..
            } => (NoteKind::Resolved, *conversation_id, Some(*uuid)),
            InboxEvent::Status {
                conversation_id, ..
            } => (NoteKind::Status, *conversation_id, None),
        };
        Some(Note {
            kind,
            conversation,
            approval,
        })
    }

    /// The event again, from the stored conversation (`None` when it no
    /// longer holds what the note is about).
    fn event(&self, conversation: &Conversation) -> Option<InboxEvent> {
        let pending = || conversation.pending_by_uuid(self.approval?).cloned();
        Some(match self.kind {
            NoteKind::Requested => InboxEvent::ApprovalRequested {
                approval: pending()?,
            },
            NoteKind::Reminder => InboxEvent::ApprovalReminder {
                approval: pending()?,
            },
            NoteKind::Resolved => {
                let uuid = self.approval?;
                let decision = conversation.decision_for(uuid).cloned().map(Box::new);
                InboxEvent::ApprovalResolved {
                    uuid,
                    conversation_id: conversation.id,
                    decision,
                }
            }
            NoteKind::Status => InboxEvent::Status {
                conversation_id: conversation.id,
                status: conversation.status,
            },
        })
    }
}

impl Inner {
    /// Tells the other replicas of a change made here (their inbox
    /// streams show it; their webhooks do not send it again).
    fn tell_others(&self, event: &InboxEvent) {
        if let Some(note) = Note::of(event)
            && let Ok(text) = serde_json::to_string(&note)
        {
            self.store.announce(&text);
        }
    }

    /// Another replica's note: to the inbox streams here, if any.
    fn hear(self: Arc<Self>, text: &str) {
        if !self.index.inbox_has_clients() {
            return;
        }
        let Ok(note) = serde_json::from_str::<Note>(text) else {
            tracing::debug!(
                note = text,
                "a note from another replica that this version cannot read"
            );
            return;
        };
        tokio::spawn(async move {
            let id = note.conversation;
            if let Ok(Some(conversation)) = stored(&self.store, move |s| s.load(id)).await
                && let Some(event) = note.event(&conversation)
            {
                self.index.notify_remote(event);
            }
        });
    }

    /// Another replica (or this one) saved conversation `id`: a slot
    /// followed here publishes the new version.
    pub(crate) fn follow_change(self: Arc<Self>, id: Uuid) {
        self.reads.forget(id);
        let Some(slot) = self.index.get(id) else {
            return;
        };
        if !slot.is_followed() || !slot.start_following() {
            return;
        }
        tokio::spawn(async move {
            // Under the conversation's lock: never between a claim here
            // and its release, and each read is the latest committed, so
            // an older version is never published after a newer one.
            let _guard = slot.lock_owned().await;
            slot.followed();
            if let Ok(Some(conversation)) = stored(&self.store, move |s| s.load(id)).await {
                slot.refresh(Arc::new(conversation), true);
            }
        });
    }

    /// Records a turn left unfinished on `slot` (by a shutdown, or by a
    /// replica that died) as interrupted: the claim does it (a claim
    /// always starts from a settled version, `claim.rs`), so an executing
    /// approval is reported "may have run", never re-run.
    pub(crate) async fn record_interrupted(&self, slot: &Arc<Slot>) -> Result<(), EngineError> {
        self.claim(slot).await?.release().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use asg_shared::{ApprovalDecision, ConversationStatus, PendingApproval, fixtures};
    use chrono::Utc;

    use super::*;

    fn waiting(uuid: Uuid) -> Conversation {
        let id = Uuid::from_u128(7);
        let mut conversation = Conversation {
            id,
            status: ConversationStatus::WaitingApproval,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            ..fixtures::conversation()
        };
        conversation.set_pending(vec![PendingApproval {
            uuid,
            conversation_id: id,
            tool_args: serde_json::json!({"name": "a", "value": 1})
                .as_object()
                .cloned()
                .unwrap(),
            description: String::new(),
            created_at: Utc::now(),
            call_id: "c1".into(),
            ..fixtures::pending_approval("resources_add")
        }]);
        conversation
    }

    #[test]
    fn a_note_is_short_and_the_event_is_read_back_from_the_store() {
        let uuid = Uuid::from_u128(9);
        let stored = waiting(uuid);
        let requested = InboxEvent::ApprovalRequested {
            approval: stored.pending()[0].clone(),
        };
        let note = Note::of(&requested).unwrap();
        let text = serde_json::to_string(&note).unwrap();
        assert!(!text.contains("tool_args"), "{text}");
        let heard: Note = serde_json::from_str(&text).unwrap();
        assert_eq!(heard.event(&stored), Some(requested));
        // Decided meanwhile: a request no longer pending is not repeated,
        // and the decision is read from the conversation.
        let mut decided = stored.clone();
        decided.set_pending(Vec::new());
        decided.status = ConversationStatus::Active;
        let decision: ApprovalDecision = serde_json::from_value(serde_json::json!({
            "approval_uuid": uuid, "tool_name": "resources_add", "approved": true, "decided_at": Utc::now(),
            "decided_by": {"subject": "ops"}
        }))
        .unwrap();
        decided.decisions.push(decision.clone());
        assert_eq!(heard.event(&decided), None);
        let resolved = InboxEvent::ApprovalResolved {
            uuid,
            conversation_id: decided.id,
            decision: None,
        };
        let back = Note::of(&resolved).unwrap().event(&decided);
        assert_eq!(
            back,
            Some(InboxEvent::ApprovalResolved {
                uuid,
                conversation_id: decided.id,
                decision: Some(Box::new(decision)),
            })
        );
        assert_eq!(Note::of(&InboxEvent::Pending { approvals: vec![] }), None);
    }
}
