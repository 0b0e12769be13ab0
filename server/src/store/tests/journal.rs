//! The JSON store's journal: what a save acknowledged survives a crash
//! (the journal replayed at the next open, the newest version winning),
//! a record cut short or damaged loses nothing else, checkpoints write
//! each conversation once however often it was saved and never drop a
//! save that arrives meanwhile, and concurrent saves share syncs.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use asg_shared::Conversation;

use super::conversation;
use crate::store::json_files::QUARANTINE_DIR;
use crate::store::{JsonFileStore, Store};

/// A store whose saves stay in the journal until a checkpoint is asked.
fn open(dir: &Path) -> JsonFileStore {
    JsonFileStore::open_without_background_checkpoints(dir).unwrap()
}

fn journal_files(dir: &Path) -> [PathBuf; 2] {
    ["journal.0.log", "journal.1.log"].map(|name| dir.join("journal").join(name))
}

fn journal_bytes(dir: &Path) -> u64 {
    journal_files(dir)
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum()
}

fn file_of(dir: &Path, conversation: &Conversation) -> PathBuf {
    dir.join("conversations")
        .join(format!("{}.json", conversation.id))
}

/// The conversation stored in its own file.
fn in_file(dir: &Path, conversation: &Conversation) -> Option<Conversation> {
    let bytes = std::fs::read(file_of(dir, conversation)).ok()?;
    Some(serde_json::from_slice(&bytes).unwrap())
}

/// `conversation` with a message added (its earlier messages shared, as
/// a turn's next save has them).
fn added(conversation: &Conversation, text: &str) -> Conversation {
    let mut next = conversation.clone();
    next.messages
        .push(asg_shared::fixtures::message(asg_shared::Role::Assistant, text).into());
    next.status = asg_shared::ConversationStatus::WaitingApproval;
    next
}

/// Every record's payload, in journal order (the active file last).
fn payloads(dir: &Path) -> Vec<String> {
    let [first, second] = journal_files(dir).map(|p| std::fs::read(p).unwrap());
    let mut found: Vec<(usize, String)> = Vec::new();
    for (file, bytes) in [first, second].iter().enumerate() {
        // A record: "ASGJ", length (u32 LE), seq (u64), checksum (u32).
        let mut at = 0;
        while at + 20 <= bytes.len() {
            let length = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
            let seq = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
            let payload = String::from_utf8(bytes[at + 20..at + 20 + length].to_vec()).unwrap();
            found.push((seq * 2 + file, payload));
            at += 20 + length;
        }
    }
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

fn edited(conversation: &Conversation, text: &str) -> Conversation {
    let mut changed = conversation.clone();
    std::sync::Arc::make_mut(&mut changed.messages[0]).content = text.into();
    changed
}

#[test]
fn saves_a_crash_left_in_the_journal_are_there_after_a_restart_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let first = conversation(2, "first");
    let second = conversation(1, "second");
    store.save(&first).unwrap();
    store.save(&second).unwrap();
    let first_again = edited(&first, "first, edited");
    store.save(&first_again).unwrap();
    assert!(in_file(dir.path(), &first).is_none(), "not written yet");
    assert_eq!(store.load(first.id).unwrap(), Some(first_again.clone()));
    drop(store); // a crash: no close, no checkpoint
    assert!(journal_bytes(dir.path()) > 0);

    let store = open(dir.path());
    let mut loaded = store.load_all().unwrap();
    loaded.sort_by_key(|c| c.id != first.id);
    assert_eq!(loaded, [first_again.clone(), second.clone()]);
    assert_eq!(in_file(dir.path(), &first), Some(first_again), "the newest");
    assert_eq!(in_file(dir.path(), &second), Some(second.clone()));
    let file = std::fs::read(file_of(dir.path(), &second)).unwrap();
    assert_eq!(
        file,
        serde_json::to_vec_pretty(&second).unwrap(),
        "a replayed conversation's file is pretty-printed, as a checkpoint writes it"
    );
    assert_eq!(journal_bytes(dir.path()), 0, "replayed, then emptied");
    assert_eq!(store.quarantined(), 0);
}

#[cfg(unix)]
#[test]
fn the_journal_is_readable_by_the_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.save(&conversation(1, "private")).unwrap();
    for path in journal_files(dir.path()) {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
}

#[test]
fn a_record_a_crash_cut_short_is_ignored_and_the_rest_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let kept = [conversation(2, "one"), conversation(1, "two")];
    kept.iter().for_each(|c| store.save(c).unwrap());
    drop(store);
    // Half of a third record: the write the kill interrupted.
    let [active, _] = journal_files(dir.path());
    let mut bytes = std::fs::read(&active).unwrap();
    let whole = bytes.clone();
    bytes.extend_from_slice(&whole[..whole.len() / 3]);
    std::fs::write(&active, bytes).unwrap();

    let store = open(dir.path());
    let mut loaded = store.load_all().unwrap();
    loaded.sort_by_key(|c| c.messages[0].content.clone());
    assert_eq!(loaded, kept);
    assert_eq!(store.quarantined(), 0, "a torn tail was never acknowledged");
    assert_eq!(journal_bytes(dir.path()), 0);
}

#[test]
fn a_record_damaged_in_the_middle_is_quarantined_and_the_others_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let saved = [
        conversation(3, "before"),
        conversation(2, "damaged"),
        conversation(1, "after"),
    ];
    saved.iter().for_each(|c| store.save(c).unwrap());
    drop(store);
    let [active, _] = journal_files(dir.path());
    let original = std::fs::read(&active).unwrap();
    let mut bytes = original.clone();
    let at = find(&bytes, b"damaged").expect("the second record");
    bytes[at] = b'D';
    std::fs::write(&active, &bytes).unwrap();

    let store = open(dir.path());
    let mut loaded: Vec<String> = store
        .load_all()
        .unwrap()
        .iter()
        .map(|c| c.messages[0].content.clone())
        .collect();
    loaded.sort();
    assert_eq!(loaded, ["after", "before"], "the others are kept");
    assert_eq!(store.quarantined(), 1);
    let quarantined = dir.path().join(QUARANTINE_DIR).join("journal.0.log");
    assert_eq!(
        std::fs::read(quarantined).unwrap(),
        bytes,
        "the damaged journal is kept whole for inspection"
    );
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn a_conversation_saved_a_hundred_times_is_written_to_its_file_once_per_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let base = conversation(1, "v0");
    for n in 1..=100 {
        store.save(&edited(&base, &format!("v{n}"))).unwrap();
    }
    assert_eq!(store.checkpoint().unwrap(), 1);
    assert_eq!(store.files_written(), 1);
    assert_eq!(in_file(dir.path(), &base), Some(edited(&base, "v100")));
    assert_eq!(journal_bytes(dir.path()), 0, "the file covers the records");

    let other = conversation(2, "other");
    store.save(&other).unwrap();
    store.save(&edited(&base, "v101")).unwrap();
    assert_eq!(store.checkpoint().unwrap(), 2);
    assert_eq!(store.checkpoint().unwrap(), 0, "nothing changed since");
    assert_eq!(store.files_written(), 3);
}

#[test]
fn a_save_during_a_checkpoint_is_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let before = conversation(1, "before the checkpoint");
    store.save(&before).unwrap();
    let during = edited(&before, "during the checkpoint");
    store
        .checkpoint_with(|| store.save(&during).unwrap())
        .unwrap();
    assert_eq!(in_file(dir.path(), &before), Some(before.clone()));
    assert_eq!(
        store.load(before.id).unwrap(),
        Some(during.clone()),
        "reads see the newer save"
    );
    drop(store); // a crash before the next checkpoint

    let store = open(dir.path());
    assert_eq!(store.load(before.id).unwrap(), Some(during.clone()));
    assert_eq!(in_file(dir.path(), &before), Some(during));
}

#[test]
fn saves_from_many_threads_share_journal_syncs() {
    const THREADS: usize = 32;
    const EACH: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(dir.path()));
    let start = Arc::new(Barrier::new(THREADS));
    let all: Vec<Vec<Conversation>> = (0..THREADS)
        .map(|t| {
            (0..EACH)
                .map(|n| conversation(1, &format!("{t}-{n}")))
                .collect()
        })
        .collect();
    let threads: Vec<_> = all
        .iter()
        .cloned()
        .map(|mine| {
            let (store, start) = (store.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                mine.iter().for_each(|c| store.save(c).unwrap());
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let saves = (THREADS * EACH) as u64;
    let syncs = store.journal_syncs();
    assert!(
        syncs * 2 <= saves,
        "{saves} concurrent saves took {syncs} syncs"
    );
    assert_eq!(store.load_all().unwrap().len(), THREADS * EACH);
}

#[test]
fn a_turn_journaled_in_progress_is_given_out_as_abandoned_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut running = conversation(1, "running");
    store.save(&running).unwrap();
    assert_eq!(store.checkpoint().unwrap(), 1, "its file: not running");
    running.turn_in_progress = true;
    store.save(&running).unwrap();
    drop(store);

    let store = open(dir.path());
    assert_eq!(store.abandoned().unwrap(), [running.id]);
}

#[test]
fn a_closed_store_has_written_every_save_to_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonFileStore::open(dir.path()).unwrap();
    let saved = conversation(1, "closed");
    store.save(&saved).unwrap();
    store.close();
    assert_eq!(in_file(dir.path(), &saved), Some(saved));
    assert_eq!(journal_bytes(dir.path()), 0);
}

#[test]
fn a_file_a_checkpoint_is_rewriting_is_read_from_memory_never_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let first = conversation(1, "first");
    store.save(&first).unwrap();
    store.checkpoint().unwrap();
    let newer = edited(&first, "newer");
    store.save(&newer).unwrap();
    // A checkpoint writing the newer version in place, half done.
    let whole = serde_json::to_vec_pretty(&newer).unwrap();
    std::fs::write(file_of(dir.path(), &first), &whole[..whole.len() / 2]).unwrap();

    assert_eq!(store.load(first.id).unwrap(), Some(newer.clone()));
    assert_eq!(store.load_all().unwrap(), std::slice::from_ref(&newer));
    assert_eq!(store.quarantined(), 0);
    assert!(
        file_of(dir.path(), &first).exists(),
        "left to the checkpoint"
    );
    store.checkpoint().unwrap();
    assert_eq!(in_file(dir.path(), &first), Some(newer));
}

/// Rows in the catalog's file (a reader of its own, as another process).
fn catalog_rows(dir: &Path) -> i64 {
    let catalog = dir.join(crate::store::json_files::CATALOG_PATH);
    rusqlite::Connection::open(catalog)
        .unwrap()
        .query_row("SELECT count(*) FROM conversations", [], |row| row.get(0))
        .unwrap()
}

#[test]
fn saves_leave_the_catalog_alone_until_it_is_read_then_one_row_each() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let (waiting, uuid) = super::waiting_for_approval(2, "waiting");
    let other = conversation(1, "other");
    for n in 1..=3 {
        store.save(&edited(&other, &format!("other v{n}"))).unwrap();
    }
    store.save(&waiting).unwrap();
    assert_eq!(
        catalog_rows(dir.path()),
        0,
        "a save waits for its record only"
    );
    assert_eq!(
        store.catalog_rows_queued(),
        2,
        "one row a conversation waits, the newest, however many saves"
    );

    // Each read sees every save acknowledged before it.
    assert_eq!(
        store.conversation_of_approval(uuid).unwrap(),
        Some(waiting.id)
    );
    assert_eq!(store.catalog_rows_queued(), 0);
    assert_eq!(catalog_rows(dir.path()), 2, "the newest row of each");
    store.save(&edited(&other, "other v4")).unwrap();
    let page = store
        .list_page(&crate::store::ListQuery {
            scope: super::scope("alice", false),
            status: None,
            after: None,
            limit: 10,
            tasks: Default::default(),
        })
        .unwrap();
    assert_eq!(super::texts(&page), ["other v4", "waiting"]);
}

#[test]
fn a_checkpoint_writes_the_rows_before_it_empties_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let (waiting, uuid) = super::waiting_for_approval(1, "waiting");
    store.save(&waiting).unwrap();
    assert_eq!(store.checkpoint().unwrap(), 1);
    assert_eq!(journal_bytes(dir.path()), 0);
    drop(store); // a crash: the journal no longer holds the save

    let store = open(dir.path());
    assert_eq!(
        store.conversation_of_approval(uuid).unwrap(),
        Some(waiting.id),
        "its row was written by the checkpoint"
    );
    assert_eq!(store.waiting().unwrap(), [waiting]);
}

#[test]
fn a_save_that_adds_messages_journals_only_them_and_a_crash_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let first = conversation(2, "the first message");
    let second = added(&first, "the second message");
    let third = added(&second, "the third message");
    for version in [&first, &second, &third] {
        store.save(version).unwrap();
    }
    let records = payloads(dir.path());
    assert_eq!(records.len(), 3);
    assert!(
        records[0].starts_with("{\"id\":"),
        "the first save is whole: {}",
        records[0]
    );
    for (record, new) in records[1..]
        .iter()
        .zip(["the second message", "the third message"])
    {
        assert!(record.starts_with("{\"delta\":"), "a change: {record}");
        assert!(record.contains(new), "{record}");
        assert!(
            !record.contains("the first message"),
            "an earlier message is not journaled again: {record}"
        );
    }
    assert_eq!(store.load(first.id).unwrap(), Some(third.clone()));
    drop(store); // a crash: only the journal holds the saves

    let store = open(dir.path());
    assert_eq!(store.load(first.id).unwrap(), Some(third.clone()));
    assert_eq!(in_file(dir.path(), &first), Some(third));
    assert_eq!(store.quarantined(), 0);
}

#[test]
fn a_save_after_the_journal_file_changed_is_journaled_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let before = conversation(1, "before the checkpoint");
    store.save(&before).unwrap();
    // Saved while the checkpoint writes `before` and then empties the
    // file that holds its record: a change of that record would be lost.
    let during = added(&before, "during the checkpoint");
    store
        .checkpoint_with(|| store.save(&during).unwrap())
        .unwrap();
    let records = payloads(dir.path());
    assert_eq!(records.len(), 1, "the retired file is empty: {records:?}");
    assert!(records[0].starts_with("{\"id\":"), "whole: {}", records[0]);
    let after = added(&during, "after the checkpoint");
    store.save(&after).unwrap();
    assert!(
        payloads(dir.path())[1].starts_with("{\"delta\":"),
        "a change of a record in the same file"
    );
    drop(store); // a crash before the next checkpoint

    let store = open(dir.path());
    assert_eq!(store.load(before.id).unwrap(), Some(after.clone()));
    assert_eq!(in_file(dir.path(), &before), Some(after));
    assert_eq!(store.quarantined(), 0);
}

#[test]
fn a_change_whose_earlier_record_is_damaged_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let first = conversation(2, "the first message");
    let second = added(&first, "the second message");
    let other = conversation(1, "another conversation");
    for version in [&first, &second, &other] {
        store.save(version).unwrap();
    }
    drop(store);
    let [active, _] = journal_files(dir.path());
    let mut bytes = std::fs::read(&active).unwrap();
    let at = find(&bytes, b"the first message").expect("the first record");
    bytes[at] = b'T';
    std::fs::write(&active, &bytes).unwrap();

    let store = open(dir.path());
    assert_eq!(
        store.load(first.id).unwrap(),
        None,
        "nothing to rebuild it on"
    );
    assert_eq!(store.load(other.id).unwrap(), Some(other));
    assert_eq!(store.quarantined(), 2, "the damaged file and the change");
    let kept = dir
        .path()
        .join(QUARANTINE_DIR)
        .join("journal-record-2.json");
    let kept = std::fs::read_to_string(kept).expect("the change is kept for inspection");
    assert!(kept.contains("the second message"), "{kept}");
}
