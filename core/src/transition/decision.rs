//! The first half of a decision: recorded (on the conversation and in
//! the audit log), the approval marked `executing` when approved, and
//! the call ordered. A decision by a person, by the expiry, or a refusal
//! for a configuration change all take this path.

use asg_shared::{
    Actor, ApprovalDecision, ApprovalState, Conversation, GrantScope, PendingApproval,
    QuestionReply,
};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::{
    AuditEntry, Batch, CallOrder, CallResult, Effect, Facts, OnChange, Transition, finish,
};
use crate::access;
use crate::choice::Choice;
use crate::duration::format_secs;
use crate::gate::{self, Permit, Refusal};
use crate::lifecycle::{self, DecidedBy};
use crate::principal::Principal;
use crate::question;

/// The reason of a refusal for a configuration change.
pub const CHANGED: &str = "the agent's configuration changed since this approval was requested";
/// The note added to a decision's reason when the run resumes anyway.
pub const RESUMED: &str =
    "the configuration changed since the request; resumed (approval.on_config_change: resume)";

/// A decision as it is applied.
struct Decision {
    approve: bool,
    reason: Option<String>,
    by: DecidedBy,
}

/// A person's decision: authorized by the gate (who may decide, edits
/// judged again by the rules), pinned to the configuration, recorded,
/// and its call ordered.
pub(super) fn decide(
    conversation: &Conversation,
    principal: &Principal,
    via: &str,
    request: gate::Decide<'_>,
    reason: Option<&str>,
    facts: &Facts<'_>,
) -> Result<Transition, Refusal> {
    let command = gate::Command::Decide(request);
    let Permit::Decide { pending, role } =
        gate::authorize(principal, conversation, command, facts.policy)?
    else {
        return Err(Refusal::Invalid(
            "the gate did not permit a decision".into(),
        ));
    };
    let decision = Decision {
        approve: request.approve,
        reason: reason.map(str::to_string),
        by: DecidedBy::Person(access::actor(principal, Some(role), via)),
    };
    let decision = pinned(&pending, decision, facts);
    Ok(decided(
        conversation,
        &pending,
        decision,
        request.choice,
        facts,
    ))
}

/// The decision as `approval.on_config_change` has it: an approval of a
/// run whose configuration changed becomes a refusal by the change
/// (`refuse`), or goes on with the change noted (`resume`).
fn pinned(pending: &PendingApproval, decision: Decision, facts: &Facts<'_>) -> Decision {
    if !decision.approve || !(facts.changed)(pending) {
        return decision;
    }
    match facts.on_change {
        OnChange::Refuse => Decision {
            approve: false,
            reason: Some(CHANGED.into()),
            by: DecidedBy::ConfigChange {
                via: decision.by.actor().via,
            },
        },
        OnChange::Resume => Decision {
            reason: Some(
                format!("{} [{RESUMED}]", decision.reason.unwrap_or_default())
                    .trim()
                    .to_string(),
            ),
            ..decision
        },
    }
}

/// A person's answer to a question: authorized by the gate (who may
/// answer, whether the reply fits), recorded, and its text recorded as
/// the asking call's result at once (nothing runs), so the model or the
/// pipeline goes on with it.
pub(super) fn answer(
    conversation: &Conversation,
    principal: &Principal,
    via: &str,
    uuid: Uuid,
    reply: &QuestionReply,
    facts: &Facts<'_>,
) -> Result<Transition, Refusal> {
    let command = gate::Command::Answer(gate::Answer { uuid, reply });
    let Permit::Answer { pending, role } =
        gate::authorize(principal, conversation, command, facts.policy)?
    else {
        return Err(Refusal::Invalid("the gate did not permit an answer".into()));
    };
    let mut after = conversation.clone();
    after.turn_in_progress = true;
    let decision = Decision {
        approve: true,
        reason: None,
        by: DecidedBy::Person(access::actor(principal, role, via)),
    };
    let audit = record_answer(&mut after, &pending, &decision, reply, facts);
    let order = CallOrder {
        pending: (*pending).clone(),
        approve: true,
        by: decision.by,
        reason: None,
        arguments: pending.tool_args.clone(),
        edited: None,
        reply: Some(reply.clone()),
        batch: Batch::One,
    };
    if order.is_remote() {
        // A sub-agent's question: the answer is forwarded there, once
        // (saved as executing first, like an approved proxy call).
        let mut executing = (*pending).clone();
        executing.state = ApprovalState::Executing;
        after.replace_pending(pending.uuid, executing);
        return Ok(Transition {
            conversation: after,
            effects: vec![audit, Effect::Save, Effect::Call(Box::new(order))],
        });
    }
    let result = CallResult::Done {
        content: question::reply_text(reply),
        is_error: false,
    };
    let mut then = finish::finished(&after, &order, result, facts);
    then.effects.insert(0, audit);
    Ok(then)
}

/// The answer on the conversation, and its audit line.
fn record_answer(
    conversation: &mut Conversation,
    pending: &PendingApproval,
    decision: &Decision,
    reply: &QuestionReply,
    facts: &Facts<'_>,
) -> Effect {
    let by = decision.by.actor();
    conversation.decisions.push(ApprovalDecision {
        approval_uuid: pending.uuid,
        tool_name: pending.tool_name.clone(),
        approved: true,
        decided_by: by.clone(),
        decided_at: facts.now,
        reason: None,
        edited_arguments: None,
        remembered: None,
        question: true,
        reply: Some(reply.clone()),
    });
    Effect::Audit(Box::new(AuditEntry {
        pending: pending.clone(),
        decision: match reply {
            QuestionReply::Accept { .. } => "answered",
            QuestionReply::Decline => "declined",
            QuestionReply::Cancel => "dismissed",
        },
        outcome: "answered",
        by,
        reason: None,
        edited: None,
    }))
}

/// The expiry's refusal of an approval whose deadline passed.
pub(super) fn expire(
    conversation: &Conversation,
    uuid: Uuid,
    facts: &Facts<'_>,
) -> Result<Transition, Refusal> {
    let pending = lifecycle::resolvable(conversation, uuid)
        .filter(|p| p.expires_at.is_some_and(|at| at <= facts.now))
        .ok_or(Refusal::AlreadyResolved(uuid))?;
    let decision = Decision {
        approve: false,
        reason: Some(format!(
            "expired after {} without a decision",
            allowed_wait(pending)
        )),
        by: DecidedBy::Expiry,
    };
    Ok(decided(
        conversation,
        pending,
        decision,
        &Choice::default(),
        facts,
    ))
}

/// How long `approval` was allowed to wait (`24h`), from its deadline.
fn allowed_wait(approval: &PendingApproval) -> String {
    let secs = approval
        .expires_at
        .map(|at| (at - approval.created_at).num_seconds().max(0))
        .unwrap_or_default();
    format_secs(secs.unsigned_abs())
}

/// What the model is told about an expired call (or question).
pub fn expired_text(approval: &PendingApproval) -> String {
    if approval.is_question() {
        return format!(
            "The question expired after {} without an answer.",
            allowed_wait(approval)
        );
    }
    format!(
        "The approval expired after {} without a decision; the call was not run.",
        allowed_wait(approval)
    )
}

/// Records `decision` on `pending` and orders its call: an approved call
/// is saved as `executing` first (a crash from there on is an
/// interruption, never a re-run); a refused local call needs nothing
/// run, so its result is recorded at once.
fn decided(
    conversation: &Conversation,
    pending: &PendingApproval,
    decision: Decision,
    choice: &Choice,
    facts: &Facts<'_>,
) -> Transition {
    let mut after = conversation.clone();
    after.turn_in_progress = true;
    let by = decision.by.actor();
    let edited = choice.edited(pending).filter(|_| decision.approve);
    let remembered = choice.remember.filter(|_| decision.approve);
    if let Some(grant) = remembered.and_then(|_| choice.grant(pending, &by)) {
        after.grants.push(grant);
    }
    let word = if decision.approve {
        "approved"
    } else {
        "rejected"
    };
    let extras = Extras {
        edited: edited.clone(),
        remembered,
    };
    let audit = record(&mut after, pending, &decision, word, extras, facts);
    let order = CallOrder {
        pending: pending.clone(),
        approve: decision.approve,
        by: decision.by,
        reason: decision.reason,
        arguments: choice.arguments_for(pending),
        edited,
        reply: None,
        batch: Batch::One,
    };
    if order.approve {
        let mut executing = pending.clone();
        executing.state = ApprovalState::Executing;
        after.replace_pending(pending.uuid, executing);
        return Transition {
            conversation: after,
            effects: vec![audit, Effect::Save, Effect::Call(Box::new(order))],
        };
    }
    if order.is_remote() {
        return Transition {
            conversation: after,
            effects: vec![audit, Effect::Call(Box::new(order))],
        };
    }
    let result = CallResult::Done {
        content: lifecycle::rejection_text(order.reason.as_deref()),
        is_error: true,
    };
    let mut then = finish::finished(&after, &order, result, facts);
    then.effects.insert(0, audit);
    then
}

/// An approver's extras as recorded with an approval.
#[derive(Default)]
struct Extras {
    edited: Option<Map<String, Value>>,
    remembered: Option<GrantScope>,
}

/// The decision on the conversation, and its audit line.
fn record(
    conversation: &mut Conversation,
    pending: &PendingApproval,
    decision: &Decision,
    word: &'static str,
    extras: Extras,
    facts: &Facts<'_>,
) -> Effect {
    let by = decision.by.actor();
    conversation.decisions.push(ApprovalDecision {
        approval_uuid: pending.uuid,
        tool_name: pending.tool_name.clone(),
        approved: decision.approve,
        decided_by: by.clone(),
        decided_at: facts.now,
        reason: decision.reason.clone(),
        edited_arguments: extras.edited.clone(),
        remembered: extras.remembered,
        question: pending.is_question(),
        reply: None,
    });
    Effect::Audit(Box::new(AuditEntry {
        pending: pending.clone(),
        decision: word,
        outcome: if decision.approve {
            "executing"
        } else {
            "not_run"
        },
        by,
        reason: decision.reason.clone(),
        edited: extras.edited,
    }))
}

/// Refuses every pending approval (a sub-agent's refusal is forwarded,
/// so nothing waits there forever) and closes the conversation as
/// canceled once each refusal is recorded.
pub(super) fn cancel(
    conversation: &Conversation,
    by: Actor,
    reason: Option<&str>,
    facts: &Facts<'_>,
) -> Transition {
    let reason = reason.unwrap_or("canceled by the client").to_string();
    let pending = conversation.pending().to_vec();
    let tools: Vec<&str> = pending.iter().map(|p| p.tool_name.as_str()).collect();
    let batch = Batch::Cancel {
        answer: format!("Canceled: {} was not run ({reason}).", tools.join(", ")),
        node: pending.first().and_then(|p| p.node.clone()),
        reason: reason.clone(),
    };
    let decision = Decision {
        approve: false,
        reason: Some(reason),
        by: DecidedBy::Person(by),
    };
    refuse_all(
        conversation.clone(),
        &pending,
        &decision,
        "canceled",
        batch,
        facts,
    )
}

/// The other approvals of a pipeline refused for a configuration change.
pub(super) fn end_run(
    conversation: Conversation,
    by: &DecidedBy,
    reason: Option<&str>,
    what: String,
    facts: &Facts<'_>,
) -> Transition {
    let others = conversation.pending().to_vec();
    let reason = reason.unwrap_or_default().to_string();
    let decision = Decision {
        approve: false,
        reason: Some(reason.clone()),
        by: by.clone(),
    };
    let batch = Batch::EndRun { what, reason };
    refuse_all(conversation, &others, &decision, "rejected", batch, facts)
}

/// Records `decision` on each of `pending`: a local call's refusal is
/// recorded at once, a sub-agent's is forwarded (ordered); the last
/// result recorded closes the batch (see `finish`).
fn refuse_all(
    mut conversation: Conversation,
    pending: &[PendingApproval],
    decision: &Decision,
    word: &'static str,
    batch: Batch,
    facts: &Facts<'_>,
) -> Transition {
    let mut effects = Vec::new();
    let mut orders = Vec::new();
    for one in pending {
        let extras = Extras::default();
        effects.push(record(
            &mut conversation,
            one,
            decision,
            word,
            extras,
            facts,
        ));
        let order = CallOrder {
            pending: one.clone(),
            approve: false,
            by: decision.by.clone(),
            reason: decision.reason.clone(),
            arguments: one.tool_args.clone(),
            edited: None,
            reply: None,
            batch: batch.clone(),
        };
        match order.is_remote() {
            true => orders.push(Effect::Call(Box::new(order))),
            false => finish::record_refusal(&mut conversation, &order, None),
        }
    }
    if orders.is_empty() {
        let closed = finish::close_batch(conversation, &batch, facts);
        effects.extend(closed.effects);
        return Transition {
            conversation: closed.conversation,
            effects,
        };
    }
    effects.extend(orders);
    Transition {
        conversation,
        effects,
    }
}
