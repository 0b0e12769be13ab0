//! `GET /events`: the operator inbox, as server-sent events. Approval
//! requests, decisions and status changes across every conversation, so
//! an operator's screen follows them without one stream per conversation.
//! The stream starts with a `pending` event listing the approvals that
//! wait now and the caller may see (the oldest [`FIRST_LIST_LIMIT`], read
//! as one page of the store); a client that fell too far behind gets a
//! fresh `pending`.

use std::convert::Infallible;

use asg_shared::events::InboxEvent;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use futures::Stream;

use super::AppState;
use super::error::ApiError;
use super::events::live_events;
use super::extract::Caller;
use crate::auth::{Principal, policy};
use crate::engine::Engine;

/// Streams the operator inbox.
#[utoipa::path(get, path = "/events", tag = "approvals",
    responses(
        (status = 200, description = "`text/event-stream`; each `data:` line is one JSON event (`type`: pending (first: every approval waiting now), approval_requested, approval_resolved, status), for every conversation", body = InboxEvent),
        (status = 503, description = "Too many open event streams (`limits.max_subscribers`)", body = asg_shared::rest::ErrorBody),
    ))]
pub async fn inbox_events(
    State(state): State<AppState>,
    Caller(caller): Caller,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    // Subscribe before listing so no request falls in between.
    let receiver = state.engine.subscribe_inbox()?;
    let first = pending(state.engine.clone(), caller.clone()).await?;
    let (engine, for_lag) = (state.engine.clone(), caller.clone());
    let keep_engine = state.engine.clone();
    Ok(live_events(
        first,
        receiver,
        move || {
            let (engine, caller) = (engine.clone(), for_lag.clone());
            async move { pending(engine, caller).await.ok() }
        },
        move |event| {
            let (engine, caller) = (keep_engine.clone(), caller.clone());
            async move { visible(&engine, &caller, &event).await.then_some(event) }
        },
        state.shutdown.clone(),
    ))
}

/// Whether `caller` may see an inbox event: approvals it may list, and
/// changes of conversations it may read.
async fn visible(engine: &Engine, caller: &Principal, event: &InboxEvent) -> bool {
    let conversation = match event {
        InboxEvent::Pending { .. } => return true,
        InboxEvent::ApprovalRequested { approval } | InboxEvent::ApprovalReminder { approval } => {
            return policy::can_see_approval(caller, approval);
        }
        InboxEvent::ApprovalResolved {
            conversation_id, ..
        }
        | InboxEvent::Status {
            conversation_id, ..
        } => *conversation_id,
    };
    engine
        .get(conversation)
        .await
        .ok()
        .flatten()
        .is_some_and(|c| policy::can_read(caller, &c))
}

/// Most approvals in a stream's `pending` list; more are paged with
/// `GET /approvals`.
pub const FIRST_LIST_LIMIT: usize = 500;

/// The approvals `caller` may see, oldest first: one page of the store,
/// filtered there (never every pending approval of every conversation).
async fn pending(engine: Engine, caller: Principal) -> Result<InboxEvent, ApiError> {
    let query = crate::store::PendingQuery {
        requested_by: policy::approvals_seen_by(&caller),
        limit: FIRST_LIST_LIMIT,
        ..Default::default()
    };
    let (mut approvals, _) = engine.pending_page(query).await?;
    approvals.retain(|a| policy::can_see_approval(&caller, a));
    Ok(InboxEvent::Pending { approvals })
}
