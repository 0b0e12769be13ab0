//! The approval cards of the selected conversation: one card per approval
//! it waits for (several when `parallel` branches each stopped), each
//! decided on its own, and the line over them that says how many are left.

use asg_shared::pipeline::PipelineStateField;
use asg_shared::{ApprovalState, Conversation, ConversationStatus, PendingApproval};
use uuid::Uuid;

/// The approvals to show a card for, in the order raised: those still
/// waiting for a decision while the conversation waits (an approved one
/// that is running cannot be decided again).
pub fn approval_cards(conversation: &Conversation) -> Vec<PendingApproval> {
    if conversation.status != ConversationStatus::WaitingApproval {
        return Vec::new();
    }
    conversation
        .pending()
        .iter()
        .filter(|p| p.state == ApprovalState::Pending)
        .cloned()
        .collect()
}

/// How many approvals the paused run stopped for in all (decided ones
/// included), at least the `pending` ones still listed.
pub fn stopped_for(conversation: &Conversation, pending: usize) -> usize {
    let steps = conversation
        .pipeline_state
        .as_ref()
        .map_or(0, PipelineStateField::paused_step_count);
    steps.max(pending)
}

/// The line over the cards when the run waits for more than one decision,
/// or for the last of several: `None` for a single approval.
pub fn cards_summary(pending: usize, total: usize) -> Option<String> {
    let decided = total.saturating_sub(pending);
    match (pending, decided) {
        (0, _) | (1, 0) => None,
        (1, _) => Some(format!(
            "{decided} of {total} approvals decided; the run still waits for this last one."
        )),
        (_, 0) => Some(format!(
            "{pending} approvals are pending. Each is decided on its own; the run goes on once all are decided."
        )),
        (_, _) => Some(format!(
            "{decided} of {total} approvals decided; the run still waits for {pending} more, each decided on its own."
        )),
    }
}

/// The `id` of an element of a card: the plain `base` (`approve`,
/// `reject-reason`, …) on the first card, `base-{uuid}` on the others, so
/// ids stay unique while a single card keeps the ids it always had.
pub fn card_element_id(base: &str, first: bool, uuid: Uuid) -> String {
    if first {
        base.to_string()
    } else {
        format!("{base}-{uuid}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fixtures::{approval, conversation, id};
    use asg_shared::{PausedStep, PipelineState};

    fn waiting(list: Vec<PendingApproval>) -> Conversation {
        let mut conv = conversation(vec![], 1);
        conv.status = ConversationStatus::WaitingApproval;
        conv.set_pending(list);
        conv
    }

    fn uuids(cards: &[PendingApproval]) -> Vec<Uuid> {
        cards.iter().map(|p| p.uuid).collect()
    }

    #[test]
    fn a_conversation_waiting_for_two_shows_two_cards() {
        let conv = waiting(vec![approval(40, "a"), approval(41, "b")]);
        assert_eq!(uuids(&approval_cards(&conv)), [id(40), id(41)]);
        assert_eq!(stopped_for(&conv, 2), 2);
    }

    #[test]
    fn an_old_single_approval_still_shows_its_card() {
        let mut conv = waiting(vec![]);
        conv.pending_approval = Some(approval(40, "a"));
        assert_eq!(uuids(&approval_cards(&conv)), [id(40)]);
    }

    #[test]
    fn running_approvals_and_other_statuses_show_no_card() {
        let mut running = approval(40, "a");
        running.state = ApprovalState::Executing;
        let conv = waiting(vec![running, approval(41, "b")]);
        assert_eq!(uuids(&approval_cards(&conv)), [id(41)]);
        let mut closed = conv.clone();
        closed.status = ConversationStatus::Canceled;
        assert!(approval_cards(&closed).is_empty());
    }

    #[test]
    fn the_summary_counts_what_is_left_of_the_paused_steps() {
        let mut conv = waiting(vec![approval(41, "b")]);
        let step = |n| PausedStep {
            approval_uuid: id(n),
            ..PausedStep::default()
        };
        conv.pipeline_state = Some(PipelineState {
            paused_steps: vec![step(40), step(41)],
            ..PipelineState::default()
        });
        assert_eq!(stopped_for(&conv, 1), 2);
        assert_eq!(
            cards_summary(1, 2).as_deref(),
            Some("1 of 2 approvals decided; the run still waits for this last one.")
        );
        assert_eq!(cards_summary(1, 1), None);
        assert_eq!(cards_summary(0, 2), None);
        let two = cards_summary(2, 2).unwrap();
        assert!(two.starts_with("2 approvals are pending."), "{two}");
        let some = cards_summary(2, 3).unwrap();
        assert!(some.starts_with("1 of 3 approvals decided"), "{some}");
        assert!(some.contains("waits for 2 more"), "{some}");
    }

    #[test]
    fn only_the_first_card_keeps_the_plain_ids() {
        assert_eq!(card_element_id("approve", true, id(7)), "approve");
        assert_eq!(
            card_element_id("approve", false, id(7)),
            format!("approve-{}", id(7))
        );
    }
}
