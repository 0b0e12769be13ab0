//! The one authorization of the gate: every door (REST, A2A, the web
//! BFF, the inbox, expiry, replicas) brings a [`Command`] on a
//! conversation and gets a [`Permit`] or a [`Refusal`] from
//! [`authorize`], judged from the principal, the conversation's owner and
//! state, and the rule that raised the approval. No door checks
//! permissions on its own.
//!
//! Order, for every command: a conversation the caller may not read is
//! not found (its existence, state and approvals are never revealed);
//! then who may do this; then whether the conversation's state allows it.
//!
//! An edit is a new proposal: the edited call is judged again by
//! [`decide`] and the rules, as if the model had asked for it. A `deny`
//! refuses the edit; an `ask` rule's named approvers must include the
//! decider; a rule with `edit: false` refuses edits into it.

use asg_shared::{Conversation, ConversationStatus, PendingApproval, QuestionReply};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::access::{self, can_continue, can_decide, can_read};
use crate::choice::Choice;
use crate::decide::{CallFacts, Gate, Verdict, decide};
use crate::lifecycle;
use crate::principal::{Principal, Role};
use crate::question;
use crate::rules::ApprovalRules;

/// What a door asks to do with a conversation.
#[derive(Debug, Clone, Copy)]
pub enum Command<'a> {
    /// Read it (show, stream, task get).
    Read,
    /// Send a user message (REST, A2A, web).
    Send,
    /// Cancel it while it waits for approval.
    Cancel,
    /// Revoke its remembered approvals.
    RevokeGrant,
    /// Register, list or delete its push notification callbacks.
    ManagePush,
    /// Decide one of its approvals.
    Decide(Decide<'a>),
    /// Answer one of its questions.
    Answer(Answer<'a>),
}

/// An answer as given.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The question.
    pub uuid: Uuid,
    /// The reply (checked against the question).
    pub reply: &'a QuestionReply,
}

/// A decision as asked for.
#[derive(Debug, Clone, Copy)]
pub struct Decide<'a> {
    /// The approval.
    pub uuid: Uuid,
    /// Approve (else reject).
    pub approve: bool,
    /// Edited arguments and remember.
    pub choice: &'a Choice,
    /// The input schema of the tool as the catalog knows it now (it
    /// checks an edit; `None`: no such tool now). The core takes only
    /// what it judges with, never the server's tool model or a wire type.
    pub input_schema: Option<&'a serde_json::Value>,
    /// The tool's effective gate (`None`: no such tool now).
    pub gated: Option<bool>,
}

/// What the gate is configured with.
#[derive(Debug, Clone, Copy)]
pub struct Policy<'a> {
    /// `approval.rules`, compiled.
    pub rules: &'a ApprovalRules,
    /// The principal whose turn raised an approval may not decide it.
    pub separate_approver: bool,
}

/// What the door may go on to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Permit {
    /// Read, send, cancel or revoke.
    Granted,
    /// Decide `pending`, acting in `role`.
    Decide {
        /// The approval, as it waits.
        pending: Box<PendingApproval>,
        /// The role the decider acts in.
        role: Role,
    },
    /// Answer `pending`'s question, acting in `role` (`None`: as the
    /// owner or a named answerer).
    Answer {
        /// The question, as it waits.
        pending: Box<PendingApproval>,
        /// The role the answerer acts in.
        role: Option<Role>,
    },
}

/// Why not. Doors map each to their protocol's answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// The caller may not read the conversation: answered as not found.
    #[error("not found")]
    NotFound,
    /// The caller reads it but may not do this; says why.
    #[error("{0}")]
    Forbidden(String),
    /// The approval cannot be decided (already decided, or never here).
    #[error("approval {0} was already resolved")]
    AlreadyResolved(Uuid),
    /// The conversation waits for an approval and takes no message.
    #[error("{}", waiting_text(.0))]
    WaitingApproval(Box<PendingApproval>),
    /// The conversation is closed.
    #[error("conversation is closed (completed or canceled) and takes no more messages")]
    Completed,
    /// Nothing waits, so there is nothing to cancel.
    #[error("conversation is not waiting for an approval, so there is nothing to cancel")]
    NotCancelable,
    /// The request cannot be used (a bad edit); says why.
    #[error("{0}")]
    Invalid(String),
}

/// Why a waiting conversation takes no message.
pub fn waiting_text(pending: &PendingApproval) -> String {
    match pending.is_question() {
        true => format!(
            "conversation is waiting for an answer to question {}; answer it first",
            pending.uuid
        ),
        false => format!(
            "conversation is waiting for approval {}; approve or reject it first",
            pending.uuid
        ),
    }
}

/// May `principal` do `command` on `conversation` now?
pub fn authorize(
    principal: &Principal,
    conversation: &Conversation,
    command: Command<'_>,
    policy: Policy<'_>,
) -> Result<Permit, Refusal> {
    if let Command::Answer(answer) = command {
        // Before the read check: a named answerer may answer in a
        // conversation it cannot read.
        return answer_question(principal, conversation, answer, policy);
    }
    if !can_read(principal, conversation) {
        return Err(Refusal::NotFound);
    }
    match command {
        Command::Read => Ok(Permit::Granted),
        Command::Send => send(principal, conversation),
        Command::Cancel => cancel(principal, conversation),
        Command::RevokeGrant => revoke(principal, conversation),
        Command::ManagePush => match can_continue(principal, conversation) {
            true => Ok(Permit::Granted),
            false => Err(owner_only(
                principal,
                conversation,
                "manage its push notification configs",
            )),
        },
        Command::Decide(request) => decide_approval(principal, conversation, request, policy),
        Command::Answer(answer) => answer_question(principal, conversation, answer, policy),
    }
}

/// Who may answer a question: those who may read the conversation or
/// are named as its answerers see it (else not found); then
/// [`question::can_answer`]; then whether the reply fits.
fn answer_question(
    principal: &Principal,
    conversation: &Conversation,
    answer: Answer<'_>,
    policy: Policy<'_>,
) -> Result<Permit, Refusal> {
    let named = conversation
        .pending_by_uuid(answer.uuid)
        .and_then(|p| p.question.as_ref())
        .is_some_and(|q| question::names_answerer(principal, q));
    if !named && !can_read(principal, conversation) {
        return Err(Refusal::NotFound);
    }
    let Some(pending) = lifecycle::resolvable(conversation, answer.uuid) else {
        return Err(Refusal::AlreadyResolved(answer.uuid));
    };
    let Some(asked) = &pending.question else {
        return Err(Refusal::Invalid(format!(
            "{} is an approval, not a question; decide it with POST /approvals/{}",
            answer.uuid, answer.uuid
        )));
    };
    let role = question::can_answer(
        principal,
        conversation,
        pending,
        asked,
        policy.separate_approver,
    )
    .map_err(Refusal::Forbidden)?;
    question::check_reply(asked, answer.reply).map_err(Refusal::Invalid)?;
    Ok(Permit::Answer {
        pending: Box::new(pending.clone()),
        role,
    })
}

fn owner_only(principal: &Principal, conversation: &Conversation, what: &str) -> Refusal {
    Refusal::Forbidden(format!(
        "only the principal that started conversation {} may {what}; {} may read it",
        conversation.id, principal.subject
    ))
}

fn send(principal: &Principal, conversation: &Conversation) -> Result<Permit, Refusal> {
    if !can_continue(principal, conversation) {
        return Err(owner_only(principal, conversation, "continue it"));
    }
    match conversation.status {
        ConversationStatus::Completed | ConversationStatus::Canceled => Err(Refusal::Completed),
        ConversationStatus::WaitingApproval => match conversation.pending().first() {
            Some(pending) => Err(Refusal::WaitingApproval(Box::new(pending.clone()))),
            None => Ok(Permit::Granted),
        },
        ConversationStatus::Active => Ok(Permit::Granted),
    }
}

fn cancel(principal: &Principal, conversation: &Conversation) -> Result<Permit, Refusal> {
    if !can_continue(principal, conversation) {
        return Err(owner_only(principal, conversation, "cancel it"));
    }
    let waiting = conversation
        .pending()
        .iter()
        .any(|p| lifecycle::resolvable(conversation, p.uuid).is_some());
    match waiting {
        true => Ok(Permit::Granted),
        false => Err(Refusal::NotCancelable),
    }
}

fn revoke(principal: &Principal, conversation: &Conversation) -> Result<Permit, Refusal> {
    if can_continue(principal, conversation) || principal.has(Role::Approver) {
        return Ok(Permit::Granted);
    }
    Err(Refusal::Forbidden(format!(
        "revoking a grant needs the conversation's owner or an approver; {} is neither",
        principal.subject
    )))
}

fn decide_approval(
    principal: &Principal,
    conversation: &Conversation,
    request: Decide<'_>,
    policy: Policy<'_>,
) -> Result<Permit, Refusal> {
    let Some(pending) = lifecycle::resolvable(conversation, request.uuid) else {
        return Err(Refusal::AlreadyResolved(request.uuid));
    };
    if pending.is_question() {
        return Err(Refusal::Invalid(format!(
            "{} is a question, not an approval; answer it with POST /questions/{}",
            request.uuid, request.uuid
        )));
    }
    let role = can_decide(principal, pending, policy.separate_approver)
        .map_err(|refusal| Refusal::Forbidden(refusal.to_string()))?;
    request
        .choice
        .check(pending, request.input_schema)
        .map_err(Refusal::Invalid)?;
    if request.approve
        && let Some(edited) = request.choice.edited(pending)
    {
        judge_edit(principal, pending, &edited, request.gated, policy)?;
    }
    Ok(Permit::Decide {
        pending: Box::new(pending.clone()),
        role,
    })
}

/// The edited call judged as a new proposal: what `decide` says of it,
/// and whether `principal` may approve what it would need.
fn judge_edit(
    principal: &Principal,
    pending: &PendingApproval,
    edited: &Map<String, Value>,
    gated: Option<bool>,
    policy: Policy<'_>,
) -> Result<(), Refusal> {
    let facts = CallFacts {
        tool: &pending.tool_name,
        arguments: edited,
        offered: true,
        gated,
        grants: &[],
    };
    let judged = decide(facts, &Gate::Approve, policy.rules);
    let refused = |why: String| {
        Refusal::Forbidden(format!(
            "the edited call to {} is not approved: {why}; approve or reject as requested, or edit within the rules",
            pending.tool_name
        ))
    };
    match judged.verdict {
        Verdict::Run | Verdict::RunUnapproved => Ok(()),
        Verdict::Refuse | Verdict::NotOffered | Verdict::Exit => Err(refused(judged.reason)),
        Verdict::Ask { approvers } => {
            let rule = judged.rule.clone();
            if judged.no_edit && rule != pending.rule {
                return Err(refused(format!(
                    "its arguments fall under {}, which forbids edited approvals",
                    rule.as_deref().unwrap_or("a rule")
                )));
            }
            let as_asked = PendingApproval {
                approvers,
                rule,
                ..pending.clone()
            };
            can_decide(principal, &as_asked, policy.separate_approver)
                .map(|_| ())
                .map_err(|refusal: access::Refusal| refused(refusal.to_string()))
        }
    }
}

#[cfg(test)]
mod tests;
