//! Approving with edited arguments and remembering an approval (issue
//! 9), against the real binaries: the edit is checked against the tool's
//! schema, runs instead of the request, is recorded beside it and told to
//! the model; a rule can forbid editing; a remembered approval runs later
//! calls unasked until it is revoked.

use asg_tests::{Agent, AgentOptions, approval_uuid, config_with, conversation_id};
use serde_json::{Value, json};

async fn resources_agent(extra: &str) -> (tempfile::TempDir, Agent) {
    let (dir, config) = config_with("agent-resources.yaml", extra);
    let agent = Agent::start(&config, AgentOptions::default()).await;
    (dir, agent)
}

fn error_message(answer: &Value) -> String {
    answer["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn an_approver_edits_the_arguments_and_the_edit_runs_once() {
    let (_dir, agent) = resources_agent("").await;
    let (_, answer) = agent.say_new("add resource web-1 with value 42").await;
    let uuid = approval_uuid(&answer);

    let (status, bad) = agent
        .decide(
            &uuid,
            json!({"approved": true, "arguments": {"name": "web-1", "value": "forty"}}),
        )
        .await;
    assert_eq!(status, 422, "{bad}");
    assert!(error_message(&bad).contains("arguments.value"), "{bad}");
    let (status, bad) = agent
        .decide(
            &uuid,
            json!({"approved": false, "arguments": {"name": "x", "value": 1}}),
        )
        .await;
    assert_eq!(status, 422, "{bad}");
    assert!(
        error_message(&bad).contains("only go with an approval"),
        "{bad}"
    );
    assert!(agent.resource_names().await.is_empty(), "nothing ran");

    let edited = json!({"name": "web-2", "value": 7});
    let (status, approved) = agent
        .decide(&uuid, json!({"approved": true, "arguments": edited}))
        .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(agent.resource_names().await, ["web-2"]);
    assert_eq!(
        agent.decisions_counted("edited", "rest").await,
        Some(1.0),
        "an approval with edited arguments counts as edited"
    );
    let conversation = &approved["conversation"];
    assert_eq!(conversation["decisions"][0]["edited_arguments"], edited);
    let messages = conversation["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .find(|m| m["tool_call"]["name"] == "resources_add")
        .unwrap();
    assert_eq!(
        call["tool_call"]["arguments"],
        json!({"name": "web-1", "value": 42}),
        "the request stays recorded"
    );
    let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("changed the arguments"),
        "the model is told: {result}"
    );
    let decision = agent
        .audit_lines()
        .into_iter()
        .find(|line| line["event"] == "decision")
        .unwrap();
    assert!(
        decision["edited_arguments_sha256"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_ne!(
        decision["edited_arguments_sha256"],
        decision["arguments_sha256"]
    );
    let (status, _) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 409);
}

#[tokio::test]
async fn a_rule_can_forbid_editing() {
    let (_dir, agent) = resources_agent(
        "approval:\n  rules:\n    - { tool: resources_add, action: ask, edit: false }\n",
    )
    .await;
    let (_, answer) = agent.say_new("add resource web-1 with value 42").await;
    assert_eq!(answer["result"]["approval"]["no_edit"], true, "{answer}");
    let uuid = approval_uuid(&answer);
    let (status, refused) = agent
        .decide(
            &uuid,
            json!({"approved": true, "arguments": {"name": "web-9", "value": 1}}),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert!(
        error_message(&refused).contains("may not be edited"),
        "{refused}"
    );
    let (status, _) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200);
    assert_eq!(agent.resource_names().await, ["web-1"]);
}

/// Sends `text` in conversation `id`; whether it waits for an approval.
async fn asks(agent: &Agent, id: &str, text: &str) -> (bool, Value) {
    let (status, answer) = agent.say(id, text).await;
    assert_eq!(status, 200, "{answer}");
    (answer["result"]["waiting_approval"] == true, answer)
}

#[tokio::test]
async fn a_remembered_approval_runs_later_calls_until_revoked() {
    let (_dir, agent) = resources_agent("").await;
    let (_, answer) = agent.say_new("add resource a-1 with value 1").await;
    let id = conversation_id(&answer);
    let (status, approved) = agent
        .decide(
            &approval_uuid(&answer),
            json!({"approved": true, "remember": "conversation"}),
        )
        .await;
    assert_eq!(status, 200, "{approved}");
    let grants = &approved["conversation"]["grants"];
    assert_eq!(grants[0]["tool"], "resources_add", "{grants}");
    assert_eq!(grants[0]["scope"], "conversation");

    let (waits, _) = asks(&agent, &id, "add resource a-2 with value 2").await;
    assert!(!waits, "covered by the grant");
    // Another tool, and another conversation, still ask.
    let (waits, pending) = asks(&agent, &id, "remove a-1").await;
    assert!(waits);
    agent
        .decide(&approval_uuid(&pending), json!({"approved": false}))
        .await;
    let (_, other) = agent.say_new("add resource b-1 with value 1").await;
    assert_eq!(other["result"]["waiting_approval"], true, "{other}");
    assert_eq!(agent.resource_names().await, ["a-1", "a-2"]);
    let policy: Vec<Value> = agent
        .audit_lines()
        .into_iter()
        .filter(|line| line["event"] == "policy")
        .collect();
    assert_eq!(policy.len(), 1, "{policy:?}");
    assert!(
        policy[0]["rule"].as_str().unwrap().starts_with("grant "),
        "{policy:?}"
    );

    let path = format!("/conversations/{id}/grants/resources_add");
    let (status, revoked) = delete(&agent, &path).await;
    assert_eq!(status, 200, "{revoked}");
    assert!(revoked["conversation"].get("grants").is_none(), "{revoked}");
    let (waits, _) = asks(&agent, &id, "add resource a-3 with value 3").await;
    assert!(waits, "asks again after the revocation");
    let (status, missing) = delete(&agent, &path).await;
    assert_eq!(status, 404, "{missing}");
}

#[tokio::test]
async fn a_same_arguments_grant_covers_only_equal_calls() {
    let (_dir, agent) = resources_agent("").await;
    let (_, answer) = agent.say_new("remove tmp-1").await;
    let id = conversation_id(&answer);
    agent
        .decide(
            &approval_uuid(&answer),
            json!({"approved": true, "remember": "same_arguments"}),
        )
        .await;
    let (waits, _) = asks(&agent, &id, "remove tmp-1").await;
    assert!(!waits, "the same arguments run unasked");
    let (waits, _) = asks(&agent, &id, "remove tmp-2").await;
    assert!(waits, "other arguments ask");
}

async fn delete(agent: &Agent, path: &str) -> (u16, Value) {
    let response = agent
        .http
        .delete(format!("{}{path}", agent.url))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

const OWNER_KEY: &str = "owner-key-0123456789";
const OPS_KEY: &str = "ops-key-0123456789ab";
const OTHER_KEY: &str = "other-key-0123456789";

async fn as_key(
    agent: &Agent,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> (u16, Value) {
    let response = agent
        .http
        .request(method, format!("{}{path}", agent.url))
        .header("x-api-key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn only_approvers_edit_or_remember_and_only_owner_or_approver_revokes() {
    let keys = "auth:\n  api_keys:\n    - { name: owner, key_env: OWNER_KEY }\n    \
                - { name: ops, key_env: OPS_KEY, roles: [approver] }\n    \
                - { name: other, key_env: OTHER_KEY }\n";
    let (_dir, config) = config_with("agent-resources.yaml", keys);
    let env = [
        ("OWNER_KEY", OWNER_KEY),
        ("OPS_KEY", OPS_KEY),
        ("OTHER_KEY", OTHER_KEY),
    ];
    let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
    let post = reqwest::Method::POST;
    let (_, answer) = as_key(
        &agent,
        OWNER_KEY,
        post.clone(),
        "/conversations",
        json!({"message": "add resource a-1 with value 1"}),
    )
    .await;
    let (id, uuid) = (conversation_id(&answer), approval_uuid(&answer));
    let approval = format!("/approvals/{uuid}");

    // Not an approver: neither an edit nor a grant goes through.
    let edit = json!({"approved": true, "arguments": {"name": "evil", "value": 1}, "remember": "conversation"});
    let (status, refused) = as_key(&agent, OWNER_KEY, post.clone(), &approval, edit).await;
    assert_eq!(status, 403, "{refused}");
    let (status, approved) = as_key(
        &agent,
        OPS_KEY,
        post.clone(),
        &approval,
        json!({"approved": true, "remember": "conversation"}),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(
        approved["conversation"]["grants"][0]["granted_by"]["subject"],
        "key:ops"
    );

    let grant = format!("/conversations/{id}/grants/resources_add");
    let delete_method = reqwest::Method::DELETE;
    let (status, hidden) = as_key(
        &agent,
        OTHER_KEY,
        delete_method.clone(),
        &grant,
        Value::Null,
    )
    .await;
    assert_eq!(status, 404, "another principal does not see it: {hidden}");
    let (status, _) = delete(&agent, &grant).await;
    assert_eq!(status, 401, "no identity, no revocation");
    let (status, revoked) = as_key(&agent, OWNER_KEY, delete_method, &grant, Value::Null).await;
    assert_eq!(status, 200, "the owner revokes: {revoked}");
    assert!(revoked["conversation"].get("grants").is_none(), "{revoked}");
}
