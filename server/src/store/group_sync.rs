//! Group commit of one sync: many writers that each need "a sync that
//! began after my write" share one call of it.
//!
//! A writer calls [`GroupSync::after_write`] once its write is done. If no
//! sync runs, it runs one itself (the leader) and it covers every write
//! finished before it began; if one runs, that one may have begun before
//! the write, so the writer waits for the next, which the first writer to
//! find no sync running starts for all of them. So N concurrent writers
//! cost about two syncs, not N, and no writer returns before a sync that
//! began after its write has succeeded.

use std::io;
use std::sync::{Condvar, Mutex, PoisonError};

/// Shares one sync among the writers waiting for it.
pub struct GroupSync<F> {
    sync: F,
    state: Mutex<State>,
    done: Condvar,
}

/// A failed sync: the tickets it covered, its error, and how many of
/// their writers (besides its leader) still have to be told.
struct Failed {
    from: u64,
    to: u64,
    error: String,
    untold: u64,
}

#[derive(Default)]
struct State {
    /// Writes that asked for a sync (each one's ticket is its number).
    asked: u64,
    /// Every ticket up to this one is durable.
    synced: u64,
    /// A sync runs now.
    running: bool,
    /// Failed syncs whose writers have not all been told yet.
    failed: Vec<Failed>,
    /// Syncs run so far.
    runs: u64,
}

impl State {
    /// The error of the failed sync that covered `ticket`, told once.
    fn failure_of(&mut self, ticket: u64) -> Option<String> {
        let at = self
            .failed
            .iter()
            .position(|f| (f.from..=f.to).contains(&ticket))?;
        let failed = &mut self.failed[at];
        let error = failed.error.clone();
        failed.untold -= 1;
        if failed.untold == 0 {
            self.failed.remove(at);
        }
        Some(error)
    }
}

impl<F: Fn() -> io::Result<()>> GroupSync<F> {
    /// Shares `sync`.
    pub fn new(sync: F) -> GroupSync<F> {
        GroupSync {
            sync,
            state: Mutex::new(State::default()),
            done: Condvar::new(),
        }
    }

    /// Returns once a sync that began after this call has succeeded, or
    /// with the error of the sync that was to cover it.
    pub fn after_write(&self) -> io::Result<()> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.asked += 1;
        let ticket = state.asked;
        loop {
            if let Some(error) = state.failure_of(ticket) {
                return Err(io::Error::other(error));
            }
            if state.synced >= ticket {
                return Ok(());
            }
            if !state.running {
                return self.lead(state);
            }
            state = self
                .done
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Runs one sync for every ticket asked so far.
    fn lead(&self, mut state: std::sync::MutexGuard<'_, State>) -> io::Result<()> {
        let (from, to) = (state.synced + 1, state.asked);
        state.running = true;
        drop(state);
        let result = (self.sync)();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.running = false;
        state.runs += 1;
        match &result {
            Ok(()) => state.synced = to,
            Err(error) => {
                // A later sync does not make up for this one (a failed
                // fsync may drop the dirty pages): these writes are told,
                // later ones get a sync of their own.
                state.synced = to;
                if to > from {
                    state.failed.push(Failed {
                        from,
                        to,
                        error: error.to_string(),
                        untold: to - from,
                    });
                }
            }
        }
        self.done.notify_all();
        result
    }

    /// How many syncs ran so far.
    pub fn runs(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .runs
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// A sync that blocks until the test lets it go, counting the
    /// writers waiting on the group.
    struct Gate {
        entered: mpsc::Sender<()>,
        release: Mutex<mpsc::Receiver<()>>,
        fail: AtomicBool,
    }

    /// The sync the tests share, boxed.
    type TestSync = Box<dyn Fn() -> io::Result<()> + Send + Sync>;
    /// A group on a gated sync: where a sync's start shows, how to let
    /// it end, and the gate.
    type Gated = (
        Arc<GroupSync<TestSync>>,
        mpsc::Receiver<()>,
        mpsc::Sender<()>,
        Arc<Gate>,
    );

    fn gated() -> Gated {
        let (entered_tx, entered_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel();
        let gate = Arc::new(Gate {
            entered: entered_tx,
            release: Mutex::new(release_rx),
            fail: AtomicBool::new(false),
        });
        let inside = gate.clone();
        let sync: TestSync = Box::new(move || {
            inside.entered.send(()).unwrap();
            inside.release.lock().unwrap().recv().unwrap();
            if inside.fail.load(Ordering::SeqCst) {
                Err(io::Error::other("disk full"))
            } else {
                Ok(())
            }
        });
        let group = Arc::new(GroupSync::new(sync));
        (group, entered_rx, release_tx, gate)
    }

    fn waiting(group: &GroupSync<impl Fn() -> io::Result<()>>) -> u64 {
        let state = group.state.lock().unwrap();
        state.asked - state.synced
    }

    fn until(what: impl Fn() -> bool) {
        for _ in 0..500 {
            if what() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("timed out");
    }

    #[test]
    fn writers_that_arrive_during_a_sync_share_the_next_one() {
        let (group, entered, release, _gate) = gated();
        let finished = Arc::new(AtomicUsize::new(0));
        let spawn = |group: &Arc<GroupSync<_>>| {
            let (group, finished) = (group.clone(), finished.clone());
            std::thread::spawn(move || {
                group.after_write().unwrap();
                finished.fetch_add(1, Ordering::SeqCst);
            })
        };
        let first = spawn(&group);
        entered.recv().unwrap();
        // Five more writes finish while the first sync runs: it may have
        // begun before them, so none of them may return on it.
        let others: Vec<_> = (0..5).map(|_| spawn(&group)).collect();
        until(|| waiting(&group) == 6);
        release.send(()).unwrap();
        first.join().unwrap();
        entered.recv().unwrap();
        assert_eq!(
            finished.load(Ordering::SeqCst),
            1,
            "the others wait for a sync of their own"
        );
        release.send(()).unwrap();
        for other in others {
            other.join().unwrap();
        }
        assert_eq!(finished.load(Ordering::SeqCst), 6);
        assert_eq!(group.runs(), 2, "six writes, two syncs");
    }

    #[test]
    fn a_failed_sync_fails_exactly_the_writes_it_covered() {
        let (group, entered, release, gate) = gated();
        let write = |group: &Arc<GroupSync<_>>| {
            let group = group.clone();
            std::thread::spawn(move || group.after_write())
        };
        let first = write(&group);
        entered.recv().unwrap();
        let (second, third) = (write(&group), write(&group));
        until(|| waiting(&group) == 3);
        release.send(()).unwrap();
        assert!(first.join().unwrap().is_ok());
        // The next sync covers the second and third writes, and fails.
        entered.recv().unwrap();
        gate.fail.store(true, Ordering::SeqCst);
        release.send(()).unwrap();
        for covered in [second, third] {
            let error = covered.join().unwrap().unwrap_err();
            assert!(error.to_string().contains("disk full"), "{error}");
        }
        assert!(
            group.state.lock().unwrap().failed.is_empty(),
            "all were told"
        );
        gate.fail.store(false, Ordering::SeqCst);
        let later = write(&group);
        entered.recv().unwrap();
        release.send(()).unwrap();
        assert!(
            later.join().unwrap().is_ok(),
            "a later write gets a new sync"
        );
        assert_eq!(group.runs(), 3);
    }
}
