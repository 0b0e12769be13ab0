//! A save journaled as a change: when a conversation's previous record
//! is still in the active journal file and the new version begins with
//! every message of that record's version (the same shared `Arc`s, so
//! the same messages: a shared message is never changed in place), the
//! record holds the new messages only, with every other field whole:
//!
//! `{"delta":{"seq":S,"messages":N},"conversation":{…,"messages":[the new ones],…}}`
//!
//! So a save's cost no longer grows with the history: a turn of a long
//! conversation used to serialize, write and sync every earlier message
//! at each of its saves. A whole conversation's record starts with
//! `{"id":`, never with `{"delta":`. Replay ([`super::replay`]) rebuilds
//! the version from record `S` (the conversation's previous record, in
//! the same file: a file is emptied only after a checkpoint wrote the
//! versions it holds, and a change is journaled only against a record of
//! the active file's generation, see [`super::journal::Journal::append_if`]).

use std::sync::Arc;

use asg_shared::{
    ApprovalDecision, Conversation, ConversationStatus, Grant, Message, PendingApproval,
    PipelineState,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How a change record's payload starts.
const CHANGE_START: &[u8] = b"{\"delta\":";

/// The record a change applies to: its sequence number and how many
/// messages its version has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Base {
    pub seq: u64,
    pub messages: usize,
}

/// What a record's payload holds.
#[derive(Debug)]
pub(super) enum Payload {
    /// The whole conversation.
    Whole(Conversation),
    /// A change of record `base`: `conversation` has the new messages
    /// only.
    Change {
        base: Base,
        conversation: Conversation,
    },
}

/// How many messages `newer` shares with `older` (every one of them, by
/// pointer, at its start), when it is a change of it worth journaling
/// as one; `None` when `newer` is not `older` with messages added.
pub(super) fn shared_start(older: &Conversation, newer: &Conversation) -> Option<usize> {
    let shared = older.messages.len();
    let starts_with_older = older.id == newer.id
        && shared > 0
        && newer.messages.len() >= shared
        && older
            .messages
            .iter()
            .zip(&newer.messages)
            .all(|(a, b)| Arc::ptr_eq(a, b));
    starts_with_older.then_some(shared)
}

/// Writes the change of `conversation` against `base` (whose version has
/// `base.messages` messages, all shared with `conversation`) after what
/// `record` holds.
pub(super) fn write(
    record: &mut Vec<u8>,
    base: Base,
    conversation: &Conversation,
) -> serde_json::Result<()> {
    #[derive(Serialize)]
    struct Change<'a> {
        delta: Base,
        conversation: Fields<'a>,
    }
    let new = conversation.messages.get(base.messages..).unwrap_or(&[]);
    serde_json::to_writer(
        record,
        &Change {
            delta: base,
            conversation: Fields::of(conversation, new),
        },
    )
}

/// Reads a record's payload.
pub(super) fn read(payload: &[u8]) -> serde_json::Result<Payload> {
    if !payload.starts_with(CHANGE_START) {
        return serde_json::from_slice(payload).map(Payload::Whole);
    }
    #[derive(Deserialize)]
    struct Change {
        delta: Base,
        conversation: Conversation,
    }
    let change: Change = serde_json::from_slice(payload)?;
    Ok(Payload::Change {
        base: change.delta,
        conversation: change.conversation,
    })
}

/// The version a change makes of `older` (the version of record
/// `base.seq`); `Err` says why it does not apply.
pub(super) fn apply(
    older: Conversation,
    base: Base,
    mut change: Conversation,
) -> Result<Conversation, String> {
    if older.id != change.id || older.messages.len() != base.messages {
        return Err(format!(
            "it changes a version with {} messages of conversation {}, the journal holds one with {} of {}",
            base.messages,
            change.id,
            older.messages.len(),
            older.id
        ));
    }
    let mut messages = older.messages;
    messages.append(&mut change.messages);
    change.messages = messages;
    Ok(change)
}

/// A conversation's fields, borrowed, with `messages` chosen: read back
/// as a [`Conversation`]. Made by destructuring, so a field added to
/// `Conversation` does not compile until it is here too.
#[derive(Serialize)]
struct Fields<'a> {
    id: &'a Uuid,
    session_id: &'a str,
    status: &'a ConversationStatus,
    messages: &'a [Arc<Message>],
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_approval: &'a Option<PendingApproval>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pending_approvals: &'a [PendingApproval],
    #[serde(skip_serializing_if = "Option::is_none")]
    pipeline_state: &'a Option<PipelineState>,
    #[serde(skip_serializing_if = "is_false")]
    turn_in_progress: &'a bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: &'a Option<String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    decisions: &'a [ApprovalDecision],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    grants: &'a [Grant],
    #[serde(skip_serializing_if = "Option::is_none")]
    a2a_context_id: &'a Option<String>,
    created_at: &'a DateTime<Utc>,
    updated_at: &'a DateTime<Utc>,
}

fn is_false(value: &&bool) -> bool {
    !**value
}

impl<'a> Fields<'a> {
    fn of(conversation: &'a Conversation, messages: &'a [Arc<Message>]) -> Fields<'a> {
        let Conversation {
            id,
            session_id,
            status,
            messages: _,
            pending_approval,
            pending_approvals,
            pipeline_state,
            turn_in_progress,
            owner,
            decisions,
            grants,
            a2a_context_id,
            created_at,
            updated_at,
        } = conversation;
        Fields {
            id,
            session_id,
            status,
            messages,
            pending_approval,
            pending_approvals,
            pipeline_state,
            turn_in_progress,
            owner,
            decisions,
            grants,
            a2a_context_id,
            created_at,
            updated_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use asg_shared::{Role, fixtures};

    use super::*;

    fn with_messages(texts: &[&str]) -> Conversation {
        let mut conversation = fixtures::conversation();
        for text in texts {
            conversation
                .messages
                .push(fixtures::message(Role::User, text).into());
        }
        conversation
    }

    #[test]
    fn a_change_holds_the_new_messages_only_and_rebuilds_the_version() {
        let older = with_messages(&["first", "second"]);
        let mut newer = older.clone();
        newer
            .messages
            .push(fixtures::message(Role::Assistant, "third").into());
        newer.status = ConversationStatus::WaitingApproval;
        newer.owner = Some("key:alice".into());
        let shared = shared_start(&older, &newer).expect("newer adds to older");
        assert_eq!(shared, 2);
        let base = Base {
            seq: 7,
            messages: shared,
        };
        let mut record = Vec::new();
        write(&mut record, base, &newer).unwrap();
        let text = String::from_utf8(record.clone()).unwrap();
        assert!(
            text.starts_with("{\"delta\":{\"seq\":7,\"messages\":2}"),
            "{text}"
        );
        assert!(text.contains("third") && !text.contains("first") && !text.contains("second"));
        let Payload::Change {
            base: read_base,
            conversation,
        } = read(&record).unwrap()
        else {
            panic!("read as a whole conversation");
        };
        assert_eq!(read_base, base);
        assert_eq!(apply(older, base, conversation).unwrap(), newer);
    }

    #[test]
    fn a_whole_conversation_reads_as_itself() {
        let conversation = with_messages(&["only"]);
        let payload = serde_json::to_vec(&conversation).unwrap();
        assert!(
            matches!(read(&payload).unwrap(), Payload::Whole(c) if c == conversation),
            "a whole record"
        );
    }

    #[test]
    fn only_a_version_that_keeps_every_earlier_message_is_a_change() {
        let older = with_messages(&["first", "second"]);
        let mut edited = older.clone();
        Arc::make_mut(&mut edited.messages[0]).content = "first, edited".into();
        assert_eq!(
            shared_start(&older, &edited),
            None,
            "an earlier message changed"
        );
        let mut shorter = older.clone();
        shorter.messages.pop();
        assert_eq!(shared_start(&older, &shorter), None, "a message removed");
        let copied: Conversation =
            serde_json::from_slice(&serde_json::to_vec(&older).unwrap()).unwrap();
        assert_eq!(
            shared_start(&older, &copied),
            None,
            "equal but not shared messages are not trusted"
        );
        let other = with_messages(&["first", "second"]);
        assert_eq!(shared_start(&older, &other), None, "another conversation");
        assert_eq!(
            shared_start(&fixtures::conversation(), &older),
            None,
            "nothing to share"
        );
    }

    #[test]
    fn a_change_of_another_version_does_not_apply() {
        let older = with_messages(&["first"]);
        let mut newer = older.clone();
        newer
            .messages
            .push(fixtures::message(Role::User, "second").into());
        let base = Base {
            seq: 3,
            messages: 2,
        };
        let mut record = Vec::new();
        write(&mut record, base, &newer).unwrap();
        let Payload::Change { conversation, .. } = read(&record).unwrap() else {
            panic!("a change");
        };
        let error = apply(older, base, conversation).unwrap_err();
        assert!(error.contains("2 messages"), "{error}");
    }
}
