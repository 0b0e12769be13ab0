//! The operator inbox (`GET /events`): approval requests, decisions and
//! status changes across every conversation, applied to the pending list
//! and the sidebar so they follow other clients without a reload.

use asg_shared::events::InboxEvent;
use asg_shared::rest::ConversationSummary;
use asg_shared::{ApprovalDecision, ConversationStatus, PendingApproval};
use serde::Deserialize;
use uuid::Uuid;

use crate::logic::tagged;

/// Parses one `data:` line of the inbox stream.
pub fn parse_inbox_event(data: &str) -> Result<InboxEvent, String> {
    read_inbox_event(data).map_err(|e| format!("unreadable inbox event: {e}"))
}

/// The `type`s of [`InboxEvent`], as serde names them.
const INBOX_TYPES: &[&str] = &[
    "pending",
    "approval_requested",
    "approval_reminder",
    "approval_resolved",
    "status",
];

/// [`InboxEvent`] read by its tag ([`tagged`]), not by its derived
/// `Deserialize`: one compiled deserializer per nested type.
fn read_inbox_event(data: &str) -> Result<InboxEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct Pending {
        approvals: Vec<PendingApproval>,
    }
    #[derive(Deserialize)]
    struct One {
        approval: PendingApproval,
    }
    #[derive(Deserialize)]
    struct Resolved {
        uuid: Uuid,
        conversation_id: Uuid,
        decision: Option<Box<ApprovalDecision>>,
    }
    #[derive(Deserialize)]
    struct Status {
        conversation_id: Uuid,
        status: ConversationStatus,
    }
    Ok(match tagged::tag(data)?.as_str() {
        "pending" => InboxEvent::Pending {
            approvals: tagged::fields::<Pending>(data)?.approvals,
        },
        "approval_requested" => InboxEvent::ApprovalRequested {
            approval: tagged::fields::<One>(data)?.approval,
        },
        "approval_reminder" => InboxEvent::ApprovalReminder {
            approval: tagged::fields::<One>(data)?.approval,
        },
        "approval_resolved" => {
            let Resolved {
                uuid,
                conversation_id,
                decision,
            } = tagged::fields(data)?;
            InboxEvent::ApprovalResolved {
                uuid,
                conversation_id,
                decision,
            }
        }
        "status" => {
            let Status {
                conversation_id,
                status,
            } = tagged::fields(data)?;
            InboxEvent::Status {
                conversation_id,
                status,
            }
        }
        other => return Err(tagged::unknown(other, INBOX_TYPES)),
    })
}

/// Applies one event to the pending list and the sidebar. Returns true
/// when the sidebar should be fetched again: the event names a
/// conversation it does not list yet (created by another client), or the
/// stream (re)started with a `pending` event, after which changes missed
/// while it was down must be caught up.
pub fn apply_inbox_event(
    approvals: &mut Vec<PendingApproval>,
    conversations: &mut [ConversationSummary],
    event: InboxEvent,
) -> bool {
    match event {
        InboxEvent::Pending { approvals: fresh } => {
            *approvals = fresh;
            oldest_first(approvals);
            for summary in conversations.iter_mut() {
                let mine = of_conversation(approvals, summary.id);
                set_summary_pending(summary, mine);
            }
            true
        }
        InboxEvent::ApprovalRequested { approval } => {
            let known = with_summary(conversations, approval.conversation_id, |summary| {
                summary.status = ConversationStatus::WaitingApproval;
                add_to_summary(summary, &approval);
            });
            add_approval(approvals, approval);
            !known
        }
        // Already listed (a reminder changes nothing on screen).
        InboxEvent::ApprovalReminder { .. } => false,
        InboxEvent::ApprovalResolved {
            uuid,
            conversation_id,
            ..
        } => {
            approvals.retain(|a| a.uuid != uuid);
            with_summary(conversations, conversation_id, |summary| {
                let mut list = summary_pending(summary);
                list.retain(|a| a.uuid != uuid);
                set_summary_pending(summary, list);
            });
            false
        }
        InboxEvent::Status {
            conversation_id,
            status,
        } => {
            if status != ConversationStatus::WaitingApproval {
                approvals.retain(|a| a.conversation_id != conversation_id);
            }
            let known = with_summary(conversations, conversation_id, |summary| {
                summary.status = status;
                if status != ConversationStatus::WaitingApproval {
                    set_summary_pending(summary, Vec::new());
                }
            });
            !known
        }
    }
}

/// Sorts approvals oldest first (stable). The one sort of approvals in
/// the chat: each closure passed to `sort_by_key` compiles its own copy
/// of the sort into the bundle.
pub fn oldest_first(approvals: &mut [PendingApproval]) {
    approvals.sort_by_key(|a| a.created_at);
}

/// Adds `approval` to the pending list (once), oldest first.
fn add_approval(approvals: &mut Vec<PendingApproval>, approval: PendingApproval) {
    match approvals.iter_mut().find(|a| a.uuid == approval.uuid) {
        Some(listed) => *listed = approval,
        None => {
            approvals.push(approval);
            oldest_first(approvals);
        }
    }
}

/// The approvals of conversation `id`, in the list's order.
fn of_conversation(approvals: &[PendingApproval], id: Uuid) -> Vec<PendingApproval> {
    approvals
        .iter()
        .filter(|a| a.conversation_id == id)
        .cloned()
        .collect()
}

/// Every approval a listed conversation waits for (an older agent sends
/// only `pending_approval`).
pub fn summary_pending(summary: &ConversationSummary) -> Vec<PendingApproval> {
    if summary.pending_approvals.is_empty() {
        summary.pending_approval.iter().cloned().collect()
    } else {
        summary.pending_approvals.clone()
    }
}

/// Replaces a listed conversation's approvals; `pending_approval` stays
/// the first, as the agent sends it.
fn set_summary_pending(summary: &mut ConversationSummary, list: Vec<PendingApproval>) {
    summary.pending_approval = list.first().cloned();
    summary.pending_approvals = list;
}

/// Adds `approval` to a listed conversation's approvals (once).
fn add_to_summary(summary: &mut ConversationSummary, approval: &PendingApproval) {
    let mut list = summary_pending(summary);
    add_approval(&mut list, approval.clone());
    set_summary_pending(summary, list);
}

/// Runs `change` on the listed conversation `id`; false when it is not
/// listed.
fn with_summary(
    conversations: &mut [ConversationSummary],
    id: Uuid,
    change: impl FnOnce(&mut ConversationSummary),
) -> bool {
    match conversations.iter_mut().find(|c| c.id == id) {
        Some(summary) => {
            change(summary);
            true
        }
        None => false,
    }
}

/// A sidebar list fetched over REST, brought in line with the pending
/// approvals the inbox reports (the list may have been read just before an
/// approval the inbox already delivered).
pub fn overlay_pending(conversations: &mut [ConversationSummary], approvals: &[PendingApproval]) {
    for approval in approvals {
        with_summary(conversations, approval.conversation_id, |summary| {
            summary.status = ConversationStatus::WaitingApproval;
            add_to_summary(summary, approval);
        });
    }
}

/// True when the conversation `id` has an approval waiting.
pub fn is_pending(approvals: &[PendingApproval], id: Uuid) -> bool {
    approvals.iter().any(|a| a.conversation_id == id)
}

/// How many approvals the conversation `id` waits for.
pub fn pending_count(approvals: &[PendingApproval], id: Uuid) -> usize {
    approvals.iter().filter(|a| a.conversation_id == id).count()
}

/// The sidebar's marker on a waiting conversation: `!` for one approval,
/// the count for several; and its tooltip.
pub fn pending_marker(count: usize) -> (String, String) {
    if count > 1 {
        (count.to_string(), format!("Waiting for {count} approvals"))
    } else {
        ("!".to_string(), "Waiting for an approval".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fixtures::{approval, at, id};

    fn summary(n: u128, status: ConversationStatus) -> ConversationSummary {
        ConversationSummary {
            id: id(n),
            session_id: "s".into(),
            status,
            message_count: 2,
            title: Some(format!("conversation {n}")),
            pending_approvals: Vec::new(),
            pending_approval: None,
            created_at: at(0),
            updated_at: at(0),
        }
    }

    /// An approval `n` in conversation `conversation`.
    fn pending(n: u128, conversation: u128) -> PendingApproval {
        let mut approval = approval(n, &format!("call-{n}"));
        approval.conversation_id = id(conversation);
        approval
    }

    #[test]
    fn an_approval_elsewhere_is_counted_and_marked_in_the_sidebar() {
        let mut approvals = vec![];
        let mut list = vec![summary(1, ConversationStatus::Active)];
        let refresh = apply_inbox_event(
            &mut approvals,
            &mut list,
            InboxEvent::ApprovalRequested {
                approval: pending(40, 1),
            },
        );
        assert!(!refresh);
        assert_eq!(approvals.len(), 1);
        assert_eq!(list[0].status, ConversationStatus::WaitingApproval);
        assert!(list[0].pending_approval.is_some());
        assert!(is_pending(&approvals, id(1)));
        assert!(!is_pending(&approvals, id(2)));
    }

    #[test]
    fn a_repeated_request_is_counted_once_and_the_list_stays_oldest_first() {
        let mut approvals = vec![pending(50, 1)];
        let mut list = vec![];
        for approval in [pending(40, 2), pending(40, 2)] {
            let refresh = apply_inbox_event(
                &mut approvals,
                &mut list,
                InboxEvent::ApprovalRequested { approval },
            );
            assert!(refresh, "conversation 2 is not listed yet");
        }
        let uuids: Vec<_> = approvals.iter().map(|a| a.uuid).collect();
        assert_eq!(uuids, [id(40), id(50)]);
    }

    #[test]
    fn a_resolution_removes_the_approval_and_the_marker() {
        let mut approvals = vec![pending(40, 1), pending(41, 2)];
        let mut list = vec![
            summary(1, ConversationStatus::WaitingApproval),
            summary(2, ConversationStatus::WaitingApproval),
        ];
        overlay_pending(&mut list, &approvals);
        let refresh = apply_inbox_event(
            &mut approvals,
            &mut list,
            InboxEvent::ApprovalResolved {
                uuid: id(40),
                conversation_id: id(1),
                decision: None,
            },
        );
        assert!(!refresh);
        assert_eq!(approvals.len(), 1);
        assert!(list[0].pending_approval.is_none());
        assert!(list[1].pending_approval.is_some());
    }

    #[test]
    fn status_changes_update_the_badge_and_clear_stale_approvals() {
        let mut approvals = vec![pending(40, 1)];
        let mut list = vec![summary(1, ConversationStatus::WaitingApproval)];
        overlay_pending(&mut list, &approvals);
        let event = parse_inbox_event(&format!(
            r#"{{"type":"status","conversation_id":"{}","status":"canceled"}}"#,
            id(1)
        ))
        .unwrap();
        assert!(!apply_inbox_event(&mut approvals, &mut list, event));
        assert_eq!(list[0].status, ConversationStatus::Canceled);
        assert!(list[0].pending_approval.is_none());
        assert!(approvals.is_empty());

        let unknown = InboxEvent::Status {
            conversation_id: id(9),
            status: ConversationStatus::Active,
        };
        assert!(apply_inbox_event(&mut approvals, &mut list, unknown));
    }

    #[test]
    fn the_pending_event_replaces_everything_and_asks_for_a_catch_up() {
        let mut approvals = vec![pending(40, 1)];
        let mut list = vec![
            summary(1, ConversationStatus::WaitingApproval),
            summary(2, ConversationStatus::Active),
        ];
        overlay_pending(&mut list, &approvals);
        let refresh = apply_inbox_event(
            &mut approvals,
            &mut list,
            InboxEvent::Pending {
                approvals: vec![pending(61, 2), pending(60, 2)],
            },
        );
        assert!(refresh);
        let uuids: Vec<_> = approvals.iter().map(|a| a.uuid).collect();
        assert_eq!(uuids, [id(60), id(61)]);
        assert!(list[0].pending_approval.is_none());
        assert_eq!(
            list[1].pending_approval.as_ref().map(|a| a.uuid),
            Some(id(60))
        );
    }

    #[test]
    fn a_listing_read_before_an_approval_gets_the_marker() {
        let approvals = vec![pending(40, 1)];
        let mut list = vec![summary(1, ConversationStatus::Active)];
        overlay_pending(&mut list, &approvals);
        assert_eq!(list[0].status, ConversationStatus::WaitingApproval);
    }

    #[test]
    fn two_approvals_of_one_conversation_are_each_counted_and_listed() {
        let mut approvals = vec![];
        let mut list = vec![summary(1, ConversationStatus::Active)];
        for approval in [pending(40, 1), pending(41, 1), pending(41, 1)] {
            apply_inbox_event(
                &mut approvals,
                &mut list,
                InboxEvent::ApprovalRequested { approval },
            );
        }
        assert_eq!(approvals.len(), 2);
        assert_eq!(pending_count(&approvals, id(1)), 2);
        let listed: Vec<_> = summary_pending(&list[0]).iter().map(|a| a.uuid).collect();
        assert_eq!(listed, [id(40), id(41)]);
        assert_eq!(
            list[0].pending_approval.as_ref().map(|a| a.uuid),
            Some(id(40))
        );
        assert_eq!(
            pending_marker(2),
            ("2".into(), "Waiting for 2 approvals".into())
        );
        assert_eq!(pending_marker(1).0, "!");

        // Deciding the first leaves the second, listed and counted.
        apply_inbox_event(
            &mut approvals,
            &mut list,
            InboxEvent::ApprovalResolved {
                uuid: id(40),
                conversation_id: id(1),
                decision: None,
            },
        );
        assert_eq!(pending_count(&approvals, id(1)), 1);
        assert_eq!(list[0].pending_approvals.len(), 1);
        assert_eq!(
            list[0].pending_approval.as_ref().map(|a| a.uuid),
            Some(id(41))
        );
        assert!(is_pending(&approvals, id(1)));
    }

    #[test]
    fn a_listing_and_the_pending_event_carry_every_approval_of_a_conversation() {
        let approvals = vec![pending(40, 1), pending(41, 1)];
        let mut list = vec![summary(1, ConversationStatus::Active)];
        overlay_pending(&mut list, &approvals);
        assert_eq!(summary_pending(&list[0]).len(), 2);

        let mut approvals = vec![];
        let mut list = vec![summary(1, ConversationStatus::WaitingApproval)];
        apply_inbox_event(
            &mut approvals,
            &mut list,
            InboxEvent::Pending {
                approvals: vec![pending(41, 1), pending(40, 1)],
            },
        );
        let listed: Vec<_> = list[0].pending_approvals.iter().map(|a| a.uuid).collect();
        assert_eq!(listed, [id(40), id(41)]);
    }

    #[test]
    fn an_older_agent_s_single_approval_is_read() {
        let mut old = summary(1, ConversationStatus::WaitingApproval);
        old.pending_approval = Some(pending(40, 1));
        assert_eq!(summary_pending(&old).len(), 1);
    }

    #[test]
    fn garbage_is_reported() {
        assert!(
            parse_inbox_event("nope")
                .unwrap_err()
                .contains("inbox event")
        );
        let pending = parse_inbox_event(r#"{"type":"pending","approvals":[]}"#).unwrap();
        assert_eq!(pending, InboxEvent::Pending { approvals: vec![] });
    }

    /// Every inbox event the server sends reads back as itself: the
    /// tag-first reader follows `asg_shared`'s wire format.
    #[test]
    fn every_inbox_event_kind_reads_back_as_sent() {
        let events = [
            InboxEvent::Pending {
                approvals: vec![pending(40, 1), pending(41, 2)],
            },
            InboxEvent::ApprovalRequested {
                approval: pending(42, 1),
            },
            InboxEvent::ApprovalReminder {
                approval: pending(42, 1),
            },
            InboxEvent::ApprovalResolved {
                uuid: id(42),
                conversation_id: id(1),
                decision: None,
            },
            InboxEvent::Status {
                conversation_id: id(1),
                status: ConversationStatus::Active,
            },
        ];
        for sent in events {
            let json = serde_json::to_string(&sent).unwrap();
            assert_eq!(parse_inbox_event(&json), Ok(sent), "{json}");
        }
        let error = parse_inbox_event(r#"{"type":"party"}"#).unwrap_err();
        assert!(error.contains("party"), "{error}");
    }
}
