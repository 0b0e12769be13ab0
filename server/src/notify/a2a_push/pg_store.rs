//! The push configs in PostgreSQL: the `a2a_push` table of migration
//! 0006, one row per task with configs, on the store's pool, so every
//! replica answers `get`/`list` alike and sees the configs of the tasks it
//! changes. A change is read, changed and written in one transaction
//! under the row's lock; the notified mark moves in one `UPDATE` (see
//! [`super::store::PushStore::mark_notified`]).

use asg_shared::a2a::PushNotificationConfig;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Postgres, Row, Transaction};
use uuid::Uuid;

use super::store::{CANNOT_READ, CANNOT_SAVE, Notified, TaskPush};
use crate::store::postgres::limited;

/// The table, on the store's pool.
pub struct PgPushStore {
    pool: PgPool,
}

const COLUMNS: &str = "context_id, configs, notified_state, notified_message, notified_messages";

/// A row as registrations. Credentials are never in an error message.
fn entry(row: &PgRow) -> Result<TaskPush, sqlx::Error> {
    let configs: serde_json::Value = row.try_get("configs")?;
    let configs: Vec<PushNotificationConfig> = serde_json::from_value(configs)
        .map_err(|e| sqlx::Error::Decode(format!("a2a_push.configs: {}", kind(&e)).into()))?;
    let state: Option<String> = row.try_get("notified_state")?;
    let messages: Option<i64> = row.try_get("notified_messages")?;
    let notified = match (state, messages) {
        (Some(state), Some(messages)) => Some(Notified {
            state,
            message: row.try_get("notified_message")?,
            messages,
        }),
        _ => None,
    };
    Ok(TaskPush {
        context_id: row.try_get("context_id")?,
        configs,
        notified,
    })
}

/// The kind of a JSON error, without the text it may quote (a token).
fn kind(error: &serde_json::Error) -> &'static str {
    match error.classify() {
        serde_json::error::Category::Io => "i/o error",
        serde_json::error::Category::Syntax => "not JSON",
        serde_json::error::Category::Data => "not a list of configs",
        serde_json::error::Category::Eof => "truncated",
    }
}

fn logged(what: &'static str, answer: &'static str) -> impl FnOnce(sqlx::Error) -> String {
    move |error| {
        tracing::error!(%error, "cannot {what} the A2A push configs in the database");
        answer.to_string()
    }
}

impl PgPushStore {
    /// On the store's pool (the table comes with the store's migrations).
    pub fn new(pool: PgPool) -> PgPushStore {
        PgPushStore { pool }
    }

    /// A task's registrations.
    pub async fn task(&self, task: Uuid) -> Result<Option<TaskPush>, String> {
        let sql = format!("SELECT {COLUMNS} FROM a2a_push WHERE task = $1");
        let row = limited(
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(task)
                .fetch_optional(&self.pool),
        )
        .await
        .map_err(logged("read", CANNOT_READ))?;
        row.as_ref()
            .map(entry)
            .transpose()
            .map_err(logged("read", CANNOT_READ))
    }

    /// [`super::store::PushStore::update`]: the row locked, changed and
    /// written (or deleted without configs) in one transaction; an error
    /// of `change` rolls everything back.
    pub async fn update<T: Send>(
        &self,
        task: Uuid,
        change: impl FnOnce(&mut TaskPush) -> Result<T, String> + Send,
    ) -> Result<T, String> {
        let mut tx = limited(self.pool.begin())
            .await
            .map_err(logged("save", CANNOT_SAVE))?;
        let mut current = locked(&mut tx, task)
            .await
            .map_err(logged("save", CANNOT_SAVE))?;
        let result = change(&mut current)?;
        write(&mut tx, task, &current)
            .await
            .map_err(logged("save", CANNOT_SAVE))?;
        limited(tx.commit())
            .await
            .map_err(logged("save", CANNOT_SAVE))?;
        Ok(result)
    }

    /// [`super::store::PushStore::mark_notified`]: one `UPDATE` that
    /// moves the mark only when `next` is news, returning the row.
    pub async fn mark_notified(
        &self,
        task: Uuid,
        next: &Notified,
    ) -> Result<Option<TaskPush>, String> {
        let sql = format!(
            "UPDATE a2a_push SET notified_state = $2, notified_message = $3, \
             notified_messages = $4, updated_at = now() \
             WHERE task = $1 AND (notified_messages IS NULL OR ( \
                 (notified_state, notified_message) IS DISTINCT FROM ($2, $3) \
                 AND notified_messages <= $4)) \
             RETURNING {COLUMNS}"
        );
        let row = limited(
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(task)
                .bind(&next.state)
                .bind(&next.message)
                .bind(next.messages)
                .fetch_optional(&self.pool),
        )
        .await
        .map_err(logged("update", CANNOT_SAVE))?;
        row.as_ref()
            .map(entry)
            .transpose()
            .map_err(logged("read", CANNOT_READ))
    }
}

/// The task's row, locked for this transaction (an empty one when it has
/// none: inserted here, so two first configs of a task wait for each
/// other rather than both insert).
async fn locked(
    tx: &mut Transaction<'static, Postgres>,
    task: Uuid,
) -> Result<TaskPush, sqlx::Error> {
    limited(
        sqlx::query(
            "INSERT INTO a2a_push (task, context_id, configs) VALUES ($1, '', '[]'::jsonb) \
             ON CONFLICT (task) DO NOTHING",
        )
        .bind(task)
        .execute(&mut **tx),
    )
    .await?;
    let sql = format!("SELECT {COLUMNS} FROM a2a_push WHERE task = $1 FOR UPDATE");
    let row = limited(
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(task)
            .fetch_one(&mut **tx),
    )
    .await?;
    entry(&row)
}

/// Writes `entry` as the task's row, or deletes the row without configs.
async fn write(
    tx: &mut Transaction<'static, Postgres>,
    task: Uuid,
    entry: &TaskPush,
) -> Result<(), sqlx::Error> {
    if entry.configs.is_empty() {
        let delete = sqlx::query("DELETE FROM a2a_push WHERE task = $1").bind(task);
        limited(delete.execute(&mut **tx)).await?;
        return Ok(());
    }
    let configs =
        serde_json::to_value(&entry.configs).map_err(|e| sqlx::Error::Encode(kind(&e).into()))?;
    let notified = entry.notified.as_ref();
    let update = sqlx::query(
        "UPDATE a2a_push SET context_id = $2, configs = $3, notified_state = $4, \
         notified_message = $5, notified_messages = $6, updated_at = now() WHERE task = $1",
    )
    .bind(task)
    .bind(&entry.context_id)
    .bind(configs)
    .bind(notified.map(|n| n.state.clone()))
    .bind(notified.and_then(|n| n.message.clone()))
    .bind(notified.map(|n| n.messages));
    limited(update.execute(&mut **tx)).await?;
    Ok(())
}
