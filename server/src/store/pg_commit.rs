//! Group commit for the PostgreSQL store: the saves that arrive while
//! earlier ones are being committed wait together and go in as one
//! statement (one transaction, one WAL flush), so concurrent
//! conversations share the cost of durability. A save still returns only
//! once its row is committed.

use asg_shared::Conversation;
use chrono::{DateTime, Utc};
use sqlx::postgres::PgPool;
use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc, oneshot};
use uuid::Uuid;

use super::StoreError;

/// The most saves one statement commits.
const MAX_BATCH: usize = 256;
/// Batches being committed at once (the others' saves gather meanwhile).
const IN_FLIGHT: usize = 4;

/// One save waiting for its commit.
pub struct Save {
    row: Row,
    done: oneshot::Sender<Result<(), String>>,
}

/// A conversation as its row.
struct Row {
    id: Uuid,
    status: &'static str,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    doc: serde_json::Value,
}

impl Save {
    /// A save of `conversation`, and where its outcome arrives.
    pub fn of(
        conversation: &Conversation,
    ) -> Result<(Save, oneshot::Receiver<Result<(), String>>), StoreError> {
        let doc = serde_json::to_value(conversation)
            .map_err(|e| StoreError(format!("cannot serialize the conversation: {e}")))?;
        let (done, outcome) = oneshot::channel();
        let row = Row {
            id: conversation.id,
            status: conversation.status.as_str(),
            created_at: conversation.created_at,
            updated_at: conversation.updated_at,
            doc,
        };
        Ok((Save { row, done }, outcome))
    }
}

/// Starts the committer for a writer holding fencing token `epoch`; it
/// ends when every sender is gone.
pub fn spawn(pool: PgPool, epoch: i64) -> mpsc::UnboundedSender<Save> {
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(run(pool, epoch, receiver));
    sender
}

async fn run(pool: PgPool, epoch: i64, mut saves: mpsc::UnboundedReceiver<Save>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = saves.recv().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match saves.try_recv() {
                Ok(save) => batch.push(save),
                Err(_) => break,
            }
        }
        let pool = pool.clone();
        tokio::spawn(async move {
            let (rows, waiting): (Vec<Row>, Vec<_>) =
                batch.into_iter().map(|save| (save.row, save.done)).unzip();
            let outcome = commit(&pool, epoch, rows).await;
            for done in waiting {
                let _ = done.send(outcome.clone());
            }
            drop(slot);
        });
    }
}

/// Upserts the batch in one statement, only while `epoch` is still the
/// writer's token (`FOR SHARE`: a takeover waits for it).
async fn commit(pool: &PgPool, epoch: i64, batch: Vec<Row>) -> Result<(), String> {
    // One row per conversation (a statement cannot update a row twice):
    // the last save of each wins, as it would one after the other.
    let mut rows: Vec<Row> = Vec::with_capacity(batch.len());
    for row in batch {
        match rows.iter().position(|r| r.id == row.id) {
            Some(at) => rows[at] = row,
            None => rows.push(row),
        }
    }
    let ids = rows.iter().map(|r| r.id).collect::<Vec<_>>();
    let statuses = rows.iter().map(|r| r.status).collect::<Vec<_>>();
    let created = rows.iter().map(|r| r.created_at).collect::<Vec<_>>();
    let updated = rows.iter().map(|r| r.updated_at).collect::<Vec<_>>();
    let docs = rows.into_iter().map(|r| r.doc).collect::<Vec<_>>();
    let query = sqlx::query(
        "WITH writer AS (SELECT 1 FROM writer_epoch WHERE id = 1 AND epoch = $6 FOR SHARE) \
         INSERT INTO conversations (id, status, created_at, updated_at, doc) \
         SELECT r.id, r.status, r.created_at, r.updated_at, r.doc \
         FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::jsonb[]) \
           AS r(id, status, created_at, updated_at, doc), writer \
         ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, \
         updated_at = EXCLUDED.updated_at, doc = EXCLUDED.doc",
    )
    .bind(ids)
    .bind(statuses)
    .bind(created)
    .bind(updated)
    .bind(docs)
    .bind(epoch);
    let done = super::postgres::limited(query.execute(pool))
        .await
        .map_err(|e| format!("cannot save: {e}"))?;
    if done.rows_affected() == 0 {
        return Err("not saved: another agent process is the store's writer now".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use asg_shared::ConversationStatus;
    use asg_tests::pg::TestDb;

    use super::*;

    fn row(id: Uuid, status: ConversationStatus) -> Row {
        let now = Utc::now();
        Row {
            id,
            status: status.as_str(),
            created_at: now,
            updated_at: now,
            doc: serde_json::json!({ "status": status.as_str() }),
        }
    }

    async fn statuses(pool: &PgPool) -> Vec<(Uuid, String)> {
        sqlx::query_as("SELECT id, status FROM conversations ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_batch_keeps_the_last_save_of_each_conversation_and_obeys_the_token() {
        let db = TestDb::create().await;
        let pool = crate::store::postgres::connect(&db.url, 2).await.unwrap();
        crate::store::postgres::migrate(&pool).await.unwrap();
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let batch = vec![
            row(a, ConversationStatus::Active),
            row(b, ConversationStatus::Active),
            row(a, ConversationStatus::WaitingApproval),
        ];
        commit(&pool, 0, batch).await.unwrap();
        assert_eq!(
            statuses(&pool).await,
            [(a, "waiting_approval".into()), (b, "active".into())]
        );
        // A stale fencing token commits nothing of the batch.
        let stale = vec![
            row(a, ConversationStatus::Completed),
            row(Uuid::from_u128(3), ConversationStatus::Active),
        ];
        let error = commit(&pool, 7, stale).await.unwrap_err();
        assert!(error.contains("another agent process"), "{error}");
        assert_eq!(statuses(&pool).await.len(), 2);
        assert_eq!(statuses(&pool).await[0].1, "waiting_approval");
    }
}
