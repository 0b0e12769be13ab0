//! The catalog's rows: what it keeps of a conversation and of its pending
//! approvals, and how a row is written.

use asg_shared::{ApprovalState, Conversation, PendingApproval};
use std::collections::HashMap;

use rusqlite::params;
use uuid::Uuid;

use super::nanos;

/// What the catalog keeps of one conversation.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::store) struct Entry {
    pub(super) id: Uuid,
    created_at: i64,
    status: &'static str,
    owner: Option<String>,
    had_approval: bool,
    unfinished: bool,
    deadline: Option<i64>,
    updated_at: i64,
    task_state: &'static str,
    context_id: String,
    approvals: Vec<Uuid>,
    pending: Vec<Pending>,
}

/// What the catalog keeps of one pending approval.
#[derive(Debug, Clone, PartialEq)]
struct Pending {
    uuid: Uuid,
    created_at: i64,
    state: &'static str,
    requested_by: Option<String>,
    proxy: bool,
    question: bool,
}

impl Pending {
    fn of(approval: &PendingApproval) -> Pending {
        Pending {
            uuid: approval.uuid,
            created_at: nanos(approval.created_at),
            state: crate::store::state_name(approval.state),
            requested_by: approval.requested_by.as_ref().map(|by| by.subject.clone()),
            proxy: approval.remote_task_id.is_some(),
            question: approval.is_question(),
        }
    }
}

impl Entry {
    /// The catalog's row of `conversation`.
    pub(in crate::store) fn of(conversation: &Conversation) -> Entry {
        let executing = conversation
            .pending()
            .iter()
            .any(|p| p.state == ApprovalState::Executing);
        let (task_state, context_id) = crate::store::task_columns(conversation);
        Entry {
            id: conversation.id,
            created_at: nanos(conversation.created_at),
            status: conversation.status.as_str(),
            owner: conversation.owner.clone(),
            had_approval: conversation.had_approval(),
            unfinished: conversation.turn_in_progress || executing,
            deadline: crate::store::next_deadline(conversation).map(nanos),
            updated_at: nanos(conversation.updated_at),
            task_state: task_state.as_str(),
            context_id,
            approvals: conversation.approval_uuids().collect(),
            pending: conversation.pending().iter().map(Pending::of).collect(),
        }
    }
}

/// The rows of several saves as the newest row of each conversation,
/// merged as they come (a burst of saves holds one row per conversation,
/// not one per save), each holding every approval uuid its older rows had
/// (approval rows are only ever added): writing these, in any order, is
/// writing them all in save order.
#[derive(Debug, Default)]
pub(in crate::store) struct Coalesced {
    rows: Vec<Entry>,
    /// Where each conversation's row is in `rows`.
    at: HashMap<Uuid, usize>,
}

impl Coalesced {
    /// Adds a row newer than every row here.
    pub(in crate::store) fn push(&mut self, row: Entry) {
        match self.at.get(&row.id) {
            Some(&kept) => {
                let older = std::mem::replace(&mut self.rows[kept], row);
                self.rows[kept].keep_approvals_of(older);
            }
            None => self.insert(row),
        }
    }

    /// Adds rows older than every row here (put back after a failed
    /// write, ahead of the rows queued since).
    pub(in crate::store) fn push_older(&mut self, rows: Vec<Entry>) {
        for row in rows {
            match self.at.get(&row.id) {
                Some(&newer) => self.rows[newer].keep_approvals_of(row),
                None => self.insert(row),
            }
        }
    }

    fn insert(&mut self, row: Entry) {
        self.at.insert(row.id, self.rows.len());
        self.rows.push(row);
    }

    /// Every row, leaving none.
    pub(in crate::store) fn take(&mut self) -> Vec<Entry> {
        self.at.clear();
        std::mem::take(&mut self.rows)
    }

    /// Conversations with a row here.
    #[cfg(test)]
    pub(in crate::store) fn len(&self) -> usize {
        self.rows.len()
    }
}

impl Entry {
    /// Adds the approval uuids of an older row of the same conversation.
    fn keep_approvals_of(&mut self, older: Entry) {
        for uuid in older.approvals {
            if !self.approvals.contains(&uuid) {
                self.approvals.push(uuid);
            }
        }
    }
}

pub(super) fn put_entry(
    tx: &rusqlite::Transaction<'_>,
    entry: &Entry,
    dirty: bool,
) -> rusqlite::Result<()> {
    let id = entry.id.as_bytes().as_slice();
    // Every statement of a save is prepared once per connection: parsing
    // the upsert again at every save cost about 1.5 % of a turn's CPU.
    tx.prepare_cached(
        "INSERT INTO conversations \
           (id, created_at, status, owner, had_approval, unfinished, deadline, dirty, \
            updated_at, task_state, context_id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
         ON CONFLICT (id) DO UPDATE SET created_at = excluded.created_at, \
           status = excluded.status, owner = excluded.owner, \
           had_approval = excluded.had_approval, unfinished = excluded.unfinished, \
           deadline = excluded.deadline, dirty = excluded.dirty, \
           updated_at = excluded.updated_at, task_state = excluded.task_state, \
           context_id = excluded.context_id",
    )?
    .execute(params![
        id,
        entry.created_at,
        entry.status,
        entry.owner,
        entry.had_approval,
        entry.unfinished,
        entry.deadline,
        dirty,
        entry.updated_at,
        entry.task_state,
        entry.context_id
    ])?;
    let mut approval = tx.prepare_cached(
        "INSERT INTO approvals (uuid, conversation_id) VALUES (?1, ?2) \
         ON CONFLICT (uuid) DO NOTHING",
    )?;
    for uuid in &entry.approvals {
        approval.execute(params![uuid.as_bytes().as_slice(), id])?;
    }
    tx.prepare_cached("DELETE FROM pending WHERE conversation_id = ?1")?
        .execute([id])?;
    let mut pending = tx.prepare_cached(
        "INSERT INTO pending (uuid, conversation_id, created_at, state, requested_by, proxy, question) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (uuid) DO NOTHING",
    )?;
    for p in &entry.pending {
        pending.execute(params![
            p.uuid.as_bytes().as_slice(),
            id,
            p.created_at,
            p.state,
            p.requested_by,
            p.proxy,
            p.question
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use asg_shared::fixtures;

    use super::*;

    fn row(conversation: &Conversation, approvals: &[Uuid]) -> Entry {
        Entry {
            approvals: approvals.to_vec(),
            ..Entry::of(conversation)
        }
    }

    #[test]
    fn coalesced_rows_are_the_newest_of_each_with_every_approval_kept() {
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let first = fixtures::conversation();
        let mut first_later = first.clone();
        first_later.status = asg_shared::ConversationStatus::WaitingApproval;
        let second = fixtures::conversation();
        let mut rows = Coalesced::default();
        rows.push(row(&first, &[a]));
        rows.push(row(&second, &[]));
        rows.push(row(&first_later, &[b]));
        assert_eq!(rows.len(), 2, "one row a conversation, as they come");
        let newest = rows.take();
        assert_eq!(newest[0], row(&first_later, &[b, a]));
        assert_eq!(newest[1], row(&second, &[]));
        assert_eq!(rows.len(), 0);

        // Rows put back after a failed write are older than those queued
        // since: they add their approvals, never replace a newer row.
        let mut second_later = second.clone();
        second_later.status = asg_shared::ConversationStatus::WaitingApproval;
        rows.push(row(&second_later, &[c]));
        rows.push_older(newest);
        let after = rows.take();
        assert_eq!(after.len(), 2);
        assert_eq!(after[0], row(&second_later, &[c]));
        assert_eq!(after[1], row(&first_later, &[b, a]));
    }
}
