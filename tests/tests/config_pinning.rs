//! Runs pinned to their configuration (issue 9): an approval requested
//! under one configuration and decided after the agent restarted with a
//! changed one is refused by default (`approval.on_config_change:
//! refuse`), or goes on with the change recorded (`resume`); `GET
//! /approvals` shows the mismatch; an unchanged restart changes nothing.

use std::path::Path;

use asg_tests::{Agent, AgentOptions, approval_uuid, config_with, response_text};
use serde_json::{Value, json};

/// Starts the resource agent on `config` with `data_dir` kept.
async fn start(config: &Path, data_dir: &Path) -> Agent {
    let options = AgentOptions {
        data_dir: Some(data_dir.to_path_buf()),
        ..AgentOptions::default()
    };
    Agent::start(config, options).await
}

/// Asks for an approval, stops the agent, edits its config with `change`
/// and starts it again: the restarted agent and the approval's uuid.
async fn restarted_with(
    extra: &str,
    change: impl Fn(String) -> String,
) -> (Agent, String, tempfile::TempDir) {
    let (dir, config) = config_with("agent-resources.yaml", extra);
    let data = dir.path().join("data");
    let mut agent = start(&config, &data).await;
    let (_, answer) = agent.say_new("add resource pinned-1 with value 1").await;
    let uuid = approval_uuid(&answer);
    agent.stop();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, change(text)).unwrap();
    (start(&config, &data).await, uuid, dir)
}

fn new_prompt(text: String) -> String {
    text.replace(
        "prompt: You are a resource manager.",
        "prompt: You are a careful resource manager.",
    )
}

async fn listed(agent: &Agent, uuid: &str) -> Value {
    let (_, list) = agent.get("/approvals").await;
    list["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["uuid"] == uuid)
        .cloned()
        .unwrap_or_else(|| panic!("{uuid} not listed: {list}"))
}

#[tokio::test]
async fn a_changed_configuration_refuses_the_approval_by_default() {
    let (agent, uuid, _dir) = restarted_with("", new_prompt).await;
    let pending = listed(&agent, &uuid).await;
    assert_eq!(pending["config_changed"], true, "{pending}");
    assert!(
        pending["config_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );

    let (status, answer) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{answer}");
    let decision = &answer["conversation"]["decisions"][0];
    assert_eq!(decision["approved"], false, "{answer}");
    assert_eq!(decision["decided_by"]["subject"], "system:config");
    let result = answer["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("configuration changed"), "{result}");
    assert!(agent.resource_names().await.is_empty(), "not run");
}

#[tokio::test]
async fn resume_goes_on_and_records_the_change() {
    let policy = "approval: { on_config_change: resume }";
    let (agent, uuid, _dir) = restarted_with(policy, new_prompt).await;
    assert_eq!(listed(&agent, &uuid).await["config_changed"], true);
    let (status, answer) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{answer}");
    assert!(response_text(&answer).contains("pinned-1"), "{answer}");
    let reason = answer["conversation"]["decisions"][0]["reason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("configuration changed"), "{reason}");
    assert_eq!(agent.resource_names().await, ["pinned-1"]);
}

#[tokio::test]
async fn an_unchanged_restart_keeps_the_approval_valid() {
    let (agent, uuid, _dir) = restarted_with("", |text| text).await;
    assert!(listed(&agent, &uuid).await.get("config_changed").is_none());
    let (status, answer) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["conversation"]["decisions"][0]["approved"], true);
    assert_eq!(agent.resource_names().await, ["pinned-1"]);
}
