//! One turn: a user message or an approval decision, run to an answer or
//! to the next approval stop. A [`Turn`] owns a working copy of the
//! conversation while the caller holds the conversation's lock, records
//! messages into it, and publishes each saved version for readers.

use std::sync::Arc;

use asg_shared::rest::TurnResult;
use asg_shared::{
    ApprovalDecision, ApprovalState, Conversation, ConversationStatus, Message, PausedStep,
    PendingApproval, PipelineState, Role,
};
use async_trait::async_trait;
use chrono::Utc;
use serde_json::Value;

use super::calls::{self, CallOutcome};
use super::choice::Choice;
use super::index::Slot;
use super::llm_node::{self, Gate, Invocation, NodeOutcome, Recorder};
use super::run::{Exec, Failure, Flow, Pause, Resume, ResumeStep, Transcript};
use super::tree::Node;
use super::{EngineError, Inner, TurnOutcome, approval, history, new_message};
use crate::audit::AuditLine;
use crate::context::RequestContext;
use approval::{AfterDecision, DecidedBy};

/// A human's decision on a pending approval.
pub(crate) struct Decision {
    /// Approve or reject.
    pub approve: bool,
    /// Why (shown to the model on a rejection).
    pub reason: Option<String>,
    /// Who decided: a person (in which role, through which channel) or
    /// the system.
    pub by: DecidedBy,
}

pub(crate) struct Turn<'a> {
    inner: Arc<Inner>,
    slot: &'a Slot,
    conversation: Conversation,
    /// The request's context, with the conversation's own session id (so
    /// every outbound call of this conversation carries the same one).
    ctx: RequestContext,
    /// An approver's edited arguments and grant, on a decision.
    choice: Choice,
    /// Who the run works for: the caller, or on a decision the one who
    /// asked for the decided call (never the approver, so that nobody
    /// asks through someone else's approval).
    requester: Option<asg_shared::Actor>,
}

#[async_trait]
impl Recorder for Turn<'_> {
    fn push(&mut self, message: Message) {
        self.conversation.messages.push(message);
    }

    async fn checkpoint(&mut self) -> Result<(), EngineError> {
        self.save().await
    }
}

impl Transcript for Turn<'_> {
    fn position(&self) -> usize {
        self.conversation.messages.len()
    }
}

impl<'a> Turn<'a> {
    pub(crate) fn new(
        inner: Arc<Inner>,
        slot: &'a Slot,
        mut conversation: Conversation,
        ctx: &RequestContext,
    ) -> Turn<'a> {
        if conversation.a2a_context_id.is_none() {
            conversation.a2a_context_id = ctx.a2a_context.clone();
        }
        let ctx = RequestContext {
            session_id: conversation.session_id.clone(),
            ..ctx.clone()
        };
        Turn {
            inner,
            slot,
            conversation,
            requester: ctx.requester(),
            ctx,
            choice: Choice::default(),
        }
    }

    /// Saves the working copy durably, then publishes it.
    pub(crate) async fn save(&mut self) -> Result<(), EngineError> {
        self.conversation.updated_at = Utc::now();
        let snapshot = Arc::new(self.conversation.clone());
        let store = self.inner.store.clone();
        let to_save = snapshot.clone();
        tokio::task::spawn_blocking(move || store.save(&to_save))
            .await
            .map_err(|e| EngineError::Store(e.to_string()))?
            .map_err(|e| {
                tracing::error!(error = %e, "saving a conversation failed");
                EngineError::Store(e.to_string())
            })?;
        self.slot.publish(snapshot);
        Ok(())
    }

    /// The outcome as last saved.
    pub(crate) fn outcome(&self, response: String) -> TurnOutcome {
        let conversation = self.slot.snapshot();
        let approval = conversation.pending_approval.clone();
        TurnOutcome {
            result: TurnResult {
                response,
                waiting_approval: conversation.status == ConversationStatus::WaitingApproval,
                approval,
            },
            conversation,
        }
    }

    /// Records a user message and runs the tree on it.
    pub(crate) async fn run_user_message(
        mut self,
        text: String,
    ) -> Result<TurnOutcome, EngineError> {
        self.conversation
            .messages
            .push(new_message(Role::User, text.clone()));
        self.conversation.turn_in_progress = true;
        self.save().await?;
        if self.inner.tree.is_simple() {
            self.run_simple().await
        } else {
            let exec = Exec::new(
                self.inner.clone(),
                self.ctx.clone(),
                self.conversation.id,
                Default::default(),
                &text,
                Default::default(),
            )
            .with_grants(&self.conversation.grants);
            self.run_pipeline(exec, None).await
        }
    }

    /// Applies a decision with an approver's extras (edited arguments, a
    /// grant; checked by the caller with [`Choice::check`]).
    pub(crate) async fn run_decision_with(
        mut self,
        pending: PendingApproval,
        decision: Decision,
        choice: Choice,
    ) -> Result<TurnOutcome, EngineError> {
        self.choice = choice;
        self.run_decision(pending, decision).await
    }

    /// Applies a decision on `pending`, then lets the tree go on once no
    /// other approval of the run is pending.
    pub(crate) async fn run_decision(
        mut self,
        mut pending: PendingApproval,
        decision: Decision,
    ) -> Result<TurnOutcome, EngineError> {
        self.conversation.turn_in_progress = true;
        if pending.requested_by.is_some() {
            self.requester = pending.requested_by.clone();
        }
        let approve = decision.approve;
        self.record_decision(&pending, &decision, "decision")
            .await?;
        let outcome = self
            .apply_decision(&mut pending, approve, decision.reason.as_deref())
            .await?;
        // Credentials follow the person who instructed the action: the
        // approver's token ran (or forwarded) the approved call only; the
        // rest of the run works on the requester's instructions and never
        // carries it.
        self.ctx.bearer = None;
        let outcome = super::expiry::reword(outcome, &decision, &pending);
        let outcome = super::pin::reword(outcome, &decision);
        self.audit_outcome(&pending, &outcome).await;
        let (content, is_error) = match outcome {
            CallOutcome::Done { content, is_error } => (content, is_error),
            CallOutcome::Remote { agent, approval } if approve => {
                // The sub-agent (or one behind it) needs another decision:
                // the same call waits again, in the same place.
                let next = calls::proxy_approval(
                    self.conversation.id,
                    &pending.call_id,
                    pending.node.clone(),
                    &agent,
                    approval,
                );
                return self.wait_again(pending.uuid, next).await;
            }
            CallOutcome::Remote { agent, .. } => (
                format!("Rejected by the user; {agent} still asks for an approval."),
                true,
            ),
        };
        self.record_result(&pending, approve, content, is_error);
        self.conversation.take_pending(pending.uuid);
        let next = approval::after_decision(
            &self.conversation,
            &decision.by,
            self.changed_under_refuse(&pending),
        );
        let refusal =
            (!approve).then(|| format!("{} was {}", pending.tool_name, decision.by.refusal_word()));
        approval::settle_step(&mut self.conversation, pending.uuid, refusal);
        match next {
            // The tree it would resume on is not the one it paused on.
            AfterDecision::EndRun => self.end_after_config_change(&pending, &decision).await,
            AfterDecision::WaitForTheRest => self.wait_for_the_rest().await,
            AfterDecision::RefuseResume => {
                // A refusal (by a person or by expiry) stays what it was,
                // but the run must not go on under another configuration.
                self.conversation.pipeline_state = None;
                self.conversation.status = ConversationStatus::Active;
                let what = format!(
                    "{} was {} and the agent's configuration changed since the run paused \
                     (approval.on_config_change: refuse)",
                    pending.tool_name,
                    decision.by.refusal_word()
                );
                self.cancel_pipeline(&what).await
            }
            AfterDecision::Continue | AfterDecision::Resume => self.go_on().await,
        }
    }

    /// Lets the model (or the paused pipeline) go on after the last
    /// decision of a run.
    async fn go_on(mut self) -> Result<TurnOutcome, EngineError> {
        self.conversation.status = ConversationStatus::Active;
        match self.conversation.pipeline_state.take() {
            None => {
                self.save().await?;
                self.run_simple().await
            }
            Some(state) => self.resume_pipeline(&state).await,
        }
    }

    /// The run paused on `pending` would resume on a configuration other
    /// than the one it paused on, and `approval.on_config_change` is
    /// `refuse`.
    fn must_not_resume(&self, pending: &PendingApproval) -> bool {
        self.conversation.pipeline_state.is_some() && self.changed_under_refuse(pending)
    }

    /// The configuration changed since `pending` was raised and
    /// `approval.on_config_change` is `refuse`.
    fn changed_under_refuse(&self, pending: &PendingApproval) -> bool {
        self.inner.pinning.on_change == crate::config::OnConfigChange::Refuse
            && self.inner.config_changed(pending)
    }

    /// Goes on with a paused run whose last approval was settled
    /// elsewhere (on its sub-agent; see `reconcile.rs`).
    pub(crate) async fn resume_settled(
        mut self,
        settled: &PendingApproval,
    ) -> Result<TurnOutcome, EngineError> {
        self.conversation.turn_in_progress = true;
        self.conversation.status = ConversationStatus::Active;
        if settled.requested_by.is_some() {
            self.requester = settled.requested_by.clone();
        }
        if self.must_not_resume(settled) {
            self.conversation.pipeline_state = None;
            let what = format!(
                "{} was settled on its sub-agent and the agent's configuration changed since the run paused \
                 (approval.on_config_change: refuse)",
                settled.tool_name
            );
            return self.cancel_pipeline(&what).await;
        }
        match self.conversation.pipeline_state.take() {
            Some(state) => self.resume_pipeline(&state).await,
            None => {
                self.save().await?;
                Ok(self.outcome(String::new()))
            }
        }
    }

    /// Records the decided call's result (a proxy approval shows the
    /// sub-agent's tool; the result answers the local call, which named
    /// the sub-agent), telling the model when the approver edited it.
    fn record_result(
        &mut self,
        pending: &PendingApproval,
        approve: bool,
        content: String,
        is_error: bool,
    ) {
        let called = pending
            .remote_agent_name
            .as_deref()
            .unwrap_or(&pending.tool_name);
        let content = match (approve, self.choice.edited(pending)) {
            (true, Some(edited)) => format!(
                "Note: the approver changed the arguments before approving; the call ran with {}.\n{content}",
                Value::Object(edited)
            ),
            _ => content,
        };
        let mut result = llm_node::result_message(&pending.call_id, called, content, is_error);
        result.node = pending.node.clone();
        self.conversation.messages.push(result);
    }

    /// Saves a run that still waits for other approvals (parallel
    /// branches decided one by one).
    async fn wait_for_the_rest(mut self) -> Result<TurnOutcome, EngineError> {
        let left = self.conversation.pending().len();
        self.conversation.status = ConversationStatus::WaitingApproval;
        self.conversation.turn_in_progress = false;
        self.save().await?;
        tracing::info!(conversation = %self.conversation.id, left, "decision recorded; the run waits for the other approvals");
        Ok(self.outcome(format!(
            "Decision recorded; {left} more approval{} pending before the run goes on.",
            if left == 1 { " is" } else { "s are" }
        )))
    }

    /// Puts `next` in the place of approval `old` (same call, same step).
    async fn wait_again(
        mut self,
        old: uuid::Uuid,
        next: PendingApproval,
    ) -> Result<TurnOutcome, EngineError> {
        let response = format!("Approval required: {}", next.description);
        let next = self.stamp(next);
        approval::move_step(&mut self.conversation, old, next.uuid);
        self.conversation.replace_pending(old, next);
        self.wait(response).await
    }

    /// Runs the approved call (saved as `executing` first: a crash from
    /// here on is reported as an interruption, never re-run), forwards the
    /// decision of a proxy approval, or records the rejection.
    async fn apply_decision(
        &mut self,
        pending: &mut PendingApproval,
        approve: bool,
        reason: Option<&str>,
    ) -> Result<CallOutcome, EngineError> {
        let remote = pending.remote_task_id.is_some();
        if !approve {
            tracing::info!(approval = %pending.uuid, tool = %pending.tool_name, "rejected");
            if remote {
                return Ok(
                    calls::forward_decision(&self.inner, &self.ctx, pending, false, reason).await,
                );
            }
            return Ok(CallOutcome::Done {
                content: approval::rejection_text(reason),
                is_error: true,
            });
        }
        pending.state = ApprovalState::Executing;
        self.conversation
            .replace_pending(pending.uuid, pending.clone());
        self.save().await?;
        tracing::info!(approval = %pending.uuid, tool = %pending.tool_name, "approved; executing stored arguments");
        Ok(if remote {
            calls::forward_decision(&self.inner, &self.ctx, pending, true, None).await
        } else {
            let args = self.choice.arguments_for(pending);
            calls::execute(&self.inner, &self.ctx, &pending.tool_name, args).await
        })
    }

    /// Records who decided on the conversation, and in the audit log
    /// (durable: synced, or committed) before anything runs.
    async fn record_decision(
        &mut self,
        pending: &PendingApproval,
        decision: &Decision,
        event: &str,
    ) -> Result<(), EngineError> {
        let edited = self.choice.edited(pending).filter(|_| decision.approve);
        let remembered = self.choice.remember.filter(|_| decision.approve);
        let by = decision.by.actor();
        if let Some(grant) = remembered.and_then(|_| self.choice.grant(pending, &by)) {
            self.conversation.grants.push(grant);
        }
        let (word, outcome) = match (decision.approve, event) {
            (true, _) => ("approved", "executing"),
            (false, "cancel") => ("canceled", "not_run"),
            (false, _) => ("rejected", "not_run"),
        };
        if let Some(audit) = &self.inner.audit {
            let mut line = AuditLine::about("decision", pending, outcome);
            line.decision = Some(word);
            line.by = Some(&by);
            line.reason = decision.reason.as_deref();
            line.edited_arguments_sha256 = edited.as_ref().map(crate::audit::arguments_hash);
            audit.append(&line).await.map_err(|e| {
                tracing::error!(error = %e, "cannot write the audit log; the decision is not applied");
                EngineError::Store(format!("cannot write the audit log: {e}"))
            })?;
        }
        tracing::info!(approval = %pending.uuid, decision = word, by = %by.subject, "approval decided");
        self.conversation.decisions.push(ApprovalDecision {
            approval_uuid: pending.uuid,
            tool_name: pending.tool_name.clone(),
            approved: decision.approve,
            decided_by: by,
            decided_at: Utc::now(),
            reason: decision.reason.clone(),
            edited_arguments: edited,
            remembered,
        });
        Ok(())
    }

    /// The outcome line of a decided call in the audit log.
    async fn audit_outcome(&self, pending: &PendingApproval, outcome: &CallOutcome) {
        let Some(audit) = &self.inner.audit else {
            return;
        };
        let word = match outcome {
            CallOutcome::Done {
                is_error: false, ..
            } => "succeeded",
            CallOutcome::Done { is_error: true, .. } => "failed",
            CallOutcome::Remote { .. } => "waiting_again",
        };
        let line = AuditLine::about("outcome", pending, word);
        if let Err(error) = audit.append(&line).await {
            tracing::error!(%error, "cannot write an outcome to the audit log");
        }
    }

    /// Ends a paused run refused because the configuration changed: its
    /// other approvals are refused too and no step resumes.
    async fn end_after_config_change(
        mut self,
        refused: &PendingApproval,
        decision: &Decision,
    ) -> Result<TurnOutcome, EngineError> {
        let reason = decision.reason.clone().unwrap_or_default();
        for other in self.conversation.pending().to_vec() {
            self.record_decision(&other, decision, "decision").await?;
            let text = self.refuse_for_cancel(&other, &reason).await;
            self.record_result(&other, false, text, true);
        }
        self.conversation.set_pending(Vec::new());
        self.conversation.pipeline_state = None;
        self.conversation.status = ConversationStatus::Active;
        let what = format!("{} was {}", refused.tool_name, decision.by.refusal_word());
        self.cancel_pipeline(&what).await
    }

    /// Resumes a paused pipeline at every step that stopped (or ends it
    /// when a step is no longer where it paused).
    async fn resume_pipeline(mut self, state: &PipelineState) -> Result<TurnOutcome, EngineError> {
        self.save().await?;
        let steps = state
            .steps(None)
            .into_iter()
            .map(|step| self.resume_step(step))
            .collect::<Result<Vec<_>, _>>();
        let steps = match steps {
            Ok(steps) => steps,
            Err(moved) => return self.cancel_pipeline(&moved).await,
        };
        let exec = Exec::new(
            self.inner.clone(),
            self.ctx.clone(),
            self.conversation.id,
            state.session_state.clone(),
            &state.user_message,
            state.loop_iterations.clone(),
        )
        .with_grants(&self.conversation.grants);
        let resume = Resume {
            steps,
            outputs: Arc::new(state.branch_outputs.clone()),
        };
        self.run_pipeline(exec, Some(resume)).await
    }

    /// A stopped step with its node's messages since it began; `Err`
    /// says why it cannot resume (the tree changed).
    fn resume_step(&self, step: PausedStep) -> Result<ResumeStep, String> {
        let node = self
            .inner
            .tree
            .node_at(&step.path)
            .filter(|n| step.node.is_empty() || n.name() == step.node)
            .ok_or_else(|| {
                format!(
                    "the paused step {:?} is no longer at its place in the agent's tree",
                    step.node
                )
            })?;
        let from = step.messages_from.min(self.conversation.messages.len());
        let own = self.conversation.messages[from..]
            .iter()
            .filter(|m| m.node.as_deref() == Some(node.name()))
            .cloned()
            .collect();
        Ok(ResumeStep {
            path: step.path,
            own,
            messages_from: step.messages_from,
            refusal: step.refusal,
        })
    }

    /// Refuses every pending approval and closes the conversation as
    /// canceled.
    pub(crate) async fn cancel(
        mut self,
        mut decision: Decision,
    ) -> Result<TurnOutcome, EngineError> {
        let reason = decision
            .reason
            .clone()
            .unwrap_or_else(|| "canceled by the client".to_string());
        decision.reason = Some(reason.clone());
        let pending = self.conversation.pending().to_vec();
        for one in &pending {
            self.record_decision(one, &decision, "cancel").await?;
            let text = self.refuse_for_cancel(one, &reason).await;
            self.record_result(one, false, text, true);
        }
        let tools: Vec<&str> = pending.iter().map(|p| p.tool_name.as_str()).collect();
        let answer = format!("Canceled: {} was not run ({reason}).", tools.join(", "));
        let mut message = new_message(Role::Assistant, answer.clone());
        message.node = pending.first().and_then(|p| p.node.clone());
        self.conversation.messages.push(message);
        self.conversation.set_pending(Vec::new());
        self.conversation.pipeline_state = None;
        self.conversation.status = ConversationStatus::Canceled;
        self.save().await?;
        tracing::info!(conversation = %self.conversation.id, approvals = pending.len(), "conversation canceled while waiting for approval");
        Ok(self.outcome(answer))
    }

    /// The refusal recorded for `pending` on a cancel; a sub-agent's
    /// approval is rejected too, so nothing waits there forever.
    async fn refuse_for_cancel(&self, pending: &PendingApproval, reason: &str) -> String {
        let text = approval::rejection_text(Some(reason));
        if pending.remote_task_id.is_none() {
            return text;
        }
        match calls::forward_decision(&self.inner, &self.ctx, pending, false, Some(reason)).await {
            CallOutcome::Done { content, .. } => format!("{text} {content}"),
            CallOutcome::Remote { .. } => text,
        }
    }

    /// The simple agent: one `llm` node over the whole conversation.
    async fn run_simple(mut self) -> Result<TurnOutcome, EngineError> {
        let inner = self.inner.clone();
        let Node::Llm(node) = &inner.tree.root else {
            return Err(EngineError::Store("run_simple needs an llm root".into()));
        };
        let invocation = Invocation {
            node,
            system: node.prompt.clone(),
            base: history::to_llm_messages(&self.conversation.messages),
            own: Vec::new(),
            gate: Gate::Approve,
            exit_loop: false,
            grants: self.conversation.grants.clone().into(),
        };
        let id = self.conversation.id;
        let ctx = self.ctx.clone();
        let outcome = llm_node::run(&inner, &ctx, id, invocation, &mut self).await?;
        match outcome {
            NodeOutcome::Answered(text) | NodeOutcome::ExitLoop(text) => {
                self.conversation.turn_in_progress = false;
                self.save().await?;
                Ok(self.outcome(text))
            }
            NodeOutcome::Paused(pending) => self.pause(vec![*pending], None).await,
            NodeOutcome::Failed(error) => Err(EngineError::Llm {
                error,
                conversation: self.slot.snapshot(),
            }),
        }
    }

    /// Orchestrated mode: runs (or resumes) the tree.
    async fn run_pipeline(
        mut self,
        mut exec: Exec,
        resume: Option<Resume>,
    ) -> Result<TurnOutcome, EngineError> {
        let inner = self.inner.clone();
        let mut path = Vec::new();
        let flow = exec
            .run_node(
                &inner.tree.root,
                &mut path,
                resume,
                Gate::Approve,
                &mut self,
            )
            .await?;
        match flow {
            Flow::Done(text) | Flow::Exit(text) => {
                let last = self
                    .conversation
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::Assistant && m.tool_call.is_none());
                if last.is_none_or(|m| m.content != text) {
                    let mut message = new_message(Role::Assistant, text.clone());
                    message.node = Some(inner.tree.root.name().to_string());
                    self.conversation.messages.push(message);
                }
                self.conversation.turn_in_progress = false;
                self.save().await?;
                Ok(self.outcome(text))
            }
            Flow::Paused(pause) => {
                let state = paused_state(&exec, &pause);
                let pending = pause.stops.into_iter().map(|s| *s.pending).collect();
                self.pause(pending, Some(state)).await
            }
            Flow::Refused(what) => self.cancel_pipeline(&what).await,
            Flow::Failed(Failure::Llm(error)) => Err(EngineError::Llm {
                error,
                conversation: self.slot.snapshot(),
            }),
            Flow::Failed(Failure::SubAgent(message)) => Err(EngineError::SubAgent {
                message,
                conversation: self.slot.snapshot(),
            }),
        }
    }

    /// Saves the conversation as waiting for every approval in `pending`.
    async fn pause(
        mut self,
        pending: Vec<PendingApproval>,
        pipeline: Option<PipelineState>,
    ) -> Result<TurnOutcome, EngineError> {
        let response = match pending.as_slice() {
            [one] => format!("Approval required: {}", one.description),
            many => format!(
                "Approvals required ({}): {}",
                many.len(),
                many.iter()
                    .map(|p| p.description.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        let pending = pending.into_iter().map(|p| self.stamp(p)).collect();
        self.conversation.set_pending(pending);
        self.conversation.pipeline_state = pipeline;
        self.wait(response).await
    }

    /// A new approval as it is saved: with who asked, its deadlines and
    /// the config fingerprint (the store finds it by uuid once saved).
    fn stamp(&self, mut pending: PendingApproval) -> PendingApproval {
        tracing::info!(approval = %pending.uuid, tool = %pending.tool_name, node = ?pending.node, "destructive call stopped for approval");
        if pending.requested_by.is_none() {
            pending.requested_by = self.requester.clone();
        }
        self.inner.expiry.stamp(&mut pending);
        pending.config_hash = Some(self.inner.config_hash(&pending));
        pending
    }

    /// Saves the conversation as waiting for its approvals.
    async fn wait(mut self, response: String) -> Result<TurnOutcome, EngineError> {
        self.conversation.status = ConversationStatus::WaitingApproval;
        self.conversation.turn_in_progress = false;
        self.save().await?;
        self.inner.expiry.wake();
        Ok(self.outcome(response))
    }

    /// A refusal that reached the root: the remaining steps do not run.
    async fn cancel_pipeline(mut self, what: &str) -> Result<TurnOutcome, EngineError> {
        let text = format!("Pipeline cancelled: {what}, so the remaining steps did not run.");
        let mut message = new_message(Role::Assistant, text.clone());
        message.node = Some(self.inner.tree.root.name().to_string());
        self.conversation.messages.push(message);
        self.conversation.turn_in_progress = false;
        self.save().await?;
        tracing::info!(conversation = %self.conversation.id, "pipeline cancelled by a refusal");
        Ok(self.outcome(text))
    }
}

/// The saved form of a paused run.
fn paused_state(exec: &Exec, pause: &Pause) -> PipelineState {
    let session = exec.session_snapshot();
    let steps: Vec<PausedStep> = pause
        .stops
        .iter()
        .map(|stop| PausedStep {
            path: stop.path.clone(),
            node: stop.pending.node.clone().unwrap_or_default(),
            output_key: stop.output_key.clone().unwrap_or_default(),
            messages_from: stop.began.index(),
            approval_uuid: stop.pending.uuid,
            refusal: None,
        })
        .collect();
    let first = steps.first().cloned().unwrap_or_default();
    PipelineState {
        paused_node_path: first.path,
        paused_node_output_key: first.output_key,
        user_message: session.get("user_message").cloned().unwrap_or_default(),
        session_state: session,
        node_messages_from: first.messages_from,
        loop_iterations: exec.loop_iterations.clone(),
        paused_steps: steps,
        branch_outputs: pause.outputs.clone(),
    }
}
