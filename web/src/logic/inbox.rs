//! The operator inbox (`GET /events`): approval requests, decisions and
//! status changes across every conversation, applied to the pending list
//! and the sidebar so they follow other clients without a reload.

use asg_shared::events::InboxEvent;
use asg_shared::rest::ConversationSummary;
use asg_shared::{ConversationStatus, PendingApproval};
use uuid::Uuid;

/// Parses one `data:` line of the inbox stream.
pub fn parse_inbox_event(data: &str) -> Result<InboxEvent, String> {
    serde_json::from_str(data).map_err(|e| format!("unreadable inbox event: {e}"))
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
            approvals.sort_by_key(|a| a.created_at);
            for summary in conversations.iter_mut() {
                summary.pending_approval = approvals
                    .iter()
                    .find(|a| a.conversation_id == summary.id)
                    .cloned();
            }
            true
        }
        InboxEvent::ApprovalRequested { approval } => {
            let conversation_id = approval.conversation_id;
            let known = with_summary(conversations, conversation_id, |summary| {
                summary.status = ConversationStatus::WaitingApproval;
                summary.pending_approval = Some(approval.clone());
            });
            if !approvals.iter().any(|a| a.uuid == approval.uuid) {
                approvals.push(approval);
                approvals.sort_by_key(|a| a.created_at);
            }
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
                if summary
                    .pending_approval
                    .as_ref()
                    .is_some_and(|p| p.uuid == uuid)
                {
                    summary.pending_approval = None;
                }
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
                    summary.pending_approval = None;
                }
            });
            !known
        }
    }
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
            summary.pending_approval = Some(approval.clone());
        });
    }
}

/// True when the conversation `id` has an approval waiting.
pub fn is_pending(approvals: &[PendingApproval], id: Uuid) -> bool {
    approvals.iter().any(|a| a.conversation_id == id)
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
    fn garbage_is_reported() {
        assert!(
            parse_inbox_event("nope")
                .unwrap_err()
                .contains("inbox event")
        );
        let pending = parse_inbox_event(r#"{"type":"pending","approvals":[]}"#).unwrap();
        assert_eq!(pending, InboxEvent::Pending { approvals: vec![] });
    }
}
