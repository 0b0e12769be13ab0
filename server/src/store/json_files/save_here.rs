//! Saves appended on the caller's thread ([`Store::save_here`]): an async
//! worker encodes the conversation and appends its record to the journal
//! (a write to the page cache, under the journal's short lock), then goes
//! on; the journal's sync thread leads the group `fdatasync` and answers.
//! Before, every save went to a storage thread and back: two thread
//! switches per save, the largest cost left under A2A load.
//!
//! Only what cannot make the worker wait long is done there: a save that
//! would wait for room in memory (checkpoints behind), or a conversation
//! long enough to take a while to encode, goes to a storage thread as
//! before.
//!
//! [`Store::save_here`]: crate::store::Store::save_here

use std::sync::Arc;

use asg_shared::Conversation;

use super::JournalSync;
use crate::store::group_sync::{GroupSync, SyncThread};

/// Messages past which a conversation is encoded on a storage thread.
const MAX_MESSAGES_HERE: usize = 256;
/// Bytes of message text past which a conversation is encoded on a
/// storage thread (a 64 KiB conversation encodes in well under a
/// millisecond).
const MAX_TEXT_HERE: usize = 64 << 10;

/// Starts the thread that leads the journal's syncs for saves appended
/// on async workers; none (those saves then go to storage threads) when
/// it cannot start.
pub(super) fn start_sync_thread(group: &Arc<GroupSync<JournalSync>>) -> Option<SyncThread> {
    SyncThread::start("asg-json-sync", group.clone())
        .inspect_err(|error| {
            tracing::warn!(%error, "cannot start the journal's sync thread; saves go through storage threads");
        })
        .ok()
}

/// Whether `conversation` is small enough to encode on an async worker.
pub(super) fn quick_to_encode(conversation: &Conversation) -> bool {
    let messages = &conversation.messages;
    messages.len() <= MAX_MESSAGES_HERE
        && messages.iter().map(|m| m.content.len()).sum::<usize>() <= MAX_TEXT_HERE
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use asg_shared::{Role, fixtures};

    use super::super::JsonFileStore;
    use super::*;
    use crate::store::{Saved, Store, StoreError};

    fn with_messages(count: usize, each: usize) -> Conversation {
        let mut conversation = fixtures::conversation();
        conversation.messages = (0..count)
            .map(|_| fixtures::message(Role::User, &"x".repeat(each)))
            .collect();
        conversation
    }

    /// A callback that sends its result and the name of its thread.
    fn answered_on() -> (
        Saved,
        mpsc::Receiver<(Result<(), StoreError>, Option<String>)>,
    ) {
        let (tx, rx) = mpsc::channel();
        let saved: Saved = Box::new(move |result| {
            let thread = std::thread::current().name().map(str::to_string);
            let _ = tx.send((result, thread));
        });
        (saved, rx)
    }

    #[test]
    fn long_conversations_are_encoded_on_a_storage_thread() {
        assert!(quick_to_encode(&with_messages(4, 100)));
        assert!(quick_to_encode(&with_messages(MAX_MESSAGES_HERE, 10)));
        assert!(!quick_to_encode(&with_messages(MAX_MESSAGES_HERE + 1, 1)));
        assert!(!quick_to_encode(&with_messages(2, MAX_TEXT_HERE / 2 + 1)));
    }

    #[test]
    fn a_save_appended_here_is_answered_by_the_sync_thread_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonFileStore::open(dir.path()).unwrap();
        let saved = Arc::new(with_messages(4, 100));
        let (callback, answer) = answered_on();
        assert!(store.save_here(&saved, callback).is_none(), "appended here");
        let (result, thread) = answer.recv_timeout(Duration::from_secs(5)).unwrap();
        result.unwrap();
        assert_eq!(
            thread.as_deref(),
            Some("asg-json-sync"),
            "the sync ran on the sync thread, not on the caller's"
        );
        assert_eq!(store.journal_syncs(), 1);
        drop(store);
        let reopened = JsonFileStore::open(dir.path()).unwrap();
        assert_eq!(reopened.load(saved.id).unwrap().as_ref(), Some(&*saved));
    }

    #[test]
    fn a_long_conversation_is_given_back_unwritten() {
        let dir = tempfile::tempdir().unwrap();
        let store = JsonFileStore::open(dir.path()).unwrap();
        let long = Arc::new(with_messages(MAX_MESSAGES_HERE + 1, 1));
        let (callback, answer) = answered_on();
        let given_back = store.save_here(&long, callback).expect("given back");
        assert!(store.unwritten.get(long.id).is_none(), "nothing appended");
        given_back(Ok(()));
        assert!(answer.recv().unwrap().0.is_ok(), "the callback still works");
    }
}
