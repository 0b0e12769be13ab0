//! One turn: a user message or an approval decision, run to an answer or
//! to the next approval stop. A [`Turn`] owns a working copy of the
//! conversation while the caller holds the conversation's lock, records
//! messages into it, and publishes each saved version for readers.

use std::sync::Arc;

use asg_shared::{
    Conversation, ConversationStatus, Message, PausedStep, PendingApproval, PipelineState, Role,
};
use async_trait::async_trait;
use chrono::Utc;

use super::index::Slot;
use super::llm_node::{self, Gate, Invocation, NodeOutcome, Recorder};
use super::run::{Exec, Failure, Flow, Pause, Resume, ResumeStep, Transcript};
use super::tree::Node;
use super::{EngineError, Inner, TurnAnswer, TurnOutcome, history, new_message, store_call};
use crate::context::RequestContext;

pub(crate) struct Turn<'a> {
    inner: Arc<Inner>,
    slot: &'a Slot,
    conversation: Conversation,
    /// The request's context, with the conversation's own session id (so
    /// every outbound call of this conversation carries the same one).
    ctx: RequestContext,
    /// Who the run works for: the caller, or on a decision the one who
    /// asked for the decided call (never the approver, so that nobody
    /// asks through someone else's approval).
    requester: Option<asg_shared::Actor>,
}

#[async_trait]
impl Recorder for Turn<'_> {
    fn push(&mut self, message: Message) {
        self.conversation.messages.push(message.into());
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

mod effects;
#[cfg(test)]
mod tests;

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
        }
    }

    /// Saves the working copy durably, then publishes it.
    pub(crate) async fn save(&mut self) -> Result<(), EngineError> {
        self.conversation.updated_at = Utc::now();
        // Answers to tool servers' questions during this turn's calls.
        let answered = self.inner.asking.take_answered(self.conversation.id);
        self.conversation.decisions.extend(answered);
        let snapshot = Arc::new(self.conversation.clone());
        store_call::save(&self.inner.store, snapshot.clone())
            .await
            .inspect_err(|error| tracing::error!(%error, "saving a conversation failed"))?;
        self.inner.publish(self.slot, snapshot);
        Ok(())
    }

    /// The outcome as last saved.
    pub(crate) fn outcome(&self, response: String) -> TurnOutcome {
        let conversation = self.slot.snapshot();
        let approval = conversation.pending_approval.clone();
        TurnOutcome {
            result: TurnAnswer {
                response,
                waiting_approval: conversation.status == ConversationStatus::WaitingApproval,
                approval,
            },
            conversation,
        }
    }

    /// Runs the tree on a user message (recorded and saved by the core's
    /// send transition).
    async fn run_tree(self, text: String) -> Result<TurnOutcome, EngineError> {
        if self.inner.tree.is_simple() {
            return self.run_simple().await;
        }
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
            .map(|m| Message::clone(m))
            .collect();
        Ok(ResumeStep {
            path: step.path,
            own,
            messages_from: step.messages_from,
            refusal: step.refusal,
        })
    }

    /// The simple agent: one `llm` node over the whole conversation.
    async fn run_simple(mut self) -> Result<TurnOutcome, EngineError> {
        let inner = self.inner.clone();
        let Node::Llm(node) = &inner.tree.root else {
            return Err(EngineError::Internal("run_simple needs an llm root".into()));
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
                    self.conversation.messages.push(message.into());
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
            [one] if one.is_question() => format!("Question: {}", one.description),
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
        if let Some(question) = &mut pending.question {
            tracing::info!(question = %pending.uuid, node = ?pending.node, "the run waits for an answer");
            if question.answerers.is_empty() && !question.approvers_answer {
                question.answerers = self.inner.questions.answerers.clone();
            }
            question.separate |= self.inner.questions.separate_answerer;
        } else {
            tracing::info!(approval = %pending.uuid, tool = %pending.tool_name, node = ?pending.node, "destructive call stopped for approval");
            crate::metrics::metrics().approval_requested(&pending.tool_name);
        }
        crate::telemetry::approval_requested(&pending.tool_name, &pending.uuid.to_string());
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
        let root = self.inner.tree.root.name().to_string();
        let text = asg_core::transition::cancel_pipeline(&mut self.conversation, what, &root);
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
