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
//! Several agent processes (replicas) share a database. Nothing is kept
//! in memory across requests: reads go to the database, and a
//! conversation is changed only under its lease (`pg_lease.rs`), which
//! also fences the saves: a replica whose lease was taken over can never
//! write that conversation again. Every commit notifies the other
//! replicas (`LISTEN/NOTIFY` on [`CHANGES`]) so their live event streams
//! follow turns that run elsewhere.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use asg_shared::Conversation;
use futures::TryStreamExt;
use sqlx::Row;
use sqlx::postgres::{PgListener, PgPool, PgPoolOptions};
use tokio::runtime::Handle;
use uuid::Uuid;

use super::pg_lease::Leases;
use super::{
    Claim, Deadlines, ListPage, ListQuery, PendingPage, PendingQuery, StatusCounts, Store,
    StoreError,
};
use asg_shared::ConversationStatus;
use chrono::{DateTime, Utc};

/// The channel every commit notifies, with the conversation id.
pub const CHANGES: &str = "asg_conversations";
/// The channel of the replicas' notes ([`Store::announce`]): the
/// announcing process's id, a space, the note.
pub const NOTES: &str = "asg_notes";
/// The longest note sent (PostgreSQL takes up to 8000 bytes).
const MAX_NOTE: usize = 7000;
/// How long a connection may take before the store says it is down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a health ping may take before the database counts as down.
const PING_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one statement may take before it fails.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the database is pinged (what `/health` reports).
const HEALTH_CHECK: Duration = Duration::from_secs(2);
/// Pings in a row that may time out (a busy database) before the store
/// counts as down: one slow ping is not an outage.
const SLOW_PINGS: u32 = 3;

/// The PostgreSQL store.
pub struct PgStore {
    pool: PgPool,
    url: String,
    /// Saves go through the group committer (`pg_commit.rs`).
    commits: tokio::sync::mpsc::UnboundedSender<super::pg_commit::Save>,
    handle: Handle,
    /// The last ping answered (`GET /health` reads it: probes never wait
    /// on the database).
    up: Arc<AtomicBool>,
    leases: Arc<Leases>,
    quarantined: AtomicUsize,
    /// This process, in its notes (it skips its own).
    me: Uuid,
}

/// The database part of a URL, without user, password or query (for
/// messages and logs); the configuration's, which shows it too.
pub use crate::config::describe_database_url as describe;

/// A pool on `url` (no migration).
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

/// `future`, or an error after [`STATEMENT_TIMEOUT`] (a half-open
/// connection never hangs a caller).
pub(crate) async fn limited<T>(
    future: impl std::future::Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, sqlx::Error> {
    tokio::time::timeout(STATEMENT_TIMEOUT, future)
        .await
        .unwrap_or_else(|_| Err(sqlx::Error::PoolTimedOut))
}

impl PgStore {
    /// Connects and migrates; starts the health ping, the lease renewal
    /// and the group committer.
    pub async fn open(url: &str, max_connections: u32) -> Result<PgStore, StoreError> {
        let pool = connect(url, max_connections).await?;
        migrate(&pool).await?;
        let filled = PgStore::fill_task_columns(&pool)
            .await
            .map_err(|e| StoreError(format!("cannot fill in the task columns: {e}")))?;
        if filled > 0 {
            tracing::info!(conversations = filled, "task columns filled in");
        }
        tracing::info!(database = %describe(url), "using the PostgreSQL store");
        let up = Arc::new(AtomicBool::new(true));
        tokio::spawn(watch_health(
            pool.clone(),
            url.to_string(),
            Arc::downgrade(&up),
        ));
        // Renewals on a connection of their own: a busy pool never lets
        // a live replica's leases expire.
        let leases = Leases::start(connect(url, 1).await?);
        let commits = super::pg_commit::spawn(pool.clone());
        Ok(PgStore {
            pool,
            url: url.to_string(),
            commits,
            handle: Handle::current(),
            up,
            leases,
            quarantined: Default::default(),
            me: Uuid::new_v4(),
        })
    }

    /// The store's connection pool, for the tables that live beside the
    /// conversations (the audit trail, the A2A push configs).
    pub fn pool(&self) -> PgPool {
        self.pool.clone()
    }

    /// Runs `future` on the runtime from a blocking thread (the engine
    /// calls the store on the blocking pool).
    fn block<T>(&self, future: impl std::future::Future<Output = T>) -> T {
        self.handle.block_on(future)
    }

    /// A stored document, or `None` (logged and counted) when it cannot
    /// be read.
    fn parse(&self, id: Uuid, doc: serde_json::Value) -> Option<Conversation> {
        match serde_json::from_value::<Conversation>(doc) {
            Ok(conversation) => Some(conversation),
            Err(error) => {
                // Left in place, not served: named in the log, counted
                // in /health like a quarantined file.
                tracing::error!(conversation = %id, %error, "a stored conversation cannot be read; it is skipped");
                self.quarantined.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    fn read_error(what: &str) -> impl FnOnce(sqlx::Error) -> StoreError + '_ {
        move |e| StoreError(format!("cannot read {what}: {e}"))
    }
}

/// The listing's filter on the scope's booleans and subject ($1-$4) and
/// on the task filters ($5-$7: state, context id, changed since).
macro_rules! listed {
    () => {
        "($1 OR owner = $2 OR (owner IS NULL AND $3) OR ($4 AND had_approval)) \
         AND ($5::text IS NULL OR task_state = $5) \
         AND ($6::text IS NULL OR context_id = $6) \
         AND ($7::timestamptz IS NULL OR updated_at >= $7)"
    };
}

/// `statement` with the values of [`listed`] bound ($1-$7).
fn bind_listed<'q>(
    statement: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    query: &'q ListQuery,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    let (scope, tasks) = (&query.scope, &query.tasks);
    statement
        .bind(scope.everything)
        .bind(&scope.subject)
        .bind(scope.anonymous)
        .bind(scope.approvals)
        .bind(tasks.state.map(|s| s.as_str()))
        .bind(tasks.context_id.as_deref())
        .bind(tasks.changed_since)
}

impl PgStore {
    /// [`Store::list_page`]: the counts, then the page (one row more than
    /// asked tells whether more follow).
    async fn list(&self, query: &ListQuery) -> Result<ListPage, sqlx::Error> {
        let counts = limited(
            bind_listed(
                sqlx::query(concat!(
                    "SELECT status, count(*) FROM conversations WHERE ",
                    listed!(),
                    " GROUP BY status"
                )),
                query,
            )
            .fetch_all(&self.pool),
        )
        .await?;
        let mut summary = StatusCounts::default();
        for row in counts {
            let (status, count): (String, i64) = (row.get(0), row.get(1));
            if let Some(status) = ConversationStatus::parse(&status) {
                summary.add(status, usize::try_from(count).unwrap_or(0));
            }
        }
        let (at, id) = query.after.unzip();
        let rows = limited(
            bind_listed(
                sqlx::query(concat!(
                    "SELECT id, doc, created_at FROM conversations WHERE ",
                    listed!(),
                    " AND ($8::text IS NULL OR status = $8) \
                     AND ($9::timestamptz IS NULL OR created_at < $9 \
                          OR (created_at = $9 AND id > $10)) \
                     ORDER BY created_at DESC, id LIMIT $11"
                )),
                query,
            )
            .bind(query.status.map(|s| s.as_str()))
            .bind(at)
            .bind(id)
            .bind(i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX))
            .fetch_all(&self.pool),
        )
        .await?;
        let more = rows.len() > query.limit;
        let mut page = ListPage {
            summary,
            ..ListPage::default()
        };
        for row in rows.into_iter().take(query.limit) {
            let key = (row.get("created_at"), row.get("id"));
            if let Some(conversation) = self.parse(key.1, row.get("doc")) {
                page.conversations.push(conversation);
            }
            page.next = more.then_some(key);
        }
        Ok(page)
    }

    /// Fills in the task columns ([`super::task_columns`]) of the rows
    /// that have none (saved before migration 7, or by an earlier
    /// release's replica), from their documents, a batch at a time. A row
    /// saved meanwhile keeps what its save wrote; an unreadable document
    /// gets the state `unknown`.
    async fn fill_task_columns(pool: &PgPool) -> Result<usize, sqlx::Error> {
        let mut filled = 0;
        loop {
            let rows: Vec<(Uuid, serde_json::Value)> = limited(
                sqlx::query_as(
                    "SELECT id, doc FROM conversations WHERE task_state IS NULL \
                     ORDER BY id LIMIT 500",
                )
                .fetch_all(pool),
            )
            .await?;
            if rows.is_empty() {
                return Ok(filled);
            }
            filled += rows.len();
            let (ids, states, contexts) = task_columns_of(rows);
            limited(
                sqlx::query(
                    "UPDATE conversations c SET task_state = r.task_state, \
                       context_id = r.context_id \
                     FROM unnest($1::uuid[], $2::text[], $3::text[]) \
                       AS r(id, task_state, context_id) \
                     WHERE c.id = r.id AND c.task_state IS NULL",
                )
                .bind(ids)
                .bind(states)
                .bind(contexts)
                .execute(pool),
            )
            .await?;
        }
    }
}

/// The task columns of stored documents, as three arrays.
fn task_columns_of(
    rows: Vec<(Uuid, serde_json::Value)>,
) -> (Vec<Uuid>, Vec<&'static str>, Vec<String>) {
    let mut columns = (Vec::new(), Vec::new(), Vec::new());
    for (id, doc) in rows {
        let (state, context) = match serde_json::from_value::<Conversation>(doc) {
            Ok(conversation) => {
                let (state, context) = super::task_columns(&conversation);
                (state.as_str(), context)
            }
            Err(_) => ("unknown", id.to_string()),
        };
        columns.0.push(id);
        columns.1.push(state);
        columns.2.push(context);
    }
    columns
}

/// Pings the database every [`HEALTH_CHECK`]; ends with the store.
async fn watch_health(pool: PgPool, url: String, up: Weak<AtomicBool>) {
    let mut slow = 0;
    loop {
        tokio::time::sleep(HEALTH_CHECK).await;
        let Some(up) = up.upgrade() else {
            return;
        };
        let ping = sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&pool);
        let alive = match tokio::time::timeout(PING_TIMEOUT, ping).await {
            Ok(Ok(_)) => true,
            Ok(Err(_)) => false,
            Err(_) => {
                slow += 1;
                if slow < SLOW_PINGS {
                    tracing::warn!(database = %describe(&url), slow, "the database was slow to answer a ping");
                    continue;
                }
                false
            }
        };
        slow = 0;
        if up.swap(alive, Ordering::SeqCst) != alive {
            tracing::warn!(database = %describe(&url), up = alive, "the database's availability changed");
        }
    }
}

impl Store for PgStore {
    fn load_all(&self) -> Result<Vec<Conversation>, StoreError> {
        self.block(async {
            let mut loaded = Vec::new();
            let mut rows = sqlx::query("SELECT id, doc FROM conversations ORDER BY created_at, id")
                .fetch(&self.pool);
            while let Some(row) = rows.try_next().await? {
                loaded.extend(self.parse(row.get("id"), row.get("doc")));
            }
            Ok(loaded)
        })
        .map_err(Self::read_error("the conversations"))
    }

    fn save(&self, conversation: &Conversation) -> Result<(), StoreError> {
        let failed = |e: String| StoreError(format!("conversation {}: {e}", conversation.id));
        let token = self.leases.token(conversation.id).ok_or_else(|| {
            failed("not saved: this agent process has not claimed the conversation".into())
        })?;
        let (save, outcome) = super::pg_commit::Save::of(conversation, token)?;
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
        if self.up.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(StoreError(
                "the database did not answer its last ping".into(),
            ))
        }
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn load(&self, id: Uuid) -> Result<Option<Conversation>, StoreError> {
        let doc: Option<serde_json::Value> = self
            .block(limited(
                sqlx::query_scalar("SELECT doc FROM conversations WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&self.pool),
            ))
            .map_err(Self::read_error("a conversation"))?;
        Ok(doc.and_then(|doc| self.parse(id, doc)))
    }

    fn saved_at(&self, id: Uuid) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.block(limited(
            sqlx::query_scalar("SELECT updated_at FROM conversations WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool),
        ))
        .map_err(Self::read_error("a conversation's version"))
    }

    fn pending_page(&self, query: &PendingQuery) -> Result<PendingPage, StoreError> {
        self.block(super::pg_approvals::page(&self.pool, query))
            .map_err(Self::read_error("the pending approvals"))
    }

    fn deadlines(&self, now: DateTime<Utc>) -> Result<Deadlines, StoreError> {
        let (due, next) = self
            .block(super::pg_approvals::deadlines(&self.pool, now))
            .map_err(Self::read_error("the approvals' deadlines"))?;
        let mut deadlines = Deadlines {
            due: Vec::new(),
            next,
        };
        for id in due {
            deadlines.due.extend(self.load(id)?);
        }
        Ok(deadlines)
    }

    fn conversation_of_approval(&self, uuid: Uuid) -> Result<Option<Uuid>, StoreError> {
        self.block(limited(
            sqlx::query_scalar(
                "SELECT conversation_id FROM approval_conversations WHERE uuid = $1",
            )
            .bind(uuid)
            .fetch_optional(&self.pool),
        ))
        .map_err(Self::read_error("an approval"))
    }

    fn waiting(&self) -> Result<Vec<Conversation>, StoreError> {
        let rows = self
            .block(limited(
                sqlx::query(
                    "SELECT id, doc FROM conversations WHERE status = 'waiting_approval' \
                     ORDER BY created_at, id",
                )
                .fetch_all(&self.pool),
            ))
            .map_err(Self::read_error("the waiting conversations"))?;
        Ok(rows
            .into_iter()
            .filter_map(|row| self.parse(row.get("id"), row.get("doc")))
            .collect())
    }

    fn list_page(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        self.block(self.list(query))
            .map_err(Self::read_error("the conversations"))
    }

    fn claim(&self, id: Uuid) -> Result<Claim, StoreError> {
        match self.block(self.leases.take(&self.pool, id))? {
            super::pg_lease::Taken::Busy => Ok(Claim::Busy),
            super::pg_lease::Taken::Yes(None) => Ok(Claim::Taken(None)),
            super::pg_lease::Taken::Yes(Some(doc)) => match self.parse(id, doc) {
                Some(stored) => Ok(Claim::Taken(Some(Box::new(stored)))),
                None => {
                    // Never a turn from a cached copy over a row we
                    // cannot read: it may be newer.
                    self.release(id);
                    Err(StoreError(format!(
                        "conversation {id} is stored in a form this agent cannot read"
                    )))
                }
            },
        }
    }

    fn release(&self, id: Uuid) {
        self.block(self.leases.release(&self.pool, id));
    }

    fn claimed_elsewhere(&self, id: Uuid) -> bool {
        self.block(self.leases.held_elsewhere(&self.pool, id))
    }

    fn abandoned(&self) -> Result<Vec<Uuid>, StoreError> {
        self.block(Leases::expired(&self.pool))
    }

    fn announce(&self, note: &str) {
        if note.len() > MAX_NOTE {
            tracing::warn!(
                bytes = note.len(),
                "a note to the other replicas is too long; not sent"
            );
            return;
        }
        let (pool, payload) = (self.pool.clone(), format!("{} {note}", self.me));
        self.handle.spawn(async move {
            let sent = limited(
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(NOTES)
                    .bind(payload)
                    .execute(&pool),
            )
            .await;
            if let Err(error) = sent {
                tracing::debug!(%error, "cannot send a note to the other replicas");
            }
        });
    }

    fn watch(
        &self,
        on_change: Arc<dyn Fn(Uuid) + Send + Sync>,
        on_note: Arc<dyn Fn(&str) + Send + Sync>,
    ) {
        let heard = Heard {
            me: self.me.to_string(),
            on_change,
            on_note,
        };
        self.handle.spawn(listen(self.url.clone(), heard));
    }
}

/// Who hears what [`listen`] receives.
struct Heard {
    me: String,
    on_change: Arc<dyn Fn(Uuid) + Send + Sync>,
    on_note: Arc<dyn Fn(&str) + Send + Sync>,
}

impl Heard {
    fn tell(&self, channel: &str, payload: &str) {
        if channel == CHANGES {
            if let Ok(id) = payload.parse::<Uuid>() {
                (self.on_change)(id);
            }
            return;
        }
        match payload.split_once(' ') {
            Some((from, note)) if from != self.me => (self.on_note)(note),
            _ => {} // our own, or not a note
        }
    }
}

/// Follows [`CHANGES`] and [`NOTES`] for the process's lifetime, reconnecting after a
/// lost connection (changes made meanwhile are not replayed: event
/// streams are live only).
async fn listen(url: String, heard: Heard) {
    loop {
        let listener = async {
            let mut listener = PgListener::connect(&url).await?;
            listener.listen_all([CHANGES, NOTES]).await?;
            loop {
                let notification = listener.recv().await?;
                heard.tell(notification.channel(), notification.payload());
            }
            #[allow(unreachable_code)]
            Ok::<(), sqlx::Error>(())
        };
        if let Err(error) = listener.await {
            tracing::warn!(database = %describe(&url), %error, "lost the change notifications; listening again");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
