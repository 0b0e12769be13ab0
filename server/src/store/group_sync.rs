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
//!
//! A writer that need not wait on its thread calls
//! [`GroupSync::after_write_then`] instead: when a sync runs, its callback
//! is queued and its thread is free at once; whichever leader runs the
//! sync that covers it calls it. A leader that finds only queued
//! callbacks left after its sync (no waiting thread to lead the next one)
//! runs the next sync itself. Under the JSON store this spares a storage
//! thread (and two context switches) per save that waits for a group.

use std::io;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Told once the sync covering a write ended: `Ok` or that sync's error.
pub type Done = Box<dyn FnOnce(io::Result<()>) + Send>;

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
    /// The newest ticket a thread waits for in [`GroupSync::after_write`]:
    /// while it is not synced, that thread will lead the next sync.
    newest_waiting: u64,
    /// Failed syncs whose waiting threads have not all been told yet.
    failed: Vec<Failed>,
    /// Callbacks of writes not covered by a finished sync, by ticket.
    queued: Vec<(u64, Done)>,
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

    /// A new ticket.
    fn ask(&mut self) -> u64 {
        self.asked += 1;
        self.asked
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

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns once a sync that began after this call has succeeded, or
    /// with the error of the sync that was to cover it.
    pub fn after_write(&self) -> io::Result<()> {
        let mut state = self.lock();
        let ticket = state.ask();
        loop {
            if let Some(error) = state.failure_of(ticket) {
                return Err(io::Error::other(error));
            }
            if state.synced >= ticket {
                return Ok(());
            }
            if !state.running {
                return self.lead(state, true);
            }
            state.newest_waiting = state.newest_waiting.max(ticket);
            state = self
                .done
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Calls `done` once a sync that began after this call has ended
    /// (with its result): at once on this thread when no sync runs (this
    /// thread leads one), else later on the thread of the leader whose
    /// sync covers it.
    pub fn after_write_then(&self, done: Done) {
        let mut state = self.lock();
        let ticket = state.ask();
        state.queued.push((ticket, done));
        if !state.running {
            // The leader's own result goes to its callback, called already.
            let _ = self.lead(state, false);
        }
    }

    /// Runs one sync for every ticket asked so far (`waits_here`: the
    /// leader's own ticket is a waiting thread's, not a callback), then the
    /// next ones while only callbacks wait for one.
    fn lead(&self, state: MutexGuard<'_, State>, waits_here: bool) -> io::Result<()> {
        let (mut state, first) = self.sync_once(state, waits_here);
        // A waiting thread whose write no sync covered leads the next one
        // (woken below); else only callbacks wait, and this thread does.
        while !state.queued.is_empty() && state.newest_waiting <= state.synced && !state.running {
            state = self.sync_once(state, false).0;
        }
        first
    }

    /// One sync, the lock released while it runs. The threads it covered
    /// are woken (a failure kept in `failed` for those that did not lead);
    /// its callbacks are called, outside the lock.
    fn sync_once<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        waits_here: bool,
    ) -> (MutexGuard<'a, State>, io::Result<()>) {
        let (from, to) = (state.synced + 1, state.asked);
        state.running = true;
        drop(state);
        let result = (self.sync)();
        let mut state = self.lock();
        state.running = false;
        state.runs += 1;
        state.synced = to;
        let covered = take_covered(&mut state.queued, to);
        if let Err(error) = &result {
            // A later sync does not make up for this one (a failed fsync
            // may drop the dirty pages): these writes are told, later ones
            // get a sync of their own.
            let untold = (to + 1)
                .saturating_sub(from)
                .saturating_sub(covered.len() as u64)
                .saturating_sub(u64::from(waits_here));
            if untold > 0 {
                state.failed.push(Failed {
                    from,
                    to,
                    error: error.to_string(),
                    untold,
                });
            }
        }
        self.done.notify_all();
        drop(state);
        let failure = result.as_ref().err().map(ToString::to_string);
        for (_, done) in covered {
            done(match &failure {
                None => Ok(()),
                Some(error) => Err(io::Error::other(error.clone())),
            });
        }
        (self.lock(), result)
    }

    /// How many syncs ran so far.
    pub fn runs(&self) -> u64 {
        self.lock().runs
    }
}

/// The queued callbacks of tickets up to `to`, removed.
fn take_covered(queued: &mut Vec<(u64, Done)>, to: u64) -> Vec<(u64, Done)> {
    let (covered, later): (Vec<_>, Vec<_>) = std::mem::take(queued)
        .into_iter()
        .partition(|(ticket, _)| *ticket <= to);
    *queued = later;
    covered
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

    /// A writer on a thread of its own, waiting for its sync.
    fn write_on_a_thread(
        group: &Arc<GroupSync<TestSync>>,
    ) -> std::thread::JoinHandle<io::Result<()>> {
        let group = group.clone();
        std::thread::spawn(move || group.after_write())
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

    /// A callback that sends its result (as text) on a channel.
    fn told() -> (Done, mpsc::Receiver<Result<(), String>>) {
        let (tx, rx) = mpsc::channel();
        let done: Done = Box::new(move |result: io::Result<()>| {
            tx.send(result.map_err(|e| e.to_string())).unwrap();
        });
        (done, rx)
    }

    #[test]
    fn callbacks_queued_during_a_sync_free_their_thread_and_share_the_next_sync() {
        let (group, entered, release, _gate) = gated();
        let leader = write_on_a_thread(&group);
        entered.recv().unwrap();
        // Five writes while the first sync runs: queued, and this thread
        // goes on at once.
        let answers: Vec<_> = (0..5)
            .map(|_| {
                let (done, answer) = told();
                group.after_write_then(done);
                answer
            })
            .collect();
        assert_eq!(waiting(&group), 6);
        release.send(()).unwrap();
        // No thread waits: the leader runs the callbacks' sync itself.
        entered.recv().unwrap();
        assert!(
            answers.iter().all(|a| a.try_recv().is_err()),
            "not told before a sync that began after their writes"
        );
        release.send(()).unwrap();
        assert!(leader.join().unwrap().is_ok());
        for answer in answers {
            assert_eq!(answer.recv_timeout(Duration::from_secs(5)), Ok(Ok(())));
        }
        assert_eq!(group.runs(), 2, "six writes, two syncs");
    }

    #[test]
    fn a_failed_sync_tells_exactly_the_callbacks_it_covered() {
        let (group, entered, release, gate) = gated();
        let (first, first_told) = told();
        let leader = {
            let group = group.clone();
            std::thread::spawn(move || group.after_write_then(first))
        };
        entered.recv().unwrap();
        let (second, second_told) = told();
        let (third, third_told) = told();
        group.after_write_then(second);
        group.after_write_then(third);
        release.send(()).unwrap();
        assert_eq!(first_told.recv().unwrap(), Ok(()));
        entered.recv().unwrap();
        gate.fail.store(true, Ordering::SeqCst);
        release.send(()).unwrap();
        for covered in [second_told, third_told] {
            let error = covered.recv().unwrap().unwrap_err();
            assert!(error.contains("disk full"), "{error}");
        }
        leader.join().unwrap();
        assert!(group.state.lock().unwrap().failed.is_empty());
        gate.fail.store(false, Ordering::SeqCst);
        let (later, later_told) = told();
        let writer = {
            let group = group.clone();
            std::thread::spawn(move || group.after_write_then(later))
        };
        entered.recv().unwrap();
        release.send(()).unwrap();
        assert_eq!(later_told.recv().unwrap(), Ok(()), "a new sync");
        writer.join().unwrap();
        assert_eq!(group.runs(), 3);
    }

    #[test]
    fn a_thread_that_waited_then_led_also_syncs_the_callbacks_queued_meanwhile() {
        let (group, entered, release, _gate) = gated();
        let first = write_on_a_thread(&group);
        entered.recv().unwrap();
        let second = write_on_a_thread(&group);
        until(|| group.state.lock().unwrap().newest_waiting == 2);
        release.send(()).unwrap();
        assert!(first.join().unwrap().is_ok());
        // The second thread leads its own sync; a callback comes meanwhile.
        entered.recv().unwrap();
        let (done, told) = told();
        group.after_write_then(done);
        release.send(()).unwrap();
        // Nothing else will write: the second thread runs the next sync.
        entered
            .recv_timeout(Duration::from_secs(5))
            .expect("no sync for the callback");
        release.send(()).unwrap();
        assert_eq!(told.recv_timeout(Duration::from_secs(5)), Ok(Ok(())));
        assert!(second.join().unwrap().is_ok());
        assert_eq!(group.runs(), 3);
    }

    #[test]
    fn waiting_threads_and_callbacks_mixed_are_all_told_once() {
        const WRITERS: usize = 8;
        const EACH: usize = 100;
        let syncs = Arc::new(AtomicUsize::new(0));
        let counted = syncs.clone();
        let group = Arc::new(GroupSync::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(1));
            Ok(())
        }));
        let (finished, done) = mpsc::channel();
        for writer in 0..WRITERS {
            let (group, finished) = (group.clone(), finished.clone());
            std::thread::spawn(move || {
                for n in 0..EACH {
                    if (writer + n) % 2 == 0 {
                        group.after_write().unwrap();
                    } else {
                        // The next write only once this one is told: a
                        // callback left without a leader stops the writer.
                        let (tell, told) = told();
                        group.after_write_then(tell);
                        assert_eq!(told.recv_timeout(Duration::from_secs(5)), Ok(Ok(())));
                    }
                }
                finished.send(()).unwrap();
            });
        }
        for _ in 0..WRITERS {
            done.recv_timeout(Duration::from_secs(60))
                .expect("a writer was never told");
        }
        let state = group.state.lock().unwrap();
        assert!(state.queued.is_empty() && state.synced == state.asked);
        assert_eq!(state.asked, (WRITERS * EACH) as u64);
        assert!(syncs.load(Ordering::SeqCst) <= WRITERS * EACH);
    }

    #[test]
    fn a_failed_sync_fails_exactly_the_writes_it_covered() {
        let (group, entered, release, gate) = gated();
        let first = write_on_a_thread(&group);
        entered.recv().unwrap();
        let (second, third) = (write_on_a_thread(&group), write_on_a_thread(&group));
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
        let later = write_on_a_thread(&group);
        entered.recv().unwrap();
        release.send(()).unwrap();
        assert!(
            later.join().unwrap().is_ok(),
            "a later write gets a new sync"
        );
        assert_eq!(group.runs(), 3);
    }
}
