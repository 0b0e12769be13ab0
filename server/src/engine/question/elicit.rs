//! MCP elicitations on the engine's side: a tool server's question
//! during a call becomes a pending question that waits here, in memory,
//! while the call stays open (the turn holds the conversation; nothing
//! else changes it). The core judges who may answer (the owner or the
//! answerers; the approvers of the call's approval when the call was an
//! approved one) and whether the answer fits; the answer goes to the
//! waiting call once, is written to the audit log and told to the inbox.
//!
//! A question that is not answered within `questions.elicitation_timeout`
//! is canceled at the server and the call is recorded as interrupted; a
//! restart while one waits ends its turn as interrupted (the call may
//! have partly run; never re-run). Questions wait on the replica whose
//! turn runs the call: another replica answers 404.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use asg_core::gate::{self, Permit};
use asg_core::principal::Role;
use asg_shared::events::{ConversationEvent, InboxEvent};
use asg_shared::{Actor, ApprovalDecision, Conversation, PendingApproval, Question, QuestionReply};
use async_trait::async_trait;
use chrono::Utc;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::QuestionPolicy;
use crate::audit::{AuditLine, AuditLog};
use crate::context::RequestContext;
use crate::engine::index::Inbox;
use crate::engine::{EngineError, Inner, TurnAnswer, TurnOutcome, approval};
use crate::mcp::{Asker, Elicitation};

/// Where a call runs: what a question it asks is tied to.
#[derive(Debug, Clone)]
pub struct CallSite {
    /// The conversation.
    pub conversation_id: Uuid,
    /// The model's call id.
    pub call_id: String,
    /// The node that made it.
    pub node: Option<String>,
    /// Who the run works for.
    pub requester: Option<Actor>,
    /// The approval the call ran under, when it was an approved one.
    pub approval: Option<PendingApproval>,
}

/// A question waiting for its answer.
struct Waiting {
    pending: PendingApproval,
    answer: oneshot::Sender<QuestionReply>,
}

/// The elicitations waiting for an answer here, and what answering one
/// needs (who may, where it is written and told).
pub(crate) struct Asking {
    waiting: Mutex<HashMap<Uuid, Waiting>>,
    /// Answers given, by conversation, until the turn that runs the call
    /// records them with its next save.
    answered: Mutex<HashMap<Uuid, Vec<ApprovalDecision>>>,
    policy: QuestionPolicy,
    audit: Option<Arc<AuditLog>>,
    inbox: Inbox,
    /// The engine, for the conversations' own event streams.
    engine: Weak<Inner>,
}

impl Asking {
    pub(crate) fn new(
        policy: QuestionPolicy,
        audit: Option<Arc<AuditLog>>,
        inbox: Inbox,
        engine: Weak<Inner>,
    ) -> Asking {
        Asking {
            waiting: Mutex::default(),
            answered: Mutex::default(),
            policy,
            audit,
            inbox,
            engine,
        }
    }

    /// Tells the conversation's event stream (the chat shows the question
    /// from it), when the conversation is in use here.
    fn emit(&self, conversation: Uuid, event: ConversationEvent) {
        if let Some(inner) = self.engine.upgrade()
            && let Some(slot) = inner.index.get(conversation)
        {
            slot.emit(event);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Waiting>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answers given in `conversation` since the last call, for its
    /// turn to record.
    pub(crate) fn take_answered(&self, conversation: Uuid) -> Vec<ApprovalDecision> {
        let mut answered = self.answered.lock().unwrap_or_else(|p| p.into_inner());
        answered.remove(&conversation).unwrap_or_default()
    }

    /// Every question waiting here.
    pub(crate) fn pending(&self) -> Vec<PendingApproval> {
        let mut list: Vec<PendingApproval> =
            self.lock().values().map(|w| w.pending.clone()).collect();
        list.sort_by_key(|p| (p.created_at, p.uuid));
        list
    }

    /// The question `uuid`, if it waits here.
    fn get(&self, uuid: Uuid) -> Option<PendingApproval> {
        self.lock().get(&uuid).map(|w| w.pending.clone())
    }

    /// Takes `uuid` off the list (once: `None` when it is gone).
    fn take(&self, uuid: Uuid) -> Option<Waiting> {
        self.lock().remove(&uuid)
    }

    /// The asker of one call at `site`.
    pub(crate) fn asker(self: &Arc<Self>, site: CallSite) -> Arc<CallAsker> {
        Arc::new(CallAsker {
            asking: self.clone(),
            site,
            timed_out: AtomicBool::new(false),
            asked: Mutex::default(),
            cut_short: AtomicBool::new(false),
        })
    }

    /// Writes the answer's audit line (best effort: the call waits).
    async fn audit(&self, pending: &PendingApproval, decision: &'static str, by: &Actor) {
        let Some(audit) = &self.audit else {
            return;
        };
        let mut line = AuditLine::about("decision", pending, "answered");
        line.decision = Some(decision);
        line.by = Some(by);
        if let Err(error) = audit.append(&line).await {
            tracing::error!(%error, "cannot write an answer to the audit log");
        }
    }

    fn resolved(&self, pending: &PendingApproval, decision: Option<ApprovalDecision>) {
        let decision = decision.map(Box::new);
        self.emit(
            pending.conversation_id,
            ConversationEvent::ApprovalResolved {
                uuid: pending.uuid,
                decision: decision.clone(),
            },
        );
        self.inbox.send_local(InboxEvent::ApprovalResolved {
            uuid: pending.uuid,
            conversation_id: pending.conversation_id,
            decision,
        });
    }
}

/// Asks for one call.
pub(crate) struct CallAsker {
    asking: Arc<Asking>,
    site: CallSite,
    timed_out: AtomicBool,
    /// The questions this call asked.
    asked: Mutex<Vec<Uuid>>,
    /// The call ended while one of them still waited.
    cut_short: AtomicBool,
}

impl CallAsker {
    /// What the model is told instead of the call's result when a
    /// question of it was not answered in time, or the call ended while
    /// one waited (`None`: neither).
    pub(crate) fn interruption(&self) -> Option<String> {
        if self.timed_out.load(Ordering::SeqCst) {
            return Some(format!(
                "Interrupted: the tool server asked a person and nobody answered within {}; \
                 the question was canceled there, so the call may have partly run. It was not retried.",
                crate::config::format_secs(self.asking.policy.elicitation_timeout.as_secs())
            ));
        }
        self.cut_short.load(Ordering::SeqCst).then(|| {
            "Interrupted: the call ended while the tool server's question waited for a person \
             (the server stopped or the call failed), so it may have partly run. It was not retried."
                .to_string()
        })
    }

    /// The call is over: a question of it still waiting goes (nobody can
    /// answer it any more), and the call counts as cut short.
    pub(crate) fn finish(&self) {
        let asked = std::mem::take(&mut *self.asked.lock().unwrap_or_else(|p| p.into_inner()));
        for uuid in asked {
            if let Some(waiting) = self.asking.take(uuid) {
                self.cut_short.store(true, Ordering::SeqCst);
                self.asking.resolved(&waiting.pending, None);
            }
        }
    }

    /// The pending question an elicitation becomes.
    fn question(&self, elicitation: Elicitation) -> PendingApproval {
        let site = &self.site;
        let tool = site.approval.as_ref().map(|a| a.tool_name.clone());
        let mut pending = approval::pending(approval::NewApproval {
            uuid: Uuid::new_v4(),
            conversation_id: site.conversation_id,
            tool_name: tool.unwrap_or_else(|| elicitation.server.clone()),
            tool_args: Default::default(),
            description: format!("{} asks: {}", elicitation.server, elicitation.message),
            call_id: site.call_id.clone(),
            node: site.node.clone(),
        });
        let approvers_answer = site.approval.is_some();
        pending.question = Some(Box::new(Question {
            text: elicitation.message,
            choices: Vec::new(),
            schema: elicitation.schema,
            url: elicitation.url,
            server: Some(elicitation.server),
            answerers: match approvers_answer {
                true => Vec::new(),
                false => self.asking.policy.answerers.clone(),
            },
            approvers_answer,
            separate: self.asking.policy.separate_answerer,
        }));
        pending.requested_by = site.requester.clone();
        if let Some(approval) = &site.approval {
            // The same people who may decide that approval answer.
            pending.approvers = approval.approvers.clone();
            pending.rule = approval.rule.clone();
            pending.requested_by = approval.requested_by.clone();
        }
        let wait = chrono::Duration::from_std(self.asking.policy.elicitation_timeout).ok();
        pending.expires_at = wait.and_then(|w| pending.created_at.checked_add_signed(w));
        pending
    }
}

/// Takes a waiting question off the list when its wait ends any other
/// way than an answer (timeout, the call ended, shutdown).
struct Unregister<'a> {
    asking: &'a Asking,
    pending: &'a PendingApproval,
}

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        if self.asking.take(self.pending.uuid).is_some() {
            self.asking.resolved(self.pending, None);
        }
    }
}

#[async_trait]
impl Asker for CallAsker {
    async fn ask(&self, elicitation: Elicitation) -> Option<QuestionReply> {
        let pending = self.question(elicitation);
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pending.uuid);
        let (sender, answer) = oneshot::channel();
        self.asking.lock().insert(
            pending.uuid,
            Waiting {
                pending: pending.clone(),
                answer: sender,
            },
        );
        tracing::info!(question = %pending.uuid, conversation = %pending.conversation_id, "an MCP server asks a person during a call");
        self.asking.inbox.send_local(InboxEvent::ApprovalRequested {
            approval: pending.clone(),
        });
        self.asking.emit(
            pending.conversation_id,
            ConversationEvent::ApprovalRequested {
                approval: pending.clone(),
            },
        );
        let _unregister = Unregister {
            asking: &self.asking,
            pending: &pending,
        };
        match tokio::time::timeout(self.asking.policy.elicitation_timeout, answer).await {
            Ok(Ok(reply)) => Some(reply),
            Ok(Err(_)) => None,
            Err(_) => {
                tracing::warn!(question = %pending.uuid, "nobody answered the MCP server's question in time; canceled");
                self.timed_out.store(true, Ordering::SeqCst);
                None
            }
        }
    }
}

impl super::super::Engine {
    /// Answers a question an MCP server asks during a call, when it waits
    /// here (`None`: it does not).
    pub(crate) async fn answer_elicitation(
        &self,
        uuid: Uuid,
        ctx: &RequestContext,
        reply: &QuestionReply,
    ) -> Option<Result<TurnOutcome, EngineError>> {
        let pending = self.inner.asking.get(uuid)?;
        Some(answer_live(&self.inner, pending, ctx, reply).await)
    }
}

/// The answer to a waiting elicitation: judged by the core on the
/// conversation as it is, with the question in it, then handed to the
/// call, once.
async fn answer_live(
    inner: &Inner,
    pending: PendingApproval,
    ctx: &RequestContext,
    reply: &QuestionReply,
) -> Result<TurnOutcome, EngineError> {
    let uuid = pending.uuid;
    let current = inner
        .current(pending.conversation_id)
        .await?
        .ok_or(EngineError::QuestionNotFound(uuid))?;
    let (pending, role) = authorize_answer(inner, ctx, &current, pending, reply)?;
    let asking = &inner.asking;
    let waiting = asking
        .take(uuid)
        .ok_or_else(|| EngineError::AlreadyResolved {
            uuid,
            conversation: current.clone(),
        })?;
    let by = asg_core::access::actor(&ctx.caller(), role, ctx.via);
    let word = match reply {
        QuestionReply::Accept { .. } => "answered",
        QuestionReply::Decline => "declined",
        QuestionReply::Cancel => "dismissed",
    };
    asking.audit(&pending, word, &by).await;
    let _ = waiting.answer.send(reply.clone());
    let decision = answer_record(&pending, by, reply);
    asking
        .answered
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(pending.conversation_id)
        .or_default()
        .push(decision.clone());
    asking.resolved(&pending, Some(decision));
    Ok(TurnOutcome {
        result: TurnAnswer {
            response: "Answer recorded; the tool call that asked goes on.".into(),
            waiting_approval: false,
            approval: None,
        },
        conversation: current,
    })
}

/// The gate's judgement of an answer to the open call's question, as if
/// the conversation waited for it (it does not: the call is still open):
/// the question as stored and the answerer's role, or the refusal.
fn authorize_answer(
    inner: &Inner,
    ctx: &RequestContext,
    current: &Conversation,
    pending: PendingApproval,
    reply: &QuestionReply,
) -> Result<(Box<PendingApproval>, Option<Role>), EngineError> {
    let uuid = pending.uuid;
    let mut asked = current.clone();
    asked.set_pending(vec![pending]);
    asked.status = asg_shared::ConversationStatus::WaitingApproval;
    let command = gate::Command::Answer(gate::Answer { uuid, reply });
    let permit = inner
        .authorize(ctx, &asked, command)
        .map_err(|error| match error {
            EngineError::ConversationNotFound(_) => EngineError::QuestionNotFound(uuid),
            other => other,
        })?;
    match permit {
        Permit::Answer { pending, role } => Ok((pending, role)),
        _ => Err(EngineError::Internal(
            "the gate did not permit an answer".into(),
        )),
    }
}

/// How an answer is recorded in the conversation's decisions.
fn answer_record(pending: &PendingApproval, by: Actor, reply: &QuestionReply) -> ApprovalDecision {
    ApprovalDecision {
        approval_uuid: pending.uuid,
        tool_name: pending.tool_name.clone(),
        approved: true,
        decided_by: by,
        decided_at: Utc::now(),
        reason: None,
        edited_arguments: None,
        remembered: None,
        question: true,
        reply: Some(reply.clone()),
    }
}
