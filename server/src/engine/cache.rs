//! What the engine does over a store of one process (the JSON files):
//! records the turns a crash left unfinished at start, and drops idle
//! cached conversations so memory does not grow with history (their last
//! versions stay in the read cache, which is bounded). (Over a shared
//! store the replica sweep does both, `replicas.rs`.)

use std::time::Duration;

use super::store_call::stored;
use super::{Engine, EngineError};

/// How often idle cached conversations are dropped.
const EVICT_EVERY: Duration = Duration::from_secs(2);

impl Engine {
    /// Records as interrupted every turn the store found unfinished when
    /// it was opened: an approved call that was executing is reported
    /// "may have run" and never run again.
    pub(crate) async fn recover_unfinished(&self) -> Result<(), EngineError> {
        let inner = &self.inner;
        let unfinished = stored(&inner.store, |s| s.abandoned()).await?;
        for id in unfinished {
            tracing::warn!(conversation = %id, "a turn was interrupted by a restart; recording it as interrupted, nothing re-run");
            let slot = inner.slot(id).await?;
            inner.record_interrupted(&slot).await?;
        }
        Ok(())
    }

    /// Drops the cached conversations nothing uses now, as every
    /// [`EVICT_EVERY`] (tests).
    #[cfg(test)]
    pub(crate) fn evict_idle_now(&self) {
        self.inner.evict_idle();
    }

    /// Drops cached conversations nothing uses, every [`EVICT_EVERY`].
    pub(crate) fn start_eviction(&self) {
        let inner = std::sync::Arc::downgrade(&self.inner);
        self.inner.expiry.spawn_background(async move {
            loop {
                tokio::time::sleep(EVICT_EVERY).await;
                let Some(inner) = inner.upgrade() else {
                    return;
                };
                inner.evict_idle();
            }
        });
    }
}
