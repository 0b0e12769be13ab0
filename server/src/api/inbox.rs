//! `GET /events`: the operator inbox, as server-sent events. Approval
//! requests, decisions and status changes across every conversation, so
//! an operator's screen follows them without one stream per conversation.
//! The stream starts with a `pending` event listing every approval that
//! waits now; a client that fell too far behind gets a fresh `pending`.

use std::convert::Infallible;

use asg_shared::events::InboxEvent;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use futures::Stream;

use super::AppState;
use super::error::ApiError;
use super::events::live_events;
use crate::engine::Engine;

/// Streams the operator inbox.
#[utoipa::path(get, path = "/events", tag = "approvals",
    responses(
        (status = 200, description = "`text/event-stream`; each `data:` line is one JSON event (`type`: pending (first: every approval waiting now), approval_requested, approval_resolved, status), for every conversation", body = InboxEvent),
        (status = 503, description = "Too many open event streams (`limits.max_subscribers`)", body = asg_shared::rest::ErrorBody),
    ))]
pub async fn inbox_events(
    State(state): State<AppState>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    // Subscribe before listing so no request falls in between.
    let receiver = state.engine.subscribe_inbox()?;
    let first = pending(&state.engine);
    let engine = state.engine.clone();
    Ok(live_events(
        first,
        receiver,
        move || Some(pending(&engine)),
        state.shutdown.clone(),
    ))
}

fn pending(engine: &Engine) -> InboxEvent {
    InboxEvent::Pending {
        approvals: engine.pending_approvals(),
    }
}
