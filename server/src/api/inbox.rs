//! `GET /events`: the operator inbox, as server-sent events. Approval
//! requests, decisions and status changes across every conversation, so
//! an operator's screen follows them without one stream per conversation.
//! The stream starts with a `pending` event listing the approvals that
//! wait now and the caller may see (the oldest [`FIRST_LIST_LIMIT`], read
//! as one page of the store); a client that fell too far behind gets a
//! fresh `pending`.

use std::convert::Infallible;

use asg_shared::events::InboxEvent;
use axum::Extension;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use futures::Stream;

use super::AppState;
use super::auth::CredentialExpiry;
use super::error::ApiError;
use super::events::live_events;
use super::extract::Caller;
use std::collections::HashMap;

use uuid::Uuid;

use crate::auth::policy::ReadScope;
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
    until: Option<Extension<CredentialExpiry>>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    // Subscribe before listing so no request falls in between.
    let receiver = state.engine.subscribe_inbox()?;
    let first = pending(state.engine.clone(), caller.clone()).await?;
    let (engine, for_lag) = (state.engine.clone(), caller.clone());
    let keep_engine = state.engine.clone();
    let readers = std::sync::Arc::new(Readers::default());
    Ok(live_events(
        first,
        receiver,
        move || {
            let (engine, caller) = (engine.clone(), for_lag.clone());
            async move { pending(engine, caller).await.ok() }
        },
        move |event| {
            let (engine, caller, readers) = (keep_engine.clone(), caller.clone(), readers.clone());
            async move {
                let seen = readers.visible(&engine, &caller, &event).await;
                seen.then_some(event)
            }
        },
        state.shutdown.clone(),
        until.map(|Extension(at)| at),
    ))
}

/// What a stream knows of the conversations its events were about: the
/// owner and whether it has had an approval (the two facts `can_read`
/// needs), so each event after the first of a conversation is judged
/// without reading it again. Bounded: when full it starts over.
#[derive(Default)]
struct Readers {
    known: std::sync::Mutex<HashMap<Uuid, (Option<String>, bool)>>,
}

/// Conversations one stream remembers.
const READERS_KEPT: usize = 4096;

impl Readers {
    /// Whether `caller` may see an inbox event: approvals it may list,
    /// and changes of conversations it may read.
    async fn visible(&self, engine: &Engine, caller: &Principal, event: &InboxEvent) -> bool {
        let (conversation, about_approval) = match event {
            InboxEvent::Pending { .. } => return true,
            InboxEvent::ApprovalRequested { approval }
            | InboxEvent::ApprovalReminder { approval } => {
                return policy::can_see_approval(caller, approval);
            }
            InboxEvent::ApprovalResolved {
                conversation_id, ..
            } => (*conversation_id, true),
            InboxEvent::Status {
                conversation_id,
                status,
            } => (
                *conversation_id,
                *status == asg_shared::ConversationStatus::WaitingApproval,
            ),
        };
        let Some((owner, had)) = self.facts(engine, conversation).await else {
            return false;
        };
        let had = had || about_approval;
        if about_approval {
            self.remember(conversation, owner.clone(), true);
        }
        ReadScope::of(caller).admits(owner.as_deref(), had)
    }

    async fn facts(&self, engine: &Engine, id: Uuid) -> Option<(Option<String>, bool)> {
        if let Some(known) = self.lock().get(&id) {
            return Some(known.clone());
        }
        let conversation = engine.get(id).await.ok().flatten()?;
        let facts = (conversation.owner.clone(), conversation.had_approval());
        self.remember(id, facts.0.clone(), facts.1);
        Some(facts)
    }

    fn remember(&self, id: Uuid, owner: Option<String>, had_approval: bool) {
        let mut known = self.lock();
        if known.len() >= READERS_KEPT && !known.contains_key(&id) {
            known.clear();
        }
        known.insert(id, (owner, had_approval));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, (Option<String>, bool)>> {
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Most approvals in a stream's `pending` list; more are paged with
/// `GET /approvals`.
pub const FIRST_LIST_LIMIT: usize = 500;

/// The approvals `caller` may see, oldest first: one page of the store,
/// filtered there (never every pending approval of every conversation).
async fn pending(engine: Engine, caller: Principal) -> Result<InboxEvent, ApiError> {
    let query = crate::store::PendingQuery {
        questions: None,
        requested_by: policy::approvals_seen_by(&caller),
        limit: FIRST_LIST_LIMIT,
        ..Default::default()
    };
    let mut approvals = engine.pending_page(query).await?.approvals;
    approvals.retain(|a| policy::can_see_approval(&caller, a));
    Ok(InboxEvent::Pending { approvals })
}
