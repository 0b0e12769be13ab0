//! One turn: a user message or an approval decision, run to an answer or
//! to the next approval stop. A [`Turn`] owns a working copy of the
//! conversation while the caller holds the conversation's lock, records
//! messages into it, and publishes each saved version for readers.

use std::sync::Arc;

use asg_shared::rest::TurnResult;
use asg_shared::{
    Actor, ApprovalDecision, ApprovalState, Conversation, ConversationStatus, Message,
    PendingApproval, PipelineState, Role,
};
use async_trait::async_trait;
use chrono::Utc;
use serde_json::Value;

use super::calls::{self, CallOutcome};
use super::choice::Choice;
use super::index::Slot;
use super::llm_node::{self, Gate, Invocation, NodeOutcome, Recorder};
use super::run::{Exec, Failure, Flow, Pause, Resume, Transcript};
use super::tree::Node;
use super::{EngineError, Inner, TurnOutcome, approval, history, new_message};
use crate::audit::AuditLine;
use crate::context::RequestContext;

/// A human's decision on a pending approval.
pub(crate) struct Decision {
    /// Approve or reject.
    pub approve: bool,
    /// Why (shown to the model on a rejection).
    pub reason: Option<String>,
    /// Who decided, in which role, through which channel.
    pub by: Actor,
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
        conversation: Conversation,
        ctx: &RequestContext,
    ) -> Turn<'a> {
        let ctx = RequestContext {
            session_id: conversation.session_id.clone(),
            ..ctx.clone()
        };
        Turn {
            inner,
            slot,
            conversation,
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

    /// Applies a decision on `pending`, then lets the tree go on.
    pub(crate) async fn run_decision(
        mut self,
        mut pending: PendingApproval,
        decision: Decision,
    ) -> Result<TurnOutcome, EngineError> {
        self.conversation.turn_in_progress = true;
        let approve = decision.approve;
        self.record_decision(&pending, &decision, "decision")?;
        let outcome = self
            .apply_decision(&mut pending, approve, decision.reason.as_deref())
            .await?;
        let outcome = super::expiry::reword(outcome, &decision, &pending);
        let outcome = super::pin::reword(outcome, &decision);
        self.audit_outcome(&pending, &outcome);
        let (content, is_error) = match outcome {
            CallOutcome::Done { content, is_error } => (content, is_error),
            CallOutcome::Remote { agent, approval } if approve => {
                // The sub-agent (or one behind it) needs another decision:
                // stop again on the same call, keeping the pipeline state.
                let next = calls::proxy_approval(
                    self.conversation.id,
                    &pending.call_id,
                    pending.node.clone(),
                    &agent,
                    approval,
                );
                let pipeline = self.conversation.pipeline_state.take();
                return self.pause(Box::new(next), pipeline).await;
            }
            CallOutcome::Remote { agent, .. } => (
                format!("Rejected by the user; {agent} still asks for an approval."),
                true,
            ),
        };
        // A proxy approval shows the sub-agent's tool; the result answers
        // the local call, which named the sub-agent.
        let called = pending
            .remote_agent_name
            .as_deref()
            .unwrap_or(&pending.tool_name);
        let content = match (approve, self.choice.edited(&pending)) {
            (true, Some(edited)) => format!(
                "Note: the approver changed the arguments before approving; the call ran with {}.\n{content}",
                Value::Object(edited)
            ),
            _ => content,
        };
        let mut result = llm_node::result_message(&pending.call_id, called, content, is_error);
        result.node = pending.node.clone();
        self.conversation.messages.push(result);
        self.conversation.pending_approval = None;
        self.conversation.status = ConversationStatus::Active;
        match self.conversation.pipeline_state.take() {
            None => {
                self.save().await?;
                self.run_simple().await
            }
            Some(state) if !approve => {
                let why = refusal_word(&decision.by);
                self.cancel_pipeline(&pending, &state, why).await
            }
            Some(state) => self.resume_pipeline(&pending, &state).await,
        }
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
        self.conversation.pending_approval = Some(pending.clone());
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
    /// (synced) before anything runs.
    fn record_decision(
        &mut self,
        pending: &PendingApproval,
        decision: &Decision,
        event: &str,
    ) -> Result<(), EngineError> {
        let edited = self.choice.edited(pending).filter(|_| decision.approve);
        let remembered = self.choice.remember.filter(|_| decision.approve);
        if let Some(grant) = remembered.and_then(|_| self.choice.grant(pending, &decision.by)) {
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
            line.by = Some(&decision.by);
            line.reason = decision.reason.as_deref();
            line.edited_arguments_sha256 = edited.as_ref().map(crate::audit::arguments_hash);
            audit.append(&line).map_err(|e| {
                tracing::error!(error = %e, "cannot write the audit log; the decision is not applied");
                EngineError::Store(format!("cannot write the audit log: {e}"))
            })?;
        }
        tracing::info!(approval = %pending.uuid, decision = word, by = %decision.by.subject, "approval decided");
        self.conversation.decisions.push(ApprovalDecision {
            approval_uuid: pending.uuid,
            tool_name: pending.tool_name.clone(),
            approved: decision.approve,
            decided_by: decision.by.clone(),
            decided_at: Utc::now(),
            reason: decision.reason.clone(),
            edited_arguments: edited,
            remembered,
        });
        Ok(())
    }

    /// The outcome line of a decided call in the audit log.
    fn audit_outcome(&self, pending: &PendingApproval, outcome: &CallOutcome) {
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
        if let Err(error) = audit.append(&AuditLine::about("outcome", pending, word)) {
            tracing::error!(%error, "cannot write an outcome to the audit log");
        }
    }

    /// A rejection inside a pipeline: the remaining steps do not run.
    async fn cancel_pipeline(
        mut self,
        pending: &PendingApproval,
        state: &PipelineState,
        why: &str,
    ) -> Result<TurnOutcome, EngineError> {
        let text = format!(
            "Pipeline cancelled: {} was {why}, so the remaining steps did not run.",
            pending.tool_name
        );
        let mut message = new_message(Role::Assistant, text.clone());
        message.node = Some(self.inner.tree.root.name().to_string());
        self.conversation.messages.push(message);
        self.conversation.turn_in_progress = false;
        self.save().await?;
        tracing::info!(path = ?state.paused_node_path, "pipeline cancelled by rejection");
        Ok(self.outcome(text))
    }

    /// Resumes a paused pipeline at the node that asked.
    async fn resume_pipeline(
        mut self,
        pending: &PendingApproval,
        state: &PipelineState,
    ) -> Result<TurnOutcome, EngineError> {
        self.save().await?;
        let node_name = pending.node.clone().unwrap_or_default();
        let from = state
            .node_messages_from
            .min(self.conversation.messages.len());
        let own = self.conversation.messages[from..]
            .iter()
            .filter(|m| m.node.as_deref() == Some(node_name.as_str()))
            .cloned()
            .collect();
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
            path: state.paused_node_path.clone(),
            own,
            messages_from: state.node_messages_from,
        };
        self.run_pipeline(exec, Some(resume)).await
    }

    /// Refuses `pending` and closes the conversation as canceled.
    pub(crate) async fn cancel(
        mut self,
        pending: PendingApproval,
        mut decision: Decision,
    ) -> Result<TurnOutcome, EngineError> {
        let reason = decision
            .reason
            .clone()
            .unwrap_or_else(|| "canceled by the client".to_string());
        decision.reason = Some(reason.clone());
        self.record_decision(&pending, &decision, "cancel")?;
        let mut text = approval::rejection_text(Some(&reason));
        if pending.remote_task_id.is_some() {
            // The sub-agent's approval is rejected too, so nothing waits
            // there forever.
            let forwarded =
                calls::forward_decision(&self.inner, &self.ctx, &pending, false, Some(&reason))
                    .await;
            if let CallOutcome::Done { content, .. } = forwarded {
                text = format!("{text} {content}");
            }
        }
        let called = pending
            .remote_agent_name
            .as_deref()
            .unwrap_or(&pending.tool_name);
        let mut result = llm_node::result_message(&pending.call_id, called, text, true);
        result.node = pending.node.clone();
        self.conversation.messages.push(result);
        let answer = format!("Canceled: {} was not run ({reason}).", pending.tool_name);
        let mut message = new_message(Role::Assistant, answer.clone());
        message.node = pending.node.clone();
        self.conversation.messages.push(message);
        self.conversation.pending_approval = None;
        self.conversation.pipeline_state = None;
        self.conversation.status = ConversationStatus::Canceled;
        self.save().await?;
        tracing::info!(approval = %pending.uuid, "conversation canceled while waiting for approval");
        Ok(self.outcome(answer))
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
            NodeOutcome::Paused(pending) => self.pause(pending, None).await,
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
            Flow::Paused(Pause {
                pending,
                path,
                output_key,
                messages_from,
            }) => {
                let state = PipelineState {
                    paused_node_path: path,
                    paused_node_output_key: output_key.unwrap_or_default(),
                    session_state: exec.session_snapshot(),
                    user_message: exec
                        .session_snapshot()
                        .remove("user_message")
                        .unwrap_or_default(),
                    node_messages_from: messages_from,
                    loop_iterations: exec.loop_iterations.clone(),
                };
                self.pause(pending, Some(state)).await
            }
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

    /// Saves the conversation as waiting for `pending`.
    async fn pause(
        mut self,
        pending: Box<PendingApproval>,
        pipeline: Option<PipelineState>,
    ) -> Result<TurnOutcome, EngineError> {
        let response = format!("Approval required: {}", pending.description);
        self.inner
            .index
            .add_approval(pending.uuid, self.conversation.id);
        tracing::info!(approval = %pending.uuid, tool = %pending.tool_name, "destructive call stopped for approval");
        let mut pending = *pending;
        if pending.requested_by.is_none() {
            pending.requested_by = self.ctx.requester();
        }
        self.inner.expiry.stamp(&mut pending);
        pending.config_hash = Some(self.inner.config_hash(&pending));
        self.conversation.pending_approval = Some(pending);
        self.conversation.pipeline_state = pipeline;
        self.conversation.status = ConversationStatus::WaitingApproval;
        self.conversation.turn_in_progress = false;
        self.save().await?;
        self.inner.expiry.wake();
        Ok(self.outcome(response))
    }
}

/// How a refused approval is described when it cancels a pipeline.
fn refusal_word(by: &Actor) -> &'static str {
    if super::is_expiry(by) {
        "not decided in time (expired)"
    } else if by.subject == super::pin::CONFIG_SUBJECT {
        "refused because the agent's configuration changed"
    } else {
        "rejected"
    }
}
