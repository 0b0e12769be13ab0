//! The audit trail in PostgreSQL: the `audit_log` table of migration
//! 0005, one row per line (`line`: the JSON object a line of
//! `audit.jsonl` holds; `at`, `conversation`, `approval`, `event` beside
//! it for queries). Each line is its own insert, committed before
//! [`PgAudit::append`] returns (with the server's `synchronous_commit`,
//! on by default, that is durable), so a decision's line is in the
//! database before its call runs, whichever replica decides.

use sqlx::PgPool;
use uuid::Uuid;

use super::AuditLine;
use crate::store::postgres::limited;

/// The table, on the store's pool.
#[derive(Debug)]
pub(super) struct PgAudit {
    pool: PgPool,
}

impl PgAudit {
    pub(super) fn new(pool: PgPool) -> PgAudit {
        PgAudit { pool }
    }

    /// Inserts `line` and waits for the commit (never longer than the
    /// store's statement limit).
    pub(super) async fn append(&self, line: &AuditLine<'_>) -> std::io::Result<()> {
        let doc = serde_json::to_value(line).map_err(std::io::Error::other)?;
        limited(
            sqlx::query(
                "INSERT INTO audit_log (at, conversation, approval, event, line) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(line.time)
            .bind(line.conversation)
            .bind(line.approval)
            .bind(line.event)
            .bind(doc)
            .execute(&self.pool),
        )
        .await
        .map(|_| ())
        .map_err(|e| std::io::Error::other(format!("cannot insert into audit_log: {e}")))
    }

    /// The lines of one conversation, in the order they were written.
    pub(super) async fn lines(
        &self,
        conversation: Uuid,
    ) -> std::io::Result<Vec<serde_json::Value>> {
        limited(
            sqlx::query_scalar("SELECT line FROM audit_log WHERE conversation = $1 ORDER BY id")
                .bind(conversation)
                .fetch_all(&self.pool),
        )
        .await
        .map_err(|e| std::io::Error::other(format!("cannot read audit_log: {e}")))
    }
}
