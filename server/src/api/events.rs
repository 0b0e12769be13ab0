//! `GET /conversations/{id}/events`: live conversation events as
//! server-sent events. The stream starts with a `snapshot` of the whole
//! conversation, then sends each change as it is saved; a client that fell
//! too far behind gets a fresh `snapshot` instead of the missed events.

use std::convert::Infallible;
use std::time::Duration;

use asg_shared::events::ConversationEvent;
use axum::Extension;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use futures::stream::{self, StreamExt};
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;

use super::AppState;
use super::auth::CredentialExpiry;
use super::error::ApiError;
use super::extract::{Caller, parse_uuid};
use crate::engine::{Engine, Subscription};

/// Streams a conversation's events.
#[utoipa::path(get, path = "/conversations/{id}/events", tag = "conversations",
    params(("id" = String, Path, description = "Conversation UUID")),
    responses(
        (status = 200, description = "`text/event-stream`; each `data:` line is one JSON event (`type`: snapshot, turn_started, message, approval_requested, approval_resolved, status, turn_finished)", body = ConversationEvent),
        (status = 400, description = "The id is not a UUID", body = asg_shared::rest::ErrorBody),
        (status = 404, description = "Unknown conversation", body = asg_shared::rest::ErrorBody),
        (status = 503, description = "Too many open event streams (`limits`)", body = asg_shared::rest::ErrorBody),
    ))]
pub async fn conversations_events(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
    until: Option<Extension<CredentialExpiry>>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let id = parse_uuid("conversation id", &id)?;
    super::access::readable(&state.engine, &caller, id).await?;
    let not_found = || ApiError::not_found(format!("conversation {id} not found"));
    // Subscribe before reading the snapshot so no change falls in between.
    let receiver = state.engine.subscribe(id).await?;
    let first = state
        .engine
        .get(id)
        .await?
        .map(|conversation| ConversationEvent::Snapshot {
            conversation: Box::new((*conversation).clone()),
        })
        .ok_or_else(not_found)?;
    let engine = state.engine.clone();
    Ok(live_events(
        first,
        receiver,
        move || snapshot(engine.clone(), id),
        |event| std::future::ready(Some(event)),
        state.shutdown.clone(),
        until.map(|Extension(at)| at),
    ))
}

/// An event stream: `first`, then each event received that `keep`
/// passes on, with `on_lag`'s fresh state in place of events a slow
/// client missed (`None` ends the stream); it ends at shutdown. Keeps its
/// subscription (and so its place among the open streams) until the
/// client goes away.
pub(crate) fn live_events<E, Lag, Kept>(
    first: E,
    receiver: Subscription<E>,
    on_lag: impl Fn() -> Lag + Send + Sync + 'static,
    keep: impl Fn(E) -> Kept + Send + Sync + 'static,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    until: Option<CredentialExpiry>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>>
where
    E: Serialize + Clone + Send + 'static,
    Lag: std::future::Future<Output = Option<E>> + Send,
    Kept: std::future::Future<Output = Option<E>> + Send,
{
    let calls = std::sync::Arc::new((on_lag, keep));
    let live = stream::unfold(receiver, move |mut receiver| {
        let calls = calls.clone();
        async move {
            loop {
                let event = match receiver.recv().await {
                    Ok(event) => event,
                    Err(RecvError::Lagged(_)) => (calls.0)().await?,
                    Err(RecvError::Closed) => return None,
                };
                if let Some(event) = (calls.1)(event).await {
                    return Some((event, receiver));
                }
            }
        }
    });
    let events = stream::once(async move { first })
        .chain(live)
        .take_until(async move {
            tokio::select! {
                _ = shutdown.wait_for(|down| *down) => {}
                () = expired(until) => {}
            }
        })
        .map(|event| Ok(Event::default().json_data(&event).unwrap_or_default()));
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// Resolves when the credential that opened a stream expires (never for
/// an API key or without authentication): a revoked or expired token
/// does not keep reading.
async fn expired(until: Option<CredentialExpiry>) {
    let Some(CredentialExpiry(at)) = until else {
        return std::future::pending().await;
    };
    let left = at
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    tokio::time::sleep(left).await;
}

async fn snapshot(engine: Engine, id: uuid::Uuid) -> Option<ConversationEvent> {
    engine
        .get(id)
        .await
        .ok()
        .flatten()
        .map(|conversation| ConversationEvent::Snapshot {
            conversation: Box::new((*conversation).clone()),
        })
}
