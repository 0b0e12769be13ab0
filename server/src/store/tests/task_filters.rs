//! The task filters of a listing (A2A `ListTasks`) on both stores: the
//! task state, context id and status time kept at every save select the
//! page and its counts alike; PostgreSQL rows saved without them (before
//! migration 7, or by an earlier release) are filled in when a store
//! opens.

use std::sync::Arc;

use asg_shared::a2a::TaskState;
use asg_shared::{Role, fixtures};
use chrono::{Duration, Utc};
use uuid::Uuid;

use super::{backends, blocking, conversation, open, pg, save, scope, texts, waiting_for_approval};
use crate::store::{ListPage, ListQuery, Store, TaskFilter};
use asg_tests::pg::TestDb;

async fn filtered(store: &Arc<dyn Store>, tasks: TaskFilter, limit: usize) -> ListPage {
    let query = ListQuery {
        scope: scope("alice", false),
        status: None,
        after: None,
        limit,
        tasks,
    };
    blocking(store, move |s| s.list_page(&query).unwrap()).await
}

/// Alice's three tasks: `waiting` (input-required, its own context, 3
/// minutes old), `answered` (completed, context `ctx`, 2 minutes) and
/// `asked` (working, context `ctx`, 1 minute).
fn tasks() -> Vec<asg_shared::Conversation> {
    let (waiting, _) = waiting_for_approval(3, "waiting");
    let mut answered = conversation(2, "answered");
    answered
        .messages
        .push(fixtures::message(Role::Assistant, "done").into());
    answered.a2a_context_id = Some("ctx".into());
    let mut asked = conversation(1, "asked");
    asked.a2a_context_id = Some("ctx".into());
    vec![waiting, answered, asked]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_filters_select_the_page_and_its_counts() {
    for (kind, backend) in backends().await {
        let store = open(&backend).await;
        let all = tasks();
        let waiting_context = all[0].id.to_string();
        blocking(&store, move |s| {
            all.iter().for_each(|c| save(s, c).unwrap())
        })
        .await;
        let filter = |state, context: Option<&str>, minutes: Option<i64>| TaskFilter {
            state,
            context_id: context.map(str::to_string),
            changed_since: minutes.map(|m| Utc::now() - Duration::seconds(m * 60 + 30)),
        };
        let cases = [
            (
                filter(None, None, None),
                vec!["asked", "answered", "waiting"],
            ),
            (
                filter(Some(TaskState::InputRequired), None, None),
                vec!["waiting"],
            ),
            (
                filter(Some(TaskState::Completed), None, None),
                vec!["answered"],
            ),
            (filter(None, Some("ctx"), None), vec!["asked", "answered"]),
            (filter(None, Some(&waiting_context), None), vec!["waiting"]),
            (filter(None, None, Some(1)), vec!["asked"]),
            (filter(None, None, Some(2)), vec!["asked", "answered"]),
            (
                filter(Some(TaskState::Working), Some("ctx"), None),
                vec!["asked"],
            ),
            (
                filter(Some(TaskState::Completed), Some("other"), None),
                vec![],
            ),
        ];
        for (tasks, expected) in cases {
            let page = filtered(&store, tasks.clone(), 10).await;
            assert_eq!(texts(&page), expected, "{kind}: {tasks:?}");
            assert_eq!(page.summary.total, expected.len(), "{kind}: {tasks:?}");
        }
        // A short page: the count is still of every match.
        let first = filtered(&store, filter(None, Some("ctx"), None), 1).await;
        assert_eq!(texts(&first), ["asked"], "{kind}");
        assert!(first.next.is_some(), "{kind}");
        assert_eq!(first.summary.total, 2, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_saved_without_task_columns_are_filled_in_when_the_store_opens() {
    let db = TestDb::create().await;
    let pool = crate::store::postgres::connect(&db.url, 2).await.unwrap();
    // The schema as the previous release left it (migrations 1 to 6).
    let mut before = sqlx::migrate!("./migrations");
    before.migrations = std::borrow::Cow::Owned(before.migrations[..6].to_vec());
    before.run(&pool).await.unwrap();
    let all = tasks();
    for c in &all {
        sqlx::query(
            "INSERT INTO conversations (id, status, created_at, updated_at, doc, owner) \
             VALUES ($1, $2, $3, $4, $5, 'alice')",
        )
        .bind(c.id)
        .bind(c.status.as_str())
        .bind(c.created_at)
        .bind(c.updated_at)
        .bind(serde_json::to_value(c).unwrap())
        .execute(&pool)
        .await
        .unwrap();
    }
    let unreadable = Uuid::new_v4();
    super::insert_unreadable(&db.url, unreadable).await;
    let store = pg(&db).await;
    let columns: Vec<(Uuid, String, String)> =
        sqlx::query_as("SELECT id, task_state, context_id FROM conversations ORDER BY created_at")
            .fetch_all(&pool)
            .await
            .unwrap();
    let states: Vec<&str> = columns.iter().map(|(_, s, _)| s.as_str()).collect();
    assert_eq!(
        states,
        ["input-required", "completed", "working", "unknown"]
    );
    assert_eq!(columns[1].2, "ctx");
    assert_eq!(columns[0].2, all[0].id.to_string());
    assert_eq!(columns[3].2, unreadable.to_string());
    let ctx = TaskFilter {
        context_id: Some("ctx".into()),
        ..Default::default()
    };
    let page = filtered(&store, ctx, 10).await;
    assert_eq!(texts(&page), ["asked", "answered"]);
    assert_eq!(page.summary.total, 2);
}
