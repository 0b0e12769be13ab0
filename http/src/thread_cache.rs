//! Giving back what an allocator keeps per thread once the thread has
//! nothing to do.
//!
//! jemalloc (the agent's allocator) keeps a cache of freed blocks in each
//! thread, emptied as that thread allocates again. A thread that goes
//! idle after a burst keeps its cache: after 1,000 clients did turns for
//! 30 s, the idle agent held 26 MiB of its own memory (`RssAnon`) against
//! 10 MiB with the thread caches off, which cost a tenth of the turns a
//! second under load. So the caches stay on, and each long-lived thread
//! gives its cache back when it goes idle after work
//! ([`IdleFlush::idle`]: the storage and checkpoint threads) or, for
//! tokio's workers, when one parks and has not done so for
//! [`PARKED_FLUSH_EVERY`] ([`flush_on_park`]).
//!
//! The library does not know the allocator: the binary that chose it
//! says how to flush ([`set_flush`]); without that every call here does
//! nothing.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The most often a tokio worker gives its cache back when it parks.
pub const PARKED_FLUSH_EVERY: Duration = Duration::from_secs(1);

/// How long a thread that takes jobs from a queue (a storage thread)
/// waits for the next before it counts as idle ([`IdleFlush::idle`]).
pub const IDLE_AFTER: Duration = Duration::from_secs(1);

static FLUSH: OnceLock<fn()> = OnceLock::new();

/// Sets how the calling thread's allocator cache is given back (once per
/// process; a second call is ignored).
pub fn set_flush(flush: fn()) {
    let _ = FLUSH.set(flush);
}

/// Gives back the calling thread's allocator cache, when a flush is set.
pub fn flush() {
    if let Some(flush) = FLUSH.get() {
        flush();
    }
}

/// For a thread that waits for work: remembers whether it worked since
/// it last gave its cache back.
#[derive(Debug, Default)]
pub struct IdleFlush {
    worked: bool,
}

impl IdleFlush {
    /// The thread did some work.
    pub fn worked(&mut self) {
        self.worked = true;
    }

    /// The thread found nothing to do: gives its cache back, once after
    /// each stretch of work. Answers whether it did.
    pub fn idle(&mut self) -> bool {
        let flushed = std::mem::take(&mut self.worked);
        if flushed {
            flush();
        }
        flushed
    }
}

thread_local! {
    static LAST_PARKED_FLUSH: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// For tokio's `on_thread_park`: gives the worker's cache back when it
/// has not for [`PARKED_FLUSH_EVERY`] (a busy worker parks many times a
/// second). An idle agent's own timers wake its workers every few
/// seconds, so a worker left with a full cache gives it back soon.
pub fn flush_on_park() {
    let now = Instant::now();
    let due = LAST_PARKED_FLUSH
        .get()
        .is_none_or(|last| now.duration_since(last) >= PARKED_FLUSH_EVERY);
    if due {
        LAST_PARKED_FLUSH.set(Some(now));
        flush();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static FLUSHES: AtomicUsize = AtomicUsize::new(0);

    fn count() {
        FLUSHES.fetch_add(1, Ordering::SeqCst);
    }

    // One test: the flush is set once per process.
    #[test]
    fn a_thread_flushes_once_after_each_stretch_of_work_and_a_parking_worker_once_a_second() {
        set_flush(count);
        let mut thread = IdleFlush::default();
        assert!(!thread.idle(), "nothing to give back before any work");
        thread.worked();
        thread.worked();
        assert!(thread.idle());
        assert!(!thread.idle(), "idle again without work: no second flush");
        assert_eq!(FLUSHES.load(Ordering::SeqCst), 1);

        std::thread::spawn(|| {
            flush_on_park();
            flush_on_park();
            flush_on_park();
        })
        .join()
        .unwrap();
        assert_eq!(
            FLUSHES.load(Ordering::SeqCst),
            2,
            "one flush for three parks"
        );
        LAST_PARKED_FLUSH.set(Some(Instant::now() - PARKED_FLUSH_EVERY));
        flush_on_park();
        assert_eq!(
            FLUSHES.load(Ordering::SeqCst),
            3,
            "a second later it flushes again"
        );
    }
}
