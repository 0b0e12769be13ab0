//! Per-conversation leases of the PostgreSQL store: which replica may
//! change a conversation now.
//!
//! A lease is a fresh token written to the conversation's row
//! (`lease_token`, `lease_until`). It is taken only when the row has none
//! or its holder stopped renewing it ([`LEASE_TTL`] passed), renewed every
//! [`RENEW_EVERY`] while held, and cleared on release. A save commits only
//! while the row's token is the saver's (`pg_commit.rs`), so a replica
//! that was cut off long enough to lose a lease can never overwrite what
//! the next holder did. A new conversation has no row yet: its lease is
//! taken in memory and written with the first save.
//!
//! **No state without a holder or a way out.** A row with something in
//! flight (`in_flight!`: a turn marked in progress, an approval
//! `executing`) always carries a lease: saves never clear one, and a
//! release (the only statement that does) leaves such a row's lease
//! expired instead, so the next sweep of any replica
//! ([`Leases::expired`]) records the turn as interrupted, or the next
//! claim does. A holder that dies keeps its lease until it expires, with
//! the same outcome.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use sqlx::postgres::PgPool;
use uuid::Uuid;

use super::StoreError;
use super::postgres::limited;

/// SQL: whether the row's document has something in flight — a turn
/// marked in progress or an approval `executing`, what
/// `engine::approval::recover_interrupted` settles (kept in step by
/// `tests::in_flight_in_sql_is_what_recovery_settles`).
macro_rules! in_flight {
    () => {
        "(COALESCE((doc ->> 'turn_in_progress')::boolean, false) \
          OR jsonb_path_exists(doc, '$.pending_approvals[*] ? (@.state == \"executing\")') \
          OR COALESCE(doc #>> '{pending_approval,state}' = 'executing', false))"
    };
}

/// How long a lease outlives its holder's last renewal: how soon another
/// replica takes over a conversation whose replica died.
pub const LEASE_TTL: Duration = Duration::from_secs(10);
/// How often held leases are renewed (a third of [`LEASE_TTL`]: two
/// renewals may fail before a lease is lost).
const RENEW_EVERY: Duration = Duration::from_secs(3);

/// The leases this process holds: conversation id → token.
#[derive(Default)]
pub(super) struct Leases {
    held: Mutex<HashMap<Uuid, Uuid>>,
}

/// What an attempt to take a lease found.
pub(super) enum Taken {
    /// Taken; the stored document (`None`: no row yet).
    Yes(Option<serde_json::Value>),
    /// Another replica holds it.
    Busy,
}

impl Leases {
    /// The leases of a store on `pool`, renewed in the background until
    /// the store is gone.
    pub(super) fn start(pool: PgPool) -> Arc<Leases> {
        let leases = Arc::new(Leases::default());
        tokio::spawn(renew(pool, Arc::downgrade(&leases)));
        leases
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Uuid>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The token this process holds for `id`.
    pub(super) fn token(&self, id: Uuid) -> Option<Uuid> {
        self.held().get(&id).copied()
    }

    /// Takes `id`'s lease when it is free or its holder's expired.
    pub(super) async fn take(&self, pool: &PgPool, id: Uuid) -> Result<Taken, StoreError> {
        let token = Uuid::new_v4();
        let failed = |e: sqlx::Error| StoreError(format!("cannot claim conversation {id}: {e}"));
        let doc: Option<serde_json::Value> = limited(
            sqlx::query_scalar(
                "UPDATE conversations SET lease_token = $2, \
                 lease_until = now() + make_interval(secs => $3) \
                 WHERE id = $1 AND (lease_token IS NULL OR lease_until < now()) \
                 RETURNING doc",
            )
            .bind(id)
            .bind(token)
            .bind(LEASE_TTL.as_secs_f64())
            .fetch_optional(pool),
        )
        .await
        .map_err(failed)?;
        if doc.is_none() {
            let exists: bool = limited(
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1)")
                    .bind(id)
                    .fetch_one(pool),
            )
            .await
            .map_err(failed)?;
            if exists {
                return Ok(Taken::Busy);
            }
        }
        self.held().insert(id, token);
        Ok(Taken::Yes(doc))
    }

    /// Gives `id`'s lease back (a lease already lost is left alone). A
    /// row still in flight (the holder's last save failed, or it gave up
    /// on a state it could not settle) keeps its lease, expired: the sweep
    /// takes it over at once, where a cleared lease would leave it stuck.
    pub(super) async fn release(&self, pool: &PgPool, id: Uuid) {
        let Some(token) = self.held().remove(&id) else {
            return;
        };
        let released: Result<Option<bool>, _> = limited(
            sqlx::query_scalar(concat!(
                "UPDATE conversations SET \
                   lease_token = CASE WHEN ",
                in_flight!(),
                " THEN lease_token END, \
                   lease_until = CASE WHEN ",
                in_flight!(),
                " THEN now() - interval '1 second' END \
                 WHERE id = $1 AND lease_token = $2 \
                 RETURNING lease_token IS NOT NULL"
            ))
            .bind(id)
            .bind(token)
            .fetch_optional(pool),
        )
        .await;
        match released {
            Ok(Some(true)) => {
                tracing::warn!(conversation = %id, "released in the middle of a turn; left to the sweep, which records it as interrupted");
            }
            Ok(_) => {}
            // It expires by itself.
            Err(error) => {
                tracing::warn!(conversation = %id, %error, "cannot release a conversation's lease; it expires");
            }
        }
    }

    /// Whether another replica holds a live lease on `id`.
    pub(super) async fn held_elsewhere(&self, pool: &PgPool, id: Uuid) -> bool {
        let live: Option<Option<Uuid>> = limited(
            sqlx::query_scalar(
                "SELECT lease_token FROM conversations \
                 WHERE id = $1 AND lease_token IS NOT NULL AND lease_until >= now()",
            )
            .bind(id)
            .fetch_optional(pool),
        )
        .await
        .unwrap_or(None);
        match live.flatten() {
            Some(token) => self.token(id) != Some(token),
            None => false,
        }
    }

    /// Conversations whose lease expired without a release: their
    /// replica died (or was cut off) in the middle of a turn.
    pub(super) async fn expired(pool: &PgPool) -> Result<Vec<Uuid>, StoreError> {
        limited(
            sqlx::query_scalar(
                "SELECT id FROM conversations \
                 WHERE lease_token IS NOT NULL AND lease_until < now() \
                 ORDER BY lease_until LIMIT 100",
            )
            .fetch_all(pool),
        )
        .await
        .map_err(|e| StoreError(format!("cannot look for expired leases: {e}")))
    }
}

/// Renews the held leases every [`RENEW_EVERY`]; ends with the store.
async fn renew(pool: PgPool, leases: Weak<Leases>) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        let Some(leases) = leases.upgrade() else {
            return;
        };
        let tokens: Vec<Uuid> = leases.held().values().copied().collect();
        if tokens.is_empty() {
            continue;
        }
        // Rows locked in id order, as the committer writes them: never a
        // deadlock between a renewal and a save.
        let renewed = limited(
            sqlx::query(
                "UPDATE conversations SET lease_until = now() + make_interval(secs => $2) \
                 WHERE id IN (SELECT id FROM conversations WHERE lease_token = ANY($1) \
                              ORDER BY id FOR UPDATE)",
            )
            .bind(&tokens)
            .bind(LEASE_TTL.as_secs_f64())
            .execute(&pool),
        )
        .await;
        if let Err(error) = renewed {
            tracing::warn!(%error, leases = tokens.len(), "cannot renew the conversations' leases");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use asg_shared::Conversation;
    use asg_tests::pg::TestDb;
    use chrono::Utc;
    use serde_json::{Value, json};
    use uuid::Uuid;

    use super::*;
    use crate::store::{Claim, PgStore, Store};
    use asg_core::lifecycle::recover_interrupted;

    /// A waiting conversation's document: its turn marked or not, its
    /// approval in the list and/or (as older rows have it) alone in
    /// `pending_approval`, in `state`.
    fn doc(turn_in_progress: bool, state: &str, in_list: bool, alone: bool) -> Value {
        let id = Uuid::new_v4();
        let approval = json!({"uuid": Uuid::new_v4(), "conversation_id": id,
            "tool_name": "resources_add", "tool_args": {}, "description": "",
            "created_at": Utc::now(), "call_id": "c1", "state": state});
        let mut doc = json!({"id": id, "session_id": "abcd1234", "status": "waiting_approval",
            "messages": [], "created_at": Utc::now(), "updated_at": Utc::now(),
            "turn_in_progress": turn_in_progress});
        if in_list {
            doc["pending_approvals"] = json!([approval.clone()]);
        }
        if alone {
            doc["pending_approval"] = approval;
        }
        doc
    }

    async fn in_flight_in_sql(pool: &PgPool, doc: &Value) -> bool {
        sqlx::query_scalar(concat!(
            "SELECT ",
            in_flight!(),
            " FROM (SELECT $1::jsonb AS doc) AS row"
        ))
        .bind(doc)
        .fetch_one(pool)
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn in_flight_in_sql_is_what_recovery_settles() {
        let db = TestDb::create().await;
        let pool = crate::store::postgres::connect(&db.url, 2).await.unwrap();
        for turn in [false, true] {
            for state in ["pending", "executing"] {
                for (in_list, alone) in [(true, true), (false, true), (true, false)] {
                    let raw = doc(turn, state, in_list, alone);
                    let conversation: Conversation = serde_json::from_value(raw.clone()).unwrap();
                    let settles = recover_interrupted(&mut conversation.clone(), Utc::now());
                    let saved = serde_json::to_value(&conversation).unwrap();
                    assert_eq!(in_flight_in_sql(&pool, &raw).await, settles, "{raw}");
                    assert_eq!(in_flight_in_sql(&pool, &saved).await, settles, "{saved}");
                }
            }
        }
    }

    async fn blocking<T: Send + 'static>(
        store: &Arc<dyn Store>,
        call: impl FnOnce(&dyn Store) -> T + Send + 'static,
    ) -> T {
        let store = store.clone();
        tokio::task::spawn_blocking(move || call(store.as_ref()))
            .await
            .unwrap()
    }

    async fn lease_of(pool: &PgPool, id: Uuid) -> Option<Uuid> {
        sqlx::query_scalar("SELECT lease_token FROM conversations WHERE id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_release_never_leaves_a_state_in_flight_without_a_lease() {
        let db = TestDb::create().await;
        let store: Arc<dyn Store> = Arc::new(PgStore::open(&db.url, 2).await.unwrap());
        let pool = crate::store::postgres::connect(&db.url, 1).await.unwrap();
        let executing: Conversation =
            serde_json::from_value(doc(true, "executing", true, true)).unwrap();
        let id = executing.id;
        // A holder that gives it back still in flight (its last save
        // failed): the lease stays, expired, and the sweep finds it.
        blocking(&store, move |s| {
            assert!(matches!(s.claim(id).unwrap(), Claim::Taken(None)));
            s.save(&executing).unwrap();
            s.release(id);
        })
        .await;
        assert!(lease_of(&pool, id).await.is_some());
        assert_eq!(blocking(&store, |s| s.abandoned().unwrap()).await, [id]);
        // Whoever claims it next settles it; then the release clears.
        blocking(&store, move |s| {
            let Ok(Claim::Taken(Some(mut stored))) = s.claim(id) else {
                panic!("an expired lease is taken");
            };
            assert!(recover_interrupted(&mut stored, Utc::now()));
            s.save(&stored).unwrap();
            s.release(id);
        })
        .await;
        assert_eq!(lease_of(&pool, id).await, None);
        assert!(
            blocking(&store, |s| s.abandoned().unwrap())
                .await
                .is_empty()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rows_an_earlier_release_left_in_flight_get_an_expired_lease() {
        let db = TestDb::create().await;
        let pool = crate::store::postgres::connect(&db.url, 2).await.unwrap();
        // The schema as the previous release left it (migrations 1 to 3).
        let mut before = sqlx::migrate!("./migrations");
        before.migrations = std::borrow::Cow::Owned(before.migrations[..3].to_vec());
        before.run(&pool).await.unwrap();
        let stuck = doc(true, "executing", true, true);
        let idle = doc(false, "pending", true, true);
        for doc in [&stuck, &idle] {
            sqlx::query(
                "INSERT INTO conversations (id, status, created_at, updated_at, doc) \
                 VALUES ($1, 'waiting_approval', now(), now(), $2)",
            )
            .bind(doc["id"].as_str().unwrap().parse::<Uuid>().unwrap())
            .bind(doc)
            .execute(&pool)
            .await
            .unwrap();
        }
        crate::store::postgres::migrate(&pool).await.unwrap();
        let stuck_id: Uuid = stuck["id"].as_str().unwrap().parse().unwrap();
        assert_eq!(Leases::expired(&pool).await.unwrap(), [stuck_id]);
    }
}
