//! The shared PostgreSQL store (`store.url`, or `DATABASE_URL`): one row
//! per conversation, the whole conversation as `jsonb` (the document a
//! JSON-store file holds) beside the columns listings sort on.
//!
//! A save returns once PostgreSQL has committed it (`synchronous_commit`
//! as the server has it, on by default), so what the API answered is
//! durable as with the JSON files. The schema is created and migrated at
//! startup with the embedded migrations (`server/migrations/`), under
//! sqlx's advisory lock, so replicas starting at once are safe; `agent
//! migrate` runs them alone.
//!
//! One agent process writes to a database at a time. It waits for a
//! session advisory lock (held on a connection of its own for its
//! lifetime; another process started on the same database waits, logging
//! why), then bumps the fencing token in `writer_epoch`. Every save
//! commits only while that token is still its own (`... FROM writer_epoch
//! WHERE epoch = $mine FOR SHARE`): a process that lost its connection
//! and was replaced can never write again, and a takeover waits for the
//! saves in flight. When the lock's connection drops (a database restart),
//! a watcher takes the lock again and keeps its token if nobody else took
//! it meanwhile; if somebody did, the process exits so that it restarts
//! and waits for its turn.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use asg_shared::Conversation;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};
use sqlx::{Connection, Row};
use tokio::runtime::Handle;

use super::{Store, StoreError};

/// The advisory lock key of the single writer ("asg-writer" as bytes).
const WRITER_LOCK: i64 = 0x6173_672d_7772_6974;
/// How long a connection may take before the store says it is down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the watcher's ping may take before the database counts as
/// down.
const PING_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one statement may take before it fails.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the database and the writer lock's connection are checked.
const WRITER_CHECK: Duration = Duration::from_secs(2);
/// Pings in a row that may time out on a live connection (a busy
/// database) before the store counts it as lost: one slow ping never
/// gives up the writer lock.
const SLOW_PINGS: u32 = 3;

/// The PostgreSQL store.
pub struct PgStore {
    pool: PgPool,
    /// Saves go through the group committer (`pg_commit.rs`).
    commits: tokio::sync::mpsc::UnboundedSender<super::pg_commit::Save>,
    handle: Handle,
    writer: Arc<Writer>,
    quarantined: AtomicUsize,
}

/// The connection holding [`WRITER_LOCK`], and whether it still does.
struct Writer {
    url: String,
    /// The last ping answered (`GET /health` reads it: probes never wait
    /// on the database).
    up: AtomicBool,
    /// This process's fencing token (`writer_epoch.epoch`).
    epoch: i64,
    connection: tokio::sync::Mutex<Option<PgConnection>>,
    held: AtomicBool,
    /// Another process took the lock while ours was lost: never write.
    lost: AtomicBool,
}

/// The database part of a URL, without user, password or query (for
/// messages and logs).
pub fn describe(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(parsed) => format!(
            "{}://{}{}{}",
            parsed.scheme(),
            parsed.host_str().unwrap_or(""),
            parsed.port().map(|p| format!(":{p}")).unwrap_or_default(),
            parsed.path()
        ),
        Err(_) => "an unparsable URL".to_string(),
    }
}

/// A pool on `url` (no migration, no lock).
pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool, StoreError> {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect(url)
        .await
        .map_err(|e| StoreError(format!("cannot connect to {}: {}", describe(url), e)))
}

/// Creates or migrates the schema (safe with several processes at once).
pub async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    sqlx::migrate!("./migrations")
        .run(pool)
        .await
        .map_err(|e| StoreError(format!("cannot migrate the database: {e}")))
}

impl PgStore {
    /// Connects, waits to be the database's one writer, then migrates.
    pub async fn open(url: &str, max_connections: u32) -> Result<PgStore, StoreError> {
        let pool = connect(url, max_connections).await?;
        let (connection, epoch) = become_writer(url, &pool).await?;
        tracing::info!(database = %describe(url), epoch, "using the PostgreSQL store");
        let writer = Arc::new(Writer {
            url: url.to_string(),
            up: AtomicBool::new(true),
            epoch,
            connection: tokio::sync::Mutex::new(Some(connection)),
            held: AtomicBool::new(true),
            lost: AtomicBool::new(false),
        });
        tokio::spawn(watch_writer(Arc::downgrade(&writer)));
        let commits = super::pg_commit::spawn(pool.clone(), epoch);
        Ok(PgStore {
            pool,
            commits,
            handle: Handle::current(),
            writer,
            quarantined: Default::default(),
        })
    }

    /// An error unless this process may write now.
    fn check_writer(&self) -> Result<(), StoreError> {
        if self.writer.lost.load(Ordering::SeqCst) {
            return Err(StoreError(
                "another agent process became the store's writer; this one no longer writes".into(),
            ));
        }
        if !self.writer.held.load(Ordering::SeqCst) {
            return Err(StoreError(
                "the database connection holding the writer lock dropped; waiting to take it again"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Runs `future` on the runtime from a blocking thread (the engine
    /// calls the store on the blocking pool).
    fn block<T>(&self, future: impl std::future::Future<Output = T>) -> T {
        self.handle.block_on(future)
    }
}

/// Waits for the writer lock, migrates, and takes a new fencing token:
/// the lock's connection and the token.
async fn become_writer(url: &str, pool: &PgPool) -> Result<(PgConnection, i64), StoreError> {
    let mut connection = hold_writer_lock(url).await?;
    migrate(pool).await?;
    let epoch: i64 = limited(
        sqlx::query_scalar(
            "UPDATE writer_epoch SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch",
        )
        .fetch_one(&mut connection),
    )
    .await
    .map_err(|e| StoreError(format!("cannot take the writer token: {e}")))?;
    Ok((connection, epoch))
}

/// `future`, or an error after [`STATEMENT_TIMEOUT`] (a half-open
/// connection never hangs a caller).
pub(super) async fn limited<T>(
    future: impl std::future::Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, sqlx::Error> {
    tokio::time::timeout(STATEMENT_TIMEOUT, future)
        .await
        .unwrap_or_else(|_| Err(sqlx::Error::PoolTimedOut))
}

/// Checks the writer lock's connection every [`WRITER_CHECK`] (that
/// check is also what `/health` reports); takes the lock again when the
/// connection dropped. Ends with the store.
async fn watch_writer(writer: Weak<Writer>) {
    let mut slow = 0;
    loop {
        tokio::time::sleep(WRITER_CHECK).await;
        let Some(writer) = writer.upgrade() else {
            return;
        };
        let mut connection = writer.connection.lock().await;
        let alive = match connection.as_mut() {
            Some(c) => match tokio::time::timeout(PING_TIMEOUT, c.ping()).await {
                Ok(Ok(())) => true,
                Ok(Err(_)) => false,
                Err(_) => {
                    // No answer in time: the connection may still be fine.
                    slow += 1;
                    if slow < SLOW_PINGS {
                        tracing::warn!(database = %describe(&writer.url), slow, "the database was slow to answer a ping");
                        continue;
                    }
                    false
                }
            },
            None => false,
        };
        slow = 0;
        if writer.up.swap(alive, Ordering::SeqCst) != alive {
            tracing::warn!(database = %describe(&writer.url), up = alive, "the database's availability changed");
        }
        if alive {
            continue;
        }
        if writer.held.swap(false, Ordering::SeqCst) {
            tracing::error!(database = %describe(&writer.url), "lost the database connection holding the writer lock; writes wait until it is taken again");
        }
        // Our old session goes first, so its lock cannot outlive it here.
        *connection = None;
        *connection = match retake_writer_lock(&writer).await {
            Retake::Held(c) => Some(c),
            Retake::NotYet => None,
            Retake::Replaced => {
                writer.lost.store(true, Ordering::SeqCst);
                replaced(&writer.url);
                return;
            }
        };
        writer.up.store(connection.is_some(), Ordering::SeqCst);
    }
}

/// Another process became the writer while this one was cut off: it
/// must never write again. The agent exits (non-zero) so that it restarts
/// and waits for its turn; the store refuses every write meanwhile.
fn replaced(url: &str) {
    tracing::error!(database = %describe(url), "another agent process became the store's writer while this one was cut off; exiting so that it restarts and waits for its turn");
    #[cfg(not(test))]
    std::process::exit(75);
}

/// How an attempt to take the lock again ended.
enum Retake {
    /// Taken again, with the same token.
    Held(PgConnection),
    /// Not now (database away, or our old session still holds it).
    NotYet,
    /// Another process took the token meanwhile.
    Replaced,
}

/// One attempt to take the lock again and keep this process's token.
async fn retake_writer_lock(writer: &Writer) -> Retake {
    let Ok(Ok(mut connection)) =
        tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect(&writer.url)).await
    else {
        return Retake::NotYet;
    };
    let taken: Result<bool, _> = limited(
        sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(WRITER_LOCK)
            .fetch_one(&mut connection),
    )
    .await;
    if !matches!(taken, Ok(true)) {
        // Held elsewhere: by another process (whose token tells) or by our
        // own old session, which the server ends when it notices.
        return match current_epoch(&mut connection).await {
            Some(epoch) if epoch != writer.epoch => Retake::Replaced,
            _ => Retake::NotYet,
        };
    }
    match current_epoch(&mut connection).await {
        Some(epoch) if epoch == writer.epoch => {
            tracing::info!(database = %describe(&writer.url), "the writer lock is held again");
            writer.held.store(true, Ordering::SeqCst);
            Retake::Held(connection)
        }
        Some(_) => Retake::Replaced,
        None => Retake::NotYet,
    }
}

/// The current fencing token.
async fn current_epoch(connection: &mut PgConnection) -> Option<i64> {
    limited(sqlx::query_scalar("SELECT epoch FROM writer_epoch WHERE id = 1").fetch_one(connection))
        .await
        .ok()
}

/// Takes the single-writer lock on its own connection, waiting while
/// another process holds it.
async fn hold_writer_lock(url: &str) -> Result<PgConnection, StoreError> {
    let mut connection = PgConnection::connect(url)
        .await
        .map_err(|e| StoreError(format!("cannot connect to {}: {}", describe(url), e)))?;
    let mut waited = 0u64;
    loop {
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(WRITER_LOCK)
            .fetch_one(&mut connection)
            .await
            .map_err(|e| StoreError(format!("cannot take the writer lock: {e}")))?;
        if taken {
            return Ok(connection);
        }
        if waited.is_multiple_of(10) {
            tracing::warn!(database = %describe(url), waited_secs = waited, "another agent process holds the store; waiting for it (one writer per database)");
        }
        waited += 1;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

impl Store for PgStore {
    fn load_all(&self) -> Result<Vec<Conversation>, StoreError> {
        let rows = self
            .block(limited(
                sqlx::query("SELECT id, doc FROM conversations ORDER BY created_at, id")
                    .fetch_all(&self.pool),
            ))
            .map_err(|e| StoreError(format!("cannot read the conversations: {e}")))?;
        let mut loaded = Vec::with_capacity(rows.len());
        for row in rows {
            let id: uuid::Uuid = row.get("id");
            let doc: serde_json::Value = row.get("doc");
            match serde_json::from_value::<Conversation>(doc) {
                Ok(conversation) => loaded.push(conversation),
                Err(error) => {
                    // Left in place, not served: named in the log, counted
                    // in /health like a quarantined file.
                    tracing::error!(conversation = %id, %error, "a stored conversation cannot be read; it is skipped");
                    self.quarantined.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Ok(loaded)
    }

    fn save(&self, conversation: &Conversation) -> Result<(), StoreError> {
        self.check_writer()?;
        let (save, outcome) = super::pg_commit::Save::of(conversation)?;
        let failed = |e: String| StoreError(format!("conversation {}: {e}", conversation.id));
        self.commits
            .send(save)
            .map_err(|_| failed("the store's committer has stopped".into()))?;
        self.block(outcome)
            .map_err(|_| failed("the store's committer has stopped".into()))?
            .map_err(failed)
    }

    fn quarantined(&self) -> usize {
        self.quarantined.load(Ordering::Relaxed)
    }

    fn health(&self) -> Result<(), StoreError> {
        self.check_writer()?;
        if self.writer.up.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(StoreError(
                "the database did not answer its last ping".into(),
            ))
        }
    }
}
