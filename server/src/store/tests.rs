//! One behaviour suite, two backends: every test runs against the JSON
//! files and against a real PostgreSQL (a fresh database per test from
//! `asg_tests::pg`, on the server `ASG_TEST_DATABASE_URL` names; default
//! the local one on 5432, which `scripts/test.sh` provides).

use std::sync::Arc;

use asg_shared::{Conversation, ConversationStatus, Message, Role};
use chrono::{Duration, Utc};
use sqlx::Connection;
use uuid::Uuid;

use super::{JsonFileStore, PgStore, Store};
use asg_tests::pg::{TestDb, admin_url};

/// A store of either kind, with what keeps it alive.
enum Backend {
    Json(tempfile::TempDir),
    Postgres(TestDb),
}

async fn open(backend: &Backend) -> Arc<dyn Store> {
    match backend {
        Backend::Json(dir) => Arc::new(JsonFileStore::open(dir.path()).unwrap()),
        Backend::Postgres(db) => Arc::new(PgStore::open(&db.url, 4).await.unwrap()),
    }
}

async fn backends() -> Vec<(&'static str, Backend)> {
    vec![
        ("json", Backend::Json(tempfile::tempdir().unwrap())),
        ("postgres", Backend::Postgres(TestDb::create().await)),
    ]
}

/// Runs a store call on the blocking pool, as the engine does.
async fn blocking<T: Send + 'static>(
    store: &Arc<dyn Store>,
    call: impl FnOnce(&dyn Store) -> T + Send + 'static,
) -> T {
    let store = store.clone();
    tokio::task::spawn_blocking(move || call(store.as_ref()))
        .await
        .unwrap()
}

fn conversation(minutes_ago: i64, text: &str) -> Conversation {
    let at = Utc::now() - Duration::minutes(minutes_ago);
    let mut message = Message {
        id: Uuid::new_v4(),
        role: Role::User,
        content: text.to_string(),
        node: None,
        tool_call: None,
        tool_result: None,
        is_error: false,
        created_at: at,
    };
    message.created_at = at;
    Conversation {
        id: Uuid::new_v4(),
        session_id: "abcd1234".into(),
        status: ConversationStatus::Active,
        messages: vec![message],
        pending_approval: None,
        pending_approvals: Vec::new(),
        pipeline_state: None,
        turn_in_progress: false,
        owner: Some("alice".into()),
        decisions: Vec::new(),
        grants: Vec::new(),
        created_at: at,
        updated_at: at,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_saved_loads_back_whole_and_a_save_replaces_it() {
    for (kind, backend) in backends().await {
        let store = open(&backend).await;
        let first = conversation(5, "one");
        let mut second = conversation(1, "two");
        let saved = (first.clone(), second.clone());
        blocking(&store, move |s| {
            s.save(&saved.0).unwrap();
            s.save(&saved.1).unwrap();
        })
        .await;
        second.status = ConversationStatus::Completed;
        second.messages[0].content = "two, edited".into();
        let replaced = second.clone();
        blocking(&store, move |s| s.save(&replaced).unwrap()).await;
        // Reopened: what a restarted agent sees.
        drop(store);
        let store = open(&backend).await;
        let mut loaded = blocking(&store, |s| s.load_all().unwrap()).await;
        loaded.sort_by_key(|c| c.created_at);
        assert_eq!(loaded, [first.clone(), second.clone()], "{kind}");
        assert_eq!(blocking(&store, |s| s.quarantined()).await, 0, "{kind}");
        assert!(blocking(&store, |s| s.health()).await.is_ok(), "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_conversations_saved_at_once_are_all_kept() {
    for (kind, backend) in backends().await {
        let store = open(&backend).await;
        let all: Vec<Conversation> = (0..40).map(|n| conversation(n, &format!("c{n}"))).collect();
        let saves = all.iter().cloned().map(|c| {
            let store = store.clone();
            tokio::task::spawn_blocking(move || store.save(&c))
        });
        for saved in futures::future::join_all(saves).await {
            saved.unwrap().unwrap();
        }
        // Committed together (group commit), each whole.
        let mut loaded = blocking(&store, |s| s.load_all().unwrap()).await;
        loaded.sort_by_key(|c| c.id);
        let mut expected = all.clone();
        expected.sort_by_key(|c| c.id);
        assert_eq!(loaded, expected, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_record_is_set_aside_and_counted_not_fatal() {
    for (kind, backend) in backends().await {
        let store = open(&backend).await;
        let good = conversation(2, "good");
        let saved = good.clone();
        blocking(&store, move |s| s.save(&saved).unwrap()).await;
        let bad = Uuid::new_v4();
        match &backend {
            Backend::Json(dir) => {
                let path = dir.path().join("conversations").join(format!("{bad}.json"));
                std::fs::write(path, "{not json").unwrap();
            }
            Backend::Postgres(db) => {
                let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
                sqlx::query(
                    "INSERT INTO conversations (id, status, created_at, updated_at, doc) \
                     VALUES ($1, 'active', now(), now(), '{\"id\": 1}')",
                )
                .bind(bad)
                .execute(&mut c)
                .await
                .unwrap();
            }
        }
        drop(store);
        let store = open(&backend).await;
        let loaded = blocking(&store, |s| s.load_all().unwrap()).await;
        assert_eq!(loaded, vec![good.clone()], "{kind}");
        assert_eq!(blocking(&store, |s| s.quarantined()).await, 1, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_on_one_database_waits_for_the_first() {
    let db = TestDb::create().await;
    let first = PgStore::open(&db.url, 2).await.unwrap();
    let url = db.url.clone();
    let second = tokio::spawn(async move { PgStore::open(&url, 2).await });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(!second.is_finished(), "two writers on one database");
    drop(first);
    let second = tokio::time::timeout(std::time::Duration::from_secs(10), second)
        .await
        .expect("the second writer never took over")
        .unwrap();
    assert!(second.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_the_database_but_never_the_password() {
    let url = "postgres://agent:s3cr3t-pw@127.0.0.1:1/agentdb";
    let error = super::postgres::connect(url, 1)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("127.0.0.1:1/agentdb"), "{error}");
    assert!(
        !error.contains("s3cr3t-pw") && !error.contains("agent:"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_cut_off_while_another_took_over_never_writes_again() {
    let db = TestDb::create().await;
    let first: Arc<dyn Store> = Arc::new(PgStore::open(&db.url, 2).await.unwrap());
    let mut admin = sqlx::PgConnection::connect(&admin_url()).await.unwrap();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(db.name())
        .execute(&mut admin)
        .await
        .unwrap();
    // The first one's lock went with its connection; another takes it.
    let second: Arc<dyn Store> = Arc::new(PgStore::open(&db.url, 2).await.unwrap());
    // At once, before any watcher ran: the first cannot write.
    let at_once = conversation(1, "at once");
    let at_once_id = at_once.id;
    assert!(blocking(&first, move |s| s.save(&at_once)).await.is_err());
    // Nor later, once its watcher found out.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let refused = loop {
        let one = conversation(1, "late");
        match blocking(&first, move |s| s.save(&one)).await {
            Err(error) if error.to_string().contains("no longer writes") => break error,
            Ok(()) => panic!("the replaced writer wrote"),
            _ if std::time::Instant::now() > deadline => {
                panic!("the replaced writer never found out")
            }
            _ => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
        }
    };
    assert!(
        refused.to_string().contains("another agent process"),
        "{refused}"
    );
    assert!(blocking(&first, |s| s.health()).await.is_err());
    let kept = blocking(&second, |s| s.load_all().unwrap()).await;
    assert!(
        kept.iter().all(|c| c.id != at_once_id),
        "a replaced writer's save landed"
    );
    let fine = conversation(1, "fine");
    blocking(&second, move |s| s.save(&fine)).await.unwrap();
}
