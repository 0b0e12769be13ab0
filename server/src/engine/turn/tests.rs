//! The engine's part of a decision: it carries out the core's effects in
//! order, so an audit line that cannot be written stops the decision
//! before anything is saved or run.

use std::sync::Arc;

use asg_shared::{ApprovalState, ConversationStatus, PendingApproval, fixtures};

use crate::audit::AuditLog;
use crate::context::RequestContext;
use crate::engine::{Engine, EngineError};
use crate::store::{JsonFileStore, Store};
use crate::test_support::{scripted_parts, waiting};

const MODEL: &str = "rules:\n  - when: { after_tool: \"*\" }\n    reply: \"Told: {result}\"\n  - reply: \"hello\"\n";

/// An engine over a fresh store holding a conversation that waits for
/// one approval, with its audit log written to `audit_file`.
async fn waiting_engine(
    dir: &std::path::Path,
    audit: AuditLog,
) -> (Engine, Arc<JsonFileStore>, PendingApproval) {
    let store = Arc::new(JsonFileStore::open(dir).unwrap());
    let pending = fixtures::pending_approval("resources_add");
    let conversation = waiting(pending);
    let pending = conversation.pending()[0].clone();
    store.save(&conversation).unwrap();
    let mut parts = scripted_parts(store.clone(), MODEL);
    parts.audit = Some(Arc::new(audit));
    (Engine::start(parts).await.unwrap(), store, pending)
}

#[tokio::test]
async fn a_decision_whose_audit_line_cannot_be_written_is_not_applied() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    // Every write to the audit log fails (ENOSPC).
    std::os::unix::fs::symlink("/dev/full", logs.path().join("audit.jsonl")).unwrap();
    let audit = AuditLog::open(logs.path()).unwrap();
    let (engine, store, pending) = waiting_engine(dir.path(), audit).await;
    let ctx = RequestContext::default();
    let refused = engine
        .resolve_approval(pending.uuid, &ctx, true, None)
        .await;
    assert!(matches!(refused, Err(EngineError::Audit(_))), "{refused:?}");
    // Nothing was saved: not executing, no decision, still decidable.
    let stored = store.load(pending.conversation_id).unwrap().unwrap();
    assert_eq!(stored.status, ConversationStatus::WaitingApproval);
    assert_eq!(stored.pending()[0].state, ApprovalState::Pending);
    assert!(stored.decisions.is_empty(), "{stored:?}");
    assert!(!stored.turn_in_progress);
    let live = engine.get(pending.conversation_id).await.unwrap().unwrap();
    assert_eq!(live.pending()[0].state, ApprovalState::Pending);
    engine.shutdown(std::time::Duration::from_secs(5)).await;
}

#[tokio::test]
async fn the_decision_line_is_durable_before_the_outcome_line() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let audit = AuditLog::open(logs.path()).unwrap();
    let (engine, store, pending) = waiting_engine(dir.path(), audit).await;
    let ctx = RequestContext::default();
    let outcome = engine
        .resolve_approval(pending.uuid, &ctx, true, None)
        .await
        .unwrap();
    // No tool server here: the approved call fails, and the model hears so.
    assert!(
        outcome.result.response.starts_with("Told:"),
        "{:?}",
        outcome.result
    );
    let text = std::fs::read_to_string(logs.path().join("audit.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let events: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["event"].as_str().unwrap(), l["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(events, [("decision", "executing"), ("outcome", "failed")]);
    assert_eq!(lines[0]["decision"], "approved");
    let stored = store.load(pending.conversation_id).unwrap().unwrap();
    assert_eq!(stored.decisions.len(), 1);
    assert!(stored.pending().is_empty());
    engine.shutdown(std::time::Duration::from_secs(5)).await;
}

/// Largest a turn's future may be in a test build. A turn's future is
/// made once per request and moved into its task; every byte of it is
/// copied there, and its parts (a pipeline's run, a tool call through
/// rmcp) made it 30 KiB before they were boxed; about 12 KiB now, most
/// of it the turn's working copy of the conversation and the decided
/// call's state.
const MAX_TURN_FUTURE_BYTES: usize = 16 * 1024;

#[tokio::test]
async fn a_turns_future_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _store, pending) =
        waiting_engine(dir.path(), AuditLog::open(dir.path()).unwrap()).await;
    let inner = engine.inner.clone();
    let ctx = RequestContext::default();
    let slot = inner.slot(pending.conversation_id).await.unwrap();
    let create = super::super::create_turn(inner.clone(), ctx.clone(), Some("hi".into()));
    let send = super::super::send_turn(inner.clone(), slot.clone(), ctx.clone(), "hi".into());
    let request = super::super::DecisionRequest {
        uuid: pending.uuid,
        approve: true,
        reason: None,
        choice: Default::default(),
    };
    let decide = super::super::decision_turn(inner, slot, ctx, request);
    let sizes = [
        ("create", std::mem::size_of_val(&create)),
        ("send", std::mem::size_of_val(&send)),
        ("decide", std::mem::size_of_val(&decide)),
    ];
    assert!(
        sizes.iter().all(|(_, size)| *size <= MAX_TURN_FUTURE_BYTES),
        "a turn's future takes more than {MAX_TURN_FUTURE_BYTES} bytes: {sizes:?}; box the part that grew"
    );
    engine.shutdown(std::time::Duration::from_secs(5)).await;
}

/// A turn's saves publish snapshots that share the history with the one
/// the turn started from: each save copies the list of message pointers,
/// not every message (a long conversation would otherwise be copied whole
/// at every step of every turn, and held twice while the turn runs).
#[tokio::test]
async fn a_turn_shares_the_history_it_started_from() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _store, pending) =
        waiting_engine(dir.path(), AuditLog::open(dir.path()).unwrap()).await;
    let slot = engine.inner.slot(pending.conversation_id).await.unwrap();
    let before = slot.snapshot();
    engine
        .resolve_approval(pending.uuid, &RequestContext::default(), true, None)
        .await
        .unwrap();
    let after = slot.snapshot();
    assert!(after.messages.len() > before.messages.len(), "{after:?}");
    let shared = before
        .messages
        .iter()
        .zip(&after.messages)
        .filter(|(old, new)| Arc::ptr_eq(old, new))
        .count();
    assert_eq!(shared, before.messages.len(), "messages copied by the turn");
    engine.shutdown(std::time::Duration::from_secs(5)).await;
}
