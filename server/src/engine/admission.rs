//! Admission of turns under load: at most `limits.max_running_turns` run
//! at once; the next `limits.max_queued_turns` wait for a place in
//! arrival order (tokio's semaphore is fair); past that a request is
//! refused at once with [`EngineError::Overloaded`] (the doors answer 503
//! with `Retry-After`) instead of joining a queue that would make every
//! request wait seconds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::EngineError;

/// Seconds a refused client is told to wait before retrying.
pub const RETRY_AFTER_SECS: u64 = 1;

/// The places for running turns and the queue before them.
pub(crate) struct Admission {
    running: Arc<Semaphore>,
    queued: AtomicUsize,
    max_queued: usize,
}

/// Counts one waiting request while it waits (also when it is dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Admission {
    /// `max_running` turns at once (at least one), `max_queued` waiting.
    pub(crate) fn new(max_running: usize, max_queued: usize) -> Admission {
        Admission {
            running: Arc::new(Semaphore::new(max_running.max(1))),
            queued: AtomicUsize::new(0),
            max_queued,
        }
    }

    /// A place to run a turn, held until the permit is dropped: at once
    /// when one is free, after the turns queued before it otherwise, or
    /// [`EngineError::Overloaded`] when the queue is full.
    pub(crate) async fn admit(&self) -> Result<OwnedSemaphorePermit, EngineError> {
        let permit = self.wait_for_place().await?;
        crate::metrics::metrics().turn_started();
        Ok(permit)
    }

    async fn wait_for_place(&self) -> Result<OwnedSemaphorePermit, EngineError> {
        if let Ok(permit) = self.running.clone().try_acquire_owned() {
            return Ok(permit);
        }
        if self.queued.fetch_add(1, Ordering::SeqCst) >= self.max_queued {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(EngineError::Overloaded {
                retry_after_secs: RETRY_AFTER_SECS,
            });
        }
        let _waiting = Waiting(&self.queued);
        self.running
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| EngineError::ShuttingDown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_running_and_queued_places_requests_are_refused() {
        let admission = Arc::new(Admission::new(2, 1));
        let first = admission.admit().await.unwrap();
        let _second = admission.admit().await.unwrap();
        let queued = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit().await.map(|_| ()) }
        });
        while admission.queued.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let refused = admission.admit().await.unwrap_err();
        assert!(
            matches!(
                refused,
                EngineError::Overloaded {
                    retry_after_secs: 1
                }
            ),
            "{refused:?}"
        );
        drop(first);
        queued.await.unwrap().unwrap();
        assert_eq!(admission.queued.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_request_dropped_while_queued_gives_its_place_back() {
        let admission = Admission::new(1, 1);
        let _running = admission.admit().await.unwrap();
        let gave_up =
            tokio::time::timeout(std::time::Duration::from_millis(20), admission.admit()).await;
        assert!(gave_up.is_err(), "no place was free");
        assert_eq!(admission.queued.load(Ordering::SeqCst), 0);
        let again =
            tokio::time::timeout(std::time::Duration::from_millis(20), admission.admit()).await;
        assert!(again.is_err(), "queued again rather than refused");
    }
}
