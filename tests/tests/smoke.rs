//! TS-001 and the basic approval flow against the real binaries.

use asg_tests::{Agent, AgentOptions, approval_uuid, conversation_id, destructive_hint, testdata};
use serde_json::json;

#[tokio::test]
async fn ts001_starts_and_lists_tools_with_hints() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    assert_eq!(
        agent.get("/health").await,
        (
            200,
            json!({"status": "ok", "details": {"quarantined_files": 0, "store": "ok", "mcp_servers": [
                {"name": "resources", "transport": "stdio", "status": "ready", "tools": 3}
            ]}})
        )
    );
    let (status, tools) = agent.get("/tools").await;
    assert_eq!(status, 200);
    let hint = |name: &str| destructive_hint(&tools, name);
    assert_eq!(hint("resources_list"), json!(false));
    assert_eq!(hint("resources_add"), json!(true));
    assert_eq!(hint("resources_remove"), json!(true));
}

#[tokio::test]
async fn ts004_add_waits_for_approval_then_runs() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let (status, answer) = agent.say_new("create a server my-test with value 42").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true);
    assert_eq!(answer["conversation"]["status"], "waiting_approval");
    assert_eq!(
        answer["result"]["approval"]["tool_args"],
        json!({"name": "my-test", "value": 42})
    );
    let uuid = approval_uuid(&answer);
    let id = conversation_id(&answer);
    let (status, approved) = agent
        .post(&format!("/approvals/{uuid}"), json!({"answer": "yes"}))
        .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["conversation"]["status"], "active");
    assert!(
        approved["result"]["response"]
            .as_str()
            .unwrap()
            .contains("my-test"),
        "{approved}"
    );
    let (_, listed) = agent.say(&id, "list resources").await;
    assert!(
        listed["result"]["response"]
            .as_str()
            .unwrap()
            .contains("\"my-test\""),
        "{listed}"
    );
}
