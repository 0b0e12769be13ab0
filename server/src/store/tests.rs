//! One behaviour suite, two backends: every test runs against the JSON
//! files and against a real PostgreSQL (a fresh database per test from
//! `asg_tests::pg`, on the server `ASG_TEST_DATABASE_URL` names; default
//! the local one on 5432, which `scripts/test.sh` provides).

use std::sync::Arc;

use asg_shared::{Conversation, ConversationStatus, Message, Role, fixtures};
use chrono::{Duration, Utc};
use sqlx::Connection;
use uuid::Uuid;

use super::{Claim, JsonFileStore, PgStore, Store};
use asg_tests::pg::TestDb;

mod journal;
mod json_catalog;
mod task_filters;
mod throughput;

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
    Conversation {
        messages: vec![
            Message {
                created_at: at,
                ..fixtures::message(Role::User, text)
            }
            .into(),
        ],
        owner: Some("alice".into()),
        created_at: at,
        updated_at: at,
        ..fixtures::conversation()
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
            save(s, &saved.0).unwrap();
            save(s, &saved.1).unwrap();
        })
        .await;
        second.status = ConversationStatus::Completed;
        Arc::make_mut(&mut second.messages[0]).content = "two, edited".into();
        let replaced = second.clone();
        blocking(&store, move |s| save(s, &replaced).unwrap()).await;
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
            tokio::task::spawn_blocking(move || save(store.as_ref(), &c))
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
        blocking(&store, move |s| save(s, &saved).unwrap()).await;
        let bad = Uuid::new_v4();
        match &backend {
            Backend::Json(dir) => {
                let path = dir.path().join("conversations").join(format!("{bad}.json"));
                std::fs::write(path, "{not json").unwrap();
            }
            Backend::Postgres(db) => {
                insert_unreadable(&db.url, bad).await;
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

fn scope(subject: &str, approvals: bool) -> asg_core::access::ReadScope {
    asg_core::access::ReadScope {
        subject: subject.into(),
        anonymous: false,
        everything: false,
        approvals,
    }
}

async fn list(
    store: &Arc<dyn Store>,
    scope: &asg_core::access::ReadScope,
    status: Option<ConversationStatus>,
    after: Option<(chrono::DateTime<Utc>, Uuid)>,
    limit: usize,
) -> super::ListPage {
    let query = super::ListQuery {
        scope: scope.clone(),
        status,
        after,
        limit,
        tasks: Default::default(),
    };
    blocking(store, move |s| s.list_page(&query).unwrap()).await
}

fn texts(page: &super::ListPage) -> Vec<String> {
    page.conversations
        .iter()
        .map(|c| c.messages[0].content.clone())
        .collect()
}

/// A row whose document is not a conversation.
async fn insert_unreadable(url: &str, id: Uuid) {
    let mut c = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query(
        "INSERT INTO conversations (id, status, created_at, updated_at, doc) \
         VALUES ($1, 'active', now(), now(), '{\"id\": 1}')",
    )
    .bind(id)
    .execute(&mut c)
    .await
    .unwrap();
}

/// Claims and saves, keeping the claim (as a turn still running).
fn claim_and_save(store: &dyn Store, conversation: &Conversation) {
    assert!(matches!(
        store.claim(conversation.id).unwrap(),
        Claim::Taken(_)
    ));
    store.save(conversation).unwrap();
}

/// Claims, saves and releases, as a turn does (the JSON files need no
/// claim).
fn save(store: &dyn Store, conversation: &Conversation) -> Result<(), super::StoreError> {
    match store.claim(conversation.id)? {
        Claim::Taken(_) => {
            let saved = store.save(conversation);
            store.release(conversation.id);
            saved
        }
        Claim::Busy => Err(super::StoreError("busy".into())),
    }
}

async fn pg(db: &TestDb) -> Arc<dyn Store> {
    Arc::new(PgStore::open(&db.url, 4).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_at_a_time_changes_a_conversation() {
    let db = TestDb::create().await;
    let (one, two) = (pg(&db).await, pg(&db).await);
    let mut conversation = conversation(1, "shared");
    let id = conversation.id;
    let first = conversation.clone();
    blocking(&one, move |s| claim_and_save(s, &first)).await;
    // Held by `one`: `two` is told it is busy, and sees it claimed.
    assert!(matches!(
        blocking(&two, move |s| s.claim(id)).await.unwrap(),
        Claim::Busy
    ));
    assert!(blocking(&two, move |s| s.claimed_elsewhere(id)).await);
    assert!(!blocking(&one, move |s| s.claimed_elsewhere(id)).await);
    blocking(&one, move |s| s.release(id)).await;
    // Free: `two` takes it with the stored version, and changes it.
    let Claim::Taken(Some(stored)) = blocking(&two, move |s| s.claim(id)).await.unwrap() else {
        panic!("not taken after the release");
    };
    assert_eq!(*stored, conversation);
    conversation.status = ConversationStatus::Completed;
    let changed = conversation.clone();
    blocking(&two, move |s| s.save(&changed).unwrap()).await;
    // `one` no longer holds it: its save is refused, nothing changes.
    let stale = conversation.clone();
    let refused = blocking(&one, move |s| s.save(&stale)).await.unwrap_err();
    assert!(refused.to_string().contains("not claimed"), "{refused}");
    let now = blocking(&one, move |s| s.load(id).unwrap().unwrap()).await;
    assert_eq!(now.status, ConversationStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_outliving_its_replica_is_taken_over_and_fences_the_old_holder() {
    let db = TestDb::create().await;
    let (one, two) = (pg(&db).await, pg(&db).await);
    let conversation = conversation(1, "abandoned");
    let id = conversation.id;
    let first = conversation.clone();
    blocking(&one, move |s| claim_and_save(s, &first)).await;
    assert!(blocking(&two, |s| s.abandoned().unwrap()).await.is_empty());
    // As if `one` had stopped renewing long ago.
    let mut admin = sqlx::PgConnection::connect(&db.url).await.unwrap();
    sqlx::query("UPDATE conversations SET lease_until = now() - interval '1 minute'")
        .execute(&mut admin)
        .await
        .unwrap();
    assert_eq!(blocking(&two, |s| s.abandoned().unwrap()).await, [id]);
    assert!(matches!(
        blocking(&two, move |s| s.claim(id)).await.unwrap(),
        Claim::Taken(Some(_))
    ));
    let late = conversation.clone();
    let refused = blocking(&one, move |s| s.save(&late)).await.unwrap_err();
    assert!(refused.to_string().contains("another replica"), "{refused}");
    blocking(&two, move |s| s.release(id)).await;
    assert!(blocking(&two, |s| s.abandoned().unwrap()).await.is_empty());
}

/// A conversation waiting for one approval (its uuid).
fn waiting_for_approval(minutes_ago: i64, text: &str) -> (Conversation, Uuid) {
    let mut waiting = conversation(minutes_ago, text);
    waiting.status = ConversationStatus::WaitingApproval;
    let approval: asg_shared::PendingApproval = serde_json::from_value(serde_json::json!({
        "uuid": Uuid::new_v4(), "conversation_id": waiting.id, "tool_name": "resources_add",
        "tool_args": {}, "description": "", "created_at": Utc::now(), "call_id": "c1"
    }))
    .unwrap();
    let uuid = approval.uuid;
    waiting.set_pending(vec![approval]);
    (waiting, uuid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_reads_one_conversation_its_approvals_and_pages_in_order() {
    for (kind, backend) in backends().await {
        let store = open(&backend).await;
        let (waiting, uuid) = waiting_for_approval(3, "waiting");
        let all = vec![
            conversation(5, "old"),
            waiting.clone(),
            conversation(1, "new"),
        ];
        let saved = all.clone();
        blocking(&store, move |s| {
            saved.iter().for_each(|c| save(s, c).unwrap())
        })
        .await;
        reads_one_conversation_and_its_approval(&store, &waiting, uuid, kind).await;
        pages_newest_first_within_scope(&store, kind).await;
    }
}

async fn reads_one_conversation_and_its_approval(
    store: &Arc<dyn Store>,
    waiting: &Conversation,
    uuid: Uuid,
    kind: &str,
) {
    let id = waiting.id;
    assert_eq!(
        blocking(store, move |s| s.conversation_of_approval(uuid).unwrap()).await,
        Some(id),
        "{kind}"
    );
    let unknown = Uuid::new_v4();
    assert_eq!(
        blocking(store, move |s| s.conversation_of_approval(unknown).unwrap()).await,
        None,
        "{kind}"
    );
    assert_eq!(
        blocking(store, |s| s.waiting().unwrap()).await,
        std::slice::from_ref(waiting),
        "{kind}"
    );
    let waiting = waiting.clone();
    assert_eq!(
        blocking(store, move |s| s.load(id).unwrap()).await,
        Some(waiting),
        "{kind}"
    );
    assert_eq!(
        blocking(store, move |s| s.load(unknown).unwrap()).await,
        None,
        "{kind}"
    );
}

async fn pages_newest_first_within_scope(store: &Arc<dyn Store>, kind: &str) {
    let alice = scope("alice", false);
    let first = list(store, &alice, None, None, 2).await;
    assert_eq!(texts(&first), ["new", "waiting"], "{kind}");
    assert_eq!(
        (first.summary.total, first.summary.waiting_approval),
        (3, 1),
        "{kind}"
    );
    let rest = list(store, &alice, None, first.next, 2).await;
    assert_eq!(texts(&rest), ["old"], "{kind}");
    assert_eq!(rest.next, None, "{kind}");
    let waiting_only = ConversationStatus::WaitingApproval;
    let filtered = list(store, &alice, Some(waiting_only), None, 10).await;
    assert_eq!(texts(&filtered), ["waiting"], "{kind}");
    assert_eq!(
        filtered.summary.total, 3,
        "{kind}: the counts ignore the filter"
    );
    // Another principal sees nothing of alice's; an approver sees the
    // conversation that had an approval only.
    let bob = list(store, &scope("bob", false), None, None, 10).await;
    assert_eq!(bob.summary.total, 0, "{kind}");
    assert!(bob.conversations.is_empty(), "{kind}");
    let approver = list(store, &scope("bob", true), None, None, 10).await;
    assert_eq!(texts(&approver), ["waiting"], "{kind}");
    assert_eq!(approver.summary.total, 1, "{kind}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_left_unfinished_before_the_upgrade_is_taken_over_after_it() {
    let db = TestDb::create().await;
    let pool = super::postgres::connect(&db.url, 2).await.unwrap();
    // The schema as the previous release left it (migrations 1 and 2).
    let mut before = sqlx::migrate!("./migrations");
    before.migrations = std::borrow::Cow::Owned(before.migrations[..2].to_vec());
    before.run(&pool).await.unwrap();
    let mut stuck = conversation(1, "stuck");
    stuck.turn_in_progress = true;
    let idle = conversation(2, "idle");
    for c in [&stuck, &idle] {
        sqlx::query(
            "INSERT INTO conversations (id, status, created_at, updated_at, doc) \
             VALUES ($1, 'active', now(), now(), $2)",
        )
        .bind(c.id)
        .bind(serde_json::to_value(c).unwrap())
        .execute(&pool)
        .await
        .unwrap();
    }
    let store = pg(&db).await;
    assert_eq!(
        blocking(&store, |s| s.abandoned().unwrap()).await,
        [stuck.id]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_that_cannot_be_read_is_never_claimed() {
    let db = TestDb::create().await;
    let store = pg(&db).await;
    let id = Uuid::new_v4();
    insert_unreadable(&db.url, id).await;
    let mut admin = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let refused = blocking(&store, move |s| s.claim(id)).await.unwrap_err();
    assert!(refused.to_string().contains("cannot read"), "{refused}");
    // Not left claimed: no lease on the row.
    let leased: Option<Uuid> =
        sqlx::query_scalar("SELECT lease_token FROM conversations WHERE id = $1")
            .bind(id)
            .fetch_one(&mut admin)
            .await
            .unwrap();
    assert_eq!(leased, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_conversations_whose_deadline_came_are_due() {
    for (kind, backend) in backends().await {
        let store = open(&backend).await;
        let now = Utc::now();
        let deadline = |text: &str, expires: Option<i64>, remind: Option<i64>, reminded| {
            let (mut c, _) = waiting_for_approval(1, text);
            let pending = &mut c.pending_approvals[0];
            pending.expires_at = expires.map(|m| now + Duration::minutes(m));
            pending.remind_at = remind.map(|m| now + Duration::minutes(m));
            pending.reminded = reminded;
            c
        };
        let all = vec![
            deadline("expired", Some(-1), None, false),
            deadline("to remind", Some(30), Some(-1), false),
            deadline("reminded", Some(10), Some(-1), true),
            deadline("later", Some(5), None, false),
            deadline("never", None, None, false),
            conversation(1, "no approval"),
        ];
        let saved = all.clone();
        blocking(&store, move |s| {
            saved.iter().for_each(|c| save(s, c).unwrap())
        })
        .await;
        let deadlines = blocking(&store, move |s| s.deadlines(now).unwrap()).await;
        let mut due: Vec<String> = deadlines
            .due
            .iter()
            .map(|c| c.messages[0].content.clone())
            .collect();
        due.sort();
        assert_eq!(due, ["expired", "to remind"], "{kind}");
        let off = deadlines.next.map(|at| {
            (at - (now + Duration::minutes(5)))
                .num_nanoseconds()
                .unwrap()
                .abs()
        });
        assert!(
            off.is_some_and(|off| off <= 1_000),
            "{kind}: the earliest still to come (to the microsecond): {:?}",
            deadlines.next
        );
    }
}

fn approval_by(
    conversation: Uuid,
    minutes_ago: i64,
    by: &str,
    extra: serde_json::Value,
) -> asg_shared::PendingApproval {
    let mut value = serde_json::json!({
        "uuid": Uuid::new_v4(), "conversation_id": conversation, "tool_name": "resources_add",
        "tool_args": {}, "description": "", "call_id": "c1",
        "created_at": Utc::now() - Duration::minutes(minutes_ago),
        "requested_by": {"subject": by},
    });
    value
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_approvals_page_oldest_first_and_only_what_was_asked() {
    use super::PendingQuery;
    use asg_shared::ApprovalState;
    for (kind, backend) in backends().await {
        let store = open(&backend).await;
        let (mut two, _) = waiting_for_approval(9, "two approvals");
        let oldest = approval_by(two.id, 5, "alice", serde_json::json!({}));
        let executing = approval_by(two.id, 3, "bob", serde_json::json!({"state": "executing"}));
        two.set_pending(vec![oldest.clone(), executing.clone()]);
        let (mut one, _) = waiting_for_approval(8, "a proxy");
        let proxy = approval_by(
            one.id,
            4,
            "alice",
            serde_json::json!({"remote_task_id": "task-1"}),
        );
        one.set_pending(vec![proxy.clone()]);
        let saved = [two, one, conversation(1, "none")];
        blocking(&store, move |s| {
            saved.iter().for_each(|c| save(s, c).unwrap())
        })
        .await;
        let page = |query: PendingQuery| {
            let store = store.clone();
            async move { blocking(&store, move |s| s.pending_page(&query).unwrap()).await }
        };
        let uuids = |p: &super::PendingPage| p.approvals.iter().map(|a| a.uuid).collect::<Vec<_>>();

        let first = page(PendingQuery {
            limit: 2,
            ..Default::default()
        })
        .await;
        assert_eq!(uuids(&first), [oldest.uuid, proxy.uuid], "{kind}");
        assert_eq!(first.approvals[1], proxy, "{kind}: read whole");
        let rest = page(PendingQuery {
            limit: 2,
            after: first.next,
            ..Default::default()
        })
        .await;
        assert_eq!(uuids(&rest), [executing.uuid], "{kind}");
        assert_eq!(rest.next, None, "{kind}");
        let alice = PendingQuery {
            limit: 10,
            requested_by: Some("alice".into()),
            ..Default::default()
        };
        assert_eq!(
            uuids(&page(alice).await),
            [oldest.uuid, proxy.uuid],
            "{kind}"
        );
        let proxies = PendingQuery {
            limit: 10,
            proxies: true,
            ..Default::default()
        };
        assert_eq!(uuids(&page(proxies).await), [proxy.uuid], "{kind}");
        let running = PendingQuery {
            limit: 10,
            state: Some(ApprovalState::Executing),
            ..Default::default()
        };
        assert_eq!(uuids(&page(running).await), [executing.uuid], "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_one_walk_conversations_created_at_the_same_instant_once_each() {
    for (kind, backend) in backends().await {
        let store = open(&backend).await;
        let at = Utc::now() - Duration::minutes(1);
        let mut same: Vec<Conversation> = (0..3)
            .map(|n| {
                let mut c = conversation(1, &format!("same {n}"));
                c.created_at = at;
                c
            })
            .collect();
        let mut all = same.clone();
        all.push(conversation(0, "newest"));
        all.push(conversation(5, "oldest"));
        blocking(&store, move |s| {
            all.iter().for_each(|c| save(s, c).unwrap())
        })
        .await;
        same.sort_by_key(|c| c.id);
        let mut expected = vec!["newest".to_string()];
        expected.extend(same.iter().map(|c| c.messages[0].content.clone()));
        expected.push("oldest".into());

        let mut walked = Vec::new();
        let mut after = None;
        for _ in 0..10 {
            let page = list(&store, &scope("alice", false), None, after, 1).await;
            walked.extend(texts(&page));
            after = page.next;
            if after.is_none() {
                break;
            }
        }
        assert_eq!(
            walked, expected,
            "{kind}: newest first, ties by id, none twice"
        );
    }
}
