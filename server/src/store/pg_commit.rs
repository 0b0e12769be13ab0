//! Group commit for the PostgreSQL store: the saves that arrive while
//! earlier ones are being committed wait together and go in as one
//! statement (one transaction, one WAL flush), so concurrent
//! conversations share the cost of durability. A save still returns only
//! once its row is committed.
//!
//! Each row commits only while its conversation's lease token is the
//! saver's (a row taken over by another replica is refused, the others of
//! the batch still commit), records its approvals' uuids in
//! `approval_conversations`, and notifies [`super::postgres::CHANGES`].

use asg_shared::Conversation;
use chrono::{DateTime, Utc};
use sqlx::postgres::PgPool;
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc, oneshot};
use uuid::Uuid;

use super::StoreError;
use super::pg_lease::LEASE_TTL;

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
    /// The saver's lease token.
    token: Uuid,
    owner: Option<String>,
    had_approval: bool,
    /// Every approval uuid the conversation has or had.
    approvals: Vec<Uuid>,
    /// The A2A task state and context id ([`super::task_columns`]).
    task_state: &'static str,
    context_id: String,
}

impl Save {
    /// A save of `conversation` under lease `token`, and where its
    /// outcome arrives.
    pub fn of(
        conversation: &Conversation,
        token: Uuid,
    ) -> Result<(Save, oneshot::Receiver<Result<(), String>>), StoreError> {
        let doc = serde_json::to_value(conversation)
            .map_err(|e| StoreError(format!("cannot serialize the conversation: {e}")))?;
        let (done, outcome) = oneshot::channel();
        let (task_state, context_id) = super::task_columns(conversation);
        let row = Row {
            id: conversation.id,
            status: conversation.status.as_str(),
            created_at: conversation.created_at,
            updated_at: conversation.updated_at,
            doc,
            token,
            owner: conversation.owner.clone(),
            had_approval: conversation.had_approval(),
            approvals: conversation.approval_uuids().collect(),
            task_state: task_state.as_str(),
            context_id,
        };
        Ok((Save { row, done }, outcome))
    }
}

/// Starts the committer; it ends when every sender is gone.
pub fn spawn(pool: PgPool) -> mpsc::UnboundedSender<Save> {
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(run(pool, receiver));
    sender
}

async fn run(pool: PgPool, mut saves: mpsc::UnboundedReceiver<Save>) {
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
            let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
            let outcome = commit(&pool, rows).await;
            for (id, done) in ids.into_iter().zip(waiting) {
                let _ = done.send(match &outcome {
                    Ok(saved) if saved.contains(&id) => Ok(()),
                    Ok(_) => Err(LOST.to_string()),
                    Err(error) => Err(error.clone()),
                });
            }
            drop(slot);
        });
    }
}

/// Why a row was not saved although the statement ran.
const LOST: &str =
    "not saved: this agent process no longer holds the conversation (another replica took it over)";

/// One row per conversation (a statement cannot update a row twice): the
/// last save of each wins, as it would one after the other; in id order,
/// the order lease renewals lock rows in (no deadlock between the two).
fn one_per_conversation(batch: Vec<Row>) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::with_capacity(batch.len());
    for row in batch {
        match rows.iter().position(|r| r.id == row.id) {
            Some(at) => rows[at] = row,
            None => rows.push(row),
        }
    }
    rows.sort_by_key(|r| r.id);
    rows
}

/// Upserts the batch in one statement: the ids that were saved (a row
/// whose lease token is no longer the saver's is not).
async fn commit(pool: &PgPool, batch: Vec<Row>) -> Result<HashSet<Uuid>, String> {
    let rows = one_per_conversation(batch);
    let (approvals, owners): (Vec<Uuid>, Vec<Uuid>) = rows
        .iter()
        .flat_map(|r| r.approvals.iter().map(|a| (*a, r.id)))
        .unzip();
    let ids = rows.iter().map(|r| r.id).collect::<Vec<_>>();
    let statuses = rows.iter().map(|r| r.status).collect::<Vec<_>>();
    let created = rows.iter().map(|r| r.created_at).collect::<Vec<_>>();
    let updated = rows.iter().map(|r| r.updated_at).collect::<Vec<_>>();
    let tokens = rows.iter().map(|r| r.token).collect::<Vec<_>>();
    let owners_of = rows.iter().map(|r| r.owner.clone()).collect::<Vec<_>>();
    let had = rows.iter().map(|r| r.had_approval).collect::<Vec<_>>();
    let states = rows.iter().map(|r| r.task_state).collect::<Vec<_>>();
    let contexts = rows
        .iter()
        .map(|r| r.context_id.clone())
        .collect::<Vec<_>>();
    let docs = rows.into_iter().map(|r| r.doc).collect::<Vec<_>>();
    let query = sqlx::query_scalar(
        "WITH saved AS ( \
           INSERT INTO conversations (id, status, created_at, updated_at, doc, lease_token, \
                                      lease_until, owner, had_approval, task_state, context_id) \
           SELECT r.id, r.status, r.created_at, r.updated_at, r.doc, r.token, \
                  now() + make_interval(secs => $9), r.owner, r.had_approval, \
                  r.task_state, r.context_id \
           FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::timestamptz[], \
                       $5::jsonb[], $6::uuid[], $10::text[], $11::bool[], $12::text[], \
                       $13::text[]) \
             AS r(id, status, created_at, updated_at, doc, token, owner, had_approval, \
                  task_state, context_id) \
           ORDER BY r.id \
           ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, \
             updated_at = EXCLUDED.updated_at, doc = EXCLUDED.doc, \
             owner = EXCLUDED.owner, had_approval = EXCLUDED.had_approval, \
             task_state = EXCLUDED.task_state, context_id = EXCLUDED.context_id \
           WHERE conversations.lease_token = EXCLUDED.lease_token \
           RETURNING id), \
         approvals AS ( \
           INSERT INTO approval_conversations (uuid, conversation_id) \
           SELECT a.uuid, a.conversation_id FROM unnest($7::uuid[], $8::uuid[]) \
             AS a(uuid, conversation_id) \
           WHERE a.conversation_id IN (SELECT id FROM saved) \
           ON CONFLICT (uuid) DO NOTHING) \
         SELECT id FROM saved, LATERAL (SELECT pg_notify('asg_conversations', id::text)) AS notified",
    )
    .bind(ids)
    .bind(statuses)
    .bind(created)
    .bind(updated)
    .bind(docs)
    .bind(tokens)
    .bind(approvals)
    .bind(owners)
    .bind(LEASE_TTL.as_secs_f64())
    .bind(owners_of)
    .bind(had)
    .bind(states)
    .bind(contexts);
    let saved: Vec<Uuid> = super::postgres::limited(query.fetch_all(pool))
        .await
        .map_err(|e| format!("cannot save: {e}"))?;
    Ok(saved.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use asg_shared::ConversationStatus;
    use asg_tests::pg::TestDb;

    use super::*;

    fn row(id: Uuid, status: ConversationStatus, token: Uuid) -> Row {
        let now = Utc::now();
        Row {
            id,
            status: status.as_str(),
            created_at: now,
            updated_at: now,
            doc: serde_json::json!({ "status": status.as_str() }),
            token,
            owner: None,
            had_approval: true,
            approvals: vec![Uuid::from_u128(id.as_u128() + 100)],
            task_state: "working",
            context_id: id.to_string(),
        }
    }

    async fn statuses(pool: &PgPool) -> Vec<(Uuid, String)> {
        sqlx::query_as("SELECT id, status FROM conversations ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_batch_keeps_the_last_save_of_each_conversation_and_obeys_the_leases() {
        let db = TestDb::create().await;
        let pool = crate::store::postgres::connect(&db.url, 2).await.unwrap();
        crate::store::postgres::migrate(&pool).await.unwrap();
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let ours = Uuid::new_v4();
        let batch = vec![
            row(a, ConversationStatus::Active, ours),
            row(b, ConversationStatus::Active, ours),
            row(a, ConversationStatus::WaitingApproval, ours),
        ];
        assert_eq!(commit(&pool, batch).await.unwrap(), HashSet::from([a, b]));
        assert_eq!(
            statuses(&pool).await,
            [(a, "waiting_approval".into()), (b, "active".into())]
        );
        // Under another token, `a` is refused; the rest of the batch lands.
        let stale = vec![
            row(a, ConversationStatus::Completed, Uuid::new_v4()),
            row(c, ConversationStatus::Active, Uuid::new_v4()),
        ];
        assert_eq!(commit(&pool, stale).await.unwrap(), HashSet::from([c]));
        assert_eq!(statuses(&pool).await[0].1, "waiting_approval");
        assert_eq!(statuses(&pool).await.len(), 3);
        // Each saved row's approvals are findable.
        let owner: Uuid = sqlx::query_scalar(
            "SELECT conversation_id FROM approval_conversations WHERE uuid = $1",
        )
        .bind(Uuid::from_u128(103))
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(owner, c);
    }
}
