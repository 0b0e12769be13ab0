//! At open, the journal's saves go to their files: the newest record of
//! each conversation (by sequence number; a change rebuilt on the
//! record before it, see [`super::delta`]) is written like a checkpoint
//! writes it. A record cut short at the tail (a write a crash
//! interrupted, never acknowledged) is logged and ignored; a journal file
//! damaged in the middle is copied to the quarantine directory whole
//! (its other records are still replayed), and a whole record that is not
//! a conversation is set aside there too.

use std::collections::HashMap;
use std::path::Path;

use asg_shared::Conversation;
use uuid::Uuid;

use super::checkpoint::{file_bytes, write_files};
use super::delta::{self, Base, Payload};
use super::journal::{Journal, Record};
use super::{create_private_dir, free_name};
use crate::store::StoreError;

/// What the replay found.
#[derive(Default)]
pub(super) struct Replayed {
    /// The newest journaled version of each conversation, now in its file.
    pub conversations: Vec<Conversation>,
    /// Journal files and records set aside.
    pub quarantined: usize,
    /// The highest sequence number read.
    pub last_seq: u64,
}

/// Writes the newest journaled version of every conversation to its file
/// under `dir` (synced); what cannot be read goes to `quarantine`.
pub(super) fn replay(
    journal: &Journal,
    dir: &Path,
    quarantine: &Path,
) -> Result<Replayed, StoreError> {
    let files = journal
        .read()
        .map_err(|e| StoreError(format!("cannot read the journal: {e}")))?;
    let mut replayed = Replayed::default();
    let mut records = Vec::new();
    for (path, contents) in files {
        if let Some((at, bytes)) = contents.torn_tail {
            tracing::warn!(journal = %path.display(), offset = at, bytes, "the journal ends with a record a stop cut short (never acknowledged); ignored");
        }
        if !contents.damaged.is_empty() {
            replayed.quarantined += usize::from(set_aside_file(&path, quarantine));
        }
        records.extend(contents.records);
    }
    // In save order: a change follows the record it changes.
    records.sort_by_key(|record| record.seq);
    let mut newest: HashMap<Uuid, (u64, Conversation)> = HashMap::new();
    for record in records {
        replayed.last_seq = replayed.last_seq.max(record.seq);
        let version = match delta::read(&record.payload) {
            Ok(Payload::Whole(conversation)) => Ok(conversation),
            Ok(Payload::Change { base, conversation }) => rebuild(&mut newest, base, conversation),
            Err(error) => Err(format!("it is not a conversation: {error}")),
        };
        match version {
            Ok(conversation) => {
                newest.insert(conversation.id, (record.seq, conversation));
            }
            Err(problem) => {
                set_aside_record(&record, &problem, quarantine, &mut replayed.quarantined)
            }
        }
    }
    // Written in the files' own format (pretty), not the record's.
    let written = write_files(
        dir,
        newest
            .iter()
            .map(|(id, (_, conversation))| file_bytes(conversation).map(|b| (*id, b))),
    )
    .map_err(|e| StoreError(format!("cannot write the journal's conversations: {e}")))?;
    if written > 0 {
        tracing::info!(
            conversations = written,
            "conversations saved before the agent stopped written from the journal"
        );
    }
    replayed.conversations = newest.into_values().map(|(_, c)| c).collect();
    Ok(replayed)
}

/// The version a change record makes of the record before it (taken
/// out of `newest`; left there when the change is not of it).
fn rebuild(
    newest: &mut HashMap<Uuid, (u64, Conversation)>,
    base: Base,
    change: Conversation,
) -> Result<Conversation, String> {
    let held = newest
        .get(&change.id)
        .map(|(seq, older)| (*seq, older.messages.len()));
    match held {
        Some(held) if held == (base.seq, base.messages) => {}
        _ => {
            return Err(format!(
                "it changes record {} ({} messages) of conversation {}, and the journal's newest record of it is {}",
                base.seq,
                base.messages,
                change.id,
                match held {
                    Some((seq, messages)) => format!("record {seq} ({messages} messages)"),
                    None => "none".into(),
                }
            ));
        }
    }
    match newest.remove(&change.id) {
        Some((_, older)) => delta::apply(older, base, change),
        None => Err("its earlier record went missing".into()),
    }
}

/// Sets aside a whole record that cannot be replayed (counted).
fn set_aside_record(record: &Record, problem: &str, quarantine: &Path, quarantined: &mut usize) {
    let name = format!("journal-record-{}.json", record.seq);
    let kept = keep(quarantine, &name, &record.payload);
    tracing::error!(seq = record.seq, %problem, kept_as = ?kept, "a journal record cannot be replayed; set aside");
    *quarantined += 1;
}

/// Copies a damaged journal file to the quarantine directory. True when
/// copied.
fn set_aside_file(path: &Path, quarantine: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "journal.log".into());
    let kept = std::fs::read(path).and_then(|bytes| keep(quarantine, &name, &bytes));
    match kept {
        Ok(target) => {
            tracing::error!(journal = %path.display(), copied_to = %target.display(), "the journal is damaged in the middle; its whole records are replayed and the file is copied to quarantine");
            true
        }
        Err(error) => {
            tracing::error!(journal = %path.display(), %error, "the journal is damaged in the middle and cannot be copied to quarantine; its whole records are replayed");
            false
        }
    }
}

/// Writes `bytes` to a free name like `name` in `quarantine` (owner-only,
/// synced).
fn keep(quarantine: &Path, name: &str, bytes: &[u8]) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write;
    create_private_dir(quarantine)?;
    let target = free_name(quarantine, name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&target)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::File::open(quarantine)?.sync_all()?;
    Ok(target)
}
