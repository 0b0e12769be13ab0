//! The catalog's listing queries: counts by status within a scope, keyset
//! pages of conversations (newest first) and of pending approvals (oldest
//! first).
//!
//! Each statement is built from fixed fragments, only those the query
//! needs (its values are bound, never written into the text), so SQLite
//! can use an index for every condition: the owner's conversations
//! through `conversations_owner`, a cursor as a range seek.

use asg_shared::ConversationStatus;
use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};
use uuid::Uuid;

use super::{nanos, uuid_of};
use crate::store::{ListQuery, PendingQuery, StatusCounts};
use asg_core::access::ReadScope;

/// A statement and its values, in the order of their `?`.
#[derive(Default)]
struct Sql {
    text: String,
    values: Vec<Value>,
}

impl Sql {
    fn new(text: &str) -> Sql {
        Sql {
            text: text.to_string(),
            values: Vec::new(),
        }
    }

    /// Appends a fixed fragment and the values of its `?`.
    fn push(&mut self, fragment: &str, values: impl IntoIterator<Item = Value>) -> &mut Sql {
        self.text.push_str(fragment);
        self.values.extend(values);
        self
    }

    fn rows<T>(
        &self,
        reader: &Connection,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<Vec<T>> {
        let mut statement = reader.prepare_cached(&self.text)?;
        let rows = statement.query_map(params_from_iter(self.values.iter()), row)?;
        Ok(rows.filter_map(Result::ok).collect())
    }
}

fn blob(id: Uuid) -> Value {
    Value::Blob(id.as_bytes().to_vec())
}

fn limit(limit: usize) -> Value {
    Value::Integer(i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX))
}

/// `WHERE` and the conversations `scope` may read: only the terms that
/// apply.
fn where_in_scope(scope: &ReadScope) -> Sql {
    let mut sql = Sql::new(" WHERE ");
    if scope.everything {
        sql.push("1", []);
        return sql;
    }
    sql.push("(owner = ?", [Value::Text(scope.subject.clone())]);
    if scope.anonymous {
        sql.push(" OR owner IS NULL", []);
    }
    if scope.approvals {
        sql.push(" OR had_approval", []);
    }
    sql.push(")", []);
    sql
}

/// `AND` the task filters of `query` (none: nothing).
fn task_filters(sql: &mut Sql, query: &ListQuery) {
    let filter = &query.tasks;
    if let Some(state) = filter.state {
        sql.push(" AND task_state = ?", [Value::Text(state.as_str().into())]);
    }
    if let Some(context) = &filter.context_id {
        sql.push(" AND context_id = ?", [Value::Text(context.clone())]);
    }
    if let Some(since) = filter.changed_since {
        sql.push(" AND updated_at >= ?", [Value::Integer(nanos(since))]);
    }
}

/// One page of `(approval, conversation)` keys `query` lists, one more
/// than asked (it tells whether more follow).
pub(super) fn pending_rows(
    reader: &Connection,
    query: &PendingQuery,
) -> rusqlite::Result<Vec<(i64, Uuid, Uuid)>> {
    let mut sql = Sql::new("SELECT created_at, uuid, conversation_id FROM pending WHERE 1");
    if let Some(subject) = &query.requested_by {
        sql.push(" AND requested_by = ?", [Value::Text(subject.clone())]);
    }
    if query.proxies {
        sql.push(" AND proxy", []);
    }
    if let Some(questions) = query.questions {
        sql.push(" AND question = ?", [Value::Integer(i64::from(questions))]);
    }
    if let Some(state) = query.state {
        let state = crate::store::state_name(state).to_string();
        sql.push(" AND state = ?", [Value::Text(state)]);
    }
    if let Some((at, uuid)) = query.after {
        let at = Value::Integer(nanos(at));
        sql.push(
            " AND created_at >= ? AND (created_at > ? OR uuid > ?)",
            [at.clone(), at, blob(uuid)],
        );
    }
    sql.push(" ORDER BY created_at, uuid LIMIT ?", [limit(query.limit)]);
    let rows = sql.rows(reader, |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, Vec<u8>>(1)?,
            row.get::<_, Vec<u8>>(2)?,
        ))
    })?;
    Ok(rows
        .into_iter()
        .filter_map(|(at, uuid, id)| Some((at, uuid_of(uuid)?, uuid_of(id)?)))
        .collect())
}

/// Counts by status of every conversation in the query's scope that
/// passes its task filters.
pub(super) fn counts(reader: &Connection, query: &ListQuery) -> rusqlite::Result<StatusCounts> {
    let mut sql = Sql::new("SELECT status, count(*) FROM conversations");
    let scope = where_in_scope(&query.scope);
    sql.push(&scope.text, scope.values);
    task_filters(&mut sql, query);
    sql.push(" GROUP BY status", []);
    let rows = sql.rows(reader, |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
    })?;
    let mut summary = StatusCounts::default();
    for (status, count) in rows {
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
    let mut sql = Sql::new("SELECT created_at, id FROM conversations");
    let scope = where_in_scope(&query.scope);
    sql.push(&scope.text, scope.values);
    if let Some(status) = query.status {
        sql.push(
            " AND status = ?",
            [Value::Text(status.as_str().to_string())],
        );
    }
    task_filters(&mut sql, query);
    if let Some((at, id)) = query.after {
        let at = Value::Integer(nanos(at));
        sql.push(
            " AND created_at <= ? AND (created_at < ? OR id > ?)",
            [at.clone(), at, blob(id)],
        );
    }
    sql.push(
        " ORDER BY created_at DESC, id LIMIT ?",
        [limit(query.limit)],
    );
    let rows = sql.rows(reader, |row| {
        Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?))
    })?;
    Ok(rows
        .into_iter()
        .filter_map(|(at, id)| uuid_of(id).map(|id| (at, id)))
        .collect())
}
