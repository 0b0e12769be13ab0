//! The JSON store's checkpoints: the conversations saved to the journal
//! since the last one are written to their own files, once each however
//! often they were saved, and the journal's records they cover dropped.
//!
//! Until its file is written, the newest saved version of a conversation
//! is kept in memory ([`Unwritten`]), so reads see it at once. A
//! checkpoint (every [`CHECKPOINT_EVERY`], or three times as long as the
//! last one took when that is longer, see [`pause_after`]; sooner when the
//! journal passes [`CHECKPOINT_BYTES`]; and at close) takes those versions while no save
//! can append, writes each file, syncs the files (one `syncfs`, or
//! each file: `sync_files.rs`) and the directory, forgets the versions not saved again meanwhile,
//! writes the queued catalog rows (see [`super::commit`]), and only then
//! empties the journal file it retired. A save arriving during
//! a checkpoint goes to the other journal file and stays in memory for
//! the next one.
//!
//! Files are rewritten in place, not as a fresh temporary file renamed
//! over the old one: measured with 5,000 conversations, creating and
//! renaming took about 1.3 ms a file (the file system allocating an inode
//! and freeing the old one each time; a checkpoint of 5,000 files took
//! 6-9 s and fell behind the saves), in place about 0.2 ms. A file cut
//! short by a crash is safe: the journal keeps its record until the
//! synced files cover it, and the next start writes it again. A file is
//! rewritten only while memory holds its newer version, so the store's
//! own reads never see it half-written (they read memory first and read
//! again a file that does not parse); another program reading the files
//! while the agent runs may, and should read a file again that does not
//! parse.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use asg_http::thread_cache::IdleFlush;
use asg_shared::Conversation;
use uuid::Uuid;

use super::commit::Listing;
use super::journal::Journal;
use super::sync_files::Syncing;
use crate::store::StoreError;

/// How often a checkpoint runs while conversations wait for their files
/// (at the most: see [`pause_after`]).
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// A journal this long is checkpointed without waiting.
///
/// 48 MiB, not 8: 1,000 clients doing turns on growing conversations
/// journal a whole record for the first save of each conversation after
/// a checkpoint (see `delta.rs`), so 8 MiB was reached within a fraction
/// of a second and checkpoints ran back to back (measured with
/// [`pause_after`]'s rule below, see there).
pub(super) const CHECKPOINT_BYTES: u64 = 48 << 20;

/// After a checkpoint that took `took`, the next waits at least this
/// many times as long.
const PAUSE_PER_CHECKPOINT_TIME: u32 = 3;

/// How long the checkpoint thread waits after a checkpoint that took
/// `took` before it runs the next (unless the journal or the unwritten
/// versions pass their bounds first): [`CHECKPOINT_EVERY`], or three
/// times `took` when that is longer, so the checkpoints take at most a
/// quarter of a core. Under a load that saves many conversations, each
/// checkpoint rewrites every file saved since the last one: run back to
/// back, they rewrote each busy conversation about once a turn, and the
/// first save after each was journaled whole. Measured with 1,000 clients
/// doing turns for 30 s on growing conversations (release build, 2-core
/// machine, load average 2.5-5.5): back to back, with 8 MiB,
/// 782-829 turns/s, p99 1.85-1.89 s, 37-56 answers over 2 s, 21,115 files
/// in 28 checkpoints taking 30 s; with 48 MiB alone 955/s, p99 1.71 s;
/// with 48 MiB and this pause 1,026-1,027/s, p99 1.48-1.75 s, 0-5 over
/// 2 s, 10,106-11,063 files in 14-15 checkpoints taking 12-14 s (five
/// times as long a pause: 955/s, p99 1.85 s).
pub(super) fn pause_after(took: Duration) -> Duration {
    CHECKPOINT_EVERY.max(took.saturating_mul(PAUSE_PER_CHECKPOINT_TIME))
}

/// A saved version not in its file yet: its journal record's sequence
/// number and generation (see [`Journal::append_if`]), the conversation
/// (shared with whoever saved it: not a copy), and the length of its
/// JSON (estimated for a change: its base's and the change's). The file's bytes are made again from the
/// conversation when a checkpoint writes it, so memory holds no second
/// copy of a version in JSON.
#[derive(Clone)]
pub(super) struct Latest {
    pub seq: u64,
    pub generation: u64,
    pub conversation: Arc<Conversation>,
    pub size: usize,
}

/// The newest saved version of each conversation whose file is older,
/// and the bytes their JSON takes (saves wait while it is past
/// [`MAX_UNWRITTEN_BYTES`], so memory stays bounded when checkpoints
/// fall behind a burst of saves).
#[derive(Default)]
pub(super) struct Unwritten {
    versions: Mutex<Versions>,
    /// Told when a checkpoint forgot versions.
    room: Condvar,
}

#[derive(Default)]
struct Versions {
    latest: HashMap<Uuid, Latest>,
    bytes: usize,
}

/// Bytes of JSON of saved versions not in their files yet past which a
/// save waits for a checkpoint (the versions are kept parsed, and they
/// are the ones the engine holds while they are in use).
///
/// 64 MiB: 1,000 conversations of 60 KB each wait for the next
/// checkpoint without stopping their saves. With 16 MiB, 1,000 clients
/// doing turns for 30 s on growing conversations kept the saves waiting
/// for checkpoints run back to back, each of which makes every changed
/// file again (and a change journaled after it whole, see `delta.rs`):
/// 1,230-1,381 turns/s, p99 1.39-1.62 s in five runs, against
/// 1,375-1,496/s, p99 1.02-1.14 s in three with 64 MiB (release build,
/// 2-core machine, load average 2-5; the peak RSS grew with the turns
/// done: 131-148 MiB, against 145-151).
pub(super) const MAX_UNWRITTEN_BYTES: usize = 64 << 20;

impl Unwritten {
    fn lock(&self) -> std::sync::MutexGuard<'_, Versions> {
        self.versions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `latest` as the newest version of `id`.
    pub(super) fn put(&self, id: Uuid, latest: Latest) {
        let mut versions = self.lock();
        versions.bytes += latest.size;
        if let Some(older) = versions.latest.insert(id, latest) {
            versions.bytes -= older.size;
        }
    }

    /// Returns once the unwritten versions take at most `max` bytes,
    /// calling `nudge` (start a checkpoint) while they do not.
    pub(super) fn wait_for_room(&self, max: usize, nudge: impl Fn()) {
        let mut versions = self.lock();
        while versions.bytes > max {
            nudge();
            versions = self
                .room
                .wait_timeout(versions, Duration::from_millis(100))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The bytes of JSON the unwritten versions take.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The newest saved version of `id` and its record, when its file is
    /// older.
    pub(super) fn latest(&self, id: Uuid) -> Option<Latest> {
        self.lock().latest.get(&id).cloned()
    }

    /// The sequence number of the newest record of `id`, when its file is
    /// older.
    pub(super) fn seq_of(&self, id: Uuid) -> Option<u64> {
        self.lock().latest.get(&id).map(|l| l.seq)
    }

    /// The newest version of `id`, when its file is older.
    pub(super) fn get(&self, id: Uuid) -> Option<Arc<Conversation>> {
        self.lock().latest.get(&id).map(|l| l.conversation.clone())
    }

    /// The ids whose file is older than their newest version.
    pub(super) fn ids(&self) -> Vec<Uuid> {
        self.lock().latest.keys().copied().collect()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.lock().latest.is_empty()
    }

    fn snapshot(&self) -> Vec<(Uuid, Latest)> {
        self.lock()
            .latest
            .iter()
            .map(|(id, l)| (*id, l.clone()))
            .collect()
    }

    /// Forgets the versions of `written` now in their files (not those
    /// saved again since).
    fn settle(&self, written: &[(Uuid, Latest)]) {
        let mut versions = self.lock();
        for (id, latest) in written {
            if versions
                .latest
                .get(id)
                .is_some_and(|now| now.seq == latest.seq)
            {
                versions.latest.remove(id);
                versions.bytes -= latest.size;
            }
        }
        drop(versions);
        self.room.notify_all();
    }
}

/// What a checkpoint needs: the files' directory, the journal, the
/// versions to write.
pub(super) struct Checkpoints {
    pub dir: PathBuf,
    pub journal: Arc<Journal>,
    pub unwritten: Arc<Unwritten>,
    /// The catalog rows of the saves.
    listing: Arc<Listing>,
    /// Conversation files written so far.
    written: AtomicU64,
    /// One checkpoint at a time (the thread's and `close`'s).
    running: Mutex<()>,
}

impl Checkpoints {
    pub(super) fn new(
        dir: PathBuf,
        journal: Arc<Journal>,
        unwritten: Arc<Unwritten>,
        listing: Arc<Listing>,
    ) -> Self {
        Checkpoints {
            dir,
            journal,
            unwritten,
            listing,
            written: AtomicU64::new(0),
            running: Mutex::new(()),
        }
    }

    /// Runs one checkpoint; `after_snapshot` is called once the versions
    /// to write are taken (tests save there). Answers how many files it
    /// wrote.
    pub(super) fn run(&self, after_snapshot: impl FnOnce()) -> Result<usize, StoreError> {
        let _one = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let started = std::time::Instant::now();
        let mut snapshot = Vec::new();
        let retired = self.journal.rotate(|| snapshot = self.unwritten.snapshot());
        after_snapshot();
        let written = write_files(
            &self.dir,
            snapshot
                .iter()
                .map(|(id, l)| file_bytes(&l.conversation).map(|bytes| (*id, bytes))),
        )
        .map_err(|e| StoreError(format!("checkpoint: {e}")))?;
        self.written.fetch_add(written as u64, Ordering::Relaxed);
        self.unwritten.settle(&snapshot);
        // The retired file's records leave the journal: their rows (queued
        // before it was retired) must be in the catalog first.
        self.listing.flush()?;
        self.journal
            .empty(retired)
            .map_err(|e| StoreError(format!("checkpoint: cannot empty the journal file: {e}")))?;
        tracing::debug!(
            files = written,
            millis = started.elapsed().as_millis() as u64,
            "conversations checkpointed"
        );
        Ok(written)
    }

    /// Conversation files written by checkpoints so far.
    pub(super) fn files_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

/// A conversation's file: its JSON, pretty-printed (the reference's
/// format; a journal record holds the same JSON compact: a quarter
/// smaller for a 33-message conversation, and quicker to write at every
/// save).
pub(super) fn file_bytes(conversation: &Conversation) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec_pretty(conversation)
        .map_err(|e| std::io::Error::other(format!("cannot encode conversation: {e}")))
}

/// Writes each `(id, bytes)` over `<dir>/<id>.json` in place (created
/// owner-only), then syncs them all (`sync_files.rs`: few held open at
/// once, however many there are) and the directory. Answers how many
/// were written.
pub(super) fn write_files<B: AsRef<[u8]>>(
    dir: &Path,
    versions: impl Iterator<Item = std::io::Result<(Uuid, B)>>,
) -> std::io::Result<usize> {
    let mut written = Syncing::new();
    for version in versions {
        let (id, bytes) = version?;
        let target = dir.join(format!("{id}.json"));
        let mut file = open_private(&target)
            .and_then(|mut file| file.write_all(bytes.as_ref()).map(|()| file))
            .map_err(|e| {
                std::io::Error::other(format!("cannot write {}: {e}", target.display()))
            })?;
        file.flush()?;
        written.add(file)?;
    }
    let count = written.finish()?;
    if count > 0 {
        File::open(dir)?.sync_all()?;
    }
    Ok(count)
}

/// Opens `path` to write it from the start, owner-only (created so, or
/// tightened: a file put there by hand may be readable by others).
fn open_private(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        if file.metadata()?.permissions().mode() & 0o777 != 0o600 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    options.open(path)
}

/// What the checkpoint thread is told.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    Idle,
    Now,
    Stop,
}

/// The thread that runs checkpoints; stopped (without a last checkpoint:
/// the journal keeps what it did not write) when dropped.
pub(super) struct Checkpointer {
    signal: Arc<(Mutex<Signal>, Condvar)>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Checkpointer {
    /// Starts the thread.
    pub(super) fn start(checkpoints: Arc<Checkpoints>) -> Checkpointer {
        let signal = Arc::new((Mutex::new(Signal::Idle), Condvar::new()));
        let told = signal.clone();
        let spawned = std::thread::Builder::new()
            .name("asg-json-checkpoint".into())
            .spawn(move || {
                let mut pause = CHECKPOINT_EVERY;
                let mut cache = IdleFlush::default();
                while wait(&told, pause) {
                    if checkpoints.unwritten.is_empty() {
                        cache.idle();
                        continue;
                    }
                    cache.worked();
                    let started = std::time::Instant::now();
                    let ran = checkpoints.run(|| ());
                    pause = pause_after(started.elapsed());
                    if let Err(error) = ran {
                        tracing::error!(%error, "conversation checkpoint failed; the journal keeps the saves, it is tried again");
                    }
                }
            });
        let thread = spawned
            .map_err(|error| tracing::error!(%error, "cannot start the conversation checkpoints; they run at close and at the next start"))
            .ok();
        Checkpointer {
            signal,
            thread: Mutex::new(thread),
        }
    }

    /// No thread: checkpoints run only when asked.
    pub(super) fn none() -> Checkpointer {
        Checkpointer {
            signal: Arc::new((Mutex::new(Signal::Idle), Condvar::new())),
            thread: Mutex::new(None),
        }
    }

    /// Asks for a checkpoint now (the journal grew long).
    pub(super) fn nudge(&self) {
        self.tell(Signal::Now);
    }

    fn tell(&self, what: Signal) {
        let (state, changed) = &*self.signal;
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        if *state != Signal::Stop {
            *state = what;
        }
        changed.notify_all();
    }

    /// Stops the thread and waits for it (at most one checkpoint).
    pub(super) fn stop(&self) {
        self.tell(Signal::Stop);
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits `pause` for the next checkpoint's time, or until told to run
/// one now; false when told to stop.
fn wait(signal: &(Mutex<Signal>, Condvar), pause: Duration) -> bool {
    let (state, changed) = signal;
    let state = state.lock().unwrap_or_else(PoisonError::into_inner);
    let (mut state, _) = changed
        .wait_timeout_while(state, pause, |s| *s == Signal::Idle)
        .unwrap_or_else(PoisonError::into_inner);
    match *state {
        Signal::Stop => false,
        _ => {
            *state = Signal::Idle;
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use asg_shared::fixtures;

    use super::*;

    fn version(seq: u64, size: usize) -> Latest {
        Latest {
            seq,
            generation: 0,
            conversation: Arc::new(fixtures::conversation()),
            size,
        }
    }

    #[test]
    fn a_long_checkpoint_is_followed_by_a_longer_pause() {
        assert_eq!(pause_after(Duration::from_millis(20)), CHECKPOINT_EVERY);
        assert_eq!(pause_after(Duration::ZERO), CHECKPOINT_EVERY);
        assert_eq!(
            pause_after(Duration::from_millis(800)),
            Duration::from_millis(2_400),
            "a checkpoint of 0.8 s leaves the core to the saves for 2.4 s"
        );
        assert_eq!(pause_after(Duration::MAX), Duration::MAX, "no overflow");
    }

    #[test]
    fn a_told_checkpoint_does_not_wait_for_the_pause() {
        let signal = Arc::new((Mutex::new(Signal::Idle), Condvar::new()));
        let waiting = std::thread::spawn({
            let signal = signal.clone();
            move || {
                let started = std::time::Instant::now();
                let run = wait(&signal, Duration::from_secs(60));
                (run, started.elapsed())
            }
        });
        std::thread::sleep(Duration::from_millis(50));
        *signal.0.lock().unwrap() = Signal::Now;
        signal.1.notify_all();
        let (run, waited) = waiting.join().unwrap();
        assert!(run, "told to run one now");
        assert!(waited < Duration::from_secs(30), "waited {waited:?}");
        assert!(*signal.0.lock().unwrap() == Signal::Idle);
    }

    #[test]
    fn a_save_past_the_bound_waits_until_a_checkpoint_forgets_versions() {
        let unwritten = Arc::new(Unwritten::default());
        let (a, b) = (fixtures::uuid(), fixtures::uuid());
        unwritten.put(a, version(1, 600));
        unwritten.put(a, version(2, 700));
        unwritten.put(b, version(3, 400));
        assert_eq!(
            unwritten.bytes(),
            1_100,
            "a newer version replaces the older"
        );
        let nudges = Arc::new(AtomicUsize::new(0));
        let waiting = std::thread::spawn({
            let (unwritten, nudges) = (unwritten.clone(), nudges.clone());
            move || {
                unwritten.wait_for_room(1_000, || {
                    nudges.fetch_add(1, Ordering::SeqCst);
                })
            }
        });
        while nudges.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!waiting.is_finished(), "over the bound: the save waits");
        unwritten.settle(&[(a, version(2, 700))]);
        waiting.join().unwrap();
        assert_eq!(unwritten.bytes(), 400);
        unwritten.settle(&[(b, version(99, 400))]);
        assert_eq!(
            unwritten.bytes(),
            400,
            "a version saved again is not forgotten"
        );
    }
}
