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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use sqlx::postgres::PgPool;
use uuid::Uuid;

use super::StoreError;
use super::postgres::limited;

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

    /// Gives `id`'s lease back (a lease already lost is left alone).
    pub(super) async fn release(&self, pool: &PgPool, id: Uuid) {
        let Some(token) = self.held().remove(&id) else {
            return;
        };
        let cleared = limited(
            sqlx::query(
                "UPDATE conversations SET lease_token = NULL, lease_until = NULL \
                 WHERE id = $1 AND lease_token = $2",
            )
            .bind(id)
            .bind(token)
            .execute(pool),
        )
        .await;
        if let Err(error) = cleared {
            // It expires by itself.
            tracing::warn!(conversation = %id, %error, "cannot release a conversation's lease; it expires");
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
