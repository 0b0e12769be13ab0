//! Carrying out the core's transitions: each [`Effect`] in order — the
//! audit line, the save, the call (whose result goes back to the core as
//! [`Command::Finished`]), then the model, the pipeline or the answer.
//! The lifecycle's decisions are all in [`asg_core::transition`]; this is
//! only the doing.

use std::collections::VecDeque;

use asg_core::transition::{
    self, AuditEntry, CallOrder, CallResult, Command, Effect, Transition, Who,
};
use asg_shared::{Actor, PendingApproval};

use super::Turn;
use crate::audit::AuditLine;
use crate::engine::calls::{self, CallOutcome};
use crate::engine::{EngineError, TurnOutcome};

impl Turn<'_> {
    /// The run works for whoever asked for the decided call (never the
    /// approver, so that nobody asks through someone else's approval).
    pub(crate) fn on_behalf_of(mut self, requested_by: Option<Actor>) -> Self {
        if requested_by.is_some() {
            self.requester = requested_by;
        }
        self
    }

    /// Carries out a transition's effects in order until one ends the
    /// turn. The turn is made on the transition's conversation
    /// ([`Turn::new`]), so the working copy is the core's, not a second
    /// copy of the stored one.
    pub(crate) async fn drive(mut self, effects: Vec<Effect>) -> Result<TurnOutcome, EngineError> {
        let mut effects: VecDeque<Effect> = effects.into();
        while let Some(effect) = effects.pop_front() {
            match effect {
                Effect::Audit(entry) => self.audit(&entry).await?,
                Effect::AuditOutcome { pending, outcome } => {
                    self.audit_outcome(&pending, outcome).await;
                }
                Effect::Save => self.save().await?,
                Effect::WakeExpiry => self.inner.expiry.wake(),
                Effect::Call(order) => {
                    let next = self.call(&order).await?;
                    self.conversation = next.conversation;
                    for effect in next.effects.into_iter().rev() {
                        effects.push_front(effect);
                    }
                }
                // The runs that follow are boxed: inline, the largest of
                // them (a pipeline's) made every turn's future as large,
                // a simple message's too.
                Effect::Run { text } => return Box::pin(self.run_tree(text)).await,
                Effect::Continue => return Box::pin(self.run_simple()).await,
                Effect::Resume(state) => return Box::pin(self.resume_pipeline(&state)).await,
                Effect::Reply(text) => return Ok(self.outcome(text)),
            }
        }
        Ok(self.outcome(String::new()))
    }

    /// Runs the approved call (or forwards the decision of a proxy
    /// approval) and hands its result to the core.
    async fn call(&mut self, order: &CallOrder) -> Result<Transition, EngineError> {
        let outcome = self.carry_out(order).await;
        if order.approve {
            let result = match &outcome {
                CallOutcome::Done {
                    is_error: false, ..
                } => "ok",
                CallOutcome::Done { is_error: true, .. } => "error",
                CallOutcome::Remote { .. } => "approval",
            };
            crate::metrics::metrics().approved_call(&order.pending.tool_name, result);
        }
        // Credentials follow the person who instructed the action: the
        // approver's token ran (or forwarded) the approved call only; the
        // rest of the run works on the requester's instructions and never
        // carries it.
        self.ctx.bearer = None;
        let result = self.call_result(order, outcome);
        let command = Command::Finished { order, result };
        let inner = self.inner.clone();
        inner
            .with_facts(|facts| transition::apply(&self.conversation, Who::System, command, facts))
            .map_err(|refusal| super::super::refused(refusal, &self.conversation))
    }

    /// What the order does: forward the decision (or answer) to the
    /// sub-agent, run the approved call with its stored arguments, or
    /// nothing for a local refusal.
    async fn carry_out(&self, order: &CallOrder) -> CallOutcome {
        let pending = &order.pending;
        if order.is_remote() {
            let reason = order.reason.as_deref().filter(|_| !order.approve);
            tracing::info!(approval = %pending.uuid, approve = order.approve, "forwarding the decision to the sub-agent");
            let reply = order.reply.as_ref();
            return calls::forward_decision(
                &self.inner,
                &self.ctx,
                pending,
                order.approve,
                reason,
                reply,
            )
            .await;
        }
        if !order.approve {
            // The core records a local refusal itself; nothing to run.
            return CallOutcome::done(
                asg_core::lifecycle::rejection_text(order.reason.as_deref()),
                true,
            );
        }
        tracing::info!(approval = %pending.uuid, tool = %pending.tool_name, "approved; executing stored arguments");
        let site = crate::engine::CallSite {
            conversation_id: self.conversation.id,
            call_id: pending.call_id.clone(),
            node: pending.node.clone(),
            requester: self.requester.clone(),
            approval: Some(pending.clone()),
        };
        let arguments = order.arguments.clone();
        calls::execute(
            &self.inner,
            &self.ctx,
            &pending.tool_name,
            arguments,
            Some(site),
        )
        .await
    }

    /// The call's outcome as the core reads it: a sub-agent asking again
    /// becomes the next proxy approval (stamped when approved).
    fn call_result(&self, order: &CallOrder, outcome: CallOutcome) -> CallResult {
        let pending = &order.pending;
        match outcome {
            CallOutcome::Done {
                content, is_error, ..
            } => CallResult::Done { content, is_error },
            CallOutcome::Remote { agent, approval } => {
                let next = calls::proxy_approval(
                    self.conversation.id,
                    &pending.call_id,
                    pending.node.clone(),
                    &agent,
                    approval,
                );
                let next = if order.approve {
                    self.stamp(next)
                } else {
                    next
                };
                CallResult::AskedAgain {
                    agent,
                    next: Box::new(next),
                }
            }
        }
    }

    /// Records a decision in the audit log (durable: synced, or
    /// committed) before anything it allows runs.
    async fn audit(&self, entry: &AuditEntry) -> Result<(), EngineError> {
        tracing::info!(approval = %entry.pending.uuid, decision = entry.decision, by = %entry.by.subject, "approval decided");
        count_decision(entry);
        let Some(audit) = &self.inner.audit else {
            return Ok(());
        };
        let mut line = AuditLine::about("decision", &entry.pending, entry.outcome);
        line.decision = Some(entry.decision);
        line.by = Some(&entry.by);
        line.reason = entry.reason.as_deref();
        line.edited_arguments_sha256 = entry.edited.as_ref().map(crate::audit::arguments_hash);
        audit.append(&line).await.map_err(|e| {
            tracing::error!(error = %e, "cannot write the audit log; the decision is not applied");
            EngineError::Audit(e)
        })
    }

    /// The outcome line of a decided call in the audit log.
    async fn audit_outcome(&self, pending: &PendingApproval, outcome: &str) {
        let Some(audit) = &self.inner.audit else {
            return;
        };
        let line = AuditLine::about("outcome", pending, outcome);
        if let Err(error) = audit.append(&line).await {
            tracing::error!(%error, "cannot write an outcome to the audit log");
        }
    }
}

/// The decision in the metrics: its outcome (an edit counts as `edited`),
/// the channel it came through, and how long the approval waited.
fn count_decision(entry: &AuditEntry) {
    let outcome = if entry.by.subject == asg_core::lifecycle::EXPIRY_SUBJECT {
        "expired"
    } else if entry.edited.is_some() {
        "edited"
    } else {
        entry.decision
    };
    let channel = entry.by.via.as_deref().unwrap_or("system");
    let waited = (chrono::Utc::now() - entry.pending.created_at)
        .to_std()
        .unwrap_or_default();
    crate::metrics::metrics().approval_decided(outcome, channel, waited);
    crate::telemetry::approval_decided(
        &entry.pending.uuid.to_string(),
        outcome,
        channel,
        &entry.by.subject,
        waited.as_secs_f64(),
    );
}
