//! The approval lifecycle as one transition function: every door and
//! every background task (REST, A2A, the web BFF, the expiry sweep,
//! startup reconcile, replica takeover) brings a [`Command`] and gets a
//! [`Transition`] — the conversation as it is after the command, and the
//! [`Effect`]s the engine carries out in order (audit, save, run or
//! forward a call, let the model go on, answer) — or a [`Refusal`].
//!
//! ```text
//!            ask                approve            Finished
//!  Running ───────▶ Waiting ─────────────▶ Executing ─────────▶ Running / Waiting (siblings)
//!     ▲               │ reject, expire,                            │
//!     │               │ config change, cancel                      │ the model or the
//!     │               ▼                                            ▼ pipeline goes on
//!     │            (call refused: result recorded) ──────────▶ Idle / Closed
//!     │
//!  Interrupted: an Executing call or a Running turn without a live holder
//!  becomes "interrupted, may have run" (never re-run) — Idle or Waiting.
//! ```
//!
//! The [`Phase`] of a conversation is read from its stored fields
//! ([`phase`]); the transitions below are the only code that moves an
//! approval between phases. I/O results come back as commands: the
//! result of a call the engine ran for a [`CallOrder`] is
//! [`Command::Finished`].
//!
//! Who may bring a command is judged here too: a person's commands go
//! through [`gate::authorize`] first; the system's (expiry, results,
//! reconcile, interruption) are refused to persons.

mod decision;
mod finish;

use asg_shared::{
    Actor, ApprovalState, Conversation, ConversationStatus, Message, PendingApproval,
    PipelineState, QuestionReply, Role,
};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::gate::{self, Policy, Refusal};
use crate::lifecycle::{self, DecidedBy};
use crate::principal::Principal;

pub use decision::{CHANGED, RESUMED, expired_text};

/// Where a conversation is in the approval lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No turn runs; a message may be sent.
    Idle,
    /// A turn runs (the model, a pipeline, or the call after a decision).
    Running,
    /// Approvals wait for a decision; nothing runs.
    Waiting,
    /// An approved call runs (its result is not recorded yet).
    Executing(Uuid),
    /// Completed or canceled: takes no more messages.
    Closed,
}

/// The phase of `conversation`, from its stored fields.
pub fn phase(conversation: &Conversation) -> Phase {
    if let Some(executing) = conversation
        .pending()
        .iter()
        .find(|p| p.state == ApprovalState::Executing)
    {
        return Phase::Executing(executing.uuid);
    }
    match conversation.status {
        ConversationStatus::Completed | ConversationStatus::Canceled => Phase::Closed,
        _ if conversation.turn_in_progress => Phase::Running,
        ConversationStatus::WaitingApproval if !conversation.pending().is_empty() => Phase::Waiting,
        _ => Phase::Idle,
    }
}

/// What `approval.on_config_change` says when the configuration changed
/// since an approval was raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnChange {
    /// An approval becomes a refusal by the configuration change.
    Refuse,
    /// The run goes on; the change is noted in the decision's reason.
    Resume,
}

/// What the engine knows, beside the conversation, when it applies a
/// command.
#[derive(Clone, Copy)]
pub struct Facts<'a> {
    /// The gate's configuration (rules, separate approvers).
    pub policy: Policy<'a>,
    /// `approval.on_config_change`.
    pub on_change: OnChange,
    /// Whether the configuration changed since the approval was raised.
    pub changed: &'a dyn Fn(&PendingApproval) -> bool,
    /// The name of the tree's root node (a pipeline's closing message).
    pub root: &'a str,
    /// Now.
    pub now: DateTime<Utc>,
}

impl Facts<'_> {
    /// The configuration changed since `pending` and the policy refuses.
    pub fn changed_under_refuse(&self, pending: &PendingApproval) -> bool {
        self.on_change == OnChange::Refuse && (self.changed)(pending)
    }
}

/// Who brings a command.
#[derive(Debug, Clone, Copy)]
pub enum Who<'a> {
    /// A principal, through a channel (`rest`, `a2a`, `web`, ...).
    Person {
        /// The caller.
        principal: &'a Principal,
        /// The channel, recorded with its decisions.
        via: &'a str,
    },
    /// The agent itself: the expiry sweep, a call's result, startup
    /// reconcile and recovery.
    System,
}

/// What is brought to a conversation.
#[derive(Debug, Clone)]
pub enum Command<'a> {
    /// A user message.
    Send {
        /// Its text.
        text: &'a str,
    },
    /// A person's decision on one approval (approve, reject, edit,
    /// remember).
    Decide {
        /// The decision as asked for.
        request: gate::Decide<'a>,
        /// Why (shown to the model on a rejection).
        reason: Option<&'a str>,
    },
    /// A person's answer to one question.
    Answer {
        /// The question.
        uuid: Uuid,
        /// The reply.
        reply: &'a QuestionReply,
    },
    /// Refuse every pending approval and close the conversation.
    Cancel {
        /// Why.
        reason: Option<&'a str>,
    },
    /// The approval's deadline passed.
    Expire {
        /// The approval.
        uuid: Uuid,
    },
    /// The call ordered by a transition finished.
    Finished {
        /// The order, as the transition gave it.
        order: &'a CallOrder,
        /// What came back.
        result: CallResult,
    },
    /// The sub-agent behind a proxy approval now asks for another one
    /// (found at startup): it takes the old one's place.
    Replaced {
        /// The proxy approval.
        old: Uuid,
        /// Its successor, stamped (deadlines, config fingerprint).
        next: Box<PendingApproval>,
    },
    /// The sub-agent's approval was settled there (decided, canceled,
    /// failed) while this agent was down.
    SettledRemotely {
        /// The proxy approval.
        uuid: Uuid,
        /// The sub-agent's answer.
        content: String,
        /// Whether it is an error.
        is_error: bool,
    },
    /// The holder of a running turn or an executing call is gone (crash,
    /// shutdown, failed save): record it as interrupted, never re-run.
    Interrupted,
}

/// A decided call the engine carries out: run locally with
/// [`CallOrder::arguments`], or forward the decision to the sub-agent of
/// a proxy approval. Its result comes back as [`Command::Finished`].
#[derive(Debug, Clone, PartialEq)]
pub struct CallOrder {
    /// The approval, as it waited.
    pub pending: PendingApproval,
    /// Approved (else refused: a proxy approval's refusal is forwarded).
    pub approve: bool,
    /// Who decided.
    pub by: DecidedBy,
    /// The decision's reason.
    pub reason: Option<String>,
    /// The arguments to run with (the stored ones, or the approver's
    /// edit).
    pub arguments: Map<String, Value>,
    /// The approver's edit, when the arguments differ from the request.
    pub edited: Option<Map<String, Value>>,
    /// A question's reply, forwarded to the sub-agent that asked it (a
    /// local question's reply is recorded without a call).
    pub reply: Option<QuestionReply>,
    /// What the order is part of.
    pub batch: Batch,
}

impl CallOrder {
    /// Forwarded to a sub-agent (a proxy approval), not run here.
    pub fn is_remote(&self) -> bool {
        self.pending.remote_task_id.is_some()
    }
}

/// What a call order is part of.
#[derive(Debug, Clone, PartialEq)]
pub enum Batch {
    /// One decision.
    One,
    /// A cancel of every pending approval; closes with `answer`.
    Cancel {
        /// The closing answer.
        answer: String,
        /// Its node.
        node: Option<String>,
        /// The cancel's reason.
        reason: String,
    },
    /// The other approvals of a pipeline refused for a configuration
    /// change; the pipeline ends saying `what`.
    EndRun {
        /// What was refused.
        what: String,
        /// The refusal's reason.
        reason: String,
    },
}

/// What a call order's call gave.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    /// A result (or an error) for the model.
    Done {
        /// Its text.
        content: String,
        /// Whether it is an error.
        is_error: bool,
    },
    /// The sub-agent `agent` (or one behind it) asks for another
    /// approval on the same call: `next`, already stamped.
    AskedAgain {
        /// The sub-agent.
        agent: String,
        /// The proxy approval that takes the old one's place.
        next: Box<PendingApproval>,
    },
}

/// One line of the audit log about a decision; written durably before
/// anything the decision allows runs.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// The approval decided.
    pub pending: PendingApproval,
    /// `approved`, `rejected` or `canceled`.
    pub decision: &'static str,
    /// `executing` or `not_run`.
    pub outcome: &'static str,
    /// Who decided.
    pub by: Actor,
    /// Why.
    pub reason: Option<String>,
    /// The approver's edit.
    pub edited: Option<Map<String, Value>>,
}

/// What the engine does, in order, to carry out a transition.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Write a decision to the audit log, durably; if that fails,
    /// nothing after it happens.
    Audit(Box<AuditEntry>),
    /// Write a decided call's outcome (`succeeded`, `failed`,
    /// `waiting_again`) to the audit log (best effort).
    AuditOutcome {
        /// The approval.
        pending: Box<PendingApproval>,
        /// The outcome.
        outcome: &'static str,
    },
    /// Save the conversation and publish it.
    Save,
    /// New deadlines exist: wake the expiry sweep.
    WakeExpiry,
    /// Carry out the call and bring back [`Command::Finished`].
    Call(Box<CallOrder>),
    /// Run the tree on a user message (the message is recorded).
    Run {
        /// The message.
        text: String,
    },
    /// The simple agent's model goes on with the recorded results.
    Continue,
    /// The paused pipeline resumes from this state (save first).
    Resume(Box<PipelineState>),
    /// The turn ends with this answer.
    Reply(String),
}

/// A conversation after a command, and what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The conversation as it is after the command.
    pub conversation: Conversation,
    /// What the engine carries out, in order.
    pub effects: Vec<Effect>,
}

impl Transition {
    fn of(conversation: Conversation) -> Transition {
        Transition {
            conversation,
            effects: Vec::new(),
        }
    }

    fn then(mut self, effect: Effect) -> Transition {
        self.effects.push(effect);
        self
    }
}

/// The one transition function: `command` brought by `who` on
/// `conversation`, given `facts`.
pub fn apply(
    conversation: &Conversation,
    who: Who<'_>,
    command: Command<'_>,
    facts: &Facts<'_>,
) -> Result<Transition, Refusal> {
    match (who, command) {
        (Who::Person { principal, .. }, Command::Send { text }) => {
            gate::authorize(principal, conversation, gate::Command::Send, facts.policy)?;
            Ok(send(conversation, text))
        }
        (Who::Person { principal, via }, Command::Decide { request, reason }) => {
            decision::decide(conversation, principal, via, request, reason, facts)
        }
        (Who::Person { principal, via }, Command::Answer { uuid, reply }) => {
            decision::answer(conversation, principal, via, uuid, reply, facts)
        }
        (Who::Person { principal, via }, Command::Cancel { reason }) => {
            gate::authorize(principal, conversation, gate::Command::Cancel, facts.policy)?;
            let by = crate::access::actor(principal, None, via);
            Ok(decision::cancel(conversation, by, reason, facts))
        }
        (Who::System, Command::Expire { uuid }) => decision::expire(conversation, uuid, facts),
        (Who::System, Command::Finished { order, result }) => {
            Ok(finish::finished(conversation, order, result, facts))
        }
        (Who::System, Command::Replaced { old, next }) => replaced(conversation, old, *next),
        (
            Who::System,
            Command::SettledRemotely {
                uuid,
                content,
                is_error,
            },
        ) => finish::settled_remotely(conversation, uuid, content, is_error, facts),
        (Who::System, Command::Interrupted) => Ok(interrupted(conversation, facts.now)),
        (Who::System, command) => Err(Refusal::Forbidden(format!(
            "{} is a person's command; the agent does not bring it on its own",
            name(&command)
        ))),
        (Who::Person { principal, .. }, command) => {
            // Not found first, like every command: never reveal the
            // conversation to someone who may not read it.
            gate::authorize(principal, conversation, gate::Command::Read, facts.policy)?;
            Err(Refusal::Forbidden(format!(
                "{} is the agent's own transition; {} cannot bring it",
                name(&command),
                principal.subject
            )))
        }
    }
}

fn name(command: &Command<'_>) -> &'static str {
    match command {
        Command::Send { .. } => "send",
        Command::Decide { .. } => "decide",
        Command::Answer { .. } => "answer",
        Command::Cancel { .. } => "cancel",
        Command::Expire { .. } => "expire",
        Command::Finished { .. } => "a call's result",
        Command::Replaced { .. } => "a sub-agent's new approval",
        Command::SettledRemotely { .. } => "a sub-agent's settlement",
        Command::Interrupted => "interrupted",
    }
}

/// A user message: recorded, and the tree runs on it.
fn send(conversation: &Conversation, text: &str) -> Transition {
    let mut next = conversation.clone();
    next.messages
        .push(lifecycle::new_message(Role::User, text).into());
    next.turn_in_progress = true;
    Transition::of(next).then(Effect::Save).then(Effect::Run {
        text: text.to_string(),
    })
}

/// A proxy approval replaced by the sub-agent's next one, in its place.
fn replaced(
    conversation: &Conversation,
    old: Uuid,
    next: PendingApproval,
) -> Result<Transition, Refusal> {
    if lifecycle::resolvable(conversation, old).is_none() {
        return Err(Refusal::AlreadyResolved(old));
    }
    let mut after = conversation.clone();
    lifecycle::move_step(&mut after, old, next.uuid);
    after.replace_pending(old, next);
    Ok(Transition::of(after)
        .then(Effect::Save)
        .then(Effect::WakeExpiry))
}

/// A turn or call whose holder is gone, recorded as interrupted.
fn interrupted(conversation: &Conversation, now: DateTime<Utc>) -> Transition {
    let mut after = conversation.clone();
    match lifecycle::recover_interrupted(&mut after, now) {
        true => Transition::of(after).then(Effect::Save),
        false => Transition::of(after),
    }
}

/// The result of `pending`'s call as the model reads it (a proxy
/// approval shows the sub-agent's tool; the result answers the local
/// call, which named the sub-agent).
pub fn result_message(pending: &PendingApproval, content: String, is_error: bool) -> Message {
    let called = pending
        .remote_agent_name
        .as_deref()
        .unwrap_or(&pending.tool_name);
    let mut message = lifecycle::new_message(Role::Tool, content);
    message.tool_result = Some(Box::new(asg_shared::ToolResult {
        call_id: pending.call_id.clone(),
        name: called.to_string(),
        is_error,
        auth_required: false,
    }));
    message.is_error = is_error;
    message.node = pending.node.clone();
    message
}

/// Ends a pipeline refused at its root: its remaining steps do not run.
pub fn cancel_pipeline(conversation: &mut Conversation, what: &str, root: &str) -> String {
    let text = format!("Pipeline cancelled: {what}, so the remaining steps did not run.");
    let mut message = lifecycle::new_message(Role::Assistant, text.clone());
    message.node = Some(root.to_string());
    conversation.messages.push(message.into());
    conversation.turn_in_progress = false;
    text
}

#[cfg(test)]
mod tests;
