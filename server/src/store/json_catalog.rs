//! The catalog of the JSON store: what listings, approval lookups and
//! startup recovery need of every conversation (id, time, status, owner,
//! flags, approval uuids), in a SQLite file, `<data_dir>/index/catalog.sqlite3`,
//! so the agent never reads every conversation file.
//!
//! The saved versions stay the truth (the journal, then the files); the
//! catalog is derived from them and kept in step by the rule *record
//! first, then row*: a save appends its journal record, then queues the
//! new version's row, written before the next read of the catalog and
//! before a checkpoint drops the record (`json_files/commit.rs`), so a row
//! never describes a version the journal and the files do not hold; at
//! open, the rows of the conversations the journal held are rewritten
//! from it. Rows are committed without an fsync
//! of their own (`synchronous = NORMAL`): a killed process loses nothing
//! the operating system was given, and after an operating-system crash or
//! power loss (the machine's boot id changed while the catalog was open)
//! the catalog is not trusted and is rebuilt from the files. A catalog
//! that is missing, of another format, or half rebuilt is rebuilt too.
//! Rows marked dirty (by the earlier rule, *catalog first, marked dirty*,
//! of a save that wrote its file itself) are read again from their files
//! at open.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use uuid::Uuid;

use super::{ListQuery, PendingQuery, StatusCounts, StoreError};

mod queries;
mod rows;

use queries::{counts, page_rows, pending_rows};
use rows::put_entry;
pub(super) use rows::{Coalesced, Entry};

/// Bump when the schema or the meaning of a column changes: an older
/// catalog is then rebuilt.
const FORMAT: &str = "3";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS conversations (
    id BLOB PRIMARY KEY,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    owner TEXT,
    had_approval INTEGER NOT NULL,
    unfinished INTEGER NOT NULL,
    deadline INTEGER,
    dirty INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    task_state TEXT NOT NULL,
    context_id TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS conversations_newest ON conversations (created_at DESC, id);
CREATE INDEX IF NOT EXISTS conversations_dirty ON conversations (id) WHERE dirty = 1;
CREATE INDEX IF NOT EXISTS conversations_unfinished ON conversations (id) WHERE unfinished = 1;
CREATE INDEX IF NOT EXISTS conversations_owner ON conversations (owner, created_at DESC, id);
CREATE INDEX IF NOT EXISTS conversations_status ON conversations (status, created_at DESC, id);
CREATE INDEX IF NOT EXISTS conversations_approval ON conversations (created_at DESC, id)
    WHERE had_approval;
CREATE INDEX IF NOT EXISTS conversations_deadline ON conversations (deadline)
    WHERE deadline IS NOT NULL;
CREATE INDEX IF NOT EXISTS conversations_context ON conversations (context_id, created_at DESC, id);
CREATE TABLE IF NOT EXISTS approvals (
    uuid BLOB PRIMARY KEY,
    conversation_id BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS approvals_of ON approvals (conversation_id);
CREATE TABLE IF NOT EXISTS pending (
    uuid BLOB PRIMARY KEY,
    conversation_id BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    state TEXT NOT NULL,
    requested_by TEXT,
    proxy INTEGER NOT NULL,
    question INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pending_oldest ON pending (created_at, uuid);
CREATE INDEX IF NOT EXISTS pending_of ON pending (conversation_id);
";

/// Nanoseconds since the epoch (a time beyond what i64 holds, about
/// 1677 to 2262, is clamped: it still sorts first or last).
fn nanos(at: DateTime<Utc>) -> i64 {
    at.timestamp_nanos_opt().unwrap_or(if at.timestamp() > 0 {
        i64::MAX
    } else {
        i64::MIN
    })
}

/// A listing's sort key: a time and an id.
type Key = (DateTime<Utc>, Uuid);

/// A page of pending approvals as `(approval, conversation)`, and the key
/// to list after when more follow.
type PendingKeys = (Vec<(Uuid, Uuid)>, Option<Key>);

/// One page of ids from [`Catalog::page`].
#[derive(Debug, Default)]
pub(super) struct IdPage {
    /// Newest first.
    pub ids: Vec<Uuid>,
    /// The key of the last id, when more follow.
    pub next: Option<(DateTime<Utc>, Uuid)>,
    /// Counts of everything in scope.
    pub summary: StatusCounts,
}

/// Whether an opened catalog can be used as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trust {
    /// As it was left (its dirty rows still to be read again).
    Kept,
    /// To be rebuilt from the files (emptied).
    Rebuild,
}

/// The SQLite catalog. Saves write through one connection, listings read
/// through another (WAL: readers never wait for the writer).
pub(super) struct Catalog {
    writer: Mutex<Connection>,
    reader: Mutex<Connection>,
    /// Stopped and waited for when the catalog is dropped.
    _checkpoints: Checkpointer,
}

/// The checkpointer thread: its stop signal (dropped to stop it) and its
/// handle.
struct Checkpointer {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpointer {
    /// Stops the thread and waits for it (at most one checkpoint), so the
    /// catalog's file has no connection left once the catalog is gone.
    fn drop(&mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How often the WAL is copied back into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Checkpoints the WAL every [`CHECKPOINT_EVERY`] on a thread of its own
/// (`PASSIVE`: it waits for no reader or writer), so the fsyncs of a
/// checkpoint never hold up a save.
fn start_checkpointer(connection: Connection) -> Checkpointer {
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("asg-catalog-checkpoint".into())
        .spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(CHECKPOINT_EVERY)
            {
                if let Err(error) = connection.execute_batch("PRAGMA wal_checkpoint(PASSIVE)") {
                    tracing::warn!(%error, "cannot checkpoint the conversation catalog");
                }
            }
        });
    let thread = spawned
        .map_err(
            |error| tracing::warn!(%error, "cannot start checkpointing the conversation catalog"),
        )
        .ok();
    Checkpointer {
        stop: Some(stop),
        thread,
    }
}

fn db_error(what: &str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError(format!("conversation catalog: cannot {what}: {e}"))
}

fn lock(connection: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    connection
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn uuid_of(bytes: Vec<u8>) -> Option<Uuid> {
    Uuid::from_slice(&bytes).ok()
}

impl Catalog {
    /// Opens (creating, owner-only) the catalog at `path`, and says
    /// whether it can be kept. From now on it counts as open on this boot
    /// until [`Catalog::close`].
    pub(super) fn open(path: &Path) -> Result<(Catalog, Trust), StoreError> {
        create_private_file(path)
            .map_err(|e| StoreError(format!("cannot create {}: {e}", path.display())))?;
        let connect = || -> Result<Connection, StoreError> {
            let connection = Connection::open(path).map_err(|e| {
                StoreError(format!("cannot open the catalog {}: {e}", path.display()))
            })?;
            connection
                .execute_batch(
                    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                     PRAGMA busy_timeout = 5000;",
                )
                .map_err(db_error("configure it"))?;
            Ok(connection)
        };
        let writer = connect()?;
        drop_older_format(&writer).map_err(db_error("drop an older format's tables"))?;
        // Saves never checkpoint (a checkpoint syncs): the checkpointer
        // thread does, beside them.
        writer
            .execute_batch(SCHEMA)
            .and_then(|()| writer.execute_batch("PRAGMA wal_autocheckpoint = 0"))
            .map_err(db_error("create its tables"))?;
        let catalog = Catalog {
            writer: Mutex::new(writer),
            reader: Mutex::new(connect()?),
            _checkpoints: start_checkpointer(connect()?),
        };
        let trust = catalog.trust(boot_id().as_deref())?;
        Ok((catalog, trust))
    }

    /// Whether the catalog as found can be kept, from how it was left.
    fn trust(&self, boot: Option<&str>) -> Result<Trust, StoreError> {
        let meta = |key: &str| -> Result<Option<String>, StoreError> {
            lock(&self.writer)
                .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .optional()
                .map_err(db_error("read its state"))
        };
        let state = meta("state")?;
        let kept = meta("format")?.as_deref() == Some(FORMAT)
            && match state.as_deref() {
                Some("closed") => true,
                Some(open) => boot.is_some_and(|boot| open == format!("open {boot}")),
                None => false,
            };
        Ok(if kept { Trust::Kept } else { Trust::Rebuild })
    }

    /// Records the catalog's state, durably (the one commit that syncs).
    fn set_state(&self, state: &str) -> Result<(), StoreError> {
        let writer = lock(&self.writer);
        writer
            .execute_batch("PRAGMA synchronous = FULL")
            .and_then(|()| {
                writer.execute(
                    "INSERT INTO meta (key, value) VALUES ('format', ?1), ('state', ?2) \
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    params![FORMAT, state],
                )
            })
            .and_then(|_| writer.execute_batch("PRAGMA synchronous = NORMAL"))
            .map_err(db_error("record its state"))
    }

    /// Open on this boot: kept after a crash of the process, rebuilt after
    /// a crash of the machine.
    pub(super) fn mark_open(&self) -> Result<(), StoreError> {
        let state = match boot_id() {
            Some(boot) => format!("open {boot}"),
            None => "open".to_string(),
        };
        self.set_state(&state)
    }

    /// Closed cleanly: kept whatever happens to the machine before the
    /// next start.
    pub(super) fn close(&self) -> Result<(), StoreError> {
        lock(&self.writer)
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .map_err(db_error("checkpoint"))?;
        self.set_state("closed")
    }

    /// Empties the catalog before a rebuild (marked so: a rebuild cut
    /// short is started again).
    pub(super) fn clear(&self) -> Result<(), StoreError> {
        self.set_state("rebuilding")?;
        lock(&self.writer)
            .execute_batch("DELETE FROM conversations; DELETE FROM approvals; DELETE FROM pending;")
            .map_err(db_error("empty it"))
    }

    /// Writes the rows of `entries`, each `dirty` or not, in one
    /// transaction.
    pub(super) fn put(&self, entries: &[Entry], dirty: bool) -> Result<(), StoreError> {
        let mut writer = lock(&self.writer);
        let tx = writer.transaction().map_err(db_error("write"))?;
        for entry in entries {
            put_entry(&tx, entry, dirty).map_err(db_error("write a conversation"))?;
        }
        tx.commit().map_err(db_error("commit"))
    }

    /// Replaces the rows of `entries` and their approvals with what their
    /// files say, in one transaction (after a crash: a row may describe a
    /// version never written, or miss one the journal held).
    pub(super) fn rewrite(&self, entries: &[Entry]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut writer = lock(&self.writer);
        let tx = writer.transaction().map_err(db_error("write"))?;
        for entry in entries {
            tx.execute(
                "DELETE FROM approvals WHERE conversation_id = ?1",
                [entry.id.as_bytes().as_slice()],
            )
            .and_then(|_| put_entry(&tx, entry, false))
            .map_err(db_error("write a conversation"))?;
        }
        tx.commit().map_err(db_error("commit"))
    }

    /// Drops conversation `id` (its file is gone).
    pub(super) fn forget(&self, id: Uuid) -> Result<(), StoreError> {
        let key = id.as_bytes().as_slice();
        let writer = lock(&self.writer);
        writer
            .execute("DELETE FROM approvals WHERE conversation_id = ?1", [key])
            .and_then(|_| writer.execute("DELETE FROM pending WHERE conversation_id = ?1", [key]))
            .and_then(|_| writer.execute("DELETE FROM conversations WHERE id = ?1", [key]))
            .map(drop)
            .map_err(db_error("drop a conversation"))
    }

    /// Ids of the rows `filter` (a fixed condition on `values`, with the
    /// order wanted) selects.
    fn ids_where(
        &self,
        filter: &str,
        values: impl rusqlite::Params,
    ) -> Result<Vec<Uuid>, StoreError> {
        let reader = lock(&self.reader);
        let sql = format!("SELECT id FROM conversations WHERE {filter}");
        let mut statement = reader.prepare_cached(&sql).map_err(db_error("read"))?;
        let rows = statement
            .query_map(values, |row| row.get::<_, Vec<u8>>(0))
            .map_err(db_error("read"))?;
        Ok(rows.filter_map(Result::ok).filter_map(uuid_of).collect())
    }

    /// Conversations with a deadline that came by `now`, and the earliest
    /// deadline after it.
    pub(super) fn deadlines(
        &self,
        now: DateTime<Utc>,
    ) -> Result<(Vec<Uuid>, Option<DateTime<Utc>>), StoreError> {
        let now = nanos(now);
        let due = self.ids_where("deadline <= ?1 ORDER BY deadline", [now])?;
        let next: Option<i64> = lock(&self.reader)
            .query_row(
                "SELECT min(deadline) FROM conversations WHERE deadline > ?1",
                [now],
                |row| row.get(0),
            )
            .map_err(db_error("read the deadlines"))?;
        Ok((due, next.map(DateTime::from_timestamp_nanos)))
    }

    /// Conversations whose file may not hold what their row says.
    pub(super) fn dirty(&self) -> Result<Vec<Uuid>, StoreError> {
        self.ids_where("dirty = 1", [])
    }

    /// Conversations saved in the middle of a turn or of an approved call.
    pub(super) fn unfinished(&self) -> Result<Vec<Uuid>, StoreError> {
        self.ids_where("unfinished = 1", [])
    }

    /// Conversations waiting for approval, oldest first.
    pub(super) fn waiting(&self) -> Result<Vec<Uuid>, StoreError> {
        self.ids_where("status = 'waiting_approval' ORDER BY created_at", [])
    }

    /// The conversation approval `uuid` belongs to.
    pub(super) fn conversation_of_approval(&self, uuid: Uuid) -> Result<Option<Uuid>, StoreError> {
        lock(&self.reader)
            .query_row(
                "SELECT conversation_id FROM approvals WHERE uuid = ?1",
                [uuid.as_bytes().as_slice()],
                |row| row.get::<_, Vec<u8>>(0),
            )
            .optional()
            .map(|found| found.and_then(uuid_of))
            .map_err(db_error("look up an approval"))
    }

    /// One page of the pending approvals `query` lists, as `(approval,
    /// conversation)`, and the key to list after when more follow.
    pub(super) fn pending_page(&self, query: &PendingQuery) -> Result<PendingKeys, StoreError> {
        let mut rows = pending_rows(&lock(&self.reader), query)
            .map_err(db_error("list the pending approvals"))?;
        let more = rows.len() > query.limit;
        rows.truncate(query.limit);
        let next = more
            .then(|| rows.last())
            .flatten()
            .map(|(at, uuid, _)| (DateTime::from_timestamp_nanos(*at), *uuid));
        Ok((
            rows.into_iter().map(|(_, uuid, id)| (uuid, id)).collect(),
            next,
        ))
    }

    /// One page of the ids `query` lists, and the counts of its scope.
    pub(super) fn page(&self, query: &ListQuery) -> Result<IdPage, StoreError> {
        let reader = lock(&self.reader);
        let summary = counts(&reader, query).map_err(db_error("count"))?;
        let mut rows = page_rows(&reader, query).map_err(db_error("list"))?;
        let more = rows.len() > query.limit;
        rows.truncate(query.limit);
        let next = more
            .then(|| rows.last().copied())
            .flatten()
            .map(|(at, id)| (DateTime::from_timestamp_nanos(at), id));
        Ok(IdPage {
            ids: rows.into_iter().map(|(_, id)| id).collect(),
            next,
            summary,
        })
    }
}

/// Drops the tables of a catalog of another format (they are made again
/// with this format's columns, and rebuilt from the files: the format
/// recorded stays the older one until then).
fn drop_older_format(writer: &Connection) -> rusqlite::Result<()> {
    writer.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    )?;
    let format: Option<String> = writer
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get(0)
        })
        .optional()?;
    if format.is_some_and(|format| format != FORMAT) {
        writer.execute_batch(
            "DROP TABLE IF EXISTS conversations; DROP TABLE IF EXISTS approvals; \
             DROP TABLE IF EXISTS pending;",
        )?;
    }
    Ok(())
}

/// This boot of the machine (Linux); `None` elsewhere, where a catalog
/// left open is never trusted.
fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
}

/// Creates `path`'s directory and the file itself readable by the owner
/// only (SQLite gives its `-wal` and `-shm` files the database file's
/// mode).
fn create_private_file(path: &Path) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        super::json_files::create_private_dir(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        options.open(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
    }
    #[cfg(not(unix))]
    {
        options.open(path).map(drop)
    }
}
