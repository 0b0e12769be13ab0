//! Pending approvals and their deadlines on PostgreSQL, read in SQL from
//! the waiting conversations' documents: only a page of approvals, or the
//! ids of the conversations whose deadline came, leave the database.
//!
//! Times are compared as `timestamptz` (microseconds), like the
//! conversations' listing: pages are exact at that precision.

use asg_shared::PendingApproval;
use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgPool;
use uuid::Uuid;

use super::postgres::limited;
use super::{PendingPage, PendingQuery};

/// Every pending approval of a waiting conversation: `approval` (the
/// document), `at`, `uuid`, `conversation_id`. A document with several
/// pending approvals lists them in `pending_approvals`; an older one its
/// single `pending_approval`.
macro_rules! pending {
    () => {
        "
WITH pending AS (
  SELECT c.id AS conversation_id, a.value AS approval,
         (a.value->>'created_at')::timestamptz AS at, (a.value->>'uuid')::uuid AS uuid
  FROM conversations c
  CROSS JOIN LATERAL jsonb_array_elements(
    CASE WHEN jsonb_typeof(c.doc->'pending_approvals') = 'array'
              AND jsonb_array_length(c.doc->'pending_approvals') > 0
           THEN c.doc->'pending_approvals'
         WHEN jsonb_typeof(c.doc->'pending_approval') = 'object'
           THEN jsonb_build_array(c.doc->'pending_approval')
         ELSE '[]'::jsonb END) AS a
  WHERE c.status = 'waiting_approval'
)"
    };
}

/// One page of pending approvals (one row more than asked tells whether
/// more follow).
pub(super) async fn page(pool: &PgPool, query: &PendingQuery) -> Result<PendingPage, sqlx::Error> {
    let (at, uuid) = query.after.unzip();
    let sql = concat!(
        pending!(),
        " SELECT approval, at, uuid FROM pending \
         WHERE ($1::text IS NULL OR approval->'requested_by'->>'subject' = $1) \
           AND (NOT $2 OR approval->>'remote_task_id' IS NOT NULL) \
           AND ($3::text IS NULL OR coalesce(approval->>'state', 'pending') = $3) \
           AND ($4::timestamptz IS NULL OR at > $4 OR (at = $4 AND uuid > $5)) \
           AND ($7::boolean IS NULL OR (approval->'question' IS NOT NULL) = $7) \
         ORDER BY at, uuid LIMIT $6"
    );
    let rows = limited(
        sqlx::query(sql)
            .bind(query.requested_by.as_deref())
            .bind(query.proxies)
            .bind(query.state.map(super::state_name))
            .bind(at)
            .bind(uuid)
            .bind(i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX))
            .bind(query.questions)
            .fetch_all(pool),
    )
    .await?;
    let more = rows.len() > query.limit;
    let mut page = PendingPage::default();
    for row in rows.into_iter().take(query.limit) {
        let key: (DateTime<Utc>, Uuid) = (row.get("at"), row.get("uuid"));
        match serde_json::from_value::<PendingApproval>(row.get("approval")) {
            Ok(approval) => page.approvals.push(approval),
            Err(error) => {
                tracing::error!(approval = %key.1, %error, "a stored pending approval cannot be read; it is skipped")
            }
        }
        page.next = more.then_some(key);
    }
    Ok(page)
}

/// Ids of the waiting conversations with a deadline that came by `now`,
/// and the earliest deadline after it.
pub(super) async fn deadlines(
    pool: &PgPool,
    now: DateTime<Utc>,
) -> Result<(Vec<Uuid>, Option<DateTime<Utc>>), sqlx::Error> {
    let sql = concat!(
        pending!(),
        ", deadlines AS ( \
           SELECT conversation_id, (approval->>'expires_at')::timestamptz AS at FROM pending \
             WHERE coalesce(approval->>'state', 'pending') = 'pending' \
           UNION ALL \
           SELECT conversation_id, (approval->>'remind_at')::timestamptz FROM pending \
             WHERE coalesce(approval->>'state', 'pending') = 'pending' \
               AND NOT coalesce((approval->>'reminded')::boolean, false)) \
         SELECT conversation_id, min(at) AS at FROM deadlines WHERE at IS NOT NULL \
         GROUP BY conversation_id"
    );
    let rows = limited(sqlx::query(sql).fetch_all(pool)).await?;
    let mut due = Vec::new();
    let mut next: Option<DateTime<Utc>> = None;
    for row in rows {
        let at: DateTime<Utc> = row.get("at");
        if at <= now {
            due.push(row.get("conversation_id"));
        } else {
            next = Some(next.map_or(at, |n| n.min(at)));
        }
    }
    Ok((due, next))
}
