//! The reference implementation's chain shape (issue 11): agent A's
//! pipeline reaches agent B through an `a2a` node that declares its peer
//! inline (`url: ${AGENT_B_URL}/a2a`). B's approval becomes a proxy
//! approval on A; approving it on A creates the resource on B once.

use asg_tests::{Agent, AgentOptions, approval_uuid, response_text, testdata};
use serde_json::json;

#[tokio::test]
async fn an_inline_a2a_node_delegates_and_proxies_the_approval() {
    let b = Agent::start(&testdata("e2e-chain-b.yaml"), AgentOptions::default()).await;
    let a = Agent::start(
        &testdata("reference/chain-a-inline.yaml"),
        AgentOptions::with_env(&[("AGENT_B_URL", &b.url)]),
    )
    .await;
    // The inline peer is a sub-agent named after its node.
    let (_, tools) = a.get("/tools").await;
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "resource_agent"),
        "{tools}"
    );

    let (status, answer) = a.say_new("add resource inline-1 with value 3").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let approval = &answer["result"]["approval"];
    assert_eq!(approval["node"], "resource_agent", "{answer}");
    assert_eq!(approval["remote_agent_name"], "resource_agent");
    assert_eq!(approval["tool_name"], "resources_add");
    assert_eq!(
        approval["tool_args"],
        json!({"name": "inline-1", "value": 3})
    );
    assert!(b.resource_names().await.is_empty());

    let uuid = approval_uuid(&answer);
    let (status, approved) = a.decide(&uuid, json!({"action": "approve"})).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["conversation"]["status"], "active");
    assert!(response_text(&approved).contains("inline-1"), "{approved}");
    let (status, again) = a.decide(&uuid, json!({"action": "approve"})).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(b.resource_names().await, ["inline-1"]);
    for agent in [&a, &b] {
        let (_, pending) = agent.get("/approvals").await;
        assert_eq!(pending["approvals"], json!([]));
    }
}
