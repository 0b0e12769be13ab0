//! What the engine does over a shared store (several replicas on one
//! PostgreSQL): follow changes made by other replicas, take over the
//! conversations of a replica that died mid-turn, drop idle cached
//! conversations.
//!
//! - Live events: every commit is notified (`LISTEN/NOTIFY`); a replica
//!   with an open event stream on that conversation reads the new version
//!   and publishes it (its messages, approvals and status, and the turn's
//!   start and end), so a stream on replica 2 follows a turn on replica 1.
//! - Abandoned turns: a lease that outlived its holder (no renewal for
//!   `store::LEASE_TTL`) is taken over every [`SWEEP`] by some replica,
//!   which records the turn as interrupted: an approved call that was
//!   executing is reported "may have run" and never run again.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use uuid::Uuid;

use super::claim::blocking;
use super::index::Slot;
use super::{Engine, EngineError, Inner, approval, save_blocking};

/// How often abandoned leases are looked for and idle slots dropped.
const SWEEP: Duration = Duration::from_secs(2);

impl Engine {
    /// Starts following other replicas' changes and the sweep.
    pub(crate) fn start_replica_tasks(&self) {
        let inner = Arc::downgrade(&self.inner);
        self.inner.store.watch(Arc::new(move |id| {
            if let Some(inner) = inner.upgrade() {
                inner.follow_change(id);
            }
        }));
        let engine = self.clone();
        self.inner.expiry.spawn_background(async move {
            loop {
                tokio::time::sleep(SWEEP).await;
                engine.sweep().await;
            }
        });
    }

    /// Takes over abandoned conversations; drops idle cached slots.
    async fn sweep(&self) {
        let inner = &self.inner;
        let abandoned = match blocking(&inner.store, |s| s.abandoned()).await {
            Ok(Ok(ids)) => ids,
            Ok(Err(error)) => {
                tracing::debug!(%error, "cannot look for abandoned conversations");
                Vec::new()
            }
            Err(_) => Vec::new(),
        };
        for id in abandoned {
            if inner.index.get(id).is_some_and(|slot| slot.is_busy()) {
                continue; // in use here: looked at again next sweep
            }
            tracing::warn!(conversation = %id, "a replica stopped in the middle of a turn on this conversation; taking it over");
            let taken = match inner.slot(id).await {
                Ok(slot) => inner.record_interrupted(&slot).await,
                Err(error) => Err(error),
            };
            if let Err(error) = taken {
                tracing::warn!(conversation = %id, %error, "cannot take over an abandoned conversation yet");
            }
        }
        inner.index.evict_idle();
    }
}

impl Inner {
    /// Another replica (or this one) saved conversation `id`: a slot
    /// followed here publishes the new version.
    pub(crate) fn follow_change(self: Arc<Self>, id: Uuid) {
        let Some(slot) = self.index.get(id) else {
            return;
        };
        if !slot.is_followed() || !slot.start_following() {
            return;
        }
        tokio::spawn(async move {
            // Under the conversation's lock: never between a claim here
            // and its release, and each read is the latest committed, so
            // an older version is never published after a newer one.
            let _guard = slot.lock_owned().await;
            slot.followed();
            if let Ok(Ok(Some(stored))) = blocking(&self.store, move |s| s.load(id)).await {
                slot.refresh(Arc::new(stored), true);
            }
        });
    }

    /// Records a turn left unfinished on `slot` (by a shutdown, or by a
    /// replica that died) as interrupted, under a claim: an executing
    /// approval is reported "may have run", never re-run.
    pub(crate) async fn record_interrupted(&self, slot: &Arc<Slot>) -> Result<(), EngineError> {
        let claim = self.claim(slot).await?;
        let mut conversation = (*slot.snapshot()).clone();
        let mut result = Ok(());
        if approval::recover_interrupted(&mut conversation, Utc::now()) {
            tracing::warn!(conversation = %conversation.id, "a turn was interrupted; recorded as interrupted, nothing re-run");
            let conversation = Arc::new(conversation);
            result = save_blocking(&self.store, conversation.clone()).await;
            if result.is_ok() {
                slot.publish(conversation);
            }
        }
        claim.release().await;
        result
    }
}
