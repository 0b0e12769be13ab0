//! Questions for a human, on the engine's side: answering a waiting
//! question (the core judges who may and whether the reply fits, and
//! records it as the asking call's result), and the MCP servers'
//! elicitations that wait for an answer while their tool call stays
//! open (`elicit.rs`).

use std::sync::Arc;
use std::time::Duration;

use asg_shared::QuestionReply;
use asg_shared::events::ConversationEvent;
use uuid::Uuid;

use super::index::Slot;
use super::{EngineError, Inner, TurnOutcome, settle, transition};
use crate::config::QuestionsConfig;
use crate::context::RequestContext;

mod elicit;

pub(crate) use elicit::Asking;
pub use elicit::CallSite;

/// Longest an MCP server's elicitation waits by default.
const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// Who answers questions; how long an elicitation may wait.
#[derive(Debug, Clone)]
pub struct QuestionPolicy {
    /// `questions.answerers`: roles or groups; empty: the owner.
    pub answerers: Vec<String>,
    /// `questions.elicitation_timeout`.
    pub elicitation_timeout: Duration,
    /// `questions.separate_answerer`.
    pub separate_answerer: bool,
}

impl Default for QuestionPolicy {
    fn default() -> Self {
        QuestionPolicy {
            answerers: Vec::new(),
            elicitation_timeout: DEFAULT_ELICITATION_TIMEOUT,
            separate_answerer: false,
        }
    }
}

impl QuestionPolicy {
    /// The policy of a validated `questions:` section.
    pub fn from_config(config: &QuestionsConfig) -> QuestionPolicy {
        QuestionPolicy {
            answerers: config.answerers.clone(),
            separate_answerer: config.separate_answerer,
            elicitation_timeout: config
                .elicitation_timeout
                .map_or(DEFAULT_ELICITATION_TIMEOUT, |d| d.get()),
        }
    }
}

impl super::Engine {
    /// Answers a waiting question (the model's `ask_human`, or an MCP
    /// server's elicitation while its call is open). Exactly once: a
    /// second answer gets [`EngineError::AlreadyResolved`].
    pub async fn answer_question(
        &self,
        uuid: Uuid,
        ctx: &RequestContext,
        reply: QuestionReply,
    ) -> Result<TurnOutcome, EngineError> {
        if let Some(answered) = self.answer_elicitation(uuid, ctx, &reply).await {
            return answered;
        }
        let slot = self
            .inner
            .slot_of_approval(uuid)
            .await
            .map_err(|error| not_found_as_question(error, uuid))?;
        let (inner, ctx) = (self.inner.clone(), ctx.clone());
        self.spawn_turn(move || async move {
            let claimed = || answer_claimed(&inner, &slot, &ctx, uuid, reply);
            inner.claimed(&slot, claimed).await
        })
        .await
    }
}

impl super::Engine {
    /// The MCP servers' questions waiting here for an answer (they are
    /// not stored: their calls are open).
    pub fn asked_during_calls(&self) -> Vec<asg_shared::PendingApproval> {
        self.inner.asking.pending()
    }
}

/// An unknown uuid, named as a question.
fn not_found_as_question(error: EngineError, uuid: Uuid) -> EngineError {
    match error {
        EngineError::ApprovalNotFound(_) | EngineError::ConversationNotFound(_) => {
            EngineError::QuestionNotFound(uuid)
        }
        other => other,
    }
}

/// The answer applied under the conversation's claim: the core's
/// transition (authorized, recorded, the result written), then the run
/// goes on with it for whoever asked.
async fn answer_claimed(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    ctx: &RequestContext,
    uuid: Uuid,
    reply: QuestionReply,
) -> Result<TurnOutcome, EngineError> {
    let conversation = slot.snapshot();
    let command = transition::Command::Answer {
        uuid,
        reply: &reply,
    };
    let transition = inner
        .apply(ctx, &conversation, command)
        .map_err(|error| match error {
            EngineError::AlreadyResolved { .. } => EngineError::AlreadyResolved {
                uuid,
                conversation: slot.snapshot(),
            },
            other => not_found_as_question(other, uuid),
        })?;
    let requested_by = conversation
        .pending_by_uuid(uuid)
        .and_then(|p| p.requested_by.clone());
    slot.emit(ConversationEvent::TurnStarted);
    let turn = super::Turn::new(inner.clone(), slot, transition.conversation, ctx)
        .on_behalf_of(requested_by);
    let result = turn.drive(transition.effects).await;
    settle(inner, slot, result).await
}
