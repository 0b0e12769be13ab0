//! Store calls on the blocking pool, with the engine's error mapping: the
//! one way the engine reaches its [`Store`].
//!
//! The `Store` trait blocks (file and directory syncs, the catalog's
//! SQLite, PostgreSQL through its runtime handle), so the engine never
//! calls it on a runtime thread. A store failure becomes
//! [`EngineError::Store`] carrying the [`StoreError`] as its source; a
//! blocking task that stopped (a panic in the store) is not the store's
//! answer but a bug, [`EngineError::Internal`].

use std::sync::Arc;

use asg_shared::Conversation;

use super::EngineError;
use crate::store::{Store, StoreError};

/// Runs a store call on the blocking pool (stores block); the call's own
/// result is the caller's to judge.
pub(crate) async fn blocking<T: Send + 'static>(
    store: &Arc<dyn Store>,
    call: impl FnOnce(&dyn Store) -> T + Send + 'static,
) -> Result<T, EngineError> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || call(store.as_ref()))
        .await
        .map_err(|e| EngineError::Internal(format!("a store call stopped: {e}")))
}

/// A store call on the blocking pool, its error as the engine's.
pub(crate) async fn stored<T: Send + 'static>(
    store: &Arc<dyn Store>,
    call: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, EngineError> {
    Ok(blocking(store, call).await??)
}

/// Saves `conversation` durably on the blocking pool.
pub(crate) async fn save(
    store: &Arc<dyn Store>,
    conversation: Arc<Conversation>,
) -> Result<(), EngineError> {
    stored(store, move |s| s.save(&conversation)).await
}
