//! One JSON file per conversation, `<data_dir>/conversations/<uuid>.json`,
//! saved through a journal.
//!
//! A save appends the conversation's JSON to the journal (see
//! [`journal`]; only what it added when its previous record is in the
//! journal's active file, see [`delta`]) under a short lock, keeps it in memory as the
//! conversation's newest version, queues its catalog row, and waits for
//! the group's commit (shared through [`GroupSync`]): one `fdatasync` of
//! the journal for every save that appended meanwhile. So N concurrent
//! saves cost about one sync, and no save creates or renames a file. The
//! queued rows go to the catalog in one transaction before the next read
//! of it or the next checkpoint ([`commit`]). Checkpoints ([`checkpoint`])
//! write each changed conversation's file once, however often it was
//! saved, then drop the journal records the synced files cover; at open,
//! what the journal holds is written to the files first ([`replay`]).
//!
//! Measured with `tests/throughput.rs` (debug build, 5,000 conversations
//! stored, 2-core machine, load average about 4): the earlier
//! file-per-save (temporary file, fsync, rename, shared directory fsync,
//! two catalog commits) made about 960 saves/s on one thread and 1,200/s
//! on 64; the journal about 3,500/s and 12,500/s, with each group also
//! committing its catalog rows; the journal alone, the rows written before
//! reads (2026-11-28, alternated runs, load average 2-3.5): 5,100-5,400/s
//! and 19,600-21,000/s, against 2,700-3,100/s and 10,400-11,900/s with the
//! rows committed by each group. Files rewritten in place in
//! sharded directories were not built: they would still cost a file
//! operation and an fsync per save, and a tool could read a half-written
//! file; the journal turns concurrent saves into appends and one shared
//! sync, and the files keep their format (the reference implementation's;
//! a checkpoint rewrites them in place, see [`checkpoint`]).
//!
//! At startup, leftover temporary files are removed and files that cannot
//! be loaded are moved to `<data_dir>/quarantine/` with an error in the
//! log.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use asg_shared::Conversation;
use uuid::Uuid;

use super::group_sync::GroupSync;
use super::json_catalog::{Catalog, Entry, Trust};
use checkpoint::{
    CHECKPOINT_BYTES, Checkpointer, Checkpoints, Latest, MAX_UNWRITTEN_BYTES, Unwritten,
};
use commit::Listing;
use journal::Journal;

mod checkpoint;
mod commit;
mod delta;
mod journal;
mod replay;
mod sync_files;
use super::{
    Claim, Deadlines, ListPage, ListQuery, PendingPage, PendingQuery, Saved, Store, StoreError,
};

/// Name of the directory (under the data dir) unreadable files go to.
pub const QUARANTINE_DIR: &str = "quarantine";
/// The catalog, under the data dir (see [`super::json_catalog`]).
pub const CATALOG_PATH: &str = "index/catalog.sqlite3";
/// Conversations kept at a time while a list of pending approvals is read.
const PENDING_READ_AHEAD: usize = 64;
/// How often a rebuild logs its progress (conversations).
const REBUILD_PROGRESS: usize = 100_000;
/// Reads of a file that does not parse before it is reported unreadable
/// (a checkpoint may be rewriting it).
const READ_ATTEMPTS: usize = 3;
/// Rows written per transaction while the catalog is rebuilt.
const REBUILD_BATCH: usize = 2_000;
/// Bytes a save's journal record starts with room for (it grows as its
/// JSON is written).
const RECORD_CAPACITY: usize = 4 << 10;

/// A group commit: the journal synced.
type JournalSync = Box<dyn Fn() -> std::io::Result<()> + Send + Sync>;

/// Conversations as JSON files under a directory, saved through a journal
/// and listed through a catalog.
pub struct JsonFileStore {
    dir: PathBuf,
    quarantine: PathBuf,
    /// Files the last scan set aside.
    quarantined: AtomicUsize,
    /// Journal files and records set aside at open.
    quarantined_journal: usize,
    journal: Arc<Journal>,
    /// The journal's fdatasync, shared by concurrent saves.
    journal_sync: GroupSync<JournalSync>,
    /// The catalog, and the rows of saves not written to it yet: every
    /// read of the catalog goes through it.
    listing: Arc<Listing>,
    /// Saved versions not in their files yet.
    unwritten: Arc<Unwritten>,
    checkpoints: Arc<Checkpoints>,
    checkpointer: Checkpointer,
    catalog: Arc<Catalog>,
    /// Conversations left in the middle of a turn when the store was
    /// opened (given out once, by [`Store::abandoned`]).
    unfinished: Mutex<Vec<Uuid>>,
}

impl JsonFileStore {
    /// Opens (and creates, owner-only) `<data_dir>/conversations`, its
    /// journal and its catalog. What the journal holds is written to the
    /// files first; then the catalog is kept as it was left (its rows a
    /// crash left dirty read again from their files, those of the
    /// journal's conversations rewritten) or, when it cannot be trusted,
    /// rebuilt from every file (see [`super::json_catalog`]).
    pub fn open(data_dir: &Path) -> Result<JsonFileStore, StoreError> {
        Self::open_with(data_dir, true)
    }

    /// Opened without the checkpoint thread: saves stay in the journal
    /// until [`JsonFileStore::checkpoint`] or close.
    #[cfg(test)]
    pub(super) fn open_without_background_checkpoints(
        data_dir: &Path,
    ) -> Result<JsonFileStore, StoreError> {
        Self::open_with(data_dir, false)
    }

    fn open_with(data_dir: &Path, background: bool) -> Result<JsonFileStore, StoreError> {
        let dir = data_dir.join("conversations");
        create_private_dir(&dir)
            .map_err(|e| StoreError(format!("cannot create {}: {e}", dir.display())))?;
        let (catalog, trust) = Catalog::open(&data_dir.join(CATALOG_PATH))?;
        let catalog = Arc::new(catalog);
        let journal = Arc::new(
            Journal::open(data_dir)
                .map_err(|e| StoreError(format!("cannot open the journal: {e}")))?,
        );
        let quarantine = data_dir.join(QUARANTINE_DIR);
        let replayed = replay::replay(&journal, &dir, &quarantine)?;
        journal.continue_after(replayed.last_seq);
        let listing = Arc::new(Listing::new(catalog.clone()));
        let synced = journal.clone();
        let sync: JournalSync = Box::new(move || synced.sync());
        let unwritten = Arc::new(Unwritten::default());
        let checkpoints = Arc::new(Checkpoints::new(
            dir.clone(),
            journal.clone(),
            unwritten.clone(),
            listing.clone(),
        ));
        let store = JsonFileStore {
            dir,
            quarantine,
            quarantined: AtomicUsize::new(0),
            quarantined_journal: replayed.quarantined,
            journal,
            journal_sync: GroupSync::new(sync),
            listing,
            unwritten,
            checkpointer: match background {
                true => Checkpointer::start(checkpoints.clone()),
                false => Checkpointer::none(),
            },
            checkpoints,
            catalog,
            unfinished: Mutex::default(),
        };
        store.bring_catalog_in_step(trust, &replayed.conversations)?;
        store
            .journal
            .empty_all()
            .map_err(|e| StoreError(format!("cannot empty the journal: {e}")))?;
        store.catalog.mark_open()?;
        *store
            .unfinished
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = store.catalog.unfinished()?;
        Ok(store)
    }

    /// Rebuilds the catalog (`trust` says so) or reads its dirty rows
    /// again and rewrites those of the conversations the journal held.
    fn bring_catalog_in_step(
        &self,
        trust: Trust,
        replayed: &[Conversation],
    ) -> Result<(), StoreError> {
        match trust {
            Trust::Rebuild => self.rebuild(),
            Trust::Kept => {
                self.reread_dirty()?;
                let entries: Vec<Entry> = replayed.iter().map(Entry::of).collect();
                self.catalog.rewrite(&entries)?;
                remove_stale_in_background(self.dir.clone());
                Ok(())
            }
        }
    }

    /// Builds the catalog from every file (at the first start, after an
    /// upgrade or a crash of the machine).
    fn rebuild(&self) -> Result<(), StoreError> {
        self.catalog.clear()?;
        let started = std::time::Instant::now();
        let mut batch = Vec::with_capacity(REBUILD_BATCH);
        let mut count = 0usize;
        self.scan(|conversation| {
            batch.push(Entry::of(&conversation));
            count += 1;
            if batch.len() == REBUILD_BATCH {
                self.catalog.put(&batch, false)?;
                batch.clear();
            }
            if count.is_multiple_of(REBUILD_PROGRESS) {
                tracing::info!(conversations = count, "building the conversation catalog");
            }
            Ok(())
        })?;
        self.catalog.put(&batch, false)?;
        tracing::info!(
            conversations = count,
            millis = started.elapsed().as_millis() as u64,
            "conversation catalog built from the files"
        );
        Ok(())
    }

    /// Reads again the files of the rows a crash left dirty.
    fn reread_dirty(&self) -> Result<(), StoreError> {
        let dirty = self.catalog.dirty()?;
        if !dirty.is_empty() {
            tracing::info!(
                conversations = dirty.len(),
                "reading again the conversations saved when the agent stopped"
            );
        }
        for id in dirty {
            self.reindex(id)?;
        }
        Ok(())
    }

    /// Brings the row of `id` in step with its file (none: no row; an
    /// unreadable one is set aside).
    fn reindex(&self, id: Uuid) -> Result<(), StoreError> {
        let path = self.path_of(id);
        match read_conversation(&path, id) {
            Ok(conversation) => self.catalog.rewrite(&[Entry::of(&conversation)]),
            Err(Unreadable::Missing) => self.catalog.forget(id),
            Err(Unreadable::Bad(problem)) => {
                let name = format!("{id}.json");
                if self.set_aside(&path, &name, &problem) {
                    self.quarantined.fetch_add(1, Ordering::Relaxed);
                }
                self.catalog.forget(id)
            }
        }
    }

    /// Every conversation file, parsed, to `each` (stops at its first
    /// error). Removes leftover temporary files, sets aside unreadable
    /// files (their count is [`Store::quarantined`]).
    ///
    /// A file that does not parse while memory holds a newer version of
    /// its conversation is being rewritten by a checkpoint: it is not set
    /// aside but answered, to be read again once written.
    fn scan(
        &self,
        mut each: impl FnMut(Conversation) -> Result<(), StoreError>,
    ) -> Result<Vec<Uuid>, StoreError> {
        let mut rewritten = Vec::new();
        let entries = fs::read_dir(&self.dir)
            .map_err(|e| StoreError(format!("cannot list {}: {e}", self.dir.display())))?;
        let mut quarantined = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if is_temporary(&name) {
                remove_stale(&path);
                continue;
            }
            let Some(id) = conversation_file_id(&name) else {
                continue;
            };
            match read_conversation(&path, id) {
                Ok(conversation) => each(conversation)?,
                Err(Unreadable::Missing) => {}
                Err(Unreadable::Bad(_)) if self.unwritten.get(id).is_some() => rewritten.push(id),
                Err(Unreadable::Bad(problem)) => {
                    quarantined += usize::from(self.set_aside(&path, &name, &problem));
                }
            }
        }
        self.quarantined.store(quarantined, Ordering::Relaxed);
        Ok(rewritten)
    }

    /// The conversations of `ids` that can be read (a file removed or
    /// spoiled since it was listed is left out, with a warning).
    fn load_listed(&self, ids: Vec<Uuid>) -> Vec<Conversation> {
        ids.into_iter()
            .filter_map(|id| match self.load(id) {
                Ok(found) => found,
                Err(error) => {
                    tracing::warn!(conversation = %id, %error, "a listed conversation cannot be read; left out");
                    None
                }
            })
            .collect()
    }

    /// The file of a conversation. Built from a parsed [`Uuid`] only, so no
    /// request text ever becomes part of a path.
    fn path_of(&self, id: Uuid) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// How many journal syncs the saves so far took.
    pub fn journal_syncs(&self) -> u64 {
        self.journal_sync.runs()
    }

    /// How many conversation files checkpoints wrote so far.
    pub fn files_written(&self) -> u64 {
        self.checkpoints.files_written()
    }

    /// Writes every saved conversation whose file is older to its file
    /// now (the background thread does it every second, less often when
    /// checkpoints take long: `checkpoint::pause_after`).
    pub fn checkpoint(&self) -> Result<usize, StoreError> {
        self.checkpoints.run(|| ())
    }

    /// A save up to its sync: the record appended to the journal (as a
    /// change of its previous record when it can be, see [`delta`]),
    /// the version kept in memory, its catalog row queued.
    fn append(&self, conversation: &Arc<Conversation>) -> Result<(), StoreError> {
        // Backpressure: memory stays bounded when checkpoints fall behind.
        self.unwritten
            .wait_for_room(MAX_UNWRITTEN_BYTES, || self.checkpointer.nudge());
        let mut length = self.append_as_change(conversation)?;
        if length.is_none() {
            let mut record = journal::record_buffer(RECORD_CAPACITY);
            serde_json::to_writer(&mut record, conversation.as_ref())
                .map_err(|e| StoreError(format!("cannot encode conversation: {e}")))?;
            let size = record.len();
            length = self.append_record(record, conversation, size, |_| true)?;
        }
        let length = length.ok_or_else(|| StoreError("a whole record was refused".into()))?;
        if length > CHECKPOINT_BYTES {
            self.checkpointer.nudge();
        }
        Ok(())
    }

    /// Appends `conversation` as a change of its previous record, when
    /// that record is in the active journal file and the version adds
    /// messages to it; `None`: to be appended whole.
    fn append_as_change(
        &self,
        conversation: &Arc<Conversation>,
    ) -> Result<Option<u64>, StoreError> {
        let Some(previous) = self.unwritten.latest(conversation.id) else {
            return Ok(None);
        };
        let Some(shared) = delta::shared_start(&previous.conversation, conversation) else {
            return Ok(None);
        };
        let base = delta::Base {
            seq: previous.seq,
            messages: shared,
        };
        let mut record = journal::record_buffer(RECORD_CAPACITY);
        delta::write(&mut record, base, conversation)
            .map_err(|e| StoreError(format!("cannot encode conversation: {e}")))?;
        let size = previous.size + record.len();
        let in_file = previous.generation;
        drop(previous);
        // Still the previous record, in the active file, once no other
        // record can be appended (else it is appended whole).
        self.append_record(record, conversation, size, |generation| {
            generation == in_file && self.unwritten.seq_of(conversation.id) == Some(base.seq)
        })
    }

    /// Appends `record` if `still_valid(generation)`, then keeps the
    /// version in memory and queues its catalog row (in journal order);
    /// answers the journal's length, `None` when not appended.
    fn append_record(
        &self,
        mut record: Vec<u8>,
        conversation: &Arc<Conversation>,
        size: usize,
        still_valid: impl FnOnce(u64) -> bool,
    ) -> Result<Option<u64>, StoreError> {
        let id = conversation.id;
        let row = Entry::of(conversation);
        // The row after the record (a crash in between leaves a record
        // the next start writes to the catalog), written to the catalog
        // before the next read of it (see [`commit`]).
        let appended = self
            .journal
            .append_if(&mut record, still_valid, |seq, generation| {
                self.listing.queue(row);
                self.unwritten.put(
                    id,
                    Latest {
                        seq,
                        generation,
                        conversation: conversation.clone(),
                        size,
                    },
                )
            });
        drop(record);
        appended
            .map_err(|e| StoreError(format!("cannot save conversation {id} in the journal: {e}")))
    }

    /// Catalog rows of saves not written to the catalog yet (one a
    /// conversation).
    #[cfg(test)]
    pub(super) fn catalog_rows_queued(&self) -> usize {
        self.listing.queued()
    }

    /// A checkpoint that calls `meanwhile` once it has taken the versions
    /// to write.
    #[cfg(test)]
    pub(super) fn checkpoint_with(&self, meanwhile: impl FnOnce()) -> Result<usize, StoreError> {
        self.checkpoints.run(meanwhile)
    }

    /// Moves an unloadable file to the quarantine directory, keeping its
    /// name (with `.1`, `.2`... when that name is taken). True when moved.
    fn set_aside(&self, path: &Path, name: &str, problem: &str) -> bool {
        let moved = create_private_dir(&self.quarantine).and_then(|()| {
            let target = free_name(&self.quarantine, name);
            fs::rename(path, &target)?;
            sync_dir(&self.quarantine)?;
            sync_dir(&self.dir)?;
            Ok(target)
        });
        match moved {
            Ok(target) => {
                tracing::error!(
                    file = %path.display(),
                    moved_to = %target.display(),
                    %problem,
                    "conversation file cannot be loaded; moved to quarantine"
                );
                true
            }
            Err(error) => {
                tracing::error!(
                    file = %path.display(),
                    %problem,
                    %error,
                    "conversation file cannot be loaded nor moved to quarantine; left in place and ignored"
                );
                false
            }
        }
    }
}

impl Store for JsonFileStore {
    fn load_all(&self) -> Result<Vec<Conversation>, StoreError> {
        // Those not in their files when the scan began are read again
        // after it (a checkpoint may write them meanwhile).
        let mut unwritten = self.unwritten.ids();
        let mut conversations = Vec::new();
        let rewritten = self.scan(|conversation| {
            if !unwritten.contains(&conversation.id) {
                conversations.push(conversation);
            }
            Ok(())
        })?;
        for id in rewritten {
            if !unwritten.contains(&id) {
                unwritten.push(id);
            }
        }
        for id in unwritten {
            conversations.extend(self.load(id)?);
        }
        Ok(conversations)
    }

    fn save(&self, conversation: &Conversation) -> Result<(), StoreError> {
        self.save_shared(&Arc::new(conversation.clone()))
    }

    fn save_shared(&self, conversation: &Arc<Conversation>) -> Result<(), StoreError> {
        let id = conversation.id;
        self.append(conversation)?;
        self.journal_sync
            .after_write()
            .map_err(|e| not_committed(id, &e))
    }

    fn save_then(&self, conversation: &Arc<Conversation>, saved: Saved) {
        let id = conversation.id;
        if let Err(error) = self.append(conversation) {
            return saved(Err(error));
        }
        self.journal_sync
            .after_write_then(Box::new(move |synced: std::io::Result<()>| {
                saved(synced.map_err(|e| not_committed(id, &e)))
            }));
    }

    fn quarantined(&self) -> usize {
        self.quarantined.load(Ordering::Relaxed) + self.quarantined_journal
    }

    fn load(&self, id: Uuid) -> Result<Option<Conversation>, StoreError> {
        // Memory first: a checkpoint forgets a version only once its file
        // holds it, and rewrites a file only while memory holds a newer
        // version; so a file read half-written is answered from memory
        // (or, written meanwhile, read again).
        let mut problem = String::new();
        for _ in 0..READ_ATTEMPTS {
            if let Some(latest) = self.unwritten.get(id) {
                return Ok(Some(Conversation::clone(&latest)));
            }
            match read_conversation(&self.path_of(id), id) {
                Ok(conversation) => return Ok(Some(conversation)),
                Err(Unreadable::Missing) => return Ok(None),
                Err(Unreadable::Bad(bad)) => problem = bad,
            }
        }
        Err(StoreError(format!(
            "cannot read conversation {id}: {problem}"
        )))
    }

    fn conversation_of_approval(&self, uuid: Uuid) -> Result<Option<Uuid>, StoreError> {
        self.listing.catalog()?.conversation_of_approval(uuid)
    }

    fn waiting(&self) -> Result<Vec<Conversation>, StoreError> {
        Ok(self.load_listed(self.listing.catalog()?.waiting()?))
    }

    fn deadlines(&self, now: chrono::DateTime<chrono::Utc>) -> Result<Deadlines, StoreError> {
        let (due, next) = self.listing.catalog()?.deadlines(now)?;
        Ok(Deadlines {
            due: self.load_listed(due),
            next,
        })
    }

    fn pending_page(&self, query: &PendingQuery) -> Result<PendingPage, StoreError> {
        let (keys, next) = self.listing.catalog()?.pending_page(query)?;
        let mut read: std::collections::HashMap<Uuid, Conversation> = Default::default();
        let mut approvals = Vec::with_capacity(keys.len());
        for (uuid, id) in keys {
            if read.len() >= PENDING_READ_AHEAD && !read.contains_key(&id) {
                read.clear(); // bounded: a long list is not held whole
            }
            let conversation = match read.entry(id) {
                std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                std::collections::hash_map::Entry::Vacant(new) => {
                    match self.load_listed(vec![id]).pop() {
                        Some(conversation) => new.insert(conversation),
                        None => continue,
                    }
                }
            };
            if let Some(approval) = conversation.pending_by_uuid(uuid) {
                approvals.push(approval.clone());
            }
        }
        Ok(PendingPage { approvals, next })
    }

    fn list_page(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let page = self.listing.catalog()?.page(query)?;
        Ok(ListPage {
            conversations: self.load_listed(page.ids),
            next: page.next,
            summary: page.summary,
        })
    }

    fn claim(&self, id: Uuid) -> Result<Claim, StoreError> {
        // One process: nothing else changes the files (the engine does not
        // even ask: its slot lock is the claim); the version to start from.
        Ok(Claim::Taken(self.load(id)?.map(Box::new)))
    }

    fn abandoned(&self) -> Result<Vec<Uuid>, StoreError> {
        Ok(std::mem::take(
            &mut *self
                .unfinished
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        ))
    }

    fn close(&self) {
        self.checkpointer.stop();
        match self.checkpoint() {
            Ok(written) => {
                tracing::info!(
                    conversations = written,
                    "conversations written to their files"
                )
            }
            Err(error) => {
                tracing::warn!(%error, "cannot write the last saves to their files; the journal keeps them for the next start")
            }
        }
        if let Err(error) = self.listing.flush() {
            tracing::warn!(%error, "cannot write the last saves' rows to the conversation catalog; the next start writes them from the journal");
        }
        match self.catalog.close() {
            Ok(()) => tracing::info!("conversation catalog closed"),
            Err(error) => {
                tracing::warn!(%error, "cannot close the conversation catalog; it is rebuilt at the next start after a machine restart")
            }
        }
    }
}

/// A save whose group commit failed.
fn not_committed(id: Uuid, error: &std::io::Error) -> StoreError {
    StoreError(format!("cannot commit conversation {id}: {error}"))
}

/// The id of a `<uuid>.json` file name; other files are not ours.
fn conversation_file_id(name: &str) -> Option<Uuid> {
    name.strip_suffix(".json")
        .and_then(|stem| Uuid::parse_str(stem).ok())
}

/// Temporary files: `tempfile`'s `.tmp*` and the older `.<uuid>.json.tmp`.
fn is_temporary(name: &str) -> bool {
    name.starts_with(".tmp") || (name.starts_with('.') && name.ends_with(".tmp"))
}

/// Removes, on a thread of its own, the temporary files a crash left in
/// `dir` (listing a large directory takes a while; startup does not wait).
/// Only files older than the call: a save's own is never touched.
fn remove_stale_in_background(dir: PathBuf) {
    let before = std::time::SystemTime::now();
    let spawned = std::thread::Builder::new()
        .name("asg-stale-temporaries".into())
        .spawn(move || remove_stale_before(&dir, before));
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start removing stale temporary files");
    }
}

/// Removes the temporary files in `dir` last changed before `before`.
fn remove_stale_before(dir: &Path, before: std::time::SystemTime) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry.file_name().to_str().is_some_and(is_temporary)
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|changed| changed < before);
        if stale {
            remove_stale(&entry.path());
        }
    }
}

/// Removes a temporary file left by a crash in the middle of a write.
fn remove_stale(path: &Path) {
    match fs::remove_file(path) {
        Ok(()) => tracing::warn!(file = %path.display(), "removed a stale temporary file"),
        Err(error) => {
            tracing::warn!(file = %path.display(), %error, "cannot remove a stale temporary file")
        }
    }
}

/// Why a conversation file cannot be loaded.
enum Unreadable {
    /// There is none.
    Missing,
    /// What is wrong with it.
    Bad(String),
}

/// Reads and parses one file; the error says what is wrong with it.
fn read_conversation(path: &Path, id: Uuid) -> Result<Conversation, Unreadable> {
    let bytes = fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Unreadable::Missing,
        _ => Unreadable::Bad(format!("cannot read it: {e}")),
    })?;
    let conversation: Conversation = serde_json::from_slice(&bytes)
        .map_err(|e| Unreadable::Bad(format!("not a conversation: {e}")))?;
    if conversation.id != id {
        return Err(Unreadable::Bad(format!(
            "it holds conversation {}, not the one its name says",
            conversation.id
        )));
    }
    Ok(conversation)
}

/// `dir/name`, or `dir/name.N` for the first N not taken.
pub(super) fn free_name(dir: &Path, name: &str) -> PathBuf {
    let first = dir.join(name);
    if !first.exists() {
        return first;
    }
    (1u32..)
        .map(|n| dir.join(format!("{name}.{n}")))
        .find(|candidate| !candidate.exists())
        .unwrap_or(first)
}

/// Creates a directory (and its parents) readable by the owner only, and
/// tightens an existing one.
pub(super) fn create_private_dir(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)?;
        fs::set_permissions(path, fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    {
        fs::create_dir_all(path)
    }
}

/// Makes a rename in `dir` durable.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use asg_shared::{ConversationStatus, Message, Role, fixtures};
    use chrono::Utc;

    use super::*;

    fn conversation() -> Conversation {
        let now = Utc::now();
        Conversation {
            messages: vec![
                Message {
                    created_at: now,
                    ..fixtures::message(Role::System, "prompt")
                }
                .into(),
            ],
            created_at: now,
            updated_at: now,
            ..fixtures::conversation()
        }
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    #[test]
    fn saved_conversations_load_back_without_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonFileStore::open(dir.path()).unwrap();
        let mut first = conversation();
        store.save(&first).unwrap();
        first.status = ConversationStatus::WaitingApproval;
        store.save(&first).unwrap();
        let second = conversation();
        store.save(&second).unwrap();
        store.checkpoint().unwrap();
        let conv_dir = dir.path().join("conversations");
        fs::write(conv_dir.join("notes.txt"), b"x").unwrap();

        let mut loaded = store.load_all().unwrap();
        loaded.sort_by_key(|c| c.id != first.id);
        assert_eq!(loaded, vec![first.clone(), second.clone()]);
        assert_eq!(store.quarantined(), 0);
        let mut expected = vec![
            format!("{}.json", first.id),
            format!("{}.json", second.id),
            "notes.txt".to_string(),
        ];
        expected.sort();
        assert_eq!(names_in(&conv_dir), expected);
        assert!(!dir.path().join(QUARANTINE_DIR).exists());
    }

    #[test]
    fn a_shared_version_is_kept_not_copied_and_its_file_is_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonFileStore::open_without_background_checkpoints(dir.path()).unwrap();
        let saved = Arc::new(conversation());
        store.save_shared(&saved).unwrap();
        let kept = store
            .unwritten
            .get(saved.id)
            .expect("kept until its file is written");
        assert!(
            Arc::ptr_eq(&kept, &saved),
            "the store keeps the saver's version, not a copy of it"
        );
        drop(kept);
        let records: Vec<Vec<u8>> = store
            .journal
            .read()
            .unwrap()
            .into_iter()
            .flat_map(|(_, contents)| contents.records)
            .map(|r| r.payload)
            .collect();
        assert_eq!(
            records,
            vec![serde_json::to_vec(&*saved).unwrap()],
            "a record is the conversation's compact JSON"
        );
        store.checkpoint().unwrap();
        assert!(store.unwritten.get(saved.id).is_none());
        let file = fs::read(store.path_of(saved.id)).unwrap();
        assert_eq!(
            file,
            serde_json::to_vec_pretty(&*saved).unwrap(),
            "the checkpoint writes the file pretty-printed"
        );
        assert_eq!(store.load(saved.id).unwrap().as_ref(), Some(&*saved));
    }

    #[cfg(unix)]
    #[test]
    fn files_and_directory_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let conv_dir = dir.path().join("conversations");
        fs::create_dir_all(&conv_dir).unwrap();
        fs::set_permissions(&conv_dir, fs::Permissions::from_mode(0o755)).unwrap();
        let store = JsonFileStore::open(dir.path()).unwrap();
        let conversation = conversation();
        // A file put there by hand, readable by others, saved again.
        let by_hand = store.path_of(conversation.id);
        fs::write(&by_hand, serde_json::to_vec(&conversation).unwrap()).unwrap();
        fs::set_permissions(&by_hand, fs::Permissions::from_mode(0o644)).unwrap();
        store.save(&conversation).unwrap();
        store.save(&conversation).unwrap();
        store.checkpoint().unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&conv_dir), 0o700);
        assert_eq!(mode(&store.path_of(conversation.id)), 0o600);
    }

    #[test]
    fn stale_temporary_files_are_removed_at_startup() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonFileStore::open(dir.path()).unwrap();
        let kept = conversation();
        store.save(&kept).unwrap();
        store.checkpoint().unwrap();
        let conv_dir = dir.path().join("conversations");
        fs::write(conv_dir.join(".tmpAbC123"), b"{\"half").unwrap();
        fs::write(conv_dir.join(format!(".{}.json.tmp", kept.id)), b"{").unwrap();

        let loaded = store.load_all().unwrap();
        assert_eq!(loaded, vec![kept.clone()]);
        assert_eq!(names_in(&conv_dir), vec![format!("{}.json", kept.id)]);
        assert_eq!(store.quarantined(), 0);
    }

    #[test]
    fn unloadable_files_are_quarantined_with_their_name_and_content() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonFileStore::open(dir.path()).unwrap();
        let good = conversation();
        store.save(&good).unwrap();
        store.checkpoint().unwrap();
        let conv_dir = dir.path().join("conversations");
        let whole = serde_json::to_vec(&conversation()).unwrap();
        let corrupt = format!("{}.json", Uuid::new_v4());
        let truncated = format!("{}.json", Uuid::new_v4());
        let mismatched = format!("{}.json", Uuid::new_v4());
        fs::write(conv_dir.join(&corrupt), b"{not json").unwrap();
        fs::write(conv_dir.join(&truncated), &whole[..whole.len() / 2]).unwrap();
        fs::write(conv_dir.join(&mismatched), &whole).unwrap();

        let loaded = store.load_all().unwrap();
        assert_eq!(loaded, vec![good.clone()]);
        assert_eq!(store.quarantined(), 3);
        assert_eq!(names_in(&conv_dir), vec![format!("{}.json", good.id)]);
        let quarantine = dir.path().join(QUARANTINE_DIR);
        let mut expected = vec![corrupt.clone(), truncated.clone(), mismatched];
        expected.sort();
        assert_eq!(names_in(&quarantine), expected);
        assert_eq!(fs::read(quarantine.join(&corrupt)).unwrap(), b"{not json");
        assert_eq!(
            fs::read(quarantine.join(&truncated)).unwrap(),
            &whole[..whole.len() / 2]
        );
    }

    #[test]
    fn a_quarantined_file_never_overwrites_an_earlier_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonFileStore::open(dir.path()).unwrap();
        let conv_dir = dir.path().join("conversations");
        let name = format!("{}.json", Uuid::new_v4());
        for round in ["first", "second", "third"] {
            fs::write(conv_dir.join(&name), round).unwrap();
            assert!(store.load_all().unwrap().is_empty());
            assert_eq!(store.quarantined(), 1);
        }
        let quarantine = dir.path().join(QUARANTINE_DIR);
        assert_eq!(fs::read_to_string(quarantine.join(&name)).unwrap(), "first");
        let second = quarantine.join(format!("{name}.1"));
        assert_eq!(fs::read_to_string(second).unwrap(), "second");
        let third = quarantine.join(format!("{name}.2"));
        assert_eq!(fs::read_to_string(third).unwrap(), "third");
    }
}
