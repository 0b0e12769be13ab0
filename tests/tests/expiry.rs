//! Approval expiry and reminders, end to end with the real `agent`:
//! an undecided approval is rejected as expired by `system:expiry` (the
//! call never runs, a late decision gets 409), across a restart, per rule,
//! through A2A, on a sub-agent behind a proxy approval; one reminder on
//! the operator inbox; a bad duration stops the start.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use asg_tests::a2a::rpc;
use asg_tests::sse::EventStream;
use asg_tests::{
    Agent, AgentOptions, approval_uuid, binary, config_with, conversation_id, poll, testdata,
    tool_messages,
};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// A conversation waiting for the approval of adding `name`: (id, uuid,
/// the approval).
async fn pending_add(agent: &Agent, name: &str) -> (String, String, Value) {
    let (status, answer) = agent
        .say_new(&format!("add resource {name} with value 1"))
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let approval = answer["result"]["approval"].clone();
    (conversation_id(&answer), approval_uuid(&answer), approval)
}

/// The conversation once it no longer waits for approval and the turn
/// that tells the model has ended (up to 15 s).
async fn settled(agent: &Agent, id: &str) -> Value {
    poll(
        "the approval to expire",
        Duration::from_secs(15),
        || async {
            let conversation = agent.conversation(id).await;
            (conversation["status"] != "waiting_approval"
                && conversation["turn_in_progress"] != true)
                .then_some(conversation)
        },
    )
    .await
}

fn time(value: &Value) -> DateTime<Utc> {
    value
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("not a time: {value}"))
}

/// The conversation records one rejection by `system:expiry`, and the
/// model was told.
fn assert_expired(conversation: &Value, uuid: &str, after: &str) {
    let decisions = conversation["decisions"].as_array().expect("decisions");
    assert_eq!(decisions.len(), 1, "{conversation}");
    let decision = &decisions[0];
    assert_eq!(decision["approval_uuid"], uuid);
    assert_eq!(decision["approved"], false);
    assert_eq!(
        decision["decided_by"],
        json!({"subject": "system:expiry", "role": "expiry", "via": "system"})
    );
    let told =
        format!("The approval expired after {after} without a decision; the call was not run.");
    let result = tool_messages(conversation).pop().expect("a tool result");
    assert_eq!(result["tool_result"]["is_error"], true, "{result}");
    assert_eq!(result["content"], told.as_str(), "{result}");
    let answer = conversation["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(answer["role"], "assistant", "{conversation}");
    assert!(
        answer["content"].as_str().unwrap().contains("expired"),
        "{answer}"
    );
    assert!(conversation["pending_approval"].is_null(), "{conversation}");
}

/// Decision lines of `uuid` in the audit log of `data_dir`.
fn audit_decisions(data_dir: &Path, uuid: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(data_dir.join("audit.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["event"] == "decision" && line.to_string().contains(uuid))
        .collect()
}

#[tokio::test]
async fn an_undecided_approval_expires_and_its_call_never_runs() {
    let (_dir, config) = config_with("agent-resources.yaml", "approval: { expires_after: 2s }");
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let (id, uuid, approval) = pending_add(&agent, "late-1").await;
    let expires_at = time(&approval["expires_at"]);
    assert_eq!(
        (expires_at - time(&approval["created_at"])).num_seconds(),
        2,
        "{approval}"
    );
    let conversation = settled(&agent, &id).await;
    assert!(Utc::now() >= expires_at, "expired early");
    assert_eq!(conversation["status"], "active");
    assert_expired(&conversation, &uuid, "2s");

    let (status, late) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 409, "a late approval: {late}");
    assert!(agent.resource_names().await.is_empty(), "the add ran");
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(approvals["approvals"], json!([]));
    let audited = audit_decisions(&agent.data_dir, &uuid);
    assert_eq!(audited.len(), 1, "{audited:?}");
    assert_eq!(audited[0]["decision"], "rejected", "{audited:?}");
    assert!(
        audited[0].to_string().contains("system:expiry"),
        "{audited:?}"
    );
    // In the metrics: an expiry, decided by the system.
    assert_eq!(
        agent.decisions_counted("expired", "system").await,
        Some(1.0)
    );
}

#[tokio::test]
async fn a_deadline_that_passed_while_stopped_expires_after_the_restart() {
    let (_dir, config) = config_with("agent-resources.yaml", "approval: { expires_after: 3s }");
    let data = tempfile::tempdir().unwrap();
    let options = AgentOptions {
        data_dir: Some(data.path().to_path_buf()),
        ..AgentOptions::default()
    };
    let mut agent = Agent::start(&config, options.clone()).await;
    let (id, uuid, approval) = pending_add(&agent, "restart-1").await;
    agent.stop();
    let expires_at = time(&approval["expires_at"]);
    assert!(Utc::now() < expires_at, "stopped after the deadline");
    let left = (expires_at - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(left + Duration::from_millis(300)).await;

    let agent = Agent::start(&config, options).await;
    let conversation = settled(&agent, &id).await;
    assert_expired(&conversation, &uuid, "3s");
    assert_eq!(audit_decisions(data.path(), &uuid).len(), 1);
    assert!(agent.resource_names().await.is_empty(), "the add ran");
}

#[tokio::test]
async fn one_reminder_reaches_the_inbox() {
    let extra = "approval: { remind_after: 1s, expires_after: 1h }";
    let (_dir, config) = config_with("agent-resources.yaml", extra);
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let (status, inbox) = EventStream::open(&format!("{}/events", agent.url), &[]).await;
    assert_eq!(status, 200);
    let mut inbox = inbox.unwrap();
    let (id, uuid, approval) = pending_add(&agent, "remind-1").await;
    assert_eq!(
        (time(&approval["remind_at"]) - time(&approval["created_at"])).num_seconds(),
        1,
        "{approval}"
    );
    let reminder = inbox.next_of("approval_reminder").await;
    assert_eq!(reminder["approval"]["uuid"], uuid.as_str(), "{reminder}");
    assert_eq!(reminder["approval"]["reminded"], true, "{reminder}");
    let later = inbox.within(Duration::from_millis(2500)).await;
    assert!(
        later.iter().all(|e| e["type"] != "approval_reminder"),
        "reminded twice: {later:?}"
    );
    let conversation = agent.conversation(&id).await;
    assert_eq!(conversation["status"], "waiting_approval");
    assert_eq!(conversation["pending_approval"]["reminded"], true);
}

#[tokio::test]
async fn a_rules_expires_after_wins_over_the_global_one() {
    let extra = r#"
approval:
  expires_after: 1h
  rules:
    - tool: resources_add
      when: { name: "^quick-" }
      action: ask
      expires_after: 2s
"#;
    let (_dir, config) = config_with("agent-resources.yaml", extra);
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let (quick, quick_uuid, approval) = pending_add(&agent, "quick-1").await;
    assert!(
        approval["rule"]
            .as_str()
            .unwrap_or("")
            .starts_with("approval.rules[0]"),
        "{approval}"
    );
    let (slow, _, slow_approval) = pending_add(&agent, "slow-1").await;
    let waits = time(&slow_approval["expires_at"]) - time(&slow_approval["created_at"]);
    assert_eq!(waits.num_seconds(), 3600, "{slow_approval}");
    let conversation = settled(&agent, &quick).await;
    assert_expired(&conversation, &quick_uuid, "2s");
    assert_eq!(
        agent.conversation(&slow).await["status"],
        "waiting_approval"
    );
}

#[tokio::test]
async fn an_a2a_task_moves_on_when_its_approval_expires() {
    let (_dir, config) = config_with("agent-resources.yaml", "approval: { expires_after: 2s }");
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let message = json!({"message": {"role": "user", "kind": "message",
        "messageId": uuid::Uuid::new_v4().to_string(),
        "parts": [{"kind": "text", "text": "add resource a2a-1 with value 1"}]}});
    let sent = rpc(&agent, "message/send", message).await;
    assert_eq!(
        sent["result"]["status"]["state"], "input-required",
        "{sent}"
    );
    let task = sent["result"]["id"].as_str().unwrap().to_string();
    let done = poll("the task to move on", Duration::from_secs(15), || async {
        let got = rpc(&agent, "tasks/get", json!({"id": task})).await;
        let state = got["result"]["status"]["state"].clone();
        (state != "input-required" && state != "working").then_some(got)
    })
    .await;
    // A rejected call ends the turn with the model's answer: completed.
    assert_eq!(done["result"]["status"]["state"], "completed", "{done}");
    let text = done["result"]["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("expired"), "{done}");
    assert!(agent.resource_names().await.is_empty(), "the add ran");
}

#[tokio::test]
async fn an_expired_proxy_approval_is_rejected_on_the_sub_agent() {
    let b = Agent::start(&testdata("e2e-chain-b.yaml"), AgentOptions::default()).await;
    let (_dir, config) = config_with("agent-delegator.yaml", "approval: { expires_after: 2s }");
    let a = Agent::start(
        &config,
        AgentOptions::with_env(&[("DOWNSTREAM_URL", &b.url)]),
    )
    .await;
    let (id, uuid, approval) = pending_add(&a, "proxy-1").await;
    let task = approval["remote_task_id"]
        .as_str()
        .unwrap_or_else(|| panic!("not a proxy approval: {approval}"))
        .to_string();
    assert_eq!(b.conversation(&task).await["status"], "waiting_approval");

    let conversation = settled(&a, &id).await;
    let decisions = conversation["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 1, "{conversation}");
    assert_eq!(decisions[0]["approval_uuid"], uuid.as_str());
    assert_eq!(decisions[0]["decided_by"]["subject"], "system:expiry");
    let result = tool_messages(&conversation).pop().unwrap();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("The approval expired after 2s"),
        "{result}"
    );
    // B does not wait any more, and nothing ran there.
    let b_view = b.conversation(&task).await;
    assert_ne!(b_view["status"], "waiting_approval", "{b_view}");
    let refused = tool_messages(&b_view).pop().unwrap();
    let refusal = refused["content"].as_str().unwrap();
    assert!(
        refusal.starts_with("Rejected by the user") && refusal.contains("expired after 2s"),
        "{b_view}"
    );
    assert!(b.resource_names().await.is_empty());
    let (_, approvals) = b.get("/approvals").await;
    assert_eq!(approvals["approvals"], json!([]));
}

#[tokio::test]
async fn a_bad_duration_stops_the_start_naming_the_field() {
    let (_dir, config) = config_with("agent-resources.yaml", "approval: { expires_after: 1 day }");
    let output = Command::new(binary("agent"))
        .arg("--config")
        .arg(&config)
        .args(["--port", "0"])
        .output()
        .expect("run the agent");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("approval.expires_after") && stderr.contains("e.g. 90s, 30m, 24h, 7d"),
        "{stderr}"
    );
}
