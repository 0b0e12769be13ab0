//! Deadlines, what is due, the words the model reads, the configuration
//! checks, and the background task on a real engine (scripted model,
//! JSON store) with approvals stored before it starts.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use asg_shared::events::InboxEvent;
use asg_shared::{
    ApprovalState, Conversation, ConversationStatus, PendingApproval, Role, fixtures,
};
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Map;
use uuid::Uuid;

use super::*;
use crate::config::AgentConfig;
use crate::engine::rules::ApprovalRules;
use crate::store::{JsonFileStore, Store};
use asg_core::lifecycle::DecidedBy;
use asg_core::transition::expired_text;

fn config(yaml: &str) -> Result<AgentConfig, String> {
    AgentConfig::parse_with_env(yaml, Path::new("agent.yaml"), &|_| None).map_err(|e| e.to_string())
}

fn secs(n: i64) -> TimeDelta {
    TimeDelta::seconds(n)
}

fn approval(created_at: DateTime<Utc>) -> PendingApproval {
    PendingApproval {
        conversation_id: Uuid::new_v4(),
        created_at,
        ..fixtures::pending_approval("resources_add")
    }
}

const RULES: &str = "
approval:
  expires_after: 24h
  remind_after: 1h
  rules:
    - { tool: resources_remove, action: allow }
    - { tool: resources_add, action: ask, expires_after: 90s }
    - { tool: resources_add, action: ask }
";

#[test]
fn durations_are_checked_at_startup_naming_the_field() {
    let error = config("approval: { expires_after: soon }").unwrap_err();
    assert!(error.contains("approval.expires_after"), "{error}");
    assert!(error.contains("e.g. 90s, 30m, 24h, 7d"), "{error}");
    let error = config("approval: { remind_after: 0s }").unwrap_err();
    assert!(error.contains("approval.remind_after"), "{error}");
    let error = config("approval: { expires_after: 1h, remind_after: 2h }").unwrap_err();
    assert!(
        error.contains("approval.remind_after") && error.contains("shorter"),
        "{error}"
    );
    let rule = "approval: { rules: [ { tool: x, action: allow, expires_after: 1h } ] }";
    let error = config(rule).unwrap_err();
    assert!(error.contains("approval.rules[0].expires_after"), "{error}");
    let rule = "approval: { rules: [ { tool: x, action: ask, expires_after: 1x } ] }";
    let error = config(rule).unwrap_err();
    assert!(error.contains("approval.rules[0].expires_after"), "{error}");
    let parsed = config(RULES).unwrap();
    assert_eq!(
        parsed.approval.expires_after.unwrap().get().as_secs(),
        86_400
    );
}

#[test]
fn deadlines_come_from_the_asking_rule_or_the_global_setting() {
    let parsed = config(RULES).unwrap();
    let policy = ExpiryPolicy::from_config(&parsed.approval);
    let rules = ApprovalRules::compile(&parsed.approval.rules).unwrap();
    let args = Map::new();
    let own = rules.first_match("resources_add", &args).unwrap().label();
    let t0 = Utc::now();
    assert_eq!(
        policy.deadlines(Some(&own), t0),
        (Some(t0 + secs(90)), None),
        "the rule's 90s wins; the 1h reminder would come after it"
    );
    let global = (Some(t0 + secs(86_400)), Some(t0 + secs(3_600)));
    assert_eq!(policy.deadlines(None, t0), global);
    let plain = rules.unmatched(&[]).last().unwrap().label();
    assert_eq!(policy.deadlines(Some(&plain), t0), global);
    assert_eq!(
        policy.deadlines(Some("approval.rules[99] (ask x)"), t0),
        global
    );
    assert_eq!(ExpiryPolicy::default().deadlines(None, t0), (None, None));
}

#[test]
fn rule_labels_give_their_index() {
    assert_eq!(rule_index("approval.rules[1] (ask resources_add)"), Some(1));
    assert_eq!(rule_index("approval.rules[12] (ask *)"), Some(12));
    assert_eq!(rule_index("rules[1]"), None);
    assert_eq!(rule_index("approval.rules[x] (ask y)"), None);
}

#[test]
fn stamping_keeps_existing_deadlines() {
    let parsed = config(RULES).unwrap();
    let expiry = Expiry::new(ExpiryPolicy::from_config(&parsed.approval));
    let t0 = Utc::now();
    let mut fresh = approval(t0);
    expiry.stamp(&mut fresh);
    assert_eq!(fresh.expires_at, Some(t0 + secs(86_400)));
    assert_eq!(fresh.remind_at, Some(t0 + secs(3_600)));
    let mut stamped = approval(t0);
    stamped.expires_at = Some(t0 + secs(5));
    expiry.stamp(&mut stamped);
    assert_eq!(
        (stamped.expires_at, stamped.remind_at),
        (Some(t0 + secs(5)), None)
    );
}

#[test]
fn what_is_due_follows_the_deadlines() {
    let t0 = Utc::now();
    let mut a = approval(t0);
    assert_eq!(due(&a, t0), Due::Never);
    a.expires_at = Some(t0 + secs(10));
    a.remind_at = Some(t0 + secs(5));
    assert_eq!(due(&a, t0), Due::At(t0 + secs(5)));
    assert_eq!(due(&a, t0 + secs(5)), Due::Remind);
    a.reminded = true;
    assert_eq!(due(&a, t0 + secs(5)), Due::At(t0 + secs(10)));
    assert_eq!(due(&a, t0 + secs(10)), Due::Expire);
    a.reminded = false;
    assert_eq!(due(&a, t0 + secs(11)), Due::Expire, "expiry first");
    a.state = ApprovalState::Executing;
    assert_eq!(due(&a, t0 + secs(11)), Due::Never);
}

#[test]
fn the_model_is_told_the_approval_expired() {
    let t0 = Utc::now();
    let mut a = approval(t0);
    a.expires_at = Some(t0 + secs(86_400));
    assert_eq!(
        expired_text(&a),
        "The approval expired after 1d without a decision; the call was not run."
    );
    // How the result is reworded is the core's (transition tests).
}

// --- the background task on a real engine --------------------------------

const MODEL: &str = r#"
rules:
  - when: { after_tool: "*" }
    reply: "Told: {result}"
  - reply: "hello"
"#;

use crate::test_support::waiting;

/// An engine over `dir` after `stored` were saved there.
async fn engine_with(dir: &Path, stored: &[Conversation]) -> Engine {
    let store = Arc::new(JsonFileStore::open(dir).unwrap());
    for conversation in stored {
        store.save(conversation).unwrap();
    }
    crate::test_support::scripted_engine(store, MODEL).await
}

/// Waits (up to 5 s) until `id` no longer waits for approval.
async fn settled(engine: &Engine, id: Uuid) -> Arc<Conversation> {
    for _ in 0..250 {
        let conversation = engine.get(id).await.unwrap().unwrap();
        if conversation.status != ConversationStatus::WaitingApproval
            && !engine.is_running(id).await
        {
            return conversation;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{id} still waits for approval");
}

fn assert_expired(conversation: &Conversation, uuid: Uuid, after: &str) {
    assert_eq!(conversation.decisions.len(), 1, "{conversation:?}");
    let decision = &conversation.decisions[0];
    assert_eq!(decision.approval_uuid, uuid);
    assert!(!decision.approved);
    assert_eq!(decision.decided_by, DecidedBy::Expiry.actor());
    let told = format!("The approval expired after {after} without a decision");
    let result = conversation
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("a tool result");
    assert!(
        result.is_error && result.content.starts_with(&told),
        "{result:?}"
    );
    let answer = conversation
        .last_answer()
        .expect("an answer")
        .content
        .clone();
    assert!(answer.starts_with("Told: The approval expired"), "{answer}");
}

#[tokio::test]
async fn a_deadline_passed_while_stopped_expires_right_after_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut pending = approval(Utc::now() - secs(3));
    pending.expires_at = Some(pending.created_at + secs(2));
    let uuid = pending.uuid;
    let stored = waiting(pending);
    let engine = engine_with(dir.path(), std::slice::from_ref(&stored)).await;
    let conversation = settled(&engine, stored.id).await;
    assert_expired(&conversation, uuid, "2s");
    assert!(conversation.pending_approval.is_none());
    // Durable, and a late human decision is a conflict.
    let late = engine
        .resolve_approval(uuid, &RequestContext::default(), true, None)
        .await;
    assert!(matches!(late, Err(EngineError::AlreadyResolved { .. })));
    let reloaded = JsonFileStore::open(dir.path()).unwrap().load_all().unwrap();
    assert_eq!(reloaded[0].decisions.len(), 1);
    engine.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn the_task_wakes_at_the_next_deadline_and_not_before() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let mut pending = approval(now - TimeDelta::milliseconds(1300));
    pending.expires_at = Some(pending.created_at + secs(2));
    let uuid = pending.uuid;
    let mut never = approval(now);
    never.expires_at = None;
    let stored = [waiting(pending), waiting(never)];
    let engine = engine_with(dir.path(), &stored).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        engine.get(stored[0].id).await.unwrap().unwrap().status,
        ConversationStatus::WaitingApproval,
        "not before its deadline"
    );
    let conversation = settled(&engine, stored[0].id).await;
    assert!(Utc::now() >= now + TimeDelta::milliseconds(700));
    assert_expired(&conversation, uuid, "2s");
    let untouched = engine.get(stored[1].id).await.unwrap().unwrap();
    assert_eq!(untouched.status, ConversationStatus::WaitingApproval);
    engine.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_reminder_is_sent_once_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let mut pending = approval(now);
    pending.remind_at = Some(now + TimeDelta::milliseconds(300));
    let uuid = pending.uuid;
    let stored = waiting(pending);
    let engine = engine_with(dir.path(), std::slice::from_ref(&stored)).await;
    let mut inbox = engine.subscribe_inbox().unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), inbox.recv())
        .await
        .expect("a reminder")
        .unwrap();
    let InboxEvent::ApprovalReminder { approval } = event else {
        panic!("not a reminder: {event:?}");
    };
    assert_eq!(approval.uuid, uuid);
    assert!(approval.reminded);
    let again = tokio::time::timeout(Duration::from_millis(1200), inbox.recv()).await;
    assert!(again.is_err(), "a second event: {again:?}");
    let snapshot = engine.get(stored.id).await.unwrap().unwrap();
    assert!(snapshot.pending_approval.as_ref().unwrap().reminded);
    assert_eq!(snapshot.status, ConversationStatus::WaitingApproval);
    engine.shutdown(Duration::from_secs(5)).await;
    // Recorded: a restart does not remind again.
    let restarted = engine_with(dir.path(), &[]).await;
    let mut inbox = restarted.subscribe_inbox().unwrap();
    let again = tokio::time::timeout(Duration::from_millis(800), inbox.recv()).await;
    assert!(again.is_err(), "reminded again after a restart: {again:?}");
    restarted.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn shutdown_ends_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(dir.path(), &[]).await;
    // The expiry task and the cache's eviction.
    assert_eq!(engine.inner.expiry.tasks.len(), 2);
    tokio::time::timeout(
        Duration::from_secs(2),
        engine.shutdown(Duration::from_secs(5)),
    )
    .await
    .expect("shutdown waits for nothing");
    assert!(engine.inner.expiry.tasks.is_empty());
}
