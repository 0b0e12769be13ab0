//! Test builders for conversations and messages.

use asg_shared::{
    ApprovalState, Conversation, ConversationStatus, Message, PendingApproval, Role, ToolCall,
    ToolResult,
};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// A fixed instant plus `seconds`.
pub fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_750_000_000 + seconds, 0).unwrap()
}

/// A deterministic uuid from a small number.
pub fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// A plain message.
pub fn message(n: u128, role: Role, content: &str) -> Message {
    Message {
        id: id(n),
        role,
        content: content.to_string(),
        tool_call: None,
        tool_result: None,
        node: None,
        is_error: false,
        created_at: at(n as i64),
    }
}

/// An assistant message requesting `name` with `args` under `call_id`.
pub fn call(n: u128, call_id: &str, name: &str, args: Value, needs_approval: bool) -> Message {
    let mut m = message(n, Role::Assistant, "");
    m.tool_call = Some(ToolCall {
        id: call_id.to_string(),
        name: name.to_string(),
        arguments: args.as_object().cloned().unwrap_or_else(Map::new),
        needs_approval,
        approval_uuid: None,
        provider_signature: None,
    });
    m
}

/// The tool message answering `call_id`.
pub fn result(n: u128, call_id: &str, name: &str, content: &str, is_error: bool) -> Message {
    let mut m = message(n, Role::Tool, content);
    m.tool_result = Some(ToolResult {
        call_id: call_id.to_string(),
        name: name.to_string(),
        is_error,
    });
    m
}

/// A conversation with `messages`, active, updated at `updated`.
pub fn conversation(messages: Vec<Message>, updated: i64) -> Conversation {
    Conversation {
        id: id(1000),
        session_id: "abcd1234".to_string(),
        status: ConversationStatus::Active,
        messages,
        pending_approvals: Vec::new(),
        pending_approval: None,
        pipeline_state: None,
        turn_in_progress: false,
        owner: None,
        decisions: Vec::new(),
        grants: Vec::new(),
        a2a_context_id: None,
        created_at: at(0),
        updated_at: at(updated),
    }
}

/// A pending approval for `call_id`.
pub fn approval(n: u128, call_id: &str) -> PendingApproval {
    PendingApproval {
        uuid: id(n),
        conversation_id: id(1000),
        tool_name: "resources_add".to_string(),
        tool_args: json!({"name": "web-1", "value": 42})
            .as_object()
            .cloned()
            .unwrap(),
        description: "Add resource web-1 with value 42".to_string(),
        created_at: at(n as i64),
        call_id: call_id.to_string(),
        node: None,
        state: ApprovalState::Pending,
        remote_task_id: None,
        remote_agent_name: None,
        remote_approval_uuid: None,
        requested_by: None,
        approvers: Vec::new(),
        rule: None,
        no_edit: false,
        config_hash: None,
        config_changed: false,
        expires_at: None,
        remind_at: None,
        reminded: false,
    }
}
