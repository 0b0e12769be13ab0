//! Test builders for conversations and messages.
//!
//! Thin wrappers over `asg_shared::fixtures` with deterministic ids and
//! times, so expected values can be written out.

use asg_shared::{Conversation, Message, PendingApproval, Role, ToolCall, ToolResult, fixtures};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// A fixed instant plus `seconds`.
pub use asg_shared::fixtures::at;

/// A deterministic uuid from a small number.
pub fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// A plain message.
pub fn message(n: u128, role: Role, content: &str) -> Message {
    Message {
        id: id(n),
        created_at: at(n as i64),
        ..fixtures::message(role, content)
    }
}

/// An assistant message requesting `name` with `args` under `call_id`.
pub fn call(n: u128, call_id: &str, name: &str, args: Value, needs_approval: bool) -> Message {
    let mut m = message(n, Role::Assistant, "");
    m.tool_call = Some(Box::new(ToolCall {
        id: call_id.to_string(),
        name: name.to_string(),
        arguments: args.as_object().cloned().unwrap_or_else(Map::new),
        needs_approval,
        approval_uuid: None,
        provider_signature: None,
    }));
    m
}

/// The tool message answering `call_id`.
pub fn result(n: u128, call_id: &str, name: &str, content: &str, is_error: bool) -> Message {
    let mut m = message(n, Role::Tool, content);
    m.tool_result = Some(Box::new(ToolResult {
        call_id: call_id.to_string(),
        name: name.to_string(),
        is_error,
        auth_required: false,
    }));
    m
}

/// A conversation with `messages`, active, updated at `updated`.
pub fn conversation(messages: Vec<Message>, updated: i64) -> Conversation {
    Conversation {
        id: id(1000),
        messages: messages.into_iter().map(Into::into).collect(),
        created_at: at(0),
        updated_at: at(updated),
        ..fixtures::conversation()
    }
}

/// A pending approval for `call_id`.
pub fn approval(n: u128, call_id: &str) -> PendingApproval {
    PendingApproval {
        uuid: id(n),
        conversation_id: id(1000),
        tool_args: json!({"name": "web-1", "value": 42})
            .as_object()
            .cloned()
            .unwrap(),
        description: "Add resource web-1 with value 42".to_string(),
        created_at: at(n as i64),
        call_id: call_id.to_string(),
        ..fixtures::pending_approval("resources_add")
    }
}
