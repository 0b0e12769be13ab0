//! [`ApiError`]: the JSON error answer of the agent's HTTP surfaces, as a
//! body from `asg_shared::rest::ErrorBody` with the right status. Below
//! every door, so the request guards (`host_check`, `service_token`) and
//! the API (`api::error`, which maps the engine's errors onto it) answer
//! the same shape.

use asg_shared::rest::{ErrorBody, ErrorDetail};
use asg_shared::{Conversation, PendingApproval};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    approval: Option<Box<PendingApproval>>,
    conversation: Option<Box<Conversation>>,
    /// Seconds for a `Retry-After` header.
    retry_after_secs: Option<u64>,
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
            retry_after_secs: None,
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

    /// The same error carrying the approval it is about.
    pub fn with_approval(self, approval: Box<PendingApproval>) -> ApiError {
        ApiError {
            approval: Some(approval),
            ..self
        }
    }

    /// The same error carrying the conversation as stored.
    pub fn with_conversation(self, conversation: Box<Conversation>) -> ApiError {
        ApiError {
            conversation: Some(conversation),
            ..self
        }
    }

    /// The same error telling the client when to retry (`Retry-After`).
    pub fn with_retry_after(self, secs: u64) -> ApiError {
        ApiError {
            retry_after_secs: Some(secs),
            ..self
        }
    }

    /// The status this error answers with.
    pub fn status(&self) -> StatusCode {
        self.status
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
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after_secs {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}
