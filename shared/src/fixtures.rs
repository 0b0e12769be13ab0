//! Test builders for the conversation model (feature `fixtures`).
//!
//! Each builder returns a complete, plain value with every optional field
//! empty, so a test names only what it is about, with struct update syntax:
//!
//! ```text
//! let approval = PendingApproval {
//!     node: Some("root".into()),
//!     ..fixtures::pending_approval("resources_add")
//! };
//! ```
//!
//! Values are deterministic except ids: [`uuid`] hands out a new id on every
//! call (a process-wide counter, no random source, so it builds for
//! `wasm32-unknown-unknown` too). Times are a fixed instant ([`at`]); a test
//! about time sets its own. Production code builds these types elsewhere
//! (`asg_core::lifecycle::pending`, the engine); this module exists for tests
//! only and is compiled with the feature or for this crate's own tests.

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde_json::Map;
use uuid::Uuid;

use crate::{ApprovalState, Conversation, ConversationStatus, Message, PendingApproval, Role};

/// A fixed instant (2025-06-15T15:06:40Z) plus `seconds`.
pub fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_750_000_000 + seconds, 0).expect("a time within chrono's range")
}

/// A new id, different from every other one this process got from here
/// (version 4 layout; the counter stands in the last six bytes).
pub fn uuid() -> Uuid {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut bytes = [0xf1_u8; 16];
    bytes[10..].copy_from_slice(&n.to_be_bytes()[2..]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// A plain message: `role` wrote `content` at [`at(0)`](at), no tool call
/// or result, no node.
pub fn message(role: Role, content: &str) -> Message {
    Message {
        id: uuid(),
        role,
        content: content.to_string(),
        tool_call: None,
        tool_result: None,
        node: None,
        is_error: false,
        created_at: at(0),
    }
}

/// An approval of a call of `tool` waiting for a decision: a new uuid, the
/// nil conversation, no arguments, `tool` as its description, call id
/// `call_1`, raised at [`at(0)`](at); no node, remote agent, requester,
/// rule, approvers, deadlines or configuration hash.
pub fn pending_approval(tool: &str) -> PendingApproval {
    PendingApproval {
        uuid: uuid(),
        conversation_id: Uuid::nil(),
        tool_name: tool.to_string(),
        tool_args: Map::new(),
        description: tool.to_string(),
        created_at: at(0),
        call_id: "call_1".to_string(),
        node: None,
        state: ApprovalState::Pending,
        remote_task_id: None,
        remote_agent_name: None,
        remote_approval_uuid: None,
        remote_context_id: None,
        requested_by: None,
        approvers: Vec::new(),
        rule: None,
        no_edit: false,
        config_hash: None,
        config_changed: false,
        expires_at: None,
        remind_at: None,
        reminded: false,
        question: None,
    }
}

/// An active conversation without messages: a new id, session `abcd1234`,
/// created and updated at [`at(0)`](at); no approval, pipeline state,
/// owner, decision or grant.
pub fn conversation() -> Conversation {
    Conversation {
        id: uuid(),
        session_id: "abcd1234".to_string(),
        status: ConversationStatus::Active,
        messages: Vec::new(),
        pending_approval: None,
        pending_approvals: Vec::new(),
        pipeline_state: None,
        turn_in_progress: false,
        owner: None,
        decisions: Vec::new(),
        grants: Vec::new(),
        a2a_context_id: None,
        created_at: at(0),
        updated_at: at(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_new_on_every_call_and_version_4() {
        let (a, b) = (uuid(), uuid());
        assert_ne!(a, b);
        assert_eq!(a.get_version_num(), 4);
        assert_ne!(pending_approval("t").uuid, pending_approval("t").uuid);
        assert_ne!(conversation().id, conversation().id);
    }

    #[test]
    fn a_fixture_serializes_only_its_required_fields() {
        let json = serde_json::to_value(pending_approval("resources_add")).unwrap();
        let mut keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "call_id",
                "conversation_id",
                "created_at",
                "description",
                "state",
                "tool_args",
                "tool_name",
                "uuid"
            ]
        );
        let back: Conversation =
            serde_json::from_value(serde_json::to_value(conversation()).unwrap()).unwrap();
        assert_eq!(back.status, ConversationStatus::Active);
    }
}
