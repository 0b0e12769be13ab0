//! `POST /channels/slack/actions`: Slack's interactivity requests (button
//! clicks, submitted modals). The signature is checked before anything
//! else (401 naming the problem, nothing changes); the payload is handed
//! to the Slack channel, which answers at once and decides through the
//! engine beside the answer (`crate::channels::slack`).

use std::sync::Arc;

use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::super::error::ApiError;
use crate::channels::Channels;
use crate::channels::slack::Reply;

/// Slack's signature header.
const SIGNATURE: &str = "x-slack-signature";
/// The time the signature covers.
const TIMESTAMP: &str = "x-slack-request-timestamp";

/// Takes one interactivity request.
pub async fn slack_actions(
    Extension(channels): Extension<Arc<Channels>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let slack = channels
        .slack
        .as_ref()
        .ok_or_else(|| ApiError::not_found("the Slack channel is not configured"))?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    slack
        .verify(header(TIMESTAMP), header(SIGNATURE), &body)
        .map_err(|e| ApiError::new(StatusCode::UNAUTHORIZED, "bad_signature", e.to_string()))?;
    match slack.interact(&body) {
        Ok(Reply::Ack) => Ok(StatusCode::OK.into_response()),
        Ok(Reply::Json(answer)) => Ok(Json(answer).into_response()),
        Err(error) => Err(ApiError::bad_request(error.to_string())),
    }
}
