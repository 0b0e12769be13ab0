//! The HTTP edge every server binary of Agent Stop and Go shares: the
//! agent, the `web` server and the tool servers over HTTP.
//!
//! - [`host_check`]: the `Host` check against DNS rebinding (421).
//! - [`service_token`]: the shared secret between the agent and a tool
//!   server (401), and [`BearerToken`], a token that is never logged.
//! - [`process`]: what a server binary does at start and stop (logging,
//!   exit code, SIGINT / SIGTERM, the listening address it prints).
//! - [`logging`]: text or JSON log lines (`LOG_FORMAT`).
//! - [`metrics`]: what every binary's `GET /metrics` shows (HTTP by
//!   route template, `process_*`).
//! - [`error_response`]: an error answered as the JSON
//!   `asg_shared::rest::ErrorBody` every client already parses.
//!
//! **Architecture invariant:** this crate knows no model, store or MCP:
//! no rmcp, sqlx, rusqlite or reqwest, so the `web` binary can link it
//! (`scripts/check-deps.sh`).

pub mod host_check;
pub mod html;
pub mod logging;
pub mod metrics;
pub mod process;
pub mod serve;
pub mod service_token;
pub mod thread_cache;

mod bearer;

pub use bearer::BearerToken;

use asg_shared::rest::{ErrorBody, ErrorDetail};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Header the web chat's proxy sets (`web`) on what it forwards to the
/// agent, recorded as `via` on decisions. A label for the audit trail,
/// not a credential.
pub const CLIENT_HEADER: &str = "x-asg-client";

/// An error answer: `status` with the JSON body
/// `{"error": {"code", "message"}}` (the agent's `ApiError` without a
/// conversation or approval attached).
pub fn error_response(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = ErrorBody {
        error: ErrorDetail {
            code: code.to_string(),
            message: message.into(),
            approval: None,
            conversation: None,
        },
    };
    (status, Json(body)).into_response()
}
