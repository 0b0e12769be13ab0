//! One turn: a user message or an approval decision, run to an answer or
//! to the next approval stop. A [`Turn`] owns a working copy of the
//! conversation while the caller holds the conversation's lock, and
//! publishes each saved version for readers.

use std::sync::Arc;

use asg_shared::rest::TurnResult;
use asg_shared::{
    ApprovalState, Conversation, ConversationStatus, PendingApproval, Role, ToolCall, ToolResult,
};
use chrono::Utc;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::index::Slot;
use super::tree::{LlmNode, Node};
use super::{EngineError, Inner, TurnOutcome, approval, history, new_message};
use crate::context::RequestContext;
use crate::llm::{LlmRequest, LlmToolCall};

/// What to do with one tool call the model requested.
enum Plan {
    Run,
    Gate(Uuid),
    Skip,
    Unknown,
}

pub(crate) struct Turn<'a> {
    inner: &'a Inner,
    slot: &'a Slot,
    conversation: Conversation,
    ctx: &'a RequestContext,
}

impl<'a> Turn<'a> {
    pub(crate) fn new(
        inner: &'a Inner,
        slot: &'a Slot,
        conversation: Conversation,
        ctx: &'a RequestContext,
    ) -> Turn<'a> {
        Turn {
            inner,
            slot,
            conversation,
            ctx,
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
            .push(new_message(Role::User, text));
        self.save().await?;
        self.run_tree().await
    }

    /// Applies a decision on `pending`, then lets the tree go on.
    pub(crate) async fn run_decision(
        mut self,
        mut pending: PendingApproval,
        approve: bool,
        reason: Option<String>,
    ) -> Result<TurnOutcome, EngineError> {
        if approve {
            // Durable before the call starts: a crash from here on is
            // reported as an interruption at restart, never re-run.
            pending.state = ApprovalState::Executing;
            self.conversation.pending_approval = Some(pending.clone());
            self.save().await?;
            tracing::info!(approval = %pending.uuid, tool = %pending.tool_name, "approved; executing stored arguments");
            let (content, is_error) = self
                .call_tool(&pending.tool_name, pending.tool_args.clone())
                .await;
            self.push_result(
                &pending.call_id,
                &pending.tool_name,
                pending.node.clone(),
                content,
                is_error,
            );
        } else {
            tracing::info!(approval = %pending.uuid, tool = %pending.tool_name, "rejected");
            let text = approval::rejection_text(reason.as_deref());
            self.push_result(
                &pending.call_id,
                &pending.tool_name,
                pending.node.clone(),
                text,
                true,
            );
        }
        self.conversation.pending_approval = None;
        self.conversation.status = ConversationStatus::Active;
        self.save().await?;
        self.run_tree().await
    }

    async fn run_tree(self) -> Result<TurnOutcome, EngineError> {
        let inner = self.inner;
        match &inner.tree.root {
            Node::Llm(node) => self.run_llm(node).await,
        }
    }

    /// Calls the model until it answers with text, a call needs approval,
    /// or the step budget runs out.
    async fn run_llm(mut self, node: &LlmNode) -> Result<TurnOutcome, EngineError> {
        for _ in 0..self.inner.max_tool_steps {
            let request = LlmRequest {
                node: node.name.clone(),
                system: node.prompt.clone(),
                messages: history::to_llm_messages(&self.conversation.messages),
                tools: node.tools.to_vec(),
            };
            let response = match node.llm.generate(&request).await {
                Ok(response) => response,
                Err(error) => {
                    tracing::warn!(node = %node.name, %error, "model call failed");
                    let mut message = new_message(Role::Assistant, format!("Error: {error}"));
                    message.is_error = true;
                    message.node = Some(node.name.clone());
                    self.conversation.messages.push(message);
                    self.save().await?;
                    return Err(EngineError::Llm {
                        error,
                        conversation: self.slot.snapshot(),
                    });
                }
            };
            if response.tool_calls.is_empty() {
                let text = response.text.unwrap_or_default();
                let mut message = new_message(Role::Assistant, text.clone());
                message.node = Some(node.name.clone());
                self.conversation.messages.push(message);
                self.save().await?;
                return Ok(self.outcome(text));
            }
            if let Some(paused) = self
                .run_calls(node, response.text, response.tool_calls)
                .await?
            {
                return Ok(self.outcome(paused));
            }
        }
        let text = format!(
            "Stopped after {} tool steps without a final answer.",
            self.inner.max_tool_steps
        );
        let mut message = new_message(Role::Assistant, text.clone());
        message.is_error = true;
        message.node = Some(node.name.clone());
        self.conversation.messages.push(message);
        self.save().await?;
        Ok(self.outcome(text))
    }

    /// Records and runs the calls of one model step. Returns the response
    /// text when a destructive call stopped the turn for approval.
    async fn run_calls(
        &mut self,
        node: &LlmNode,
        text: Option<String>,
        calls: Vec<LlmToolCall>,
    ) -> Result<Option<String>, EngineError> {
        let mut gated = false;
        let plans: Vec<Plan> = calls
            .iter()
            .map(|call| match self.inner.tools.tool(&call.name) {
                _ if gated => Plan::Skip,
                None => Plan::Unknown,
                Some(info) if info.destructive_hint => {
                    gated = true;
                    Plan::Gate(Uuid::new_v4())
                }
                Some(_) => Plan::Run,
            })
            .collect();
        for (i, (call, plan)) in calls.iter().zip(&plans).enumerate() {
            let content = if i == 0 {
                text.clone().unwrap_or_default()
            } else {
                String::new()
            };
            let mut message = new_message(Role::Assistant, content);
            message.node = Some(node.name.clone());
            message.tool_call = Some(ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                needs_approval: matches!(plan, Plan::Gate(_)),
                approval_uuid: match plan {
                    Plan::Gate(uuid) => Some(*uuid),
                    _ => None,
                },
                provider_signature: call.signature.clone(),
            });
            self.conversation.messages.push(message);
        }
        let mut paused = None;
        for (call, plan) in calls.into_iter().zip(plans) {
            let node_name = Some(node.name.clone());
            match plan {
                Plan::Run => {
                    let (content, is_error) = self.call_tool(&call.name, call.arguments).await;
                    self.push_result(&call.id, &call.name, node_name, content, is_error);
                }
                Plan::Unknown => {
                    let content =
                        format!("Unknown tool {:?}: no such tool is available.", call.name);
                    self.push_result(&call.id, &call.name, node_name, content, true);
                }
                Plan::Skip => {
                    let content = "Not run: an earlier call of the same step is waiting for \
                                   approval. Ask again after the decision."
                        .to_string();
                    self.push_result(&call.id, &call.name, node_name, content, true);
                }
                Plan::Gate(uuid) => {
                    let description = self
                        .inner
                        .tools
                        .tool(&call.name)
                        .map(|info| {
                            approval::describe(&call.name, &info.description, &call.arguments)
                        })
                        .unwrap_or_default();
                    paused = Some(format!("Approval required: {description}"));
                    self.conversation.pending_approval = Some(PendingApproval {
                        uuid,
                        conversation_id: self.conversation.id,
                        tool_name: call.name,
                        tool_args: call.arguments,
                        description,
                        created_at: Utc::now(),
                        call_id: call.id,
                        node: node_name,
                        state: ApprovalState::Pending,
                        remote_task_id: None,
                        remote_agent_name: None,
                    });
                    self.conversation.status = ConversationStatus::WaitingApproval;
                    self.inner.index.add_approval(uuid, self.conversation.id);
                    tracing::info!(approval = %uuid, "destructive call stopped for approval");
                }
            }
        }
        self.save().await?;
        Ok(paused)
    }

    /// Runs a tool; failures become an error result the model can read.
    async fn call_tool(&self, name: &str, arguments: Map<String, Value>) -> (String, bool) {
        match self
            .inner
            .tools
            .call(name, arguments, self.ctx.bearer.as_ref())
            .await
        {
            Ok(output) => (output.content, output.is_error),
            Err(error) => {
                tracing::warn!(tool = name, %error, "tool call failed");
                (format!("Tool error: {error}"), true)
            }
        }
    }

    fn push_result(
        &mut self,
        call_id: &str,
        name: &str,
        node: Option<String>,
        content: String,
        is_error: bool,
    ) {
        let mut message = new_message(Role::Tool, content);
        message.tool_result = Some(ToolResult {
            call_id: call_id.to_string(),
            name: name.to_string(),
            is_error,
        });
        message.is_error = is_error;
        message.node = node;
        self.conversation.messages.push(message);
    }
}
