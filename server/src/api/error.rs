//! [`ApiError`]: every failure a route can answer, as a JSON body from
//! `asg_shared::rest::ErrorBody` with the right status. 5xx bodies name the
//! failing part but carry no internals; details go to the log.

use asg_shared::rest::{ErrorBody, ErrorDetail};
use asg_shared::{Conversation, PendingApproval};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::engine::EngineError;
use crate::llm::LlmError;

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    approval: Option<Box<PendingApproval>>,
    conversation: Option<Box<Conversation>>,
}

impl ApiError {
    /// An error with a status, a stable code and a message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            approval: None,
            conversation: None,
        }
    }

    /// 400 for a malformed request.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 404 for an unknown route or id.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// The status this error answers with.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> ApiError {
        let message = error.to_string();
        match error {
            EngineError::ConversationNotFound(_)
            | EngineError::ApprovalNotFound(_)
            | EngineError::GrantNotFound { .. } => ApiError::not_found(message),
            EngineError::WaitingApproval(pending) => ApiError {
                approval: Some(pending),
                ..ApiError::new(StatusCode::CONFLICT, "waiting_approval", message)
            },
            EngineError::AlreadyResolved { conversation, .. } => ApiError {
                conversation: Some(Box::new((*conversation).clone())),
                ..ApiError::new(StatusCode::CONFLICT, "approval_resolved", message)
            },
            EngineError::Completed(_) => {
                ApiError::new(StatusCode::CONFLICT, "conversation_closed", message)
            }
            EngineError::NotCancelable(_) => {
                ApiError::new(StatusCode::CONFLICT, "not_cancelable", message)
            }
            EngineError::Busy(_) => {
                ApiError::new(StatusCode::CONFLICT, "conversation_busy", message)
            }
            EngineError::InvalidInput(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
            }
            EngineError::Llm {
                error: LlmError::Timeout(_),
                conversation,
            } => ApiError {
                conversation: Some(Box::new((*conversation).clone())),
                ..ApiError::new(StatusCode::GATEWAY_TIMEOUT, "llm_timeout", message)
            },
            EngineError::SubAgent { conversation, .. } => ApiError {
                conversation: Some(Box::new((*conversation).clone())),
                ..ApiError::new(StatusCode::BAD_GATEWAY, "sub_agent_error", message)
            },
            EngineError::Llm { conversation, .. } => ApiError {
                conversation: Some(Box::new((*conversation).clone())),
                ..ApiError::new(StatusCode::BAD_GATEWAY, "llm_error", message)
            },
            // Never an answer that is not stored; retrying later is right
            // (a database that comes back, a disk with room again).
            EngineError::Store(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "storage_unavailable",
                "the conversation store is unavailable, so this could not be recorded; retry later (the server log says more)",
            ),
            EngineError::Forbidden(_) => ApiError::new(StatusCode::FORBIDDEN, "forbidden", message),
            EngineError::ShuttingDown => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", message)
            }
            EngineError::TooManySubscribers(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "too_many_streams", message)
            }
            EngineError::Internal(_) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "the request failed unexpectedly; see the server log",
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message,
                approval: self.approval.map(|a| *a),
                conversation: self.conversation,
            },
        };
        (self.status, Json(body)).into_response()
    }
}
