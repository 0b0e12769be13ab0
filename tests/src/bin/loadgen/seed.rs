//! Seeding a data directory with stored conversations, written directly as
//! `<data_dir>/conversations/<uuid>.json` in the server's own format
//! (pretty-printed [`asg_shared::Conversation`]), without going through the
//! API. Most conversations are a finished "list resources" exchange; every
//! 33rd one stops before a `resources_add` call and waits for approval.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use asg_shared::{
    Conversation, ConversationStatus, Message, PendingApproval, Role, ToolCall, ToolResult,
    fixtures,
};
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// Node name written on model and tool messages (the config's agent name).
const NODE: &str = "resource-manager";

/// What [`seed`] wrote.
pub struct Seeded {
    /// Ids of every written conversation.
    pub ids: Vec<Uuid>,
    /// How many of them wait for an approval.
    pub pending: usize,
    /// Total size of the files.
    pub bytes: u64,
    /// Time taken.
    pub elapsed: Duration,
}

/// True for the conversations that are left waiting for an approval.
pub fn is_pending(index: usize) -> bool {
    index % 33 == 7
}

/// Writes `count` conversations under `<data_dir>/conversations/`.
pub fn seed(data_dir: &Path, count: usize) -> Result<Seeded> {
    let started = Instant::now();
    let dir = data_dir.join("conversations");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let now = Utc::now();
    let ids: Vec<Uuid> = (0..count).map(|_| Uuid::new_v4()).collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 8));
    let chunk = count.div_ceil(threads).max(1);
    let bytes = std::thread::scope(|scope| -> Result<u64> {
        let workers: Vec<_> = ids
            .chunks(chunk)
            .enumerate()
            .map(|(part, chunk_ids)| {
                let dir = &dir;
                scope.spawn(move || -> Result<u64> {
                    let mut written = 0u64;
                    for (offset, id) in chunk_ids.iter().enumerate() {
                        let index = part * chunk + offset;
                        let conversation = conversation(*id, index, now);
                        let body = serde_json::to_vec_pretty(&conversation)
                            .context("cannot encode a conversation")?;
                        let path = dir.join(format!("{id}.json"));
                        std::fs::write(&path, &body)
                            .with_context(|| format!("cannot write {}", path.display()))?;
                        written += body.len() as u64;
                    }
                    Ok(written)
                })
            })
            .collect();
        let mut total = 0;
        for worker in workers {
            total += worker
                .join()
                .map_err(|_| anyhow::anyhow!("a seeding thread panicked"))??;
        }
        Ok(total)
    })?;
    Ok(Seeded {
        pending: (0..count).filter(|i| is_pending(*i)).count(),
        ids,
        bytes,
        elapsed: started.elapsed(),
    })
}

fn message(role: Role, content: impl Into<String>, at: DateTime<Utc>) -> Message {
    Message {
        id: Uuid::new_v4(),
        role,
        content: content.into(),
        tool_call: None,
        tool_result: None,
        node: (role != Role::System && role != Role::User).then(|| NODE.to_string()),
        is_error: false,
        created_at: at,
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// One realistic conversation: system prompt, "list resources", the
/// `resources_list` call and its result, the answer, a thank-you (or, for a
/// pending one, an add request stopped for approval).
pub fn conversation(id: Uuid, index: usize, now: DateTime<Utc>) -> Conversation {
    let created = now - TimeDelta::seconds(60 * (index as i64 % 43_200) + 3600);
    let at = |step: i64| created + TimeDelta::milliseconds(400 * step);
    let mut messages = listing_exchange(index, &at);
    let mut status = ConversationStatus::Active;
    let mut pending_approval = None;
    if is_pending(index) {
        let (add, pending) = add_waiting_for_approval(id, index, &at);
        messages.extend(add);
        pending_approval = Some(pending);
        status = ConversationStatus::WaitingApproval;
    } else {
        messages.push(message(Role::User, "thanks", at(5)));
        messages.push(message(
            Role::Assistant,
            "I manage resources. Try \"list resources\".",
            at(6),
        ));
    }
    let updated_at = messages.last().map_or(created, |m| m.created_at);
    Conversation {
        id,
        session_id: format!("{:08x}", (index as u32).wrapping_mul(2_654_435_761)),
        status,
        messages: messages.into_iter().map(Into::into).collect(),
        pending_approval,
        created_at: created,
        updated_at,
        ..fixtures::conversation()
    }
}

/// Steps 0 to 4: the system prompt, "list resources", the
/// `resources_list` call, its result and the answer.
fn listing_exchange(index: usize, at: &impl Fn(i64) -> DateTime<Utc>) -> Vec<Message> {
    let list_call = format!("call_{:08x}_1", index);
    let listing = json!({
        "count": 2,
        "resources": [
            {"id": format!("res_{:08x}", index * 2), "name": format!("web-{index}"), "value": 42},
            {"id": format!("res_{:08x}", index * 2 + 1), "name": format!("db-{index}"), "value": 7},
        ]
    })
    .to_string();
    vec![
        message(Role::System, "You are a resource manager.", at(0)),
        message(Role::User, "list resources", at(1)),
        Message {
            tool_call: Some(Box::new(ToolCall {
                id: list_call.clone(),
                name: "resources_list".into(),
                arguments: Map::new(),
                needs_approval: false,
                approval_uuid: None,
                provider_signature: None,
            })),
            ..message(Role::Assistant, "", at(2))
        },
        Message {
            tool_result: Some(Box::new(ToolResult {
                call_id: list_call,
                name: "resources_list".into(),
                is_error: false,
                auth_required: false,
            })),
            ..message(Role::Tool, listing.clone(), at(3))
        },
        message(
            Role::Assistant,
            format!("There are 2 resources: {listing}"),
            at(4),
        ),
    ]
}

/// Steps 5 and 6 of a pending conversation: an add request and the
/// `resources_add` call stopped for approval, with its pending approval.
fn add_waiting_for_approval(
    id: Uuid,
    index: usize,
    at: &impl Fn(i64) -> DateTime<Utc>,
) -> (Vec<Message>, PendingApproval) {
    let uuid = Uuid::new_v4();
    let call_id = format!("call_{:08x}_2", index);
    let name = format!("cache-{index}");
    let args = object(json!({"name": name, "value": 42}));
    let messages = vec![
        message(
            Role::User,
            format!("add resource {name} with value 42"),
            at(5),
        ),
        Message {
            tool_call: Some(Box::new(ToolCall {
                id: call_id.clone(),
                name: "resources_add".into(),
                arguments: args.clone(),
                needs_approval: true,
                approval_uuid: Some(uuid),
                provider_signature: None,
            })),
            ..message(Role::Assistant, "", at(6))
        },
    ];
    let pending = PendingApproval {
        uuid,
        conversation_id: id,
        tool_args: args,
        description: format!("resources_add(name={name:?}, value=42)"),
        created_at: at(6),
        call_id,
        node: Some(NODE.into()),
        ..fixtures::pending_approval("resources_add")
    };
    (messages, pending)
}
