//! The engine: runs turns of the agent tree and owns the approval gate.
//!
//! It knows nothing about HTTP. Entry points ([`Engine::create`],
//! [`Engine::send`], [`Engine::resolve_approval`]) take a
//! [`RequestContext`] and return a [`TurnOutcome`] or an [`EngineError`].
//!
//! Invariants:
//! - Turns belong to the engine: every turn runs in a task the engine
//!   spawns and tracks ([`Engine::shutdown`] waits for them); the caller
//!   only awaits its outcome, so a caller that goes away (a closed
//!   connection, a timed-out proxy) never stops a turn halfway.
//! - A conversation is changed by one task at a time (a per-conversation
//!   async lock, see [`index`]); reads use a published snapshot and never
//!   wait for a model or a tool.
//! - Every state change is saved before the call that made it returns.
//! - A destructive call runs only after an approval, with the stored
//!   arguments, at most once: the approval is marked `executing` durably
//!   before the call starts, and an `executing` approval found at startup
//!   is reported as interrupted, never re-run (see [`approval`]).

mod admission;
pub mod approval;
mod cache;
mod calls;
pub mod catalog;
mod claim;
mod expiry;
mod history;
mod index;
mod llm_node;
mod pause;
pub mod pin;
mod question;
mod read_cache;
pub(crate) use read_cache::estimated_items;
mod reconcile;
mod replicas;
mod run;
pub mod saved_feed;
mod store_call;
pub use store_call::configure as configure_storage_threads;
mod tree;
mod turn;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use asg_shared::events::{ConversationEvent, InboxEvent};
use asg_shared::{Conversation, ConversationStatus, Message, PendingApproval, Role};
use chrono::Utc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;
use uuid::Uuid;

use crate::a2a::client::A2aClient;
use crate::audit::AuditLog;
use crate::context::RequestContext;
use crate::llm::{LlmClient, LlmError};
use crate::mcp::ToolRegistry;
use crate::store::{ListPage, ListQuery, PendingPage, PendingQuery, Store, StoreError};
pub use asg_core::{choice, decide, rules, transition};
use catalog::{LiveCatalog, ToolCatalog};
pub use choice::Choice;

pub use expiry::ExpiryPolicy;
pub use history::HistoryBudget;
pub use llm_node::EXIT_LOOP_TOOL;
pub use question::{CallSite, QuestionPolicy};
pub use tree::{A2aNode, AgentTree, GroupNode, LlmNode, LoopNode, Node};

pub use asg_core::gate::Command;
use asg_core::gate::{self, Permit, Refusal};
use index::{ConversationIndex, Slot, SubscriberLimits};
pub use index::{SubscribersFull, Subscription};
use turn::Turn;

/// What a turn produced.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The conversation after the turn.
    pub conversation: Arc<Conversation>,
    /// Answer text, approval state.
    pub result: TurnAnswer,
}

/// A turn's answer as of its last save (the REST door reports it as
/// `asg_shared::rest::TurnResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnAnswer {
    /// The agent's answer text (or a description of the pending action).
    pub response: String,
    /// Whether the conversation now waits for an approval.
    pub waiting_approval: bool,
    /// The first pending approval, when there is one.
    pub approval: Option<PendingApproval>,
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
    /// No question with that uuid.
    #[error("question {0} not found")]
    QuestionNotFound(Uuid),
    /// The conversation waits for an approval and takes no message.
    #[error("{}", asg_core::gate::waiting_text(.0))]
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
    /// The store failed (a save, a read, a claim); the store's error is
    /// the source.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// The audit log could not record a decision, so the decision is not
    /// applied.
    #[error("cannot write the audit log: {0}")]
    Audit(#[source] std::io::Error),
    /// Another replica is changing the conversation and did not finish
    /// within the claim wait.
    #[error("conversation {0} is busy with a turn on another agent replica; retry when it ends")]
    Busy(Uuid),
    /// The agent is shutting down and starts no new turns.
    #[error("the agent is shutting down and starts no new turns; retry in a moment")]
    ShuttingDown,
    /// The caller may not do this; says why.
    #[error("{0}")]
    Forbidden(String),
    /// No remembered approval of this tool in the conversation.
    #[error("conversation {conversation} has no remembered approval of {tool:?}")]
    GrantNotFound {
        /// The conversation.
        conversation: Uuid,
        /// The tool asked for.
        tool: String,
    },
    /// Too many event streams are open.
    #[error("{}", match .0 {
        SubscribersFull::Conversation(n) => format!("this conversation already has {n} open event streams (limits.max_subscribers_per_conversation); close one and retry"),
        SubscribersFull::Total(n) => format!("the agent already has {n} open event streams (limits.max_subscribers); retry later"),
    })]
    TooManySubscribers(SubscribersFull),
    /// Every place to run a turn and to wait for one is taken.
    #[error(
        "the agent is running and queueing as many turns as it may (limits.max_running_turns, limits.max_queued_turns); retry in {retry_after_secs} s"
    )]
    Overloaded {
        /// Seconds to wait before retrying.
        retry_after_secs: u64,
    },
    /// Something failed that should not (a bug); details are logged.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    /// The conversation as the failed turn left it, when the error has one.
    fn conversation_mut(&mut self) -> Option<&mut Arc<Conversation>> {
        match self {
            EngineError::Llm { conversation, .. }
            | EngineError::SubAgent { conversation, .. }
            | EngineError::AlreadyResolved { conversation, .. } => Some(conversation),
            _ => None,
        }
    }
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
    /// Every tool name resolved at startup: what it is and whether it is
    /// gated (followed as tools of late MCP servers join).
    pub catalog: ToolCatalog,
    /// `approval.rules`, compiled.
    pub rules: rules::ApprovalRules,
    /// What paused runs are pinned to.
    pub pinning: pin::Pinning,
    /// Caps on what a turn keeps and sends.
    pub limits: EngineLimits,
    /// Who may decide approvals.
    pub policy: DecisionPolicy,
    /// Where decisions are recorded (`data_dir/audit.jsonl`, or the
    /// database's `audit_log` table).
    pub audit: Option<Arc<AuditLog>>,
    /// When undecided approvals expire and are reminded.
    pub expiry: ExpiryPolicy,
    /// Who answers questions; how long an elicitation may wait.
    pub questions: QuestionPolicy,
}

/// Who may decide approvals, beyond holding the approver role.
#[derive(Debug, Clone, Copy, Default)]
pub struct DecisionPolicy {
    /// The principal whose turn raised an approval may not decide it.
    pub separate_approver: bool,
}

/// Caps on what a turn keeps and sends to the model.
#[derive(Debug, Clone, Copy)]
pub struct EngineLimits {
    /// Longest tool result kept and sent to the model, in bytes.
    pub max_tool_result_bytes: usize,
    /// The history sent to the model.
    pub history: HistoryBudget,
    /// Open event streams per conversation.
    pub max_subscribers_per_conversation: usize,
    /// Open event streams in total.
    pub max_subscribers: usize,
    /// Bytes of conversations kept for reading again (about).
    pub read_cache_bytes: u64,
    /// How long a conversation not read stays kept for reading again
    /// (about; `None`: as long as the bytes allow).
    pub read_cache_idle: Option<std::time::Duration>,
    /// Turns running at once.
    pub max_running_turns: usize,
    /// Turns waiting for a place to run; past it, requests are refused.
    pub max_queued_turns: usize,
}

impl Default for EngineLimits {
    fn default() -> Self {
        EngineLimits {
            max_tool_result_bytes: 32 * 1024,
            history: HistoryBudget::default(),
            max_subscribers_per_conversation: 32,
            max_subscribers: 1024,
            read_cache_bytes: crate::config::DEFAULT_READ_CACHE_BYTES,
            read_cache_idle: Some(crate::config::DEFAULT_READ_CACHE_IDLE),
            max_running_turns: 256,
            max_queued_turns: 4096,
        }
    }
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
    catalog: LiveCatalog,
    rules: rules::ApprovalRules,
    pinning: pin::Pinning,
    limits: EngineLimits,
    policy: DecisionPolicy,
    audit: Option<Arc<AuditLog>>,
    /// Approval deadlines and the task that acts on them.
    expiry: expiry::Expiry,
    /// Who answers questions.
    questions: QuestionPolicy,
    /// MCP servers' questions waiting while their calls are open.
    asking: Arc<question::Asking>,
    subscribers: SubscriberLimits,
    index: ConversationIndex,
    /// Conversations read recently, so reading them again reads no file.
    reads: read_cache::ReadCache,
    /// Places for running turns, and the queue before them.
    admission: admission::Admission,
    /// The running turns.
    turns: TaskTracker,
    /// Cancels the turns still running at the shutdown deadline.
    abort_turns: CancellationToken,
    /// Set when shutdown starts: no new turns.
    closing: AtomicBool,
}

impl Engine {
    /// Builds the engine over its store (nothing is loaded: conversations
    /// are read when used). Approvals that were executing when the process
    /// stopped are reported as interrupted (and saved so) instead of being
    /// run again.
    pub async fn start(parts: EngineParts) -> Result<Engine, EngineError> {
        let shared = parts.store.is_shared();
        let index = ConversationIndex::default();
        let engine = Engine {
            inner: Arc::new_cyclic(|engine| Inner {
                tree: parts.tree,
                tools: parts.tools.clone(),
                agents: parts.agents.clone(),
                store: parts.store,
                max_tool_steps: parts.max_tool_steps,
                catalog: LiveCatalog::new(parts.tools.clone(), parts.agents.tools(), parts.catalog),
                rules: parts.rules,
                pinning: parts.pinning,
                limits: parts.limits,
                policy: parts.policy,
                audit: parts.audit.clone(),
                expiry: expiry::Expiry::new(parts.expiry),
                asking: Arc::new(question::Asking::new(
                    parts.questions.clone(),
                    parts.audit.clone(),
                    index.inbox(),
                    engine.clone(),
                )),
                questions: parts.questions,
                subscribers: SubscriberLimits::new(
                    parts.limits.max_subscribers_per_conversation,
                    parts.limits.max_subscribers,
                ),
                index,
                reads: read_cache::ReadCache::new(
                    parts.limits.read_cache_bytes,
                    parts.limits.read_cache_idle,
                ),
                admission: admission::Admission::new(
                    parts.limits.max_running_turns,
                    parts.limits.max_queued_turns,
                ),
                turns: TaskTracker::new(),
                abort_turns: CancellationToken::new(),
                closing: AtomicBool::new(false),
            }),
        };
        if shared {
            engine.start_replica_tasks();
        } else {
            engine.recover_unfinished().await?;
            engine.start_eviction();
        }
        // Deadlines that passed while the agent was down are due now.
        engine.start_expiry();
        Ok(engine)
    }

    /// Runs the turn `start` makes in a task the engine owns, once
    /// admission gives it a place (`admission.rs`): the caller awaits its
    /// outcome, but dropping that wait never stops the turn. The turn's
    /// future (tens of KiB) is made in that task, so a caller waiting for
    /// a place holds only `start`'s few captures.
    async fn spawn_turn<S, F, T>(&self, start: S) -> Result<T, EngineError>
    where
        S: FnOnce() -> F + Send + 'static,
        F: Future<Output = Result<T, EngineError>> + Send + 'static,
        T: Send + 'static,
    {
        if self.inner.closing.load(Ordering::SeqCst) {
            return Err(EngineError::ShuttingDown);
        }
        let place = self.inner.admission.admit().await?;
        let abort = self.inner.abort_turns.clone();
        let task = self.inner.turns.spawn(
            async move {
                let _place = place;
                // The turn's future (about 30 KB) on the heap: inline, it
                // made this task as large, copied at every move of it.
                tokio::select! {
                    outcome = Box::pin(start()) => outcome,
                    () = abort.cancelled() => Err(EngineError::ShuttingDown),
                }
            }
            .instrument(crate::telemetry::turn_span()),
        );
        task.await.unwrap_or_else(|error| {
            tracing::error!(%error, "a turn task failed");
            Err(EngineError::Internal(
                "the turn stopped unexpectedly".into(),
            ))
        })
    }

    /// Graceful shutdown: starts no new turns, waits up to `deadline` for
    /// the running ones, then stops those still running and records them
    /// as interrupted (an approved call among them as "may have run").
    pub async fn shutdown(&self, deadline: Duration) {
        self.inner.closing.store(true, Ordering::SeqCst);
        self.inner.expiry.stop().await;
        self.inner.turns.close();
        let running = self.inner.turns.len();
        if running > 0 {
            tracing::info!(running, "waiting for running turns to finish");
        }
        if tokio::time::timeout(deadline, self.inner.turns.wait())
            .await
            .is_ok()
        {
            return;
        }
        tracing::warn!(
            running = self.inner.turns.len(),
            deadline_secs = deadline.as_secs(),
            "turns still running at the shutdown deadline; stopping them and recording them as interrupted"
        );
        self.inner.abort_turns.cancel();
        self.inner.turns.wait().await;
        for slot in self.inner.index.slots() {
            if !approval::recover_interrupted(&mut (*slot.snapshot()).clone(), Utc::now()) {
                continue; // nothing left unfinished here
            }
            if let Err(error) = self.inner.record_interrupted(&slot).await {
                tracing::error!(conversation = %slot.snapshot().id, %error, "cannot record an interrupted turn");
            }
        }
    }

    /// Marks the store closed cleanly, once nothing more is saved (the end
    /// of the server's graceful shutdown).
    pub async fn close_store(&self) {
        let _ = store_call::blocking(&self.inner.store, |s| s.close()).await;
    }

    /// Approval requests and decisions across every conversation, from
    /// now on (the operator inbox); counted among the open streams.
    pub fn subscribe_inbox(&self) -> Result<Subscription<InboxEvent>, EngineError> {
        let permit = self
            .inner
            .subscribers
            .total_permit()
            .map_err(EngineError::TooManySubscribers)?;
        Ok(Subscription::new(
            self.inner.index.subscribe_inbox(),
            permit,
        ))
    }

    /// The changes this process makes, for the agent's own notifiers
    /// (webhooks: each change is sent once, by the replica that made it):
    /// not counted among the client streams, never refused.
    pub fn inbox_receiver(&self) -> tokio::sync::broadcast::Receiver<InboxEvent> {
        self.inner.index.subscribe_local_inbox()
    }

    /// The versions of conversations this process saves from now on
    /// (its turns, decisions, cancels, expiries, recoveries: each under
    /// the conversation's claim) that `classify` wants, in order, for the
    /// agent's own notifiers (A2A push: the replica that changes a task
    /// notifies it); not what other replicas save. Bounded: a follower
    /// that falls behind gets a conversation's newest version of a kind
    /// in place of the older one waiting (`saved_feed.rs`).
    pub fn saved_here(&self, classify: saved_feed::Classify) -> saved_feed::SavedFeed {
        self.inner.index.subscribe_saved(classify)
    }

    /// The tool registry.
    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.inner.tools
    }

    /// Every tool the model can be offered: MCP tools and sub-agents
    /// (the catalog's model; the doors map it to their wire types).
    pub fn catalog_tools(&self) -> Vec<catalog::Tool> {
        self.inner.catalog.current().tools()
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
        let (inner, ctx) = (self.inner.clone(), ctx.clone());
        self.spawn_turn(move || create_turn(inner, ctx, message))
            .await
    }

    /// Sends a user message to a conversation.
    pub async fn send(
        &self,
        id: Uuid,
        ctx: &RequestContext,
        text: String,
    ) -> Result<TurnOutcome, EngineError> {
        check_message(&text)?;
        let slot = self.inner.slot(id).await?;
        let (inner, ctx) = (self.inner.clone(), ctx.clone());
        self.spawn_turn(move || send_turn(inner, slot, ctx, text))
            .await
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
        self.resolve_approval_with(uuid, ctx, approve, reason, Choice::default())
            .await
    }

    /// [`Engine::resolve_approval`] with an approver's extras: edited
    /// arguments (checked against the tool's schema: `InvalidInput`
    /// otherwise) and a grant for later calls.
    pub async fn resolve_approval_with(
        &self,
        uuid: Uuid,
        ctx: &RequestContext,
        approve: bool,
        reason: Option<String>,
        choice: Choice,
    ) -> Result<TurnOutcome, EngineError> {
        let slot = self.inner.slot_of_approval(uuid).await?;
        let (inner, ctx) = (self.inner.clone(), ctx.clone());
        let request = DecisionRequest {
            uuid,
            approve,
            reason,
            choice,
        };
        self.spawn_turn(move || decision_turn(inner, slot, ctx, request))
            .await
    }

    /// Revokes the conversation's remembered approvals of `tool`: later
    /// calls ask again. Its owner or an approver who can read it may;
    /// [`EngineError::GrantNotFound`] when none covers `tool`.
    pub async fn revoke_grants(
        &self,
        id: Uuid,
        ctx: &RequestContext,
        tool: &str,
    ) -> Result<Arc<Conversation>, EngineError> {
        let slot = self.inner.slot(id).await?;
        let (inner, ctx, tool) = (self.inner.clone(), ctx.clone(), tool.to_string());
        // A turn of its own: a caller that goes away never leaves it
        // halfway (nor a claim behind).
        self.spawn_turn(move || async move {
            inner
                .claimed(&slot, || revoke_claimed(&inner, &slot, &ctx, &tool))
                .await
        })
        .await
    }

    /// Cancels a conversation that waits for approval: the pending call is
    /// refused (not run; a sub-agent's approval is rejected there too),
    /// the conversation is closed as `canceled`, and no model runs.
    /// Anything else is [`EngineError::NotCancelable`].
    pub async fn cancel(
        &self,
        id: Uuid,
        ctx: &RequestContext,
        reason: Option<String>,
    ) -> Result<TurnOutcome, EngineError> {
        let slot = self.inner.slot(id).await?;
        let (inner, ctx) = (self.inner.clone(), ctx.clone());
        self.spawn_turn(move || async move {
            inner
                .claimed(&slot, || cancel_turn(&inner, &slot, &ctx, reason))
                .await
        })
        .await
    }

    /// Whether the store can be used now (the error is logged, not
    /// returned: `/health` is public).
    pub fn store_is_up(&self) -> bool {
        match self.inner.store.health() {
            Ok(()) => true,
            Err(error) => {
                tracing::debug!(%error, "the store is unavailable");
                false
            }
        }
    }

    /// True while a turn (message, decision) runs on the conversation,
    /// in this process or on another replica.
    pub async fn is_running(&self, id: Uuid) -> bool {
        self.inner.is_running(id).await
    }

    /// Live events of a conversation, from now on; counted among the
    /// open streams (`limits`).
    pub async fn subscribe(
        &self,
        id: Uuid,
    ) -> Result<Subscription<ConversationEvent>, EngineError> {
        self.inner
            .slot(id)
            .await?
            .subscribe_limited(&self.inner.subscribers)
            .map_err(EngineError::TooManySubscribers)
    }

    /// The conversation, when the core's gate lets the request's caller
    /// do `command` on it now (what a door asks before it answers with
    /// the conversation): [`EngineError::ConversationNotFound`] when the
    /// caller may not read it, else the gate's refusal.
    pub async fn authorized(
        &self,
        id: Uuid,
        ctx: &RequestContext,
        command: Command<'_>,
    ) -> Result<Arc<Conversation>, EngineError> {
        let conversation = self
            .get(id)
            .await?
            .ok_or(EngineError::ConversationNotFound(id))?;
        self.inner.authorize(ctx, &conversation, command)?;
        Ok(conversation)
    }

    /// The conversation approval `uuid` belongs to, when the request's
    /// caller may read it (a channel's confirmation page shows the
    /// approval before anyone decides): [`EngineError::ApprovalNotFound`]
    /// otherwise.
    pub async fn approval_conversation(
        &self,
        uuid: Uuid,
        ctx: &RequestContext,
    ) -> Result<Arc<Conversation>, EngineError> {
        let id = self
            .inner
            .conversation_of_approval(uuid)
            .await?
            .ok_or(EngineError::ApprovalNotFound(uuid))?;
        self.authorized(id, ctx, Command::Read)
            .await
            .map_err(|error| match error {
                EngineError::ConversationNotFound(_) => EngineError::ApprovalNotFound(uuid),
                other => other,
            })
    }

    /// The current state of a conversation (`None`: no such
    /// conversation; an error when the store cannot be read).
    pub async fn get(&self, id: Uuid) -> Result<Option<Arc<Conversation>>, EngineError> {
        self.inner.current(id).await
    }

    /// One page of the conversations `query.scope` may read (and of
    /// `query.status`, when given), newest first, with the counts of all
    /// it may read and the key of the next page (only the page is read
    /// whole). The door words it (summaries, cursor).
    pub async fn list_for(&self, query: ListQuery) -> Result<ListPage, EngineError> {
        store_call::stored(&self.inner.store, move |s| s.list_page(&query)).await
    }

    /// One page of the pending approvals `query` lists, oldest first, and
    /// the key of the next page (only the page's conversations are read).
    /// How many approvals wait for a decision, by tool name (every
    /// page of the store's pending list; proxy approvals count under the
    /// sub-agent's tool).
    pub async fn pending_by_tool(&self) -> Result<Vec<(String, i64)>, EngineError> {
        let mut counts = std::collections::BTreeMap::<String, i64>::new();
        let mut after = None;
        loop {
            let query = PendingQuery {
                questions: Some(false),
                requested_by: None,
                proxies: false,
                state: Some(asg_shared::ApprovalState::Pending),
                after,
                limit: 500,
            };
            let page =
                store_call::stored(&self.inner.store, move |s| s.pending_page(&query)).await?;
            for pending in &page.approvals {
                *counts.entry(pending.tool_name.clone()).or_default() += 1;
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(counts.into_iter().collect()),
            }
        }
    }

    pub async fn pending_page(&self, query: PendingQuery) -> Result<PendingPage, EngineError> {
        let mut page =
            store_call::stored(&self.inner.store, move |s| s.pending_page(&query)).await?;
        for pending in &mut page.approvals {
            pending.config_changed = self.inner.config_changed(pending);
        }
        Ok(page)
    }
}

async fn create_turn(
    inner: Arc<Inner>,
    ctx: RequestContext,
    message: Option<String>,
) -> Result<TurnOutcome, EngineError> {
    let now = Utc::now();
    let conversation = Conversation {
        id: Uuid::new_v4(),
        session_id: ctx.session_id.clone(),
        status: ConversationStatus::Active,
        messages: vec![new_message(Role::System, inner.tree.root_prompt()).into()],
        pending_approvals: Vec::new(),
        pending_approval: None,
        pipeline_state: None,
        turn_in_progress: false,
        owner: ctx.requester().map(|actor| actor.subject),
        decisions: Vec::new(),
        grants: Vec::new(),
        a2a_context_id: None,
        created_at: now,
        updated_at: now,
    };
    let slot = inner.index.insert_new(conversation.clone());
    let claim = inner.claim(&slot).await?;
    let outcome = match message {
        None => {
            let mut turn = Turn::new(inner.clone(), &slot, conversation, &ctx);
            turn.save().await.map(|()| turn.outcome(String::new()))
        }
        Some(text) => first_message(&inner, &slot, &ctx, conversation, &text).await,
    };
    claim.release().await;
    outcome
}

/// The creator's first message, through the core's send transition.
async fn first_message(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    ctx: &RequestContext,
    conversation: Conversation,
    text: &str,
) -> Result<TurnOutcome, EngineError> {
    let transition = inner.apply(ctx, &conversation, transition::Command::Send { text })?;
    slot.emit(ConversationEvent::TurnStarted);
    let turn = Turn::new(inner.clone(), slot, transition.conversation, ctx);
    let result = turn.drive(transition.effects).await;
    settle(inner, slot, result).await
}

async fn send_turn(
    inner: Arc<Inner>,
    slot: Arc<Slot>,
    ctx: RequestContext,
    text: String,
) -> Result<TurnOutcome, EngineError> {
    inner
        .claimed(&slot, || send_claimed(&inner, &slot, &ctx, text))
        .await
}

async fn send_claimed(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    ctx: &RequestContext,
    text: String,
) -> Result<TurnOutcome, EngineError> {
    let conversation = slot.snapshot();
    let transition = inner.apply(
        ctx,
        &conversation,
        transition::Command::Send { text: &text },
    )?;
    slot.emit(ConversationEvent::TurnStarted);
    let turn = Turn::new(inner.clone(), slot, transition.conversation, ctx);
    let result = turn.drive(transition.effects).await;
    settle(inner, slot, result).await
}

async fn revoke_claimed(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    ctx: &RequestContext,
    tool: &str,
) -> Result<Arc<Conversation>, EngineError> {
    let mut conversation = (*slot.snapshot()).clone();
    let id = conversation.id;
    inner.authorize(ctx, &conversation, Command::RevokeGrant)?;
    let before = conversation.grants.len();
    conversation.grants.retain(|grant| grant.tool != tool);
    if conversation.grants.len() == before {
        return Err(EngineError::GrantNotFound {
            conversation: id,
            tool: tool.to_string(),
        });
    }
    tracing::info!(conversation = %id, tool, by = %ctx.caller().subject, "grant revoked");
    Turn::new(inner.clone(), slot, conversation, ctx)
        .save()
        .await?;
    Ok(slot.snapshot())
}

async fn cancel_turn(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    ctx: &RequestContext,
    reason: Option<String>,
) -> Result<TurnOutcome, EngineError> {
    let conversation = slot.snapshot();
    let reason = reason.as_deref();
    let transition = inner.apply(ctx, &conversation, transition::Command::Cancel { reason })?;
    let turn = Turn::new(inner.clone(), slot, transition.conversation, ctx);
    let result = turn.drive(transition.effects).await;
    settle(inner, slot, result).await
}

/// A decision as asked for.
struct DecisionRequest {
    uuid: Uuid,
    approve: bool,
    reason: Option<String>,
    choice: Choice,
}

async fn decision_turn(
    inner: Arc<Inner>,
    slot: Arc<Slot>,
    ctx: RequestContext,
    request: DecisionRequest,
) -> Result<TurnOutcome, EngineError> {
    inner
        .claimed(&slot, || decide_claimed(&inner, &slot, &ctx, request))
        .await
}

async fn decide_claimed(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    ctx: &RequestContext,
    request: DecisionRequest,
) -> Result<TurnOutcome, EngineError> {
    let DecisionRequest {
        uuid,
        approve,
        reason,
        choice,
    } = request;
    let conversation = slot.snapshot();
    let tool = conversation
        .pending_by_uuid(uuid)
        .and_then(|p| inner.tool(&p.tool_name));
    let request = gate::Decide {
        uuid,
        approve,
        choice: &choice,
        input_schema: tool.as_ref().map(|t| &t.input_schema),
        gated: tool.as_ref().map(|t| t.gated),
    };
    let command = transition::Command::Decide {
        request,
        reason: reason.as_deref(),
    };
    let transition = inner
        .apply(ctx, &conversation, command)
        .map_err(|error| match error {
            EngineError::ConversationNotFound(_) => EngineError::ApprovalNotFound(uuid),
            EngineError::AlreadyResolved { .. } => EngineError::AlreadyResolved {
                uuid,
                conversation: slot.snapshot(),
            },
            other => other,
        })?;
    let requested_by = conversation
        .pending_by_uuid(uuid)
        .and_then(|p| p.requested_by.clone());
    slot.emit(ConversationEvent::TurnStarted);
    let turn =
        Turn::new(inner.clone(), slot, transition.conversation, ctx).on_behalf_of(requested_by);
    let result = turn.drive(transition.effects).await;
    settle(inner, slot, result).await
}

impl Inner {
    /// The core's one authorization of `command` by the request's caller
    /// on `conversation`, as the engine's error.
    fn authorize(
        &self,
        ctx: &RequestContext,
        conversation: &Conversation,
        command: Command<'_>,
    ) -> Result<Permit, EngineError> {
        let policy = gate::Policy {
            rules: &self.rules,
            separate_approver: self.policy.separate_approver,
        };
        gate::authorize(&ctx.caller(), conversation, command, policy)
            .map_err(|refusal| refused(refusal, conversation))
    }
}

impl Inner {
    /// What the core's transitions are judged with, handed to `f`.
    pub(crate) fn with_facts<R>(&self, f: impl FnOnce(&transition::Facts<'_>) -> R) -> R {
        let changed = |pending: &PendingApproval| self.config_changed(pending);
        let on_change = match self.pinning.on_change {
            crate::config::OnConfigChange::Refuse => transition::OnChange::Refuse,
            crate::config::OnConfigChange::Resume => transition::OnChange::Resume,
        };
        let facts = transition::Facts {
            policy: gate::Policy {
                rules: &self.rules,
                separate_approver: self.policy.separate_approver,
            },
            on_change,
            changed: &changed,
            root: self.tree.root.name(),
            now: Utc::now(),
        };
        f(&facts)
    }

    /// The core's transition for `command` brought by the request's
    /// caller on `conversation`, or its refusal as the engine's error.
    fn apply(
        &self,
        ctx: &RequestContext,
        conversation: &Conversation,
        command: transition::Command<'_>,
    ) -> Result<transition::Transition, EngineError> {
        let principal = ctx.caller();
        let who = transition::Who::Person {
            principal: &principal,
            via: ctx.via,
        };
        self.with_facts(|facts| transition::apply(conversation, who, command, facts))
            .map_err(|refusal| refused(refusal, conversation))
    }
}

/// A refusal of the gate as the engine's error.
fn refused(refusal: Refusal, conversation: &Conversation) -> EngineError {
    let id = conversation.id;
    match refusal {
        Refusal::NotFound => EngineError::ConversationNotFound(id),
        Refusal::Forbidden(why) => EngineError::Forbidden(why),
        Refusal::AlreadyResolved(uuid) => EngineError::AlreadyResolved {
            uuid,
            conversation: Arc::new(conversation.clone()),
        },
        Refusal::WaitingApproval(pending) => EngineError::WaitingApproval(pending),
        Refusal::Completed => EngineError::Completed(id),
        Refusal::NotCancelable => EngineError::NotCancelable(id),
        Refusal::Invalid(why) => EngineError::InvalidInput(why),
    }
}

/// Ends a turn: a turn that stopped on an error path may still be marked
/// in progress (saved so, cleared now), and subscribers learn how it
/// ended. Runs while the turn still holds the conversation's lock.
async fn settle(
    inner: &Inner,
    slot: &Slot,
    mut result: Result<TurnOutcome, EngineError>,
) -> Result<TurnOutcome, EngineError> {
    let snapshot = slot.snapshot();
    if snapshot.turn_in_progress {
        let mut conversation = (*snapshot).clone();
        let stuck = conversation
            .pending()
            .iter()
            .any(|p| p.state == asg_shared::ApprovalState::Executing);
        if stuck {
            // The call was started and its result never recorded: it may
            // have run, so it is reported as interrupted, never re-run, and
            // its parallel siblings can still be decided.
            approval::recover_interrupted(&mut conversation, Utc::now());
        }
        conversation.turn_in_progress = false;
        conversation.updated_at = Utc::now();
        let conversation = Arc::new(conversation);
        match store_call::save(&inner.store, conversation.clone()).await {
            Ok(()) => {
                inner.publish(slot, conversation.clone());
                match &mut result {
                    Ok(outcome) => outcome.conversation = conversation,
                    Err(error) => {
                        if let Some(c) = error.conversation_mut() {
                            *c = conversation;
                        }
                    }
                }
            }
            Err(error) => tracing::error!(%error, "cannot record the end of a turn"),
        }
    }
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
