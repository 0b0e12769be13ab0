//! [`ApiError`] (`crate::http_error`): every failure a route can answer,
//! as a JSON body from `asg_shared::rest::ErrorBody` with the right
//! status; here the engine's errors map onto it. 5xx bodies name the
//! failing part but carry no internals; details go to the log.

use axum::http::StatusCode;

use crate::engine::EngineError;
pub use crate::http_error::ApiError;
use crate::llm::LlmError;

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> ApiError {
        let message = error.to_string();
        match error {
            EngineError::ConversationNotFound(_)
            | EngineError::ApprovalNotFound(_)
            | EngineError::QuestionNotFound(_)
            | EngineError::GrantNotFound { .. } => ApiError::not_found(message),
            EngineError::WaitingApproval(pending) => {
                ApiError::new(StatusCode::CONFLICT, "waiting_approval", message)
                    .with_approval(pending)
            }
            EngineError::AlreadyResolved { conversation, .. } => {
                ApiError::new(StatusCode::CONFLICT, "approval_resolved", message)
                    .with_conversation(Box::new((*conversation).clone()))
            }
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
            } => ApiError::new(StatusCode::GATEWAY_TIMEOUT, "llm_timeout", message)
                .with_conversation(Box::new((*conversation).clone())),
            EngineError::SubAgent { conversation, .. } => {
                ApiError::new(StatusCode::BAD_GATEWAY, "sub_agent_error", message)
                    .with_conversation(Box::new((*conversation).clone()))
            }
            EngineError::Llm { conversation, .. } => {
                ApiError::new(StatusCode::BAD_GATEWAY, "llm_error", message)
                    .with_conversation(Box::new((*conversation).clone()))
            }
            // Never an answer that is not stored; retrying later is right
            // (a database that comes back, a disk with room again).
            EngineError::Store(_) | EngineError::Audit(_) => ApiError::new(
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
            EngineError::Overloaded { retry_after_secs } => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", message)
                    .with_retry_after(retry_after_secs)
            }
            EngineError::Internal(_) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "the request failed unexpectedly; see the server log",
            ),
        }
    }
}
