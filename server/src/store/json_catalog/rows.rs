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

/// The rows of several saves, in save order, as the newest row of each
/// conversation, holding every approval uuid its older rows had (approval
/// rows are only ever added): writing these is writing them all in order.
pub(in crate::store) fn coalesce(rows: Vec<Entry>) -> Vec<Entry> {
    let mut newest: Vec<Entry> = Vec::with_capacity(rows.len());
    let mut at: HashMap<Uuid, usize> = HashMap::with_capacity(rows.len());
    for row in rows.into_iter().rev() {
        match at.get(&row.id) {
            Some(&kept) => {
                let kept = &mut newest[kept];
                for uuid in row.approvals {
                    if !kept.approvals.contains(&uuid) {
                        kept.approvals.push(uuid);
                    }
                }
            }
            None => {
                at.insert(row.id, newest.len());
                newest.push(row);
            }
        }
    }
    newest.reverse();
    newest
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
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let first = fixtures::conversation();
        let mut first_later = first.clone();
        first_later.status = asg_shared::ConversationStatus::WaitingApproval;
        let second = fixtures::conversation();
        let rows = vec![
            row(&first, &[a]),
            row(&second, &[]),
            row(&first_later, &[b]),
        ];
        let newest = coalesce(rows);
        assert_eq!(newest.len(), 2);
        assert_eq!(newest[0], row(&second, &[]));
        assert_eq!(newest[1], row(&first_later, &[b, a]));
    }
}
