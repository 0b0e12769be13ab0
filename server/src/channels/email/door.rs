//! What a mail's link does when followed: the confirmation page (GET:
//! never a decision) and the decision its form posts. Each first checks
//! the link (signature, expiry, the approval and decision it names, a
//! recipient still configured), then asks the engine as the recipient's
//! principal. Every outcome is a [`Page`] with the status that fits:
//! 400 a link that is incomplete or does not match, 403 a forged link or
//! a refusal by the gate (four-eyes, named approvers), 404 an approval
//! the recipient cannot see, 409 already decided, 410 expired.

use std::sync::Arc;

use asg_shared::{ApprovalState, Conversation};
use chrono::Utc;
use serde::Deserialize;
use uuid::Uuid;

use super::token::{Decision, Link, LinkError};
use super::{Email, page};
use crate::context::{RequestContext, new_session_id};
use crate::engine::{Choice, Engine, EngineError};

/// An HTML answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// HTTP status.
    pub status: u16,
    /// The document.
    pub html: String,
}

/// A link's query or the confirmation form's fields (all optional: a
/// missing one is a clear page, not a framework error).
#[derive(Debug, Default, Deserialize)]
pub struct LinkRequest {
    /// The approval uuid.
    pub approval: Option<String>,
    /// The signed token.
    pub token: Option<String>,
    /// `approve` or `reject` (the form's; a link's is its path).
    pub decision: Option<String>,
    /// A rejection's reason.
    pub reason: Option<String>,
}

impl Email {
    fn page(&self, status: u16, title: &str, text: &str) -> Page {
        Page {
            status,
            html: page::message(&self.agent, title, text),
        }
    }

    /// A refused link's page.
    fn refused(&self, error: &LinkError) -> Page {
        let status = match error {
            LinkError::Malformed | LinkError::OtherApproval | LinkError::OtherDecision => 400,
            LinkError::BadSignature => 403,
            LinkError::Expired => 410,
        };
        let advice = match error {
            LinkError::Expired => "Decide in the web chat, or ask for the approval again.",
            _ => "Open the link exactly as the mail has it, or decide in the web chat.",
        };
        self.page(
            status,
            "This link does not work",
            &format!("{error}. {advice}"),
        )
    }

    /// The link in `request`, verified for `decision`, and who it decides
    /// as.
    fn verified(
        &self,
        request: &LinkRequest,
        decision: Decision,
    ) -> Result<(Link, RequestContext), Page> {
        let approval = request
            .approval
            .as_deref()
            .and_then(|a| Uuid::parse_str(a).ok());
        let (Some(approval), Some(token)) = (approval, request.token.as_deref()) else {
            return Err(self.refused(&LinkError::Malformed));
        };
        let link = self
            .signer
            .verify(token, Utc::now().timestamp())
            .and_then(|link| link.check(approval, decision).map(|()| link))
            .map_err(|error| self.refused(&error))?;
        let Some(principal) = self.principal_of(&link.recipient) else {
            return Err(self.page(
                403,
                "This link does not work",
                "The address this mail went to no longer receives approvals.",
            ));
        };
        let ctx = RequestContext {
            session_id: new_session_id(),
            principal: Some(principal.clone()),
            via: "email",
            ..RequestContext::default()
        };
        Ok((link, ctx))
    }

    /// `GET /channels/email/{approve|reject}`: shows the approval and a
    /// form that POSTs the decision; decides nothing.
    pub async fn confirm(
        &self,
        engine: &Engine,
        decision: Decision,
        request: &LinkRequest,
    ) -> Page {
        let (link, ctx) = match self.verified(request, decision) {
            Ok(verified) => verified,
            Err(page) => return page,
        };
        let conversation = match engine.approval_conversation(link.approval, &ctx).await {
            Ok(conversation) => conversation,
            Err(error) => return self.engine_refused(&error),
        };
        match conversation.pending_by_uuid(link.approval) {
            Some(pending) if pending.state == ApprovalState::Pending => Page {
                status: 200,
                html: page::confirm(
                    &self.agent,
                    pending,
                    decision,
                    request.token.as_deref().unwrap_or_default(),
                ),
            },
            _ => self.already_decided(&conversation, link.approval),
        }
    }

    /// `POST /channels/email/decide`: applies the form's decision as the
    /// link's recipient.
    pub async fn decide(&self, engine: &Engine, request: &LinkRequest) -> Page {
        let Some(decision) = request.decision.as_deref().and_then(Decision::parse) else {
            return self.refused(&LinkError::Malformed);
        };
        let (link, ctx) = match self.verified(request, decision) {
            Ok(verified) => verified,
            Err(page) => return page,
        };
        let reason = request
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(|r| r.chars().take(page::MAX_REASON_CHARS).collect::<String>());
        let approve = decision == Decision::Approve;
        let outcome = engine
            .resolve_approval_with(link.approval, &ctx, approve, reason, Choice::default())
            .await;
        tracing::info!(approval = %link.approval, link = link.id, decision = decision.as_str(), ok = outcome.is_ok(), "email link used");
        match outcome {
            Ok(_) => self.decided(decision),
            // The decision was recorded; what came after it failed.
            Err(EngineError::Llm { .. } | EngineError::SubAgent { .. }) => self.page(
                200,
                "Decision recorded",
                "Your decision was recorded, but the agent failed afterwards; see the conversation in the web chat.",
            ),
            Err(error) => self.engine_refused(&error),
        }
    }

    fn decided(&self, decision: Decision) -> Page {
        let (title, text) = match decision {
            Decision::Approve => (
                "Approved",
                "The call was approved and has run. You can close this page.",
            ),
            Decision::Reject => (
                "Rejected",
                "The call was rejected; it will not run. You can close this page.",
            ),
        };
        self.page(200, title, text)
    }

    /// 409: the approval is no longer waiting, with who decided it.
    fn already_decided(&self, conversation: &Arc<Conversation>, uuid: Uuid) -> Page {
        let text = match conversation.decision_for(uuid) {
            Some(decision) => format!(
                "This approval was already {} by {} at {}; this link no longer does anything.",
                if decision.approved { "approved" } else { "rejected" },
                decision.decided_by.name.as_deref().unwrap_or(&decision.decided_by.subject),
                super::mail::time_shown(decision.decided_at),
            ),
            None => "This approval is no longer waiting for a decision; this link no longer does anything.".into(),
        };
        self.page(409, "Already decided", &text)
    }

    /// The page of an engine refusal.
    fn engine_refused(&self, error: &EngineError) -> Page {
        match error {
            EngineError::AlreadyResolved { conversation, uuid } => {
                self.already_decided(conversation, *uuid)
            }
            EngineError::ApprovalNotFound(_) | EngineError::ConversationNotFound(_) => self.page(
                404,
                "Approval not found",
                "There is no such approval, or you may not see it.",
            ),
            EngineError::Forbidden(why) => self.page(403, "You may not decide this approval", why),
            EngineError::Completed(_) | EngineError::NotCancelable(_) => {
                self.page(409, "Already decided", &error.to_string())
            }
            EngineError::Busy(_) => self.page(409, "Try again", &error.to_string()),
            EngineError::InvalidInput(why) => self.page(400, "Not accepted", why),
            _ => {
                tracing::warn!(%error, "email link: the decision could not be applied");
                self.page(
                    503,
                    "Not recorded",
                    "The decision could not be recorded now; try the link again later.",
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_requests_parse_from_queries_and_forms() {
        let request: LinkRequest =
            serde_urlencoded::from_str("approval=x&token=a.b&decision=reject&reason=no+way")
                .unwrap();
        assert_eq!(request.token.as_deref(), Some("a.b"));
        assert_eq!(request.reason.as_deref(), Some("no way"));
        let empty: LinkRequest = serde_urlencoded::from_str("").unwrap();
        assert!(empty.approval.is_none() && empty.token.is_none());
    }
}
