//! The catalog's listing queries: counts by status within a scope, keyset
//! pages of conversations (newest first) and of pending approvals (oldest
//! first).

use asg_shared::ConversationStatus;
use asg_shared::rest::StatusSummary;
use rusqlite::{Connection, params};
use uuid::Uuid;

use super::{nanos, uuid_of};
use crate::store::{ListQuery, PendingQuery};

/// The listing's filter on the scope's booleans and subject (?1-?4).
macro_rules! in_scope {
    () => {
        "(?1 OR owner = ?2 OR (owner IS NULL AND ?3) OR (?4 AND had_approval))"
    };
}

/// One page of `(approval, conversation)` keys `query` lists, one more
/// than asked (it tells whether more follow).
pub(super) fn pending_rows(
    reader: &Connection,
    query: &PendingQuery,
) -> rusqlite::Result<Vec<(i64, Uuid, Uuid)>> {
    let (at, after) = match query.after {
        Some((at, uuid)) => (Some(nanos(at)), Some(uuid.as_bytes().to_vec())),
        None => (None, None),
    };
    let mut statement = reader.prepare_cached(
        "SELECT created_at, uuid, conversation_id FROM pending \
         WHERE (?1 IS NULL OR requested_by = ?1) AND (NOT ?2 OR proxy) \
           AND (?3 IS NULL OR state = ?3) \
           AND (?4 IS NULL OR created_at > ?4 OR (created_at = ?4 AND uuid > ?5)) \
         ORDER BY created_at, uuid LIMIT ?6",
    )?;
    let rows = statement.query_map(
        params![
            query.requested_by,
            query.proxies,
            query.state.map(crate::store::state_name),
            at,
            after,
            i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX)
        ],
        |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, Vec<u8>>(1)?,
                row.get::<_, Vec<u8>>(2)?,
            ))
        },
    )?;
    Ok(rows
        .filter_map(Result::ok)
        .filter_map(|(at, uuid, id)| Some((at, uuid_of(uuid)?, uuid_of(id)?)))
        .collect())
}

/// Counts by status of every conversation in the query's scope.
pub(super) fn counts(reader: &Connection, query: &ListQuery) -> rusqlite::Result<StatusSummary> {
    let scope = &query.scope;
    let mut statement = reader.prepare_cached(concat!(
        "SELECT status, count(*) FROM conversations WHERE ",
        in_scope!(),
        " GROUP BY status"
    ))?;
    let rows = statement.query_map(
        params![
            scope.everything,
            scope.subject,
            scope.anonymous,
            scope.approvals
        ],
        |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
    )?;
    let mut summary = StatusSummary::default();
    for (status, count) in rows.filter_map(Result::ok) {
        if let Some(status) = ConversationStatus::parse(&status) {
            summary.add(status, usize::try_from(count).unwrap_or(0));
        }
    }
    Ok(summary)
}

/// The page's keys, one more than asked (it tells whether more follow).
pub(super) fn page_rows(
    reader: &Connection,
    query: &ListQuery,
) -> rusqlite::Result<Vec<(i64, Uuid)>> {
    let scope = &query.scope;
    let (at, after) = match query.after {
        Some((at, id)) => (Some(nanos(at)), Some(id.as_bytes().to_vec())),
        None => (None, None),
    };
    let mut statement = reader.prepare_cached(concat!(
        "SELECT created_at, id FROM conversations WHERE ",
        in_scope!(),
        " AND (?5 IS NULL OR status = ?5) \
          AND (?6 IS NULL OR created_at < ?6 OR (created_at = ?6 AND id > ?7)) \
          ORDER BY created_at DESC, id LIMIT ?8"
    ))?;
    let rows = statement.query_map(
        params![
            scope.everything,
            scope.subject,
            scope.anonymous,
            scope.approvals,
            query.status.map(|s| s.as_str()),
            at,
            after,
            i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX)
        ],
        |row| Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?)),
    )?;
    Ok(rows
        .filter_map(Result::ok)
        .filter_map(|(at, id)| uuid_of(id).map(|id| (at, id)))
        .collect())
}
