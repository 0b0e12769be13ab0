//! Delegation over A2A between real agent processes (TS-009, TS-010,
//! TS-026, TS-027, FR-029, NFR-015): two- and three-agent chains, proxy
//! approvals (approve and reject, across a restart), Bearer and session
//! id forwarding, failures of the sub-agent, and the delegation-depth
//! limit that stops cycles.

use std::time::Duration;

use asg_tests::fake_http::{FakeHttp, Reply};
use asg_tests::{Agent, AgentOptions, approval_uuid, conversation_id, response_text, testdata};
use serde_json::{Value, json};

async fn resource_agent() -> Agent {
    Agent::start(&testdata("e2e-chain-b.yaml"), AgentOptions::default()).await
}

async fn delegator_to(url: &str) -> Agent {
    Agent::start(
        &testdata("agent-delegator.yaml"),
        AgentOptions::with_env(&[("DOWNSTREAM_URL", url)]),
    )
    .await
}

#[tokio::test]
async fn ts009_delegation_lists_sub_agents_as_tools_and_returns_results() {
    let b = resource_agent().await;
    let a = delegator_to(&b.url).await;
    let (_, tools) = a.get("/tools").await;
    let downstream = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "downstream")
        .cloned()
        .unwrap_or_else(|| panic!("no sub-agent tool in {tools}"));
    assert_eq!(downstream["source"], "a2a");
    assert_eq!(downstream["destructiveHint"], false);

    let (status, answer) = a.say_new("list resources").await;
    assert_eq!(status, 201, "{answer}");
    let response = response_text(&answer);
    assert!(
        response.starts_with("Downstream answered: There are 0 resources"),
        "{response}"
    );
    // The delegation is traced in A's conversation; B has the task.
    let calls: Vec<&Value> = answer["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["tool_call"]["name"] == "downstream")
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0]["tool_call"]["arguments"],
        json!({"message": "list resources"})
    );
    let (_, listed) = b.get("/conversations").await;
    assert_eq!(
        listed["summary"]["total"], 1,
        "B did not receive the task: {listed}"
    );
}

#[tokio::test]
async fn ts027_proxy_approval_approved_on_a_runs_on_b() {
    let b = resource_agent().await;
    let a = delegator_to(&b.url).await;
    let (_, answer) = a.say_new("add resource chain-test with value 77").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let approval = &answer["result"]["approval"];
    assert_eq!(approval["tool_name"], "resources_add");
    assert_eq!(
        approval["tool_args"],
        json!({"name": "chain-test", "value": 77})
    );
    assert_eq!(approval["remote_agent_name"], "downstream");
    let remote_task = approval["remote_task_id"].as_str().unwrap().to_string();
    // B waits too, on the task A holds.
    let (_, b_view) = b.get(&format!("/conversations/{remote_task}")).await;
    assert_eq!(b_view["conversation"]["status"], "waiting_approval");

    let uuid = approval_uuid(&answer);
    let (status, approved) = a.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["conversation"]["status"], "active");
    let response = response_text(&approved);
    assert!(
        response.contains("Created the resource") && response.contains("chain-test"),
        "{response}"
    );
    let (_, b_view) = b.get(&format!("/conversations/{remote_task}")).await;
    assert_eq!(b_view["conversation"]["status"], "active");
    assert_eq!(b.resource_names().await, ["chain-test"]);
}

#[tokio::test]
async fn proxy_approval_rejected_on_a_is_forwarded_and_nothing_runs() {
    let b = resource_agent().await;
    let a = delegator_to(&b.url).await;
    let (_, answer) = a.say_new("add resource never with value 1").await;
    let uuid = approval_uuid(&answer);
    let (status, rejected) = a.decide(&uuid, json!({"answer": "no"})).await;
    assert_eq!(status, 200, "{rejected}");
    let response = response_text(&rejected);
    assert!(
        response.starts_with("Cancelled: Rejected by the user"),
        "{response}"
    );
    assert!(b.resource_names().await.is_empty());
    let (_, approvals) = b.get("/approvals").await;
    assert_eq!(
        approvals["approvals"],
        json!([]),
        "B still waits: {approvals}"
    );
}

#[tokio::test]
async fn ts026_ts027_pipeline_delegates_through_an_a2a_node() {
    let b = resource_agent().await;
    let a = Agent::start(
        &testdata("e2e-chain-a.yaml"),
        AgentOptions::with_env(&[("AGENT_B_URL", &b.url)]),
    )
    .await;
    let (status, listed) = a.say_new("list all resources").await;
    assert_eq!(status, 201, "{listed}");
    assert_eq!(listed["result"]["waiting_approval"], false);
    let response = response_text(&listed);
    assert!(response.starts_with("There are 0 resources"), "{response}");

    let (_, answer) = a.say_new("add resource chain-test with value 77").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    assert_eq!(answer["result"]["approval"]["node"], "delegator");
    assert_eq!(
        answer["result"]["approval"]["remote_agent_name"],
        "resource-agent"
    );
    assert_eq!(
        answer["conversation"]["pipeline_state"]["paused_node_path"],
        json!([1])
    );
    let uuid = approval_uuid(&answer);
    let (status, approved) = a.decide(&uuid, json!({"action": "approve"})).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["conversation"]["status"], "active");
    assert!(
        response_text(&approved).contains("chain-test"),
        "{approved}"
    );
    assert_eq!(b.resource_names().await, ["chain-test"]);
}

#[tokio::test]
async fn three_agent_chain_forwards_the_approval_from_a_through_b_to_c() {
    let c = resource_agent().await;
    let b = delegator_to(&c.url).await;
    let a = delegator_to(&b.url).await;
    let (_, answer) = a.say_new("add resource deep with value 3").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    // A shows C's tool and arguments, relayed by B.
    assert_eq!(answer["result"]["approval"]["tool_name"], "resources_add");
    assert_eq!(
        answer["result"]["approval"]["tool_args"],
        json!({"name": "deep", "value": 3})
    );
    let uuid = approval_uuid(&answer);
    let (status, approved) = a.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{approved}");
    let response = response_text(&approved);
    assert!(response.contains("deep"), "{response}");
    assert_eq!(c.resource_names().await, ["deep"]);
    for agent in [&a, &b, &c] {
        let (_, pending) = agent.get("/approvals").await;
        assert_eq!(pending["approvals"], json!([]));
    }
}

#[tokio::test]
async fn proxy_approval_survives_a_restart_of_both_agents() {
    let b_data = tempfile::tempdir().unwrap();
    let a_data = tempfile::tempdir().unwrap();
    let b_options = AgentOptions {
        data_dir: Some(b_data.path().to_path_buf()),
        ..Default::default()
    };
    let mut b = Agent::start(&testdata("e2e-chain-b.yaml"), b_options.clone()).await;
    let a_options = |url: &str| AgentOptions {
        data_dir: Some(a_data.path().to_path_buf()),
        ..AgentOptions::with_env(&[("DOWNSTREAM_URL", url)])
    };
    let mut a = Agent::start(&testdata("agent-delegator.yaml"), a_options(&b.url)).await;
    let (_, answer) = a.say_new("add resource sturdy with value 5").await;
    let uuid = approval_uuid(&answer);
    let id = conversation_id(&answer);
    a.stop();
    b.stop();
    let b = Agent::start(&testdata("e2e-chain-b.yaml"), b_options).await;
    // B has a new port: A is restarted with it, as an operator would.
    let a = Agent::start(&testdata("agent-delegator.yaml"), a_options(&b.url)).await;
    let (status, approved) = a.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{approved}");
    assert!(response_text(&approved).contains("sturdy"), "{approved}");
    assert_eq!(a.conversation(&id).await["status"], "active");
    assert_eq!(b.resource_names().await, ["sturdy"]);
}

#[tokio::test]
async fn ts010_bearer_and_session_id_reach_the_sub_agent_and_only_it() {
    let card = json!({
        "name": "recorder", "description": "records headers", "url": "",
        "version": "1", "protocolVersion": "0.3.0",
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "echo", "tags": []}]
    });
    let task = json!({"jsonrpc": "2.0", "id": "1", "result": {
        "kind": "task", "id": "t-1", "contextId": "c-1",
        "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "recorded"}]}]
    }});
    let peer = FakeHttp::start(vec![Reply::json(card), Reply::json(task)]).await;
    let a = delegator_to(&format!("{}/rpc", peer.url)).await;

    let (status, answer) = a
        .post_with(
            "/conversations",
            json!({"message": "hello"}).to_string(),
            &[
                ("Authorization", "Bearer test-token-123"),
                ("X-Session-ID", "abcd1234"),
            ],
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(response_text(&answer), "Downstream answered: recorded");
    let (status, _) = a.say_new("again, without a token").await;
    assert_eq!(status, 201);

    let sends: Vec<_> = peer
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(sends.len(), 2, "{sends:?}");
    let header = |r: &asg_tests::fake_http::Recorded, name: &str| {
        r.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(sends[0].uri, "/rpc");
    assert_eq!(
        header(&sends[0], "authorization").as_deref(),
        Some("Bearer test-token-123")
    );
    assert_eq!(
        header(&sends[0], "x-session-id").as_deref(),
        Some("abcd1234")
    );
    assert_eq!(
        header(&sends[0], "x-a2a-delegation-depth").as_deref(),
        Some("1")
    );
    let body: Value = serde_json::from_str(&sends[0].body).unwrap();
    assert_eq!(body["method"], "message/send");
    assert_eq!(body["params"]["message"]["parts"][0]["text"], "hello");
    assert_eq!(
        header(&sends[1], "authorization"),
        None,
        "a token was sent without one"
    );
    assert!(
        !a.log().contains("test-token-123"),
        "the token reached the log"
    );
}

#[tokio::test]
async fn nfr015_one_request_shows_the_same_sid_in_both_logs() {
    let b = resource_agent().await;
    let a = delegator_to(&b.url).await;
    let (status, _) = a
        .post_with(
            "/conversations",
            json!({"message": "list resources"}).to_string(),
            &[("X-Session-ID", "feed0042")],
        )
        .await;
    assert_eq!(status, 201);
    a.wait_log("sid=feed0042").await;
    let b_log = b.wait_log("sid=feed0042").await;
    assert!(
        b_log
            .lines()
            .any(|l| l.contains("POST") && l.contains("/a2a") && l.contains("sid=feed0042")),
        "{b_log}"
    );
}

#[tokio::test]
async fn sub_agent_failures_are_clear_errors_in_the_conversation() {
    // Down: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let a = delegator_to(&down_url).await;
    let (status, answer) = a.say_new("list resources").await;
    assert_eq!(
        status, 201,
        "an unreachable sub-agent must not fail the request: {answer}"
    );
    let response = response_text(&answer);
    assert!(
        response.contains("sub-agent \"downstream\" unavailable"),
        "{response}"
    );

    // Slow: answers after the 5 s timeout.
    let slow = FakeHttp::start(vec![Reply::json(json!({})).delayed(Duration::from_secs(8))]).await;
    let a = delegator_to(&format!("{}/rpc", slow.url)).await;
    let started = std::time::Instant::now();
    let (_, answer) = a.say_new("list resources").await;
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(
        response_text(&answer).contains("did not answer within 5 s"),
        "{answer}"
    );

    // Garbage, HTTP error, JSON-RPC error.
    for (reply, needle) in [
        (Reply::status(200, "<html>nope</html>"), "could not be read"),
        (Reply::status(503, "{}"), "answered HTTP 503"),
        (
            Reply::json(
                json!({"jsonrpc": "2.0", "id": "1", "error": {"code": -32601, "message": "no such method"}}),
            ),
            "refused the request: no such method (JSON-RPC -32601)",
        ),
    ] {
        let peer = FakeHttp::start(vec![reply]).await;
        let a = delegator_to(&format!("{}/rpc", peer.url)).await;
        let (_, answer) = a.say_new("list resources").await;
        let response = response_text(&answer);
        assert!(response.contains(needle), "{needle}: {response}");
    }
}

#[tokio::test]
async fn a_delegation_cycle_is_stopped_by_the_depth_limit() {
    // A delegates to itself: A -> A -> A ... until max_delegation_depth (3).
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cycle.yaml");
    let text = std::fs::read_to_string(testdata("agent-delegator.yaml"))
        .unwrap()
        .replace(
            "scripted:scripted/delegator.yaml",
            &format!("scripted:{}", testdata("scripted/delegator.yaml").display()),
        );
    std::fs::write(&config, text).unwrap();
    let options =
        AgentOptions::with_env(&[("DOWNSTREAM_URL", &format!("http://127.0.0.1:{port}"))]);
    let a = Agent::start_on_port(&config, options, port).await;
    let (status, answer) = a.say_new("hello").await;
    assert_eq!(status, 201, "{answer}");
    let response = response_text(&answer);
    assert!(response.contains("delegation cycle"), "{response}");
    // The human's conversation plus three nested delegations, no more.
    let (_, listed) = a.get("/conversations").await;
    assert_eq!(listed["summary"]["total"], 4, "{listed}");
}
