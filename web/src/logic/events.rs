//! Applying live events (`GET /conversations/{id}/events`) and REST
//! answers to the conversation on screen.

use asg_shared::events::ConversationEvent;
use asg_shared::{ApprovalDecision, Conversation, ConversationStatus, Message, PendingApproval};
use serde::Deserialize;
use uuid::Uuid;

use crate::logic::tagged;

/// What the view should do besides showing the updated conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// The sidebar list and the pending-approval count may have changed.
    pub refresh_list: bool,
    /// The agent started (`Some(true)`) or finished (`Some(false)`) a turn.
    pub working: Option<bool>,
    /// The turn failed with this error.
    pub turn_error: Option<String>,
}

/// Parses one `data:` line of the event stream.
pub fn parse_event(data: &str) -> Result<ConversationEvent, String> {
    read_event(data).map_err(|e| format!("unreadable live event: {e}"))
}

/// The `type`s of [`ConversationEvent`], as serde names them.
const EVENT_TYPES: &[&str] = &[
    "snapshot",
    "turn_started",
    "message",
    "approval_requested",
    "approval_resolved",
    "status",
    "turn_finished",
];

/// [`ConversationEvent`] read by its tag ([`tagged`]), not by its derived
/// `Deserialize`: one compiled deserializer per nested type.
fn read_event(data: &str) -> Result<ConversationEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct Snapshot {
        conversation: Box<Conversation>,
    }
    #[derive(Deserialize)]
    struct Recorded {
        message: Message,
    }
    #[derive(Deserialize)]
    struct Requested {
        approval: PendingApproval,
    }
    #[derive(Deserialize)]
    struct Resolved {
        uuid: Uuid,
        decision: Option<Box<ApprovalDecision>>,
    }
    #[derive(Deserialize)]
    struct Status {
        status: ConversationStatus,
    }
    #[derive(Deserialize)]
    struct Finished {
        response: Option<String>,
        error: Option<String>,
    }
    Ok(match tagged::tag(data)?.as_str() {
        "snapshot" => {
            let Snapshot { conversation } = tagged::fields(data)?;
            ConversationEvent::Snapshot { conversation }
        }
        "turn_started" => ConversationEvent::TurnStarted,
        "message" => ConversationEvent::Message {
            message: tagged::fields::<Recorded>(data)?.message,
        },
        "approval_requested" => ConversationEvent::ApprovalRequested {
            approval: tagged::fields::<Requested>(data)?.approval,
        },
        "approval_resolved" => {
            let Resolved { uuid, decision } = tagged::fields(data)?;
            ConversationEvent::ApprovalResolved { uuid, decision }
        }
        "status" => ConversationEvent::Status {
            status: tagged::fields::<Status>(data)?.status,
        },
        "turn_finished" => {
            let Finished { response, error } = tagged::fields(data)?;
            ConversationEvent::TurnFinished { response, error }
        }
        other => return Err(tagged::unknown(other, EVENT_TYPES)),
    })
}

/// Applies one event to the conversation on screen (`None` until the first
/// snapshot arrives): a snapshot replaces it, a message is appended when
/// its id is new, approval and status events update it.
pub fn apply_event(current: &mut Option<Conversation>, event: ConversationEvent) -> Effects {
    let mut effects = Effects::default();
    match event {
        ConversationEvent::Snapshot { conversation } => {
            *current = Some(*conversation);
            effects.refresh_list = true;
        }
        ConversationEvent::TurnStarted => effects.working = Some(true),
        ConversationEvent::Message { message } => {
            if let Some(conversation) = current
                && !conversation.messages.iter().any(|m| m.id == message.id)
            {
                if message.created_at > conversation.updated_at {
                    conversation.updated_at = message.created_at;
                }
                conversation.messages.push(message.into());
            }
        }
        ConversationEvent::ApprovalRequested { approval } => {
            if let Some(conversation) = current {
                conversation.status = ConversationStatus::WaitingApproval;
                add_pending(conversation, approval);
            }
            effects.refresh_list = true;
        }
        ConversationEvent::ApprovalResolved { uuid, .. } => {
            if let Some(conversation) = current {
                let taken = conversation.take_pending(uuid);
                // A tool server's question waits while its call runs: the
                // conversation was never saved as waiting, so no status
                // event brings it back.
                let asked_mid_call = taken
                    .and_then(|p| p.question)
                    .is_some_and(|q| q.server.is_some());
                if asked_mid_call && conversation.pending().is_empty() {
                    conversation.status = ConversationStatus::Active;
                }
            }
            effects.refresh_list = true;
        }
        ConversationEvent::Status { status } => {
            if let Some(conversation) = current {
                conversation.status = status;
                if status != ConversationStatus::WaitingApproval {
                    conversation.set_pending(Vec::new());
                }
            }
            effects.refresh_list = true;
        }
        ConversationEvent::TurnFinished { error, .. } => {
            effects.working = Some(false);
            effects.refresh_list = true;
            effects.turn_error = error;
        }
    }
    effects
}

/// Adds a newly pending approval to the conversation's list (in place of
/// the one with the same uuid, when it is listed already).
fn add_pending(conversation: &mut Conversation, approval: PendingApproval) {
    if !conversation.replace_pending(approval.uuid, approval.clone()) {
        let mut list = conversation.pending().to_vec();
        list.push(approval);
        conversation.set_pending(list);
    }
}

/// Takes a conversation from a REST answer (create, send, approve, get, or
/// a 409's current state). It replaces the one on screen unless that one is
/// the same conversation and newer (live events may have moved it on while
/// the answer was travelling). Returns true when it replaced it.
pub fn merge_conversation(current: &mut Option<Conversation>, incoming: Conversation) -> bool {
    let keep = current.as_ref().is_some_and(|c| {
        c.id == incoming.id
            && (c.updated_at > incoming.updated_at || c.messages.len() > incoming.messages.len())
    });
    if keep {
        return false;
    }
    *current = Some(incoming);
    true
}

/// True when the approval panel should show: the conversation waits and
/// names at least one approval it waits for.
pub fn shows_approval(conversation: &Conversation) -> bool {
    conversation.status == ConversationStatus::WaitingApproval && !conversation.pending().is_empty()
}

/// True when the conversation waits for at least one decision.
pub fn waits_for_decision(conversation: Option<&Conversation>) -> bool {
    conversation.is_some_and(|c| !c.pending().is_empty())
}

/// True when the conversation accepts a new user message.
pub fn accepts_messages(conversation: Option<&Conversation>) -> bool {
    conversation.is_none_or(|c| c.status == ConversationStatus::Active)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fixtures::{approval, at, conversation, message};
    use asg_shared::Role;

    fn event(json: serde_json::Value) -> ConversationEvent {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_snapshot_replaces_the_conversation() {
        let mut current = Some(conversation(vec![message(1, Role::User, "old")], 1));
        let fresh = conversation(vec![message(2, Role::User, "new")], 2);
        let effects = apply_event(
            &mut current,
            ConversationEvent::Snapshot {
                conversation: Box::new(fresh.clone()),
            },
        );
        assert_eq!(current, Some(fresh));
        assert!(effects.refresh_list);
    }

    #[test]
    fn messages_append_once() {
        let mut current = Some(conversation(vec![message(1, Role::User, "hi")], 1));
        let new = message(7, Role::Assistant, "hello");
        for _ in 0..2 {
            apply_event(
                &mut current,
                ConversationEvent::Message {
                    message: new.clone(),
                },
            );
        }
        let conv = current.unwrap();
        assert_eq!(conv.messages.len(), 2);
        assert_eq!(conv.messages[1].content, "hello");
        assert_eq!(conv.updated_at, at(7));
    }

    #[test]
    fn a_message_before_the_snapshot_is_ignored() {
        let mut current = None;
        apply_event(
            &mut current,
            ConversationEvent::Message {
                message: message(1, Role::User, "hi"),
            },
        );
        assert!(current.is_none());
    }

    #[test]
    fn approval_events_open_and_close_the_panel() {
        let mut current = Some(conversation(vec![], 1));
        let pending = approval(40, "c1");
        let effects = apply_event(
            &mut current,
            ConversationEvent::ApprovalRequested {
                approval: pending.clone(),
            },
        );
        assert!(effects.refresh_list);
        assert!(shows_approval(current.as_ref().unwrap()));
        assert!(!accepts_messages(current.as_ref()));

        // Another approval's resolution changes nothing.
        apply_event(
            &mut current,
            ConversationEvent::ApprovalResolved {
                uuid: Uuid::from_u128(99),
                decision: None,
            },
        );
        assert_eq!(current.as_ref().unwrap().pending().len(), 1);

        apply_event(
            &mut current,
            ConversationEvent::ApprovalResolved {
                uuid: pending.uuid,
                decision: None,
            },
        );
        assert!(!shows_approval(current.as_ref().unwrap()));
        apply_event(
            &mut current,
            event(serde_json::json!({"type": "status", "status": "active"})),
        );
        assert_eq!(current.as_ref().unwrap().status, ConversationStatus::Active);
        assert!(accepts_messages(current.as_ref()));
    }

    #[test]
    fn a_tool_servers_question_comes_and_goes_during_a_running_turn() {
        let mut current = Some(conversation(vec![], 1));
        let mut asked = approval(41, "c1");
        asked.question = Some(Box::new(
            serde_json::from_value(serde_json::json!({"text": "Region?", "server": "asker"}))
                .unwrap(),
        ));
        apply_event(&mut current, requested(asked.clone()));
        assert!(shows_approval(current.as_ref().unwrap()));
        apply_event(&mut current, resolved(asked.uuid));
        let after = current.as_ref().unwrap();
        assert!(!shows_approval(after));
        assert_eq!(after.status, ConversationStatus::Active);
    }

    fn requested(approval: PendingApproval) -> ConversationEvent {
        ConversationEvent::ApprovalRequested { approval }
    }

    fn resolved(uuid: Uuid) -> ConversationEvent {
        ConversationEvent::ApprovalResolved {
            uuid,
            decision: None,
        }
    }

    fn uuids(conversation: &Conversation) -> Vec<Uuid> {
        conversation.pending().iter().map(|p| p.uuid).collect()
    }

    #[test]
    fn two_requests_give_two_pending_approvals() {
        let mut current = Some(conversation(vec![], 1));
        apply_event(&mut current, requested(approval(40, "a")));
        apply_event(&mut current, requested(approval(41, "b")));
        // Asked again (a reconnect replays it): listed once.
        apply_event(&mut current, requested(approval(41, "b")));
        let conv = current.unwrap();
        assert_eq!(uuids(&conv), [Uuid::from_u128(40), Uuid::from_u128(41)]);
        assert_eq!(conv.status, ConversationStatus::WaitingApproval);
        // The single field old clients read stays the first.
        assert_eq!(
            conv.pending_approval.map(|p| p.uuid),
            Some(Uuid::from_u128(40))
        );
    }

    #[test]
    fn resolving_one_approval_leaves_the_other() {
        let mut current = Some(conversation(vec![], 1));
        apply_event(&mut current, requested(approval(40, "a")));
        apply_event(&mut current, requested(approval(41, "b")));
        apply_event(&mut current, resolved(Uuid::from_u128(40)));
        let conv = current.as_ref().unwrap();
        assert_eq!(uuids(conv), [Uuid::from_u128(41)]);
        assert_eq!(
            conv.pending_approval.as_ref().map(|p| p.uuid),
            Some(Uuid::from_u128(41))
        );
        assert!(shows_approval(conv));
        assert!(waits_for_decision(current.as_ref()));
        assert!(!accepts_messages(current.as_ref()));

        apply_event(&mut current, resolved(Uuid::from_u128(41)));
        assert!(!shows_approval(current.as_ref().unwrap()));
        assert!(!waits_for_decision(current.as_ref()));
    }

    #[test]
    fn a_conversation_loaded_with_two_pending_shows_both() {
        let mut conv = conversation(vec![], 1);
        conv.status = ConversationStatus::WaitingApproval;
        conv.set_pending(vec![approval(40, "a"), approval(41, "b")]);
        let wire = serde_json::to_value(&conv).unwrap();
        let mut current = None;
        apply_event(
            &mut current,
            event(serde_json::json!({"type": "snapshot", "conversation": wire})),
        );
        let shown = current.unwrap();
        assert!(shows_approval(&shown));
        assert_eq!(uuids(&shown), [Uuid::from_u128(40), Uuid::from_u128(41)]);
    }

    #[test]
    fn a_status_other_than_waiting_clears_a_stale_approval() {
        let mut conv = conversation(vec![], 1);
        conv.status = ConversationStatus::WaitingApproval;
        conv.set_pending(vec![approval(40, "c1")]);
        let mut current = Some(conv);
        let effects = apply_event(
            &mut current,
            ConversationEvent::Status {
                status: ConversationStatus::Canceled,
            },
        );
        assert!(effects.refresh_list);
        let conv = current.unwrap();
        assert!(conv.pending().is_empty());
        assert!(conv.pending_approvals.is_empty());
        assert!(!accepts_messages(Some(&conv)));
    }

    #[test]
    fn turn_events_drive_the_working_state_and_report_failures() {
        let mut current = Some(conversation(vec![], 1));
        let started = apply_event(
            &mut current,
            event(serde_json::json!({"type": "turn_started"})),
        );
        assert_eq!(started.working, Some(true));
        assert!(!started.refresh_list);
        let finished = apply_event(
            &mut current,
            event(serde_json::json!({"type": "turn_finished", "error": "model failed: 500"})),
        );
        assert_eq!(finished.working, Some(false));
        assert!(finished.refresh_list);
        assert_eq!(finished.turn_error.as_deref(), Some("model failed: 500"));
        let ok = apply_event(
            &mut current,
            event(serde_json::json!({"type": "turn_finished", "response": "done"})),
        );
        assert_eq!(ok.turn_error, None);
    }

    #[test]
    fn events_parse_from_the_wire_and_garbage_is_reported() {
        let parsed = parse_event(
            r#"{"type":"approval_resolved","uuid":"00000000-0000-0000-0000-000000000001"}"#,
        );
        assert_eq!(
            parsed,
            Ok(ConversationEvent::ApprovalResolved {
                uuid: Uuid::from_u128(1),
                decision: None,
            })
        );
        assert!(parse_event("{nope").unwrap_err().contains("live event"));
    }

    #[test]
    fn a_rest_answer_does_not_roll_back_newer_live_state() {
        let newer = conversation(
            vec![
                message(1, Role::User, "a"),
                message(2, Role::Assistant, "b"),
            ],
            5,
        );
        let older = conversation(vec![message(1, Role::User, "a")], 3);
        let mut current = Some(newer.clone());
        assert!(!merge_conversation(&mut current, older));
        assert_eq!(current, Some(newer.clone()));

        let newest = conversation(
            newer.messages.iter().map(|m| Message::clone(m)).collect(),
            9,
        );
        assert!(merge_conversation(&mut current, newest.clone()));
        assert_eq!(current, Some(newest));

        let mut other = conversation(vec![], 0);
        other.id = Uuid::from_u128(2000);
        assert!(merge_conversation(&mut current, other.clone()));
        assert_eq!(current, Some(other));
    }

    /// Every event the server sends reads back as itself: the tag-first
    /// reader follows `asg_shared`'s wire format.
    #[test]
    fn every_event_kind_reads_back_as_sent() {
        let decision = asg_shared::ApprovalDecision {
            approval_uuid: Uuid::from_u128(40),
            tool_name: "resources_add".into(),
            approved: true,
            decided_by: asg_shared::Actor {
                subject: "alice".into(),
                name: Some("Alice".into()),
                role: Some("approver".into()),
                via: Some("web".into()),
            },
            decided_at: at(9),
            reason: Some("ok".into()),
            edited_arguments: None,
            remembered: Some(asg_shared::GrantScope::Conversation),
            question: false,
            reply: None,
        };
        let events = [
            ConversationEvent::Snapshot {
                conversation: Box::new(conversation(vec![message(1, Role::User, "hi")], 1)),
            },
            ConversationEvent::TurnStarted,
            ConversationEvent::Message {
                message: message(2, Role::Assistant, "hello"),
            },
            ConversationEvent::ApprovalRequested {
                approval: approval(40, "c1"),
            },
            ConversationEvent::ApprovalResolved {
                uuid: Uuid::from_u128(40),
                decision: Some(Box::new(decision)),
            },
            ConversationEvent::ApprovalResolved {
                uuid: Uuid::from_u128(41),
                decision: None,
            },
            ConversationEvent::Status {
                status: ConversationStatus::WaitingApproval,
            },
            ConversationEvent::TurnFinished {
                response: Some("done".into()),
                error: None,
            },
            ConversationEvent::TurnFinished {
                response: None,
                error: Some("model failed".into()),
            },
        ];
        for sent in events {
            let json = serde_json::to_string(&sent).unwrap();
            assert_eq!(parse_event(&json), Ok(sent), "{json}");
        }
    }

    #[test]
    fn an_unknown_or_broken_event_is_reported() {
        let error = parse_event(r#"{"type":"party"}"#).unwrap_err();
        assert!(error.starts_with("unreadable live event"), "{error}");
        assert!(error.contains("party"), "{error}");
        assert!(parse_event(r#"{"type":"message"}"#).is_err());
        assert!(parse_event("not json").is_err());
    }
}
