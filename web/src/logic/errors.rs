//! Failed requests and what the user is told about them. Every failure
//! becomes a [`UserError`] with a message the user can act on; none is
//! dropped.

use asg_shared::Conversation;
use asg_shared::rest::ErrorBody;

/// A failed REST call.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// The request did not get an answer (web server down, offline).
    Network(String),
    /// The server answered with an error status.
    Http {
        /// HTTP status.
        status: u16,
        /// The `{"error": …}` body, when the answer had one.
        body: Option<Box<ErrorBody>>,
        /// The raw body, for answers without an error body.
        text: String,
    },
    /// A success answer that could not be read.
    Decode(String),
}

impl RequestError {
    /// An error answer: the body is read as [`ErrorBody`] when it is one.
    pub fn from_response(status: u16, text: String) -> RequestError {
        let body = crate::logic::objects::from_str::<ErrorBody>(&text)
            .ok()
            .map(Box::new);
        RequestError::Http { status, body, text }
    }

    /// The stable error code, e.g. `approval_resolved`.
    pub fn code(&self) -> Option<&str> {
        match self {
            RequestError::Http { body: Some(b), .. } => Some(&b.error.code),
            _ => None,
        }
    }

    /// The HTTP status, when there was an answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            RequestError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The conversation's current state, carried by conflicts and model
    /// failures.
    pub fn conversation(&self) -> Option<&Conversation> {
        match self {
            RequestError::Http { body: Some(b), .. } => b.error.conversation.as_deref(),
            _ => None,
        }
    }
}

/// What kind of problem the user sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The web server answered but the agent is down.
    AgentUnreachable,
    /// The web server itself cannot be reached.
    Offline,
    /// Someone else decided the approval first.
    AlreadyDecided,
    /// The conversation waits for an approval.
    WaitingApproval,
    /// The conversation is closed.
    Closed,
    /// The model failed or timed out.
    ModelFailed,
    /// A sub-agent failed.
    SubAgentFailed,
    /// The conversation or approval does not exist.
    NotFound,
    /// The request was refused as invalid.
    Invalid,
    /// Not signed in (or the session ended): the banner offers "Sign in".
    SignInRequired,
    /// Signed in, but not allowed (e.g. deciding without the approver role).
    Forbidden,
    /// Anything else.
    Other,
}

/// A message for the error banner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserError {
    /// The kind, for styling and follow-up actions.
    pub kind: ErrorKind,
    /// One-line headline.
    pub title: String,
    /// What happened and what to do.
    pub detail: String,
}

impl UserError {
    /// True when the shown conversation and list should be fetched again.
    pub fn needs_refresh(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::AlreadyDecided
                | ErrorKind::WaitingApproval
                | ErrorKind::Closed
                | ErrorKind::ModelFailed
                | ErrorKind::SubAgentFailed
        )
    }

    /// True when retrying later can help (shows a Retry button).
    pub fn retryable(&self) -> bool {
        matches!(self.kind, ErrorKind::AgentUnreachable | ErrorKind::Offline)
    }
}

/// `text` as a sentence: a full stop is added unless it ends with one.
fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() || text.ends_with(['.', '!', '?']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

fn user_error(kind: ErrorKind, title: &str, detail: impl Into<String>) -> UserError {
    UserError {
        kind,
        title: title.to_string(),
        detail: detail.into(),
    }
}

/// The banner message for a failed request.
pub fn describe(error: &RequestError) -> UserError {
    let (status, message) = match error {
        RequestError::Network(detail) => {
            return user_error(
                ErrorKind::Offline,
                "Cannot reach the server",
                format!(
                    "The request did not get an answer ({detail}). Check that the web server is running, then retry."
                ),
            );
        }
        RequestError::Decode(detail) => {
            return user_error(
                ErrorKind::Other,
                "Unexpected answer",
                format!("The server's answer could not be read: {detail}"),
            );
        }
        RequestError::Http { status, body, text } => (
            *status,
            body.as_ref()
                .map(|b| b.error.message.clone())
                .unwrap_or_else(|| text.trim().chars().take(300).collect()),
        ),
    };
    describe_code(status, error.code().unwrap_or_default(), &message)
        .unwrap_or_else(|| describe_status(status, message))
}

/// The message for an error answer with a known code (or a 504, a model
/// timeout); `None` for the others, which go by their status.
fn describe_code(status: u16, code: &str, message: &str) -> Option<UserError> {
    let error = match (status, code) {
        (_, "agent_unreachable") => user_error(
            ErrorKind::AgentUnreachable,
            "The agent is unreachable",
            format!("{} Start the agent, then retry.", sentence(message)),
        ),
        (_, "approval_resolved") => user_error(
            ErrorKind::AlreadyDecided,
            "Already decided",
            "Someone else already decided this approval (another tab or client). The conversation shows the current state.",
        ),
        (_, "waiting_approval") => user_error(
            ErrorKind::WaitingApproval,
            "Waiting for an approval",
            "This conversation is stopped before a destructive action: approve or reject it first, then send your message.",
        ),
        (_, "conversation_closed") => user_error(
            ErrorKind::Closed,
            "Conversation closed",
            "This conversation no longer accepts messages. Start a new conversation.",
        ),
        (_, "llm_timeout") | (504, _) => user_error(
            ErrorKind::ModelFailed,
            "The model timed out",
            format!(
                "{} The failure is recorded in the conversation; send your message again to retry.",
                sentence(message)
            ),
        ),
        (_, "llm_error") => user_error(
            ErrorKind::ModelFailed,
            "The model failed",
            format!(
                "{} The failure is recorded in the conversation; send your message again to retry.",
                sentence(message)
            ),
        ),
        (_, "sub_agent_error") => {
            user_error(ErrorKind::SubAgentFailed, "A sub-agent failed", message)
        }
        _ => return None,
    };
    Some(error)
}

/// The message for an error answer by its HTTP status.
fn describe_status(status: u16, message: String) -> UserError {
    match status {
        401 => user_error(
            ErrorKind::SignInRequired,
            "Sign in required",
            format!("{} Sign in, then try again.", sentence(&message)),
        ),
        403 => user_error(ErrorKind::Forbidden, "Not allowed", sentence(&message)),
        404 => user_error(ErrorKind::NotFound, "Not found", message),
        400 | 413 | 422 => user_error(ErrorKind::Invalid, "Request refused", message),
        502 | 503 => user_error(
            ErrorKind::AgentUnreachable,
            "The agent is unreachable",
            if message.is_empty() {
                format!("HTTP {status}. Start the agent, then retry.")
            } else {
                message
            },
        ),
        _ => user_error(
            ErrorKind::Other,
            "Request failed",
            if message.is_empty() {
                format!("HTTP {status}")
            } else {
                format!("HTTP {status}: {message}")
            },
        ),
    }
}

/// The banner message for a turn that failed (live `turn_finished` with an
/// error), e.g. a model failure seen from another tab.
pub fn turn_failure(error: &str) -> UserError {
    user_error(
        ErrorKind::ModelFailed,
        "The agent's turn failed",
        format!(
            "{} The failure is recorded in the conversation.",
            sentence(error)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sign_in_and_forbidden_answers_show_the_server_message() {
        let shown = describe(&RequestError::from_response(
            401,
            json!({"error": {"code": "unauthenticated", "message": "Sign in to use the chat."}})
                .to_string(),
        ));
        assert_eq!(shown.kind, ErrorKind::SignInRequired);
        assert!(shown.detail.contains("Sign in to use the chat."));
        let shown = describe(&RequestError::from_response(
            403,
            json!({"error": {"code": "forbidden", "message": "deciding approvals needs the approver role"}})
                .to_string(),
        ));
        assert_eq!(shown.kind, ErrorKind::Forbidden);
        assert_eq!(shown.title, "Not allowed");
        assert_eq!(shown.detail, "deciding approvals needs the approver role.");
    }

    fn http(status: u16, body: serde_json::Value) -> RequestError {
        RequestError::from_response(status, body.to_string())
    }

    #[test]
    fn agent_unreachable_from_the_proxy_says_to_start_the_agent() {
        let error = http(
            502,
            json!({"error": {"code": "agent_unreachable", "message": "cannot reach the agent at http://127.0.0.1:8080; is it running?"}}),
        );
        assert_eq!(error.code(), Some("agent_unreachable"));
        let shown = describe(&error);
        assert_eq!(shown.kind, ErrorKind::AgentUnreachable);
        assert!(shown.detail.contains("http://127.0.0.1:8080"));
        assert!(shown.retryable());
        assert!(!shown.needs_refresh());
    }

    #[test]
    fn a_conflict_on_an_approval_says_someone_else_decided_and_refreshes() {
        let error = http(
            409,
            json!({"error": {"code": "approval_resolved", "message": "approval x already resolved"}}),
        );
        let shown = describe(&error);
        assert_eq!(shown.kind, ErrorKind::AlreadyDecided);
        assert!(shown.detail.contains("Someone else already decided"));
        assert!(shown.needs_refresh());
    }

    #[test]
    fn model_failures_and_timeouts_are_model_errors() {
        let failed = describe(&http(
            502,
            json!({"error": {"code": "llm_error", "message": "model returned 500"}}),
        ));
        assert_eq!(failed.kind, ErrorKind::ModelFailed);
        assert_eq!(failed.title, "The model failed");
        assert!(failed.detail.starts_with("model returned 500"));
        let timeout = describe(&http(
            504,
            json!({"error": {"code": "llm_timeout", "message": "after 60s"}}),
        ));
        assert_eq!(timeout.title, "The model timed out");
        assert!(turn_failure("boom").detail.starts_with("boom. "));
        assert!(failed.detail.starts_with("model returned 500. The failure"));
    }

    #[test]
    fn other_codes_map_to_their_own_messages() {
        let waiting = describe(&http(
            409,
            json!({"error": {"code": "waiting_approval", "message": "m"}}),
        ));
        assert_eq!(waiting.kind, ErrorKind::WaitingApproval);
        let closed = describe(&http(
            409,
            json!({"error": {"code": "conversation_closed", "message": "m"}}),
        ));
        assert_eq!(closed.kind, ErrorKind::Closed);
        let missing = describe(&http(
            404,
            json!({"error": {"code": "not_found", "message": "conversation 1 not found"}}),
        ));
        assert_eq!(missing.kind, ErrorKind::NotFound);
        assert_eq!(missing.detail, "conversation 1 not found");
        let invalid = describe(&http(
            422,
            json!({"error": {"code": "invalid_request", "message": "message must not be empty"}}),
        ));
        assert_eq!(invalid.kind, ErrorKind::Invalid);
    }

    #[test]
    fn answers_without_an_error_body_and_network_failures_are_still_shown() {
        let plain = describe(&RequestError::from_response(500, "oops".into()));
        assert_eq!(plain.kind, ErrorKind::Other);
        assert_eq!(plain.detail, "HTTP 500: oops");
        let gateway = describe(&RequestError::from_response(502, String::new()));
        assert_eq!(gateway.kind, ErrorKind::AgentUnreachable);
        assert!(gateway.detail.contains("502"));
        let offline = describe(&RequestError::Network("Failed to fetch".into()));
        assert_eq!(offline.kind, ErrorKind::Offline);
        assert!(offline.detail.contains("Failed to fetch"));
        assert!(offline.retryable());
        let garbled = describe(&RequestError::Decode("expected value".into()));
        assert!(garbled.detail.contains("expected value"));
    }

    #[test]
    fn conflicts_carry_the_current_conversation() {
        let error = http(
            409,
            json!({"error": {"code": "approval_resolved", "message": "m", "conversation": {
                "id": "00000000-0000-0000-0000-000000000001", "session_id": "abcd1234",
                "status": "active", "messages": [],
                "created_at": "2025-01-01T00:00:00Z", "updated_at": "2025-01-01T00:00:00Z"}}}),
        );
        assert_eq!(error.status(), Some(409));
        assert_eq!(
            error.conversation().map(|c| c.id),
            Some(uuid::Uuid::from_u128(1))
        );
        assert!(RequestError::Network("x".into()).conversation().is_none());
    }
}
