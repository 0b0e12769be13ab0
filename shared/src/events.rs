//! Live events of one conversation, as the server streams them
//! (`GET /conversations/{id}/events`, server-sent events, one JSON object
//! per `data:` line). They are derived from saved states, so a client that
//! applies them sees what `GET /conversations/{id}` would show.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::conversation::{
    ApprovalDecision, Conversation, ConversationStatus, Message, PendingApproval,
};

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
// As `InboxEvent`: the largest variant is one approval; events are built
// once and moved, so boxing would only add an allocation per event.
#[allow(clippy::large_enum_variant)]
pub enum ConversationEvent {
    /// The whole conversation: first event of every stream, and again
    /// when a slow client missed events.
    Snapshot {
        /// Current state.
        conversation: Box<Conversation>,
    },
    /// The agent started working on a message or a decision.
    TurnStarted,
    /// A message was recorded (user text, answer, tool call, tool result,
    /// error). An assistant message with a `tool_call` means the call
    /// started; the tool message with the same call id means it finished.
    Message {
        /// The message.
        message: Message,
    },
    /// A destructive call stopped for a human decision.
    ApprovalRequested {
        /// The pending approval.
        approval: PendingApproval,
    },
    /// A pending approval was decided (or found interrupted).
    ApprovalResolved {
        /// Its uuid.
        uuid: Uuid,
        /// Who decided, when and why (absent for an interruption).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<Box<ApprovalDecision>>,
    },
    /// The conversation's status changed.
    Status {
        /// The new status.
        status: ConversationStatus,
    },
    /// The agent finished the turn.
    TurnFinished {
        /// The answer (or the approval request text).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response: Option<String>,
        /// Why the turn failed, when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// One event of the operator inbox (`GET /events`, server-sent events):
/// approval requests and decisions across every conversation, so an
/// operator's screen follows them live without one stream per
/// conversation. The stream starts with a `pending` event listing every
/// approval that waits now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
// The variants are as large as one approval; events are built once and
// moved, so boxing would only add an allocation per event.
#[allow(clippy::large_enum_variant)]
pub enum InboxEvent {
    /// Every approval waiting now (first event of every stream, and again
    /// when a slow client missed events).
    Pending {
        /// Oldest first.
        approvals: Vec<PendingApproval>,
    },
    /// A call stopped for a human decision in some conversation.
    ApprovalRequested {
        /// The pending approval (its `conversation_id` names the
        /// conversation).
        approval: PendingApproval,
    },
    /// An approval still waits after `approval.remind_after`: a nudge for
    /// whoever decides (also sent to the webhooks).
    ApprovalReminder {
        /// The approval, still pending.
        approval: PendingApproval,
    },
    /// A pending approval left the pending list: decided, canceled,
    /// expired (decided by `system:expiry`, role `expiry`) or found
    /// interrupted.
    ApprovalResolved {
        /// Its uuid.
        uuid: Uuid,
        /// Its conversation.
        conversation_id: Uuid,
        /// Who decided, when and why (absent for an interruption).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<Box<ApprovalDecision>>,
    },
    /// A conversation's status changed (e.g. to `waiting_approval`).
    Status {
        /// The conversation.
        conversation_id: Uuid,
        /// The new status.
        status: ConversationStatus,
    },
}
