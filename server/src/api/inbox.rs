//! `GET /events`: the operator inbox, as server-sent events. Approval
//! requests, decisions and status changes across every conversation, so
//! an operator's screen follows them without one stream per conversation.
//! The stream starts with a `pending` event listing every approval that
//! waits now; a client that fell too far behind gets a fresh `pending`.

use std::convert::Infallible;
use std::time::Duration;

use asg_shared::events::InboxEvent;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use futures::stream::{self, StreamExt};
use tokio::sync::broadcast::error::RecvError;

use super::AppState;
use super::error::ApiError;
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
    let live = stream::unfold((receiver, engine), |(mut receiver, engine)| async move {
        let event = match receiver.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(_)) => pending(&engine),
            Err(RecvError::Closed) => return None,
        };
        Some((event, (receiver, engine)))
    });
    let mut shutdown = state.shutdown.clone();
    let events = stream::once(async move { first })
        .chain(live)
        .take_until(async move {
            let _ = shutdown.wait_for(|down| *down).await;
        })
        .map(|event| Ok(Event::default().json_data(&event).unwrap_or_default()));
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

fn pending(engine: &Engine) -> InboxEvent {
    InboxEvent::Pending {
        approvals: engine.pending_approvals(),
    }
}
