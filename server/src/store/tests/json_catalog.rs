//! The JSON store's catalog: kept in step with the files across crashes,
//! rebuilt when it cannot be trusted, never the reason a file is read at
//! startup when it can.

use std::path::Path;
use std::sync::Arc;

use asg_shared::ConversationStatus;
use uuid::Uuid;

use super::{blocking, conversation, list, save, scope, texts, waiting_for_approval};
use crate::store::json_catalog::{Catalog, Entry};
use crate::store::json_files::CATALOG_PATH;
use crate::store::{JsonFileStore, Store};

fn open(dir: &Path) -> Arc<dyn Store> {
    Arc::new(JsonFileStore::open(dir).unwrap())
}

/// Writes rows straight into the catalog, as a save does before its file.
fn put_rows_only(dir: &Path, rows: &[&asg_shared::Conversation]) {
    let (catalog, _) = Catalog::open(&dir.join(CATALOG_PATH)).unwrap();
    let entries: Vec<Entry> = rows.iter().map(|c| Entry::of(c)).collect();
    catalog.put(&entries, true).unwrap();
}

fn sql(dir: &Path, statement: &str) {
    let connection = rusqlite::Connection::open(dir.join(CATALOG_PATH)).unwrap();
    connection.execute_batch(statement).unwrap();
}

async fn total(store: &Arc<dyn Store>) -> usize {
    list(store, &scope("alice", false), None, None, 10)
        .await
        .summary
        .total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_cut_short_by_a_crash_is_read_again_from_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let saved = conversation(2, "saved");
    let kept = saved.clone();
    blocking(&store, move |s| save(s, &kept).unwrap()).await;
    drop(store);
    // The process died after writing the rows of two saves and before
    // their files: one of a stored conversation (now waiting), one of a
    // new one.
    let (mut changed, uuid) = waiting_for_approval(2, "saved");
    changed.id = saved.id;
    let (never_written, _) = waiting_for_approval(1, "never written");
    put_rows_only(dir.path(), &[&changed, &never_written]);

    let store = open(dir.path());
    let page = list(&store, &scope("alice", false), None, None, 10).await;
    assert_eq!(texts(&page), ["saved"], "as the file says");
    assert_eq!(page.conversations[0].status, ConversationStatus::Active);
    assert_eq!((page.summary.total, page.summary.waiting_approval), (1, 0));
    assert!(blocking(&store, |s| s.waiting().unwrap()).await.is_empty());
    assert_eq!(
        blocking(&store, move |s| s.conversation_of_approval(uuid).unwrap()).await,
        None,
        "an approval only the lost row had is not found"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_lost_or_left_open_by_a_machine_crash_is_rebuilt_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let (waiting, uuid) = waiting_for_approval(1, "waiting");
    let all = [conversation(2, "first"), waiting.clone()];
    let saved = all.clone();
    blocking(&store, move |s| {
        saved.iter().for_each(|c| save(s, c).unwrap())
    })
    .await;
    drop(store);

    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    let store = open(dir.path());
    let page = list(&store, &scope("alice", false), None, None, 10).await;
    assert_eq!(texts(&page), ["waiting", "first"], "rebuilt from the files");
    assert_eq!(
        blocking(&store, move |s| s.conversation_of_approval(uuid).unwrap()).await,
        Some(waiting.id)
    );
    drop(store);

    // Left open on another boot of the machine (it crashed): rows it
    // had not synced may be gone, so it is not trusted.
    sql(
        dir.path(),
        "DELETE FROM conversations; \
         UPDATE meta SET value = 'open 00000000-another-boot' WHERE key = 'state';",
    );
    let store = open(dir.path());
    assert_eq!(total(&store).await, 2, "rebuilt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_closed_or_left_open_on_this_boot_is_kept_without_reading_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let saved = conversation(1, "saved");
    blocking(&store, move |s| save(s, &saved).unwrap()).await;
    let bad = dir
        .path()
        .join("conversations")
        .join(format!("{}.json", Uuid::new_v4()));
    std::fs::write(&bad, "{not json").unwrap();
    drop(store); // as if killed: left open on this boot

    let store = open(dir.path());
    assert_eq!(blocking(&store, |s| s.quarantined()).await, 0);
    assert!(bad.exists(), "the files were not read at startup");
    assert_eq!(total(&store).await, 1);
    blocking(&store, |s| s.close()).await;
    drop(store);

    let store = open(dir.path());
    assert_eq!(blocking(&store, |s| s.quarantined()).await, 0);
    assert!(bad.exists(), "closed cleanly: kept as well");
    drop(store);

    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    let store = open(dir.path());
    assert_eq!(
        blocking(&store, |s| s.quarantined()).await,
        1,
        "a rebuild reads every file and sets the unreadable one aside"
    );
    assert!(!bad.exists());
    assert_eq!(total(&store).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_left_unfinished_are_given_out_once_when_the_store_opens() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut running = conversation(1, "running");
    running.turn_in_progress = true;
    let idle = conversation(2, "idle");
    let saved = [running.clone(), idle];
    blocking(&store, move |s| {
        saved.iter().for_each(|c| save(s, c).unwrap())
    })
    .await;
    drop(store);

    let store = open(dir.path());
    assert_eq!(
        blocking(&store, |s| s.abandoned().unwrap()).await,
        [running.id]
    );
    assert!(
        blocking(&store, |s| s.abandoned().unwrap())
            .await
            .is_empty(),
        "once: a turn running now is not abandoned"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_files_a_crash_left_are_removed_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    let conversations = dir.path().join("conversations");
    let hour = std::time::Duration::from_secs(3600);
    let stale = conversations.join(".tmpStale1");
    let fresh = conversations.join(".tmpFresh1");
    for (path, at) in [
        (&stale, std::time::SystemTime::now() - hour),
        (&fresh, std::time::SystemTime::now() + hour),
    ] {
        let file = std::fs::File::create(path).unwrap();
        file.set_modified(at).unwrap();
    }

    let _store = open(dir.path());
    for _ in 0..100 {
        if !stale.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!stale.exists(), "a crash's leftover is removed");
    assert!(
        fresh.exists(),
        "a file newer than the start is a save's own"
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_is_readable_by_the_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let saved = conversation(1, "saved");
    blocking(&store, move |s| save(s, &saved).unwrap()).await;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let catalog = dir.path().join(CATALOG_PATH);
    assert_eq!(mode(catalog.parent().unwrap()), 0o700);
    assert_eq!(mode(&catalog), 0o600);
    let wal = catalog.with_extension("sqlite3-wal");
    assert_eq!(mode(&wal), 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_of_an_older_format_is_rebuilt_with_this_formats_columns() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let (waiting, _) = waiting_for_approval(2, "waiting");
    let saved = waiting.clone();
    blocking(&store, move |s| save(s, &saved).unwrap()).await;
    drop(store);
    // As format 2 left it: no task columns.
    sql(
        dir.path(),
        "DROP TABLE conversations; \
         CREATE TABLE conversations (id BLOB PRIMARY KEY, created_at INTEGER NOT NULL, \
           status TEXT NOT NULL, owner TEXT, had_approval INTEGER NOT NULL, \
           unfinished INTEGER NOT NULL, deadline INTEGER, dirty INTEGER NOT NULL) WITHOUT ROWID; \
         UPDATE meta SET value = '2' WHERE key = 'format';",
    );
    let store = open(dir.path());
    let tasks = crate::store::TaskFilter {
        state: Some(asg_shared::a2a::TaskState::InputRequired),
        ..Default::default()
    };
    let query = crate::store::ListQuery {
        scope: scope("alice", false),
        status: None,
        after: None,
        limit: 10,
        tasks,
    };
    let page = blocking(&store, move |s| s.list_page(&query).unwrap()).await;
    assert_eq!(texts(&page), ["waiting"]);
    assert_eq!(page.summary.total, 1);
}
