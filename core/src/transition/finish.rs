//! The second half of a decision: the call's result recorded (in the
//! words of whoever decided), the approval taken off, and where the run
//! goes — on, waiting for the rest, ended, or asking again.

use asg_shared::{Conversation, ConversationStatus, PendingApproval, Role};
use serde_json::Value;
use uuid::Uuid;

use super::decision::{CHANGED, end_run, expired_text};
use super::{Batch, CallOrder, CallResult, Effect, Facts, Transition, cancel_pipeline};
use super::{Refusal, result_message};
use crate::lifecycle::{self, AfterDecision, DecidedBy};

/// The result of `order`'s call, recorded.
pub(super) fn finished(
    conversation: &Conversation,
    order: &CallOrder,
    result: CallResult,
    facts: &Facts<'_>,
) -> Transition {
    if conversation.pending_by_uuid(order.pending.uuid).is_none() {
        // Settled meanwhile (an interruption was recorded): nothing to add.
        return Transition::of(conversation.clone());
    }
    match &order.batch {
        Batch::One => one(conversation, order, result, facts),
        batch => {
            let mut after = conversation.clone();
            record_refusal(&mut after, order, Some(result));
            match after.pending().is_empty() {
                true => close_batch(after, batch, facts),
                false => Transition::of(after),
            }
        }
    }
}

/// A refusal of a batch (cancel, end of run) recorded as `order`'s
/// result, with the sub-agent's answer to the forwarded refusal.
pub(super) fn record_refusal(
    conversation: &mut Conversation,
    order: &CallOrder,
    forwarded: Option<CallResult>,
) {
    let reason = match &order.batch {
        Batch::Cancel { reason, .. } | Batch::EndRun { reason, .. } => Some(reason.as_str()),
        Batch::One => order.reason.as_deref(),
    };
    let text = lifecycle::rejection_text(reason);
    let text = match forwarded {
        Some(CallResult::Done { content, .. }) => format!("{text} {content}"),
        _ => text,
    };
    conversation
        .messages
        .push(result_message(&order.pending, text, true).into());
    conversation.take_pending(order.pending.uuid);
}

/// Closes a batch once its last refusal is recorded.
pub(super) fn close_batch(
    mut conversation: Conversation,
    batch: &Batch,
    facts: &Facts<'_>,
) -> Transition {
    conversation.set_pending(Vec::new());
    conversation.pipeline_state = None;
    let text = match batch {
        Batch::Cancel { answer, node, .. } => {
            let mut message = lifecycle::new_message(Role::Assistant, answer.clone());
            message.node = node.clone();
            conversation.messages.push(message.into());
            conversation.status = ConversationStatus::Canceled;
            answer.clone()
        }
        Batch::EndRun { what, .. } => {
            conversation.status = ConversationStatus::Active;
            cancel_pipeline(&mut conversation, what, facts.root)
        }
        Batch::One => String::new(),
    };
    Transition::of(conversation)
        .then(Effect::Save)
        .then(Effect::Reply(text))
}

/// One decision's call finished.
fn one(
    conversation: &Conversation,
    order: &CallOrder,
    result: CallResult,
    facts: &Facts<'_>,
) -> Transition {
    let pending = &order.pending;
    let result = reword(result, order);
    let outcome = Effect::AuditOutcome {
        pending: Box::new(pending.clone()),
        outcome: match &result {
            CallResult::Done {
                is_error: false, ..
            } => "succeeded",
            CallResult::Done { is_error: true, .. } => "failed",
            CallResult::AskedAgain { .. } => "waiting_again",
        },
    };
    let (content, is_error) = match result {
        CallResult::AskedAgain { next, .. } if order.approve => {
            // The sub-agent (or one behind it) needs another decision:
            // the same call waits again, in the same place.
            return ask_again(conversation, pending.uuid, *next).then_first(outcome);
        }
        CallResult::AskedAgain { agent, .. } => (
            format!("Rejected by the user; {agent} still asks for an approval."),
            true,
        ),
        CallResult::Done { content, is_error } => (content, is_error),
    };
    let content = match (order.approve, &order.edited) {
        (true, Some(edited)) => format!(
            "Note: the approver changed the arguments before approving; the call ran with {}.\n{content}",
            Value::Object(edited.clone())
        ),
        _ => content,
    };
    let mut after = conversation.clone();
    after
        .messages
        .push(result_message(pending, content, is_error).into());
    after.take_pending(pending.uuid);
    let next = lifecycle::after_decision(&after, &order.by, facts.changed_under_refuse(pending));
    let refused = format!("{} was {}", pending.tool_name, order.by.refusal_word());
    lifecycle::settle_step(
        &mut after,
        pending.uuid,
        (!order.approve).then(|| refused.clone()),
    );
    go(after, next, order, refused, facts).then_first(outcome)
}

/// Where the run goes after a recorded result.
fn go(
    mut after: Conversation,
    next: AfterDecision,
    order: &CallOrder,
    refused: String,
    facts: &Facts<'_>,
) -> Transition {
    match next {
        // The tree it would resume on is not the one it paused on.
        AfterDecision::EndRun => end_run(after, &order.by, order.reason.as_deref(), refused, facts),
        AfterDecision::WaitForTheRest => {
            let left = after.pending().len();
            after.status = ConversationStatus::WaitingApproval;
            after.turn_in_progress = false;
            Transition::of(after)
                .then(Effect::Save)
                .then(Effect::Reply(format!(
                    "Decision recorded; {left} more approval{} pending before the run goes on.",
                    if left == 1 { " is" } else { "s are" }
                )))
        }
        AfterDecision::RefuseResume => {
            // A refusal (by a person or by expiry) stays what it was, but
            // the run must not go on under another configuration.
            after.pipeline_state = None;
            after.status = ConversationStatus::Active;
            let what = format!(
                "{refused} and the agent's configuration changed since the run paused \
                 (approval.on_config_change: refuse)"
            );
            let text = cancel_pipeline(&mut after, &what, facts.root);
            Transition::of(after)
                .then(Effect::Save)
                .then(Effect::Reply(text))
        }
        AfterDecision::Continue | AfterDecision::Resume => {
            after.status = ConversationStatus::Active;
            match after.pipeline_state.take() {
                None => Transition::of(after)
                    .then(Effect::Save)
                    .then(Effect::Continue),
                Some(state) => Transition::of(after).then(Effect::Resume(Box::new(state))),
            }
        }
    }
}

/// `next` waits in the place of approval `old` (same call, same step).
fn ask_again(conversation: &Conversation, old: Uuid, next: PendingApproval) -> Transition {
    let response = format!("Approval required: {}", next.description);
    let mut after = conversation.clone();
    lifecycle::move_step(&mut after, old, next.uuid);
    after.replace_pending(old, next);
    after.status = ConversationStatus::WaitingApproval;
    after.turn_in_progress = false;
    Transition::of(after)
        .then(Effect::Save)
        .then(Effect::WakeExpiry)
        .then(Effect::Reply(response))
}

/// A refusal's result in the words of who refused: the expiry's own
/// words in place of "rejected by the user" (a sub-agent's answer to the
/// forwarded rejection kept after them); a configuration change's.
fn reword(result: CallResult, order: &CallOrder) -> CallResult {
    if order.approve {
        return result;
    }
    let pending = &order.pending;
    match order.by {
        DecidedBy::Expiry => {
            let told = expired_text(pending);
            let content = match (result, pending.remote_agent_name.as_deref()) {
                (CallResult::AskedAgain { agent, .. }, _) => {
                    format!("{told} {agent} still asks for an approval.")
                }
                (CallResult::Done { content, .. }, Some(agent)) => {
                    format!("{told} The rejection was forwarded to {agent}: {content}")
                }
                (CallResult::Done { .. }, None) => told,
            };
            CallResult::Done {
                content,
                is_error: true,
            }
        }
        DecidedBy::ConfigChange { .. } => CallResult::Done {
            content: format!(
                "Not run: {CHANGED} (approval.on_config_change: refuse). Ask again if it is still wanted."
            ),
            is_error: true,
        },
        DecidedBy::Person(_) => result,
    }
}

/// A proxy approval settled on its sub-agent while this agent was down:
/// its answer is the call's result; a paused run whose last approval it
/// was goes on as after a decision.
pub(super) fn settled_remotely(
    conversation: &Conversation,
    uuid: Uuid,
    content: String,
    is_error: bool,
    facts: &Facts<'_>,
) -> Result<Transition, Refusal> {
    let old = lifecycle::resolvable(conversation, uuid)
        .filter(|p| p.remote_task_id.is_some())
        .ok_or(Refusal::AlreadyResolved(uuid))?
        .clone();
    let mut after = conversation.clone();
    after
        .messages
        .push(result_message(&old, content.clone(), is_error).into());
    after.take_pending(uuid);
    if after.pipeline_state.is_none() {
        let mut answer = lifecycle::new_message(Role::Assistant, content);
        answer.node = old.node.clone();
        answer.is_error = is_error;
        after.messages.push(answer.into());
        if after.pending().is_empty() {
            after.status = ConversationStatus::Active;
        }
        return Ok(Transition::of(after)
            .then(Effect::Save)
            .then(Effect::WakeExpiry));
    }
    // A paused run: the step goes on with this result once no approval
    // of the run is pending (now, or after its siblings' decisions).
    let refusal = is_error.then(|| format!("{} was settled on its sub-agent", old.tool_name));
    lifecycle::settle_step(&mut after, uuid, refusal);
    if !after.pending().is_empty() {
        return Ok(Transition::of(after)
            .then(Effect::Save)
            .then(Effect::WakeExpiry));
    }
    after.turn_in_progress = true;
    after.status = ConversationStatus::Active;
    if facts.changed_under_refuse(&old) {
        after.pipeline_state = None;
        let what = format!(
            "{} was settled on its sub-agent and the agent's configuration changed since the run paused \
             (approval.on_config_change: refuse)",
            old.tool_name
        );
        let text = cancel_pipeline(&mut after, &what, facts.root);
        return Ok(Transition::of(after)
            .then(Effect::Save)
            .then(Effect::Reply(text)));
    }
    let state = after.pipeline_state.take().unwrap_or_default();
    Ok(Transition::of(after).then(Effect::Resume(Box::new(state))))
}

impl Transition {
    fn then_first(mut self, effect: Effect) -> Transition {
        self.effects.insert(0, effect);
        self
    }
}
