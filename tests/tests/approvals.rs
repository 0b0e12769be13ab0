//! The approval gate: TS-007, TS-008, the pending list, conflicts, reasons
//! and concurrent decisions.

use asg_tests::{
    Agent, AgentOptions, approval_uuid, assert_error, conversation_id, response_text, testdata,
    tool_messages,
};
use serde_json::{Value, json};

async fn start() -> Agent {
    Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await
}

/// Starts a conversation that waits for the approval of adding `name`.
async fn pending_add(agent: &Agent, name: &str, value: i64) -> (String, String) {
    let (status, answer) = agent
        .say_new(&format!("add resource {name} with value {value}"))
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    (conversation_id(&answer), approval_uuid(&answer))
}

fn pending_uuids(list: &Value) -> Vec<String> {
    let mut uuids: Vec<String> = list["approvals"]
        .as_array()
        .unwrap_or_else(|| panic!("no approvals array in {list}"))
        .iter()
        .map(|a| a["uuid"].as_str().unwrap().to_string())
        .collect();
    uuids.sort();
    uuids
}

#[tokio::test]
async fn ts007_reject_cancels_and_creates_nothing() {
    let agent = start().await;
    let (id, uuid) = pending_add(&agent, "never-1", 7).await;
    let (status, answer) = agent.decide(&uuid, json!({"answer": "no"})).await;
    assert_eq!(status, 200, "{answer}");
    let text = response_text(&answer);
    assert!(text.contains("Cancelled"), "{text}");
    assert_eq!(text.matches("not run").count(), 1, "said once: {text}");
    assert_eq!(answer["result"]["waiting_approval"], false);
    assert_eq!(answer["conversation"]["status"], "active");
    assert!(answer["conversation"]["pending_approval"].is_null());
    let refusal = tool_messages(&answer["conversation"]).pop().unwrap();
    assert_eq!(refusal["tool_result"]["is_error"], true, "{refusal}");
    assert!(refusal["content"].as_str().unwrap().contains("Rejected"));
    assert_eq!(agent.conversation(&id).await["status"], "active");
    assert!(
        agent.resource_names().await.is_empty(),
        "the add did not run"
    );
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(approvals["approvals"], json!([]));
}

#[tokio::test]
async fn ts008_three_approval_formats_all_execute() {
    let agent = start().await;
    let mut pending = Vec::new();
    for (i, name) in ["fmt-a", "fmt-b", "fmt-c"].iter().enumerate() {
        pending.push(pending_add(&agent, name, i as i64).await);
    }
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(approvals["approvals"].as_array().unwrap().len(), 3);
    let bodies = [
        json!({"approved": true}),
        json!({"action": "approve"}),
        json!({"answer": "yes"}),
    ];
    for ((id, uuid), body) in pending.iter().zip(bodies) {
        let (status, answer) = agent.decide(uuid, body.clone()).await;
        assert_eq!(status, 200, "{body}: {answer}");
        assert_eq!(answer["conversation"]["status"], "active", "{body}");
        let result = tool_messages(&answer["conversation"]).pop().unwrap();
        assert_eq!(result["tool_result"]["name"], "resources_add", "{body}");
        assert_eq!(result["tool_result"]["is_error"], false, "{body}: {result}");
        assert_eq!(agent.conversation(id).await["status"], "active");
    }
    assert_eq!(agent.resource_names().await, ["fmt-a", "fmt-b", "fmt-c"]);
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(approvals["approvals"], json!([]));
}

#[tokio::test]
async fn pending_approvals_and_status_counts_follow_decisions() {
    let agent = start().await;
    let (status, active) = agent.say_new("list resources").await;
    assert_eq!(status, 201);
    let (id_a, uuid_a) = pending_add(&agent, "pend-a", 1).await;
    let (id_b, uuid_b) = pending_add(&agent, "pend-b", 2).await;

    let (status, list) = agent.get("/conversations").await;
    assert_eq!(status, 200);
    assert_eq!(
        list["summary"],
        json!({"total": 3, "active": 1, "waiting_approval": 2, "completed": 0, "canceled": 0})
    );
    let waiting: Vec<&Value> = list["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "waiting_approval")
        .collect();
    assert_eq!(waiting.len(), 2);
    for summary in waiting {
        assert!(!summary["pending_approval"].is_null(), "{summary}");
    }
    let active_summary = list["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == active["conversation"]["id"])
        .unwrap();
    assert_eq!(active_summary["title"], "list resources");

    let (status, approvals) = agent.get("/approvals").await;
    assert_eq!(status, 200);
    let mut expected = vec![uuid_a.clone(), uuid_b.clone()];
    expected.sort();
    assert_eq!(pending_uuids(&approvals), expected);
    for approval in approvals["approvals"].as_array().unwrap() {
        let expected_conversation = if approval["uuid"] == uuid_a.as_str() {
            &id_a
        } else {
            &id_b
        };
        assert_eq!(approval["conversation_id"], expected_conversation.as_str());
        assert_eq!(approval["tool_name"], "resources_add");
    }

    let (status, _) = agent.decide(&uuid_a, json!({"approved": true})).await;
    assert_eq!(status, 200);
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(pending_uuids(&approvals), [uuid_b.as_str()]);
    let (_, list) = agent.get("/conversations").await;
    assert_eq!(
        list["summary"],
        json!({"total": 3, "active": 2, "waiting_approval": 1, "completed": 0, "canceled": 0})
    );

    let (status, _) = agent.decide(&uuid_b, json!({"approved": false})).await;
    assert_eq!(status, 200);
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(approvals["approvals"], json!([]));
    let (_, list) = agent.get("/conversations").await;
    assert_eq!(
        list["summary"],
        json!({"total": 3, "active": 3, "waiting_approval": 0, "completed": 0, "canceled": 0})
    );
}

#[tokio::test]
async fn a_waiting_conversation_refuses_messages_with_the_approval() {
    let agent = start().await;
    let (id, uuid) = pending_add(&agent, "blocked-1", 3).await;
    let before = agent.conversation(&id).await;
    let got = agent.say(&id, "list resources").await;
    assert_eq!(assert_error(&got, 409), "waiting_approval");
    let approval = &got.1["error"]["approval"];
    assert_eq!(approval["uuid"], uuid.as_str(), "{}", got.1);
    assert_eq!(approval["tool_name"], "resources_add");
    assert_eq!(
        approval["tool_args"],
        json!({"name": "blocked-1", "value": 3})
    );
    // The refused message was not recorded.
    assert_eq!(agent.conversation(&id).await, before);
    // The approval still works.
    let (status, _) = agent.decide(&uuid, json!({"answer": "yes"})).await;
    assert_eq!(status, 200);
    assert_eq!(agent.resource_names().await, ["blocked-1"]);
}

#[tokio::test]
async fn unknown_or_repeated_decisions_are_refused() {
    let agent = start().await;
    let unknown = uuid::Uuid::new_v4().to_string();
    let got = agent.decide(&unknown, json!({"approved": true})).await;
    assert_eq!(assert_error(&got, 404), "not_found");

    let (id, uuid) = pending_add(&agent, "once-1", 1).await;
    let (status, first) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{first}");
    for body in [json!({"approved": true}), json!({"answer": "no"})] {
        let got = agent.decide(&uuid, body.clone()).await;
        assert_error(&got, 409);
        let conversation = &got.1["error"]["conversation"];
        assert_eq!(conversation["id"], id.as_str(), "{body}: {}", got.1);
        assert_eq!(conversation["status"], "active", "{body}");
    }
    assert_eq!(agent.resource_names().await, ["once-1"], "ran exactly once");
}

#[tokio::test]
async fn a_rejection_reason_is_recorded() {
    let agent = start().await;
    let (id, uuid) = pending_add(&agent, "reasoned-1", 1).await;
    let (status, answer) = agent
        .decide(
            &uuid,
            json!({"action": "reject", "reason": "budget freeze until May"}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert!(response_text(&answer).contains("budget freeze until May"));
    let stored = agent.conversation(&id).await;
    let refusal = tool_messages(&stored).pop().unwrap();
    assert_eq!(refusal["tool_result"]["is_error"], true);
    assert!(
        refusal["content"]
            .as_str()
            .unwrap()
            .contains("budget freeze until May"),
        "{refusal}"
    );
    assert!(agent.resource_names().await.is_empty());
}

#[tokio::test]
async fn concurrent_approvals_run_the_call_exactly_once() {
    let agent = start().await;
    let (id, uuid) = pending_add(&agent, "race-1", 1).await;
    let requests = (0..20).map(|_| agent.decide(&uuid, json!({"approved": true})));
    let answers = futures::future::join_all(requests).await;
    let ok = answers.iter().filter(|(s, _)| *s == 200).count();
    let conflicts = answers.iter().filter(|(s, _)| *s == 409).count();
    assert_eq!(
        (ok, conflicts),
        (1, 19),
        "statuses: {:?}",
        answers.iter().map(|(s, _)| *s).collect::<Vec<_>>()
    );
    for (status, body) in &answers {
        if *status == 409 {
            assert_eq!(body["error"]["conversation"]["id"], id.as_str(), "{body}");
        }
    }
    let resources = agent.list_resources().await;
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(resources[0]["name"], "race-1");
    let stored = agent.conversation(&id).await;
    let adds = tool_messages(&stored)
        .iter()
        .filter(|m| m["tool_result"]["name"] == "resources_add")
        .count();
    assert_eq!(adds, 1, "one result recorded: {stored}");
}
