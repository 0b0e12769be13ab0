//! The approval gate across agents and crashes, end to end with real
//! processes: proxy approvals that name the sub-agent's approval (and a
//! decision that is not applied to a different one), cancellation
//! forwarded to the sub-agent, a timed-out forward reconciled with
//! `tasks/get` without a second send, card endpoints kept on the
//! configured origin (the Bearer goes nowhere else), and a turn
//! interrupted by `kill -9` or by a client that hangs up.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use asg_shared::PendingApproval;
use asg_shared::rest::ApprovalList;
use asg_tests::a2a::rpc;
use asg_tests::fake_http::Recorded;
use asg_tests::{
    Agent, AgentOptions, approval_uuid, conversation_id, mcp_children_for, poll, response_text,
    testdata, tool_messages, typed,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

async fn resource_agent(options: AgentOptions) -> Agent {
    Agent::start(&testdata("e2e-chain-b.yaml"), options).await
}

async fn delegator_to(config: &str, url: &str) -> Agent {
    Agent::start(
        &testdata(config),
        AgentOptions::with_env(&[("DOWNSTREAM_URL", url)]),
    )
    .await
}

/// The pending approvals listed by `GET /approvals`.
async fn approvals(agent: &Agent) -> Vec<PendingApproval> {
    let (status, body) = agent.get("/approvals").await;
    assert_eq!(status, 200, "{body}");
    typed::<ApprovalList>("GET /approvals", &body).approvals
}

/// Tool results in a conversation that answer `name`.
fn results_of(conversation: &Value, name: &str) -> Vec<Value> {
    tool_messages(conversation)
        .into_iter()
        .filter(|m| m["tool_result"]["name"] == name)
        .collect()
}

/// The last message of a conversation.
fn last_message(conversation: &Value) -> Value {
    conversation["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_else(|| panic!("no messages in {conversation}"))
}

#[tokio::test]
async fn a_decision_is_not_applied_to_another_approval_of_the_sub_agent() {
    let b = resource_agent(AgentOptions::default()).await;
    let a = delegator_to("agent-delegator.yaml", &b.url).await;
    let (status, answer) = a.say_new("add resource first-1 with value 1").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let p_uuid = approval_uuid(&answer);
    let a_id = conversation_id(&answer);

    // A lists the proxy approval with what it stands for on B.
    let listed = approvals(&a).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let p = &listed[0];
    assert_eq!(p.uuid.to_string(), p_uuid);
    assert_eq!(p.remote_agent_name.as_deref(), Some("downstream"));
    assert_eq!(
        Value::Object(p.tool_args.clone()),
        json!({"name": "first-1", "value": 1})
    );
    let task = p.remote_task_id.clone().expect("remote_task_id");
    let x = p
        .remote_approval_uuid
        .clone()
        .unwrap_or_else(|| panic!("no remote_approval_uuid in {p:?}"));
    let b_pending = approvals(&b).await;
    assert_eq!(b_pending.len(), 1, "{b_pending:?}");
    assert_eq!(
        b_pending[0].uuid.to_string(),
        x,
        "P does not name B's approval"
    );
    assert_eq!(b_pending[0].conversation_id.to_string(), task);

    // Behind A's back: X is approved on B, and B's task asks for Y.
    let (status, approved) = b.decide(&x, json!({"approved": true})).await;
    assert_eq!(status, 200, "{approved}");
    assert!(response_text(&approved).contains("first-1"), "{approved}");
    let (status, again) = b.say(&task, "add resource second-2 with value 2").await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["result"]["waiting_approval"], true, "{again}");
    let y = approval_uuid(&again);
    assert_ne!(x, y);

    // The human approves P (first-1) on A: it must not approve Y (second-2).
    let (status, decided) = a.decide(&p_uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(
        decided["result"]["waiting_approval"], true,
        "A does not wait for the new approval: {decided}"
    );
    let q = &decided["result"]["approval"];
    let q_uuid = q["uuid"].as_str().expect("new approval uuid").to_string();
    assert_ne!(q_uuid, p_uuid, "the old proxy approval was reused");
    assert_eq!(q["tool_name"], "resources_add");
    assert_eq!(q["tool_args"], json!({"name": "second-2", "value": 2}));
    assert_eq!(q["remote_approval_uuid"], y.as_str());
    assert_eq!(q["remote_task_id"], task.as_str());
    assert_eq!(q["remote_agent_name"], "downstream");
    assert_eq!(a.conversation(&a_id).await["status"], "waiting_approval");
    let listed = approvals(&a).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].uuid.to_string(), q_uuid);

    // B still waits for Y, untouched.
    let b_view = b.conversation(&task).await;
    assert_eq!(b_view["status"], "waiting_approval", "{b_view}");
    assert_eq!(b_view["pending_approval"]["uuid"], y.as_str());
    assert_eq!(b_view["pending_approval"]["state"], "pending");
    assert_eq!(
        results_of(&b_view, "resources_add").len(),
        1,
        "B ran another add: {b_view}"
    );
    assert_eq!(b.resource_names().await, ["first-1"]);

    // The new proxy approval works: approving Q creates second-2.
    let (status, done) = a.decide(&q_uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["result"]["waiting_approval"], false, "{done}");
    assert!(response_text(&done).contains("second-2"), "{done}");
    assert_eq!(b.resource_names().await, ["first-1", "second-2"]);
}

#[tokio::test]
async fn cancelling_a_task_on_a_rejects_the_sub_agents_approval() {
    let b = resource_agent(AgentOptions::default()).await;
    let a = delegator_to("agent-delegator.yaml", &b.url).await;
    let (_, answer) = a.say_new("add resource cancel-me with value 4").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let id = conversation_id(&answer);
    let task = answer["result"]["approval"]["remote_task_id"]
        .as_str()
        .expect("remote_task_id")
        .to_string();
    assert_eq!(b.conversation(&task).await["status"], "waiting_approval");

    let reply = rpc(&a, "tasks/cancel", json!({"id": id})).await;
    assert!(reply["error"].is_null(), "{reply}");
    assert_eq!(reply["result"]["status"]["state"], "canceled", "{reply}");
    assert_eq!(a.conversation(&id).await["status"], "canceled");
    let got = rpc(&a, "tasks/get", json!({"id": id})).await;
    assert_eq!(got["result"]["status"]["state"], "canceled", "{got}");
    // In A's metrics: a cancellation through A2A.
    let metrics = a.metrics().await;
    assert!(
        metrics.contains(r#"asg_approvals_decided_total{outcome="canceled",channel="#),
        "{metrics}"
    );

    // B does not wait any more, and nothing ran there.
    let b_view = b.conversation(&task).await;
    assert_ne!(b_view["status"], "waiting_approval", "{b_view}");
    assert!(b_view["pending_approval"].is_null(), "{b_view}");
    let added = results_of(&b_view, "resources_add");
    assert_eq!(added.len(), 1, "{b_view}");
    assert_eq!(added[0]["is_error"], true, "{b_view}");
    assert!(
        added[0]["content"]
            .as_str()
            .unwrap_or("")
            .starts_with("Rejected by the user"),
        "{b_view}"
    );
    assert_eq!(approvals(&b).await, Vec::new());
    assert_eq!(approvals(&a).await, Vec::new());
    assert!(b.resource_names().await.is_empty());
}

/// A's sub-agent timeout is 1 s; B's tool takes `delay_ms`. Approves the
/// proxy approval on A (whose forward times out), checks that B ran the
/// call exactly once, then that A recorded B's result.
async fn approve_a_slow_call(delay_ms: &str, name: &str) {
    let b = resource_agent(AgentOptions::with_env(&[(
        "MCP_RESOURCES_DELAY_MS",
        delay_ms,
    )]))
    .await;
    let a = delegator_to("gate-delegator-1s.yaml", &b.url).await;
    let (_, answer) = a
        .say_new(&format!("add resource {name} with value 9"))
        .await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let uuid = approval_uuid(&answer);
    let id = conversation_id(&answer);
    let task = answer["result"]["approval"]["remote_task_id"]
        .as_str()
        .expect("remote_task_id")
        .to_string();

    let (status, decided) = a.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{decided}");
    // The forward did time out (else this test proves nothing).
    a.wait_log("reconciling with tasks/get").await;

    // Once on B: one execution, one add result, one resource.
    let b_view = poll("B to finish the call", Duration::from_secs(10), || async {
        let view = b.conversation(&task).await;
        let done = view["status"] == "active" && view["turn_in_progress"] != true;
        done.then_some(view)
    })
    .await;
    let added = results_of(&b_view, "resources_add");
    assert_eq!(added.len(), 1, "{b_view}");
    assert_ne!(added[0]["is_error"], true, "{b_view}");
    let executions = b.log().matches("approved; executing").count();
    assert_eq!(
        executions,
        1,
        "the decision was applied twice; B log:\n{}",
        b.log()
    );
    assert_eq!(b.resource_names().await, [name]);

    // A ends with B's result, not with "unknown".
    let a_view = a.conversation(&id).await;
    assert_eq!(a_view["status"], "active", "{a_view}");
    let results = results_of(&a_view, "downstream");
    assert_eq!(results.len(), 1, "{a_view}");
    let content = results[0]["content"].as_str().unwrap_or("");
    assert_ne!(
        results[0]["is_error"], true,
        "A did not record B's result: {content}"
    );
    assert!(
        content.contains("Created the resource") && content.contains(name),
        "{content}"
    );
    let response = response_text(&decided);
    assert!(
        response.starts_with("Downstream answered: Created the resource"),
        "{response}"
    );
}

#[tokio::test]
async fn a_timed_out_forward_is_reconciled_and_not_sent_twice() {
    // B finishes within the reconcile window (timeout + 1 s of polling).
    approve_a_slow_call("1400", "slow-1").await;
}

#[tokio::test]
async fn a_timed_out_forward_waits_for_a_sub_agent_that_works_longer() {
    // B works 3 s: longer than A's timeout and its reconcile window.
    approve_a_slow_call("3000", "slow-3").await;
}

/// A recording HTTP server for the card test: serves `card` (if any) at
/// `/.well-known/agent-card.json`, answers every POST with a completed
/// task whose answer is `answer`.
#[derive(Clone)]
struct Peer {
    url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    card: Arc<Mutex<Option<Value>>>,
    answer: &'static str,
}

impl Peer {
    async fn start(answer: &'static str) -> Peer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind peer");
        let peer = Peer {
            url: format!("http://{}", listener.local_addr().expect("peer address")),
            requests: Arc::default(),
            card: Arc::default(),
            answer,
        };
        let app = Router::new().fallback(peer_handle).with_state(peer.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        peer
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

async fn peer_handle(
    State(peer): State<Peer>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = String::from_utf8_lossy(&body).into_owned();
    if let Ok(mut requests) = peer.requests.lock() {
        requests.push(Recorded::new(
            &method,
            uri.to_string(),
            &headers,
            body.as_bytes(),
        ));
    }
    if method == Method::GET {
        let card = peer.card.lock().ok().and_then(|c| c.clone());
        return match (uri.path(), card) {
            ("/.well-known/agent-card.json", Some(card)) => axum::Json(card).into_response(),
            _ => (StatusCode::NOT_FOUND, "no such page").into_response(),
        };
    }
    let id = serde_json::from_str::<Value>(&body)
        .ok()
        .map(|v| v["id"].clone())
        .unwrap_or(Value::Null);
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": {
        "kind": "task", "id": "t-1", "contextId": "c-1",
        "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": peer.answer}]}]
    }}))
    .into_response()
}

#[tokio::test]
async fn a_card_naming_another_origin_gets_no_token() {
    let other = Peer::start("from the other origin").await;
    let configured = Peer::start("from the configured origin").await;
    let card = json!({
        "name": "elsewhere", "description": "points somewhere else",
        "url": format!("{}/a2a", other.url),
        "version": "1", "protocolVersion": "0.3.0",
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "echo", "tags": []}]
    });
    *configured.card.lock().unwrap() = Some(card);
    let a = delegator_to("agent-delegator.yaml", &configured.url).await;

    let (status, answer) = a
        .post_with(
            "/conversations",
            json!({"message": "hello there"}).to_string(),
            &[("Authorization", "Bearer secret-token")],
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        response_text(&answer),
        "Downstream answered: from the configured origin"
    );

    assert!(
        other.requests().is_empty(),
        "the other origin was contacted: {:?}",
        other.requests()
    );
    let received = configured.requests();
    assert!(
        received
            .iter()
            .any(|r| r.method == "GET" && r.uri == "/.well-known/agent-card.json"),
        "{received:?}"
    );
    let posts: Vec<&Recorded> = received.iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts.len(), 1, "{received:?}");
    assert_eq!(posts[0].uri, "/a2a");
    let bearer = posts[0]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.as_str());
    assert_eq!(bearer, Some("Bearer secret-token"));
    let body: Value = serde_json::from_str(&posts[0].body).unwrap();
    assert_eq!(body["method"], "message/send");
    let log = a.wait_log("another origin").await;
    assert!(!log.contains("secret-token"), "the token reached the log");
}

#[tokio::test]
async fn a_crash_during_an_approved_call_is_recorded_not_rerun() {
    let data = tempfile::tempdir().unwrap();
    let options = AgentOptions {
        data_dir: Some(data.path().to_path_buf()),
        ..AgentOptions::with_env(&[("MCP_RESOURCES_DELAY_MS", "3000")])
    };
    let config = testdata("agent-resources.yaml");
    let mut agent = Agent::start(&config, options.clone()).await;
    let (_, answer) = agent.say_new("add resource crash-1 with value 5").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let id = conversation_id(&answer);
    let uuid = approval_uuid(&answer);

    let (http, url) = (
        agent.http.clone(),
        format!("{}/approvals/{uuid}", agent.url),
    );
    let decision =
        tokio::spawn(async move { http.post(url).json(&json!({"approved": true})).send().await });
    poll(
        "the approval to be executing",
        Duration::from_secs(5),
        || async {
            let view = agent.conversation(&id).await;
            (view["pending_approval"]["state"] == "executing").then_some(())
        },
    )
    .await;
    let tool_servers = mcp_children_for(data.path());
    agent.kill();
    assert!(
        decision.await.unwrap().is_err(),
        "the decision answered although the agent was killed mid-call"
    );
    // The old tool server may finish its call; wait until it is gone so
    // the count below is final.
    poll(
        "the old tool server to exit",
        Duration::from_secs(10),
        || {
            let live = mcp_children_for(data.path());
            let gone = tool_servers.iter().all(|pid| !live.contains(pid));
            async move { gone.then_some(()) }
        },
    )
    .await;

    let agent = Agent::start(&config, options).await;
    let view = agent.conversation(&id).await;
    assert_ne!(view["status"], "waiting_approval", "{view}");
    assert!(view["pending_approval"].is_null(), "{view}");
    let added = results_of(&view, "resources_add");
    assert_eq!(added.len(), 1, "{view}");
    assert!(
        added[0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("may have run"),
        "{view}"
    );
    let last = last_message(&view);
    assert_eq!(last["role"], "assistant", "{view}");
    assert_eq!(last["is_error"], true, "{view}");
    assert!(
        last["content"]
            .as_str()
            .unwrap_or("")
            .starts_with("Interrupted"),
        "{view}"
    );
    let task = rpc(&agent, "tasks/get", json!({"id": id})).await;
    assert_eq!(task["result"]["status"]["state"], "failed", "{task}");
    let status_text = task["result"]["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(status_text.starts_with("Interrupted"), "{task}");
    assert!(
        !agent.log().contains("approved; executing"),
        "the call was run again:\n{}",
        agent.log()
    );

    let (status, next) = agent.say(&id, "list resources").await;
    assert_eq!(status, 200, "{next}");
    let resources = agent.list_resources().await;
    assert!(resources.len() <= 1, "the add ran twice: {resources:?}");
}

#[tokio::test]
async fn a_client_hanging_up_does_not_stop_an_approved_call() {
    let agent = Agent::start(
        &testdata("agent-resources.yaml"),
        AgentOptions::with_env(&[("MCP_RESOURCES_DELAY_MS", "2000")]),
    )
    .await;
    let (_, answer) = agent.say_new("add resource hangup-1 with value 6").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let id = conversation_id(&answer);
    let uuid = approval_uuid(&answer);

    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let sent = impatient
        .post(format!("{}/approvals/{uuid}", agent.url))
        .json(&json!({"approved": true}))
        .send()
        .await;
    assert!(sent.is_err(), "the decision answered within 500 ms");

    let view = poll("the turn to finish", Duration::from_secs(10), || async {
        let view = agent.conversation(&id).await;
        let done = view["status"] == "active" && view["turn_in_progress"] != true;
        done.then_some(view)
    })
    .await;
    assert!(view["pending_approval"].is_null(), "{view}");
    let added = results_of(&view, "resources_add");
    assert_eq!(added.len(), 1, "{view}");
    assert_ne!(added[0]["is_error"], true, "{view}");
    assert!(
        added[0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("hangup-1"),
        "{view}"
    );
    let last = last_message(&view);
    assert_eq!(last["role"], "assistant", "{view}");
    assert!(
        last["content"]
            .as_str()
            .unwrap_or("")
            .starts_with("Created the resource"),
        "{view}"
    );

    let (status, next) = agent.say(&id, "list resources").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(agent.resource_names().await, ["hangup-1"]);
}

#[tokio::test]
async fn at_startup_a_proxy_approval_follows_what_happened_on_the_sub_agent() {
    let b = resource_agent(AgentOptions::default()).await;
    let mut a = delegator_to("agent-delegator.yaml", &b.url).await;
    // Two proxy approvals on A; A stops.
    let (_, first) = a.say_new("add resource settled-1 with value 1").await;
    let (_, second) = a.say_new("add resource changed-1 with value 2").await;
    let (settled_id, changed_id) = (conversation_id(&first), conversation_id(&second));
    let old_changed = approval_uuid(&second);
    let listed = approvals(&a).await;
    // The approval of conversation `id` on A.
    let on_a = |id: &str| {
        listed
            .iter()
            .find(|p| p.conversation_id.to_string() == id)
            .unwrap_or_else(|| panic!("no approval for {id} in {listed:?}"))
    };
    let remote = |value: &Option<String>| value.clone().expect("remote id");
    let (x1, task2) = (
        remote(&on_a(&settled_id).remote_approval_uuid),
        remote(&on_a(&changed_id).remote_task_id),
    );
    let x2 = remote(&on_a(&changed_id).remote_approval_uuid);
    let data_dir = a.data_dir.clone();
    a.stop();

    // Meanwhile on B: the first is approved directly; the second is
    // rejected there and its task asks for something else.
    assert_eq!(b.decide(&x1, json!({"approved": true})).await.0, 200);
    assert_eq!(b.decide(&x2, json!({"approved": false})).await.0, 200);
    let (status, again) = b.say(&task2, "add resource other-2 with value 3").await;
    assert_eq!(status, 200, "{again}");
    let y = approval_uuid(&again);

    let a = Agent::start(
        &testdata("agent-delegator.yaml"),
        AgentOptions {
            data_dir: Some(data_dir),
            ..AgentOptions::with_env(&[("DOWNSTREAM_URL", &b.url)])
        },
    )
    .await;
    // The settled one is closed with B's result, nothing run again.
    let settled = poll(
        "the settled proxy approval",
        Duration::from_secs(15),
        || async {
            let c = a.conversation(&settled_id).await;
            (c["status"] == "active").then_some(c)
        },
    )
    .await;
    let text = settled.to_string();
    assert!(text.contains("Decided on downstream directly"), "{text}");
    // The changed one now stands for B's new approval, under a new uuid.
    let changed = poll(
        "the replaced proxy approval",
        Duration::from_secs(15),
        || async {
            let c = a.conversation(&changed_id).await;
            (c["pending_approval"]["remote_approval_uuid"] == y.as_str()).then_some(c)
        },
    )
    .await;
    let pending = &changed["pending_approval"];
    assert_ne!(pending["uuid"], old_changed.as_str());
    assert_eq!(pending["tool_args"], json!({"name": "other-2", "value": 3}));
    let (status, _) = a.decide(&old_changed, json!({"approved": true})).await;
    assert_eq!(status, 409, "the old approval no longer decides anything");
    assert_eq!(b.resource_names().await, ["settled-1"]);
}
