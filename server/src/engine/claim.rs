//! Claiming a conversation before changing it, and reading through the
//! store.
//!
//! The engine holds no conversation it does not use: it reads them from
//! the store and caches the ones in use (their slots). A change takes the
//! slot's lock; in one process that is enough (the cached slot is the
//! latest version). With a shared store (PostgreSQL, several replicas) it
//! also claims the conversation in the store ([`Store::claim`]: a lease
//! renewed while the turn runs) and starts from the stored version, so one
//! turn at a time runs per conversation across every replica and none
//! starts from a stale copy. A claim held by another
//! replica is waited for up to [`CLAIM_WAIT`] (a decision racing a turn
//! elsewhere then sees its outcome, as it would locally), then refused as
//! busy.
//!
//! A claim starts from a settled version. Under a claim no other turn
//! runs on the conversation, anywhere, so a turn marked in progress or an
//! approval `executing` in the version it starts from was left by a turn
//! that no longer runs (its replica died and the lease expired, or its
//! last save failed): the claim records it as interrupted
//! (the core's `Interrupted` transition: "may have run", never re-run) and
//! saves that before its caller sees the conversation. Whatever the caller
//! then does — even answering 409 and releasing at once — it never acts
//! on, or gives back, a state with something in flight and nobody
//! holding it.

use std::sync::Arc;
use std::time::Duration;

use asg_shared::{ApprovalState, Conversation};
use tokio::sync::OwnedMutexGuard;
use uuid::Uuid;

use super::index::Slot;
use super::store_call::{self, blocking, stored};
use super::{EngineError, Inner, transition};
use crate::store::{Claim, Store, StoreError};

/// Longest wait for a conversation another replica is changing.
pub(crate) const CLAIM_WAIT: Duration = Duration::from_secs(30);
/// First pause between two attempts (doubling up to 200 ms).
const FIRST_PAUSE: Duration = Duration::from_millis(10);

/// A conversation this process may change: its slot lock, and in a
/// shared store its lease, given back together.
pub(crate) struct Claimed {
    guard: Option<OwnedMutexGuard<()>>,
    lease: Option<(Arc<dyn Store>, Uuid)>,
}

impl Claimed {
    /// Gives the claim back now (the next claim of this conversation,
    /// here or on another replica, can start at once).
    pub(crate) async fn release(mut self) {
        if let Some((store, id)) = self.lease.take() {
            let _ = blocking(&store, move |s| s.release(id)).await;
        }
        self.guard.take();
    }
}

impl Drop for Claimed {
    /// A claim dropped without [`Claimed::release`] (an early return, a
    /// turn stopped at shutdown): released in the background, the slot
    /// lock held until then.
    fn drop(&mut self) {
        let Some((store, id)) = self.lease.take() else {
            return;
        };
        let guard = self.guard.take();
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return; // no runtime left: the lease expires by itself
        };
        handle.spawn(async move {
            let _ = blocking(&store, move |s| s.release(id)).await;
            drop(guard);
        });
    }
}

/// One attempt to claim `id`. A claim taken after its caller went away
/// (a dropped request) is given back at once, never left renewed.
async fn take(store: &Arc<dyn Store>, id: Uuid) -> Result<Result<Claim, StoreError>, EngineError> {
    let (answer, taken) = tokio::sync::oneshot::channel();
    // The call answers through `answer`, so a dropped caller still has
    // its claim given back.
    let store = store.clone();
    let _queued = super::store_call::threads().submit(move || {
        if let Err(Ok(Claim::Taken(_))) = answer.send(store.claim(id)) {
            store.release(id);
        }
    });
    taken
        .await
        .map_err(|_| EngineError::Internal(format!("claiming conversation {id} stopped")))
}

impl Inner {
    /// Whether several processes share the store.
    pub(crate) fn shared(&self) -> bool {
        self.store.is_shared()
    }

    /// Claims the conversation of `slot`; its slot then holds the latest
    /// version (with a shared store, the stored one), settled: nothing
    /// left in flight by a turn that no longer runs.
    pub(crate) async fn claim(&self, slot: &Arc<Slot>) -> Result<Claimed, EngineError> {
        let claimed = self.take_claim(slot).await?;
        match self.settle_leftover(slot).await {
            Ok(()) => Ok(claimed),
            Err(error) => {
                // Given back in flight: the store keeps it for the sweep
                // (an expired lease), nothing is lost.
                claimed.release().await;
                Err(error)
            }
        }
    }

    /// Records what a turn that no longer runs left in flight in the
    /// claimed version as interrupted, and saves it (see the module's
    /// documentation).
    async fn settle_leftover(&self, slot: &Arc<Slot>) -> Result<(), EngineError> {
        let snapshot = slot.snapshot();
        let command = transition::Command::Interrupted;
        let settled = self
            .with_facts(|facts| {
                transition::apply(&snapshot, transition::Who::System, command, facts)
            })
            .map_err(|refusal| super::refused(refusal, &snapshot))?;
        if settled.effects.is_empty() {
            return Ok(());
        }
        let conversation = settled.conversation;
        tracing::warn!(conversation = %conversation.id, "a turn that no longer runs left this conversation unfinished (its replica stopped, or its last save failed); recorded as interrupted, nothing re-run");
        let conversation = Arc::new(conversation);
        store_call::save(&self.store, conversation.clone()).await?;
        self.publish(slot, conversation);
        // An approved call it was running may have run: its result is
        // "interrupted".
        if let Some(call) = snapshot
            .pending()
            .iter()
            .find(|p| p.state == ApprovalState::Executing)
        {
            crate::metrics::metrics().approved_call(&call.tool_name, "interrupted");
        }
        Ok(())
    }

    /// Takes the slot's lock and, over a shared store, the lease.
    async fn take_claim(&self, slot: &Arc<Slot>) -> Result<Claimed, EngineError> {
        let guard = slot.lock_owned().await;
        let mut claimed = Claimed {
            guard: Some(guard),
            lease: None,
        };
        if !self.shared() {
            // One process: the slot lock is the claim, and the cached slot
            // is the latest version (a slot is cached only from a read no
            // eviction raced, `ConversationIndex::cache`).
            return Ok(claimed);
        }
        let id = slot.snapshot().id;
        let started = tokio::time::Instant::now();
        let mut pause = FIRST_PAUSE;
        loop {
            match take(&self.store, id).await? {
                Ok(Claim::Taken(stored)) => {
                    let waited = pause != FIRST_PAUSE; // doubled after each busy answer
                    crate::metrics::metrics().store_claim(if waited { "waited" } else { "taken" });
                    claimed.lease = Some((self.store.clone(), id));
                    if let Some(stored) = stored {
                        slot.refresh(Arc::new(*stored), false);
                    }
                    return Ok(claimed);
                }
                Ok(Claim::Busy) if started.elapsed() < CLAIM_WAIT => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                Ok(Claim::Busy) => {
                    crate::metrics::metrics().store_claim("busy");
                    return Err(EngineError::Busy(id));
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Runs `change` under the conversation's claim, then releases it.
    pub(crate) async fn claimed<T, Change>(
        &self,
        slot: &Arc<Slot>,
        change: impl FnOnce() -> Change,
    ) -> Result<T, EngineError>
    where
        Change: std::future::Future<Output = Result<T, EngineError>>,
    {
        let claim = self.claim(slot).await?;
        let outcome = change().await;
        claim.release().await;
        outcome
    }

    /// The conversation's slot: cached, or made from the version the read
    /// cache keeps (in one process), or read from the store and cached.
    pub(crate) async fn slot(&self, id: Uuid) -> Result<Arc<Slot>, EngineError> {
        loop {
            if let Some(slot) = self.index.get(id) {
                return Ok(slot);
            }
            let stamp = self.index.evictions();
            let read = match self.kept_here(id) {
                Some(kept) => kept,
                None => stored(&self.store, move |s| s.load(id))
                    .await?
                    .map(Arc::new)
                    .ok_or(EngineError::ConversationNotFound(id))?,
            };
            if let Some(slot) = self.index.cache(read, stamp) {
                return Ok(slot);
            }
        }
    }

    /// The read cache's version of `id` when one process owns the store:
    /// there every save goes through a slot and drops it from the read
    /// cache, and a slot dropped idle leaves its last saved version there
    /// ([`Inner::evict_idle`]), so it is the latest. Over a shared store
    /// another replica may have saved since.
    fn kept_here(&self, id: Uuid) -> Option<Arc<Conversation>> {
        if self.shared() {
            return None;
        }
        self.reads.get(id)
    }

    /// Drops the slots nothing uses. In one process each dropped slot's
    /// last saved version stays in the read cache, so the next turn or
    /// read of it needs no store read (the slot was the latest version).
    /// Then the read cache lets go of what was not read for a while.
    pub(crate) fn evict_idle(&self) {
        if self.shared() {
            self.index.evict_idle(|_| {});
        } else {
            self.index.evict_idle(|last| self.reads.keep(last));
        }
        self.reads.sweep_if_due(std::time::Instant::now());
    }

    /// The current version of a conversation: the slot's in one process,
    /// else the read cache's (`read_cache.rs`), else the stored one.
    pub(crate) async fn current(&self, id: Uuid) -> Result<Option<Arc<Conversation>>, EngineError> {
        if !self.shared()
            && let Some(slot) = self.index.get(id)
        {
            return Ok(Some(slot.snapshot()));
        }
        if let Some(kept) = self.reads.get(id)
            && self.still_stored(&kept).await?
        {
            return Ok(Some(kept));
        }
        let ticket = self.reads.ticket(id);
        let stored = stored(&self.store, move |s| s.load(id))
            .await?
            .map(Arc::new);
        if let Some(conversation) = &stored {
            self.reads.offer(ticket, conversation.clone());
        }
        Ok(stored)
    }

    /// Whether a kept version is still the stored one: always in one
    /// process (every save goes through it); over a shared store, when
    /// the stored version was saved at the same microsecond (another
    /// replica may have changed it a moment before its change note
    /// arrives), a check much cheaper than reading it.
    async fn still_stored(&self, kept: &Conversation) -> Result<bool, EngineError> {
        if !self.shared() {
            return Ok(true);
        }
        let id = kept.id;
        let saved_at = stored(&self.store, move |s| s.saved_at(id)).await?;
        Ok(saved_at.is_some_and(|at| at.timestamp_micros() == kept.updated_at.timestamp_micros()))
    }

    /// Publishes a version this process saved to the slot's readers and
    /// streams; the read cache's older copy is dropped.
    pub(crate) fn publish(&self, slot: &Slot, conversation: Arc<Conversation>) {
        self.reads.forget(conversation.id);
        slot.publish(conversation);
    }

    /// The conversation approval `uuid` belongs to.
    pub(crate) async fn conversation_of_approval(
        &self,
        uuid: Uuid,
    ) -> Result<Option<Uuid>, EngineError> {
        stored(&self.store, move |s| s.conversation_of_approval(uuid)).await
    }

    /// The slot of the conversation approval `uuid` belongs to.
    pub(crate) async fn slot_of_approval(&self, uuid: Uuid) -> Result<Arc<Slot>, EngineError> {
        let id = self
            .conversation_of_approval(uuid)
            .await?
            .ok_or(EngineError::ApprovalNotFound(uuid))?;
        self.slot(id).await.map_err(|error| match error {
            EngineError::ConversationNotFound(_) => EngineError::ApprovalNotFound(uuid),
            other => other,
        })
    }

    /// Whether a turn runs on the conversation, here or on another replica.
    pub(crate) async fn is_running(&self, id: Uuid) -> bool {
        if self.index.get(id).is_some_and(|slot| slot.is_busy()) {
            return true;
        }
        self.shared()
            && blocking(&self.store, move |s| s.claimed_elsewhere(id))
                .await
                .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use asg_tests::pg::TestDb;

    use super::*;
    use crate::context::RequestContext;
    use crate::engine::Engine;
    use crate::store::PgStore;

    async fn engine_on(store: Arc<dyn Store>) -> Engine {
        crate::test_support::scripted_engine(store, "rules:\n  - reply: \"ok\"\n").await
    }

    /// What a replica that died in an approved call leaves: the approval
    /// `executing`, the turn marked, its lease expired.
    async fn left_by_a_dead_replica(db: &TestDb) -> (Uuid, Uuid) {
        let (id, uuid) = (Uuid::new_v4(), Uuid::new_v4());
        let mut doc = asg_tests::executing_conversation(id, uuid);
        doc["turn_in_progress"] = true.into();
        let conversation: Conversation = serde_json::from_value(doc).unwrap();
        let dead: Arc<dyn Store> = Arc::new(PgStore::open(&db.url, 1).await.unwrap());
        blocking(&dead, move |s| {
            assert!(matches!(s.claim(id), Ok(Claim::Taken(None))));
            s.save(&conversation).unwrap();
        })
        .await
        .unwrap();
        drop(dead); // no renewals any more
        let pool = crate::store::postgres::connect(&db.url, 1).await.unwrap();
        sqlx::query("UPDATE conversations SET lease_until = now() - interval '1 minute'")
            .execute(&pool)
            .await
            .unwrap();
        (id, uuid)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_decision_meeting_a_dead_replicas_executing_call_leaves_it_settled() {
        let db = TestDb::create().await;
        let (id, uuid) = left_by_a_dead_replica(&db).await;
        let store: Arc<dyn Store> = Arc::new(PgStore::open(&db.url, 2).await.unwrap());
        let engine = engine_on(store.clone()).await;
        // The second decision of a pair, arriving once the lease expired:
        // the call is not decided again (409), and what it found is
        // recorded, not given back in flight.
        let refused = engine
            .resolve_approval(uuid, &RequestContext::default(), true, None)
            .await;
        let conversation = match refused {
            Err(EngineError::AlreadyResolved { conversation, .. }) => conversation,
            Err(other) => panic!("not refused as already resolved: {other}"),
            Ok(_) => panic!("decided again"),
        };
        for seen in [
            conversation,
            Arc::new(stored(&store, move |s| s.load(id)).await.unwrap().unwrap()),
        ] {
            assert!(!seen.turn_in_progress, "{seen:?}");
            assert!(seen.pending().is_empty(), "{seen:?}");
            assert!(
                seen.messages
                    .iter()
                    .any(|m| m.content.contains("may have run")),
                "{seen:?}"
            );
        }
        let abandoned = stored(&store, |s| s.abandoned()).await.unwrap();
        assert!(abandoned.is_empty(), "{abandoned:?}");
        assert!(!engine.is_running(id).await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_replica_never_serves_its_kept_copy_after_another_changed_it() {
        let db = TestDb::create().await;
        let open =
            || async { Arc::new(PgStore::open(&db.url, 2).await.unwrap()) as Arc<dyn Store> };
        let (a, b) = (engine_on(open().await).await, engine_on(open().await).await);
        let ctx = RequestContext::default();
        let id = a.create(&ctx, None).await.unwrap().conversation.id;
        let kept = b.get(id).await.unwrap().unwrap();
        assert_eq!(b.get(id).await.unwrap().unwrap().messages, kept.messages);
        // A changes it; B reads at once, before any change note can have
        // been handled: the kept copy is not the stored one any more.
        for n in 0..5 {
            let text = format!("change {n}");
            a.send(id, &ctx, text.clone()).await.unwrap();
            let seen = b.get(id).await.unwrap().unwrap();
            assert!(
                seen.messages.iter().any(|m| m.content == text),
                "B served an older version after change {n}"
            );
        }
    }
}
