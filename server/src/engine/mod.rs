//! The engine: runs turns of the agent tree and owns the approval gate.
//!
//! It knows nothing about HTTP. Entry points ([`Engine::create`],
//! [`Engine::send`], [`Engine::resolve_approval`]) take a
//! [`RequestContext`] and return a [`TurnOutcome`] or an [`EngineError`].
//!
//! Invariants:
//! - A conversation is changed by one task at a time (a per-conversation
//!   async lock, see [`index`]); reads use a published snapshot and never
//!   wait for a model or a tool.
//! - Every state change is saved before the call that made it returns.
//! - A destructive call runs only after an approval, with the stored
//!   arguments, at most once: the approval is marked `executing` durably
//!   before the call starts, and an `executing` approval found at startup
//!   is reported as interrupted, never re-run (see [`approval`]).

pub mod approval;
mod calls;
mod history;
mod index;
mod llm_node;
mod run;
mod tree;
mod turn;

use std::sync::Arc;

use asg_shared::events::ConversationEvent;
use asg_shared::rest::{ConversationList, ConversationSummary, StatusSummary, TurnResult};
use asg_shared::{Conversation, ConversationStatus, Message, PendingApproval, Role};
use chrono::Utc;
use tokio::sync::broadcast;
use uuid::Uuid;

use crate::a2a::client::A2aClient;
use crate::context::RequestContext;
use crate::llm::{LlmClient, LlmError};
use crate::mcp::ToolRegistry;
use crate::store::Store;

pub use llm_node::EXIT_LOOP_TOOL;
pub use tree::{A2aNode, AgentTree, GroupNode, LlmNode, LoopNode, Node};

use index::{ConversationIndex, Slot};
use turn::Turn;

/// What a turn produced, as the API reports it.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The conversation after the turn.
    pub conversation: Arc<Conversation>,
    /// Answer text, approval state.
    pub result: TurnResult,
}

/// Why an engine call failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No conversation with that id.
    #[error("conversation {0} not found")]
    ConversationNotFound(Uuid),
    /// No approval with that uuid.
    #[error("approval {0} not found")]
    ApprovalNotFound(Uuid),
    /// The conversation waits for an approval and takes no message.
    #[error("conversation is waiting for approval {}; approve or reject it first", .0.uuid)]
    WaitingApproval(Box<PendingApproval>),
    /// The approval was already decided (or its call already ran).
    #[error("approval {uuid} was already resolved")]
    AlreadyResolved {
        uuid: Uuid,
        conversation: Arc<Conversation>,
    },
    /// The conversation is closed.
    #[error("conversation {0} is closed (completed or canceled) and takes no more messages")]
    Completed(Uuid),
    /// Only a conversation waiting for approval can be canceled.
    #[error("conversation {0} is not waiting for an approval, so there is nothing to cancel")]
    NotCancelable(Uuid),
    /// The request is well-formed but unusable.
    #[error("{0}")]
    InvalidInput(String),
    /// A sub-agent failed (in an `a2a` node); recorded in the conversation.
    #[error("{message}")]
    SubAgent {
        message: String,
        conversation: Arc<Conversation>,
    },
    /// The model failed; the failure is recorded in the conversation.
    #[error("{error}")]
    Llm {
        error: LlmError,
        conversation: Arc<Conversation>,
    },
    /// The conversation could not be saved.
    #[error("{0}")]
    Store(String),
}

/// Longest user message accepted, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// What the engine is built from.
pub struct EngineParts {
    /// The agent tree (a single `llm` node for a simple agent).
    pub tree: AgentTree,
    /// Tool servers.
    pub tools: Arc<ToolRegistry>,
    /// Sub-agents.
    pub agents: Arc<A2aClient>,
    /// Persistence.
    pub store: Arc<dyn Store>,
    /// Most tool calls one node may chain in a turn.
    pub max_tool_steps: usize,
}

/// The engine; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    tree: AgentTree,
    tools: Arc<ToolRegistry>,
    agents: Arc<A2aClient>,
    store: Arc<dyn Store>,
    max_tool_steps: usize,
    index: ConversationIndex,
}

impl Engine {
    /// Loads every stored conversation and builds the engine. Approvals
    /// that were executing when the process stopped are reported as
    /// interrupted (and saved so) instead of being run again.
    pub async fn start(parts: EngineParts) -> Result<Engine, EngineError> {
        let store = parts.store.clone();
        let loaded = tokio::task::spawn_blocking(move || store.load_all())
            .await
            .map_err(|e| EngineError::Store(e.to_string()))?
            .map_err(|e| EngineError::Store(e.to_string()))?;
        let index = ConversationIndex::default();
        for mut conversation in loaded {
            if approval::recover_interrupted(&mut conversation, Utc::now()) {
                tracing::warn!(conversation = %conversation.id, "an approved call was interrupted by a restart; marked as interrupted, not re-run");
                parts
                    .store
                    .save(&conversation)
                    .map_err(|e| EngineError::Store(e.to_string()))?;
            }
            index.insert(conversation);
        }
        tracing::info!(conversations = index.len(), "conversations loaded");
        Ok(Engine {
            inner: Arc::new(Inner {
                tree: parts.tree,
                tools: parts.tools,
                agents: parts.agents,
                store: parts.store,
                max_tool_steps: parts.max_tool_steps,
                index,
            }),
        })
    }

    /// The tool registry.
    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.inner.tools
    }

    /// Every tool the model can be offered: MCP tools and sub-agents.
    pub fn tool_infos(&self) -> Vec<asg_shared::rest::ToolInfo> {
        let mut tools = self.inner.tools.tools().to_vec();
        tools.extend(self.inner.agents.tools());
        tools
    }

    /// The agent tree.
    pub fn tree(&self) -> &AgentTree {
        &self.inner.tree
    }

    /// Starts a conversation; runs `message` at once when given.
    pub async fn create(
        &self,
        ctx: &RequestContext,
        message: Option<String>,
    ) -> Result<TurnOutcome, EngineError> {
        if let Some(text) = &message {
            check_message(text)?;
        }
        let now = Utc::now();
        let id = Uuid::new_v4();
        let conversation = Conversation {
            id,
            session_id: ctx.session_id.clone(),
            status: ConversationStatus::Active,
            messages: vec![new_message(Role::System, self.inner.tree.root_prompt())],
            pending_approval: None,
            pipeline_state: None,
            turn_in_progress: false,
            created_at: now,
            updated_at: now,
        };
        let slot = self.inner.index.insert_new(conversation.clone());
        let _guard = slot.lock().await;
        let mut turn = Turn::new(self.inner.clone(), &slot, conversation, ctx);
        turn.save().await?;
        if message.is_some() {
            slot.emit(ConversationEvent::TurnStarted);
        }
        match message {
            Some(text) => finish(&slot, turn.run_user_message(text).await),
            None => Ok(turn.outcome(String::new())),
        }
    }

    /// Sends a user message to a conversation.
    pub async fn send(
        &self,
        id: Uuid,
        ctx: &RequestContext,
        text: String,
    ) -> Result<TurnOutcome, EngineError> {
        check_message(&text)?;
        let slot = self.slot(id)?;
        let _guard = slot.lock().await;
        let conversation = (*slot.snapshot()).clone();
        match conversation.status {
            ConversationStatus::WaitingApproval => {
                if let Some(pending) = conversation.pending_approval {
                    return Err(EngineError::WaitingApproval(Box::new(pending)));
                }
            }
            ConversationStatus::Completed | ConversationStatus::Canceled => {
                return Err(EngineError::Completed(id));
            }
            ConversationStatus::Active => {}
        }
        slot.emit(ConversationEvent::TurnStarted);
        let turn = Turn::new(self.inner.clone(), &slot, conversation, ctx);
        finish(&slot, turn.run_user_message(text).await)
    }

    /// Approves or rejects a pending approval. Exactly once: a second
    /// decision on the same uuid gets [`EngineError::AlreadyResolved`].
    pub async fn resolve_approval(
        &self,
        uuid: Uuid,
        ctx: &RequestContext,
        approve: bool,
        reason: Option<String>,
    ) -> Result<TurnOutcome, EngineError> {
        let conversation_id = self
            .inner
            .index
            .conversation_of_approval(uuid)
            .ok_or(EngineError::ApprovalNotFound(uuid))?;
        let slot = self
            .inner
            .index
            .get(conversation_id)
            .ok_or(EngineError::ApprovalNotFound(uuid))?;
        let _guard = slot.lock().await;
        let conversation = (*slot.snapshot()).clone();
        let pending = approval::resolvable(&conversation, uuid).cloned();
        let Some(pending) = pending else {
            return Err(EngineError::AlreadyResolved {
                uuid,
                conversation: slot.snapshot(),
            });
        };
        slot.emit(ConversationEvent::TurnStarted);
        let turn = Turn::new(self.inner.clone(), &slot, conversation, ctx);
        finish(&slot, turn.run_decision(pending, approve, reason).await)
    }

    /// Cancels a conversation that waits for approval: the pending call is
    /// refused (not run), the conversation is closed as `canceled`, and no
    /// model runs. Anything else is [`EngineError::NotCancelable`].
    pub async fn cancel(
        &self,
        id: Uuid,
        ctx: &RequestContext,
        reason: Option<String>,
    ) -> Result<TurnOutcome, EngineError> {
        let slot = self.slot(id)?;
        let _guard = slot.lock().await;
        let conversation = (*slot.snapshot()).clone();
        let pending = conversation
            .pending_approval
            .as_ref()
            .and_then(|p| approval::resolvable(&conversation, p.uuid))
            .cloned()
            .ok_or(EngineError::NotCancelable(id))?;
        let turn = Turn::new(self.inner.clone(), &slot, conversation, ctx);
        turn.cancel(pending, reason).await
    }

    /// True while a turn (message, decision) runs on the conversation.
    pub fn is_running(&self, id: Uuid) -> bool {
        self.inner.index.get(id).is_some_and(|slot| slot.is_busy())
    }

    /// Live events of a conversation, from now on.
    pub fn subscribe(&self, id: Uuid) -> Option<broadcast::Receiver<ConversationEvent>> {
        self.inner.index.get(id).map(|slot| slot.subscribe())
    }

    /// A conversation's slot, or [`EngineError::ConversationNotFound`].
    fn slot(&self, id: Uuid) -> Result<Arc<Slot>, EngineError> {
        self.inner
            .index
            .get(id)
            .ok_or(EngineError::ConversationNotFound(id))
    }

    /// The current state of a conversation.
    pub fn get(&self, id: Uuid) -> Option<Arc<Conversation>> {
        self.inner.index.get(id).map(|slot| slot.snapshot())
    }

    /// Summaries of every conversation, newest first, with counts.
    pub fn list(&self) -> ConversationList {
        let mut summary = StatusSummary::default();
        let mut conversations: Vec<ConversationSummary> = self
            .inner
            .index
            .snapshots()
            .into_iter()
            .map(|c| {
                summary.total += 1;
                match c.status {
                    ConversationStatus::Active => summary.active += 1,
                    ConversationStatus::WaitingApproval => summary.waiting_approval += 1,
                    ConversationStatus::Completed => summary.completed += 1,
                    ConversationStatus::Canceled => summary.canceled += 1,
                }
                summarize(&c)
            })
            .collect();
        conversations.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        ConversationList {
            conversations,
            summary,
        }
    }

    /// Every pending approval, oldest first.
    pub fn pending_approvals(&self) -> Vec<PendingApproval> {
        let mut approvals: Vec<PendingApproval> = self
            .inner
            .index
            .snapshots()
            .into_iter()
            .filter_map(|c| c.pending_approval.clone())
            .collect();
        approvals.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.uuid.cmp(&b.uuid)));
        approvals
    }
}

/// Tells subscribers how a turn ended.
fn finish(
    slot: &Slot,
    result: Result<TurnOutcome, EngineError>,
) -> Result<TurnOutcome, EngineError> {
    slot.emit(match &result {
        Ok(outcome) => ConversationEvent::TurnFinished {
            response: Some(outcome.result.response.clone()),
            error: None,
        },
        Err(error) => ConversationEvent::TurnFinished {
            response: None,
            error: Some(error.to_string()),
        },
    });
    result
}

fn check_message(text: &str) -> Result<(), EngineError> {
    if text.trim().is_empty() {
        return Err(EngineError::InvalidInput(
            "message must not be empty".into(),
        ));
    }
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(EngineError::InvalidInput(format!(
            "message is {} bytes; the limit is {MAX_MESSAGE_BYTES}",
            text.len()
        )));
    }
    Ok(())
}

fn summarize(conversation: &Conversation) -> ConversationSummary {
    let title = conversation
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| shorten(&m.content, 80));
    ConversationSummary {
        id: conversation.id,
        session_id: conversation.session_id.clone(),
        status: conversation.status,
        message_count: conversation.messages.len(),
        title,
        pending_approval: conversation.pending_approval.clone(),
        created_at: conversation.created_at,
        updated_at: conversation.updated_at,
    }
}

fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A new message stamped now.
pub(crate) fn new_message(role: Role, content: impl Into<String>) -> Message {
    Message {
        id: Uuid::new_v4(),
        role,
        content: content.into(),
        tool_call: None,
        tool_result: None,
        node: None,
        is_error: false,
        created_at: Utc::now(),
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Engine>();
    is::<Arc<dyn LlmClient>>();
}
