//! A chain of real agents whose hops speak different A2A versions:
//! a client talks to A over v1.0 JSON-RPC; A reaches B over v0.3 (its
//! `a2a:` entry pins `protocol: v0.3`, as for a peer that speaks only
//! v0.3); B reaches C over v1.0 HTTP+JSON (`binding: http_json`). C's
//! destructive call comes back to A as a proxy approval, is decided there
//! with a v1.0 continuation, and runs once on C. Recording proxies
//! between the hops show what each hop spoke.

use asg_tests::a2a::delegator_with;
use asg_tests::recording_proxy::RecordingProxy;
use asg_tests::{Agent, AgentOptions, testdata};
use serde_json::{Value, json};

/// A v1.0 JSON-RPC call to `agent`'s `/a2a`; the result.
async fn v1_rpc(agent: &Agent, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/a2a", agent.url))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(answer.get("error").is_none(), "{method} failed: {answer}");
    answer["result"].clone()
}

fn message(text: &str, task_id: Option<&str>, data: Option<Value>) -> Value {
    let mut parts = vec![json!({"text": text})];
    if let Some(data) = data {
        parts.push(json!({"data": data, "mediaType": "application/json"}));
    }
    let mut message =
        json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": parts});
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    json!({"message": message})
}

/// The approval data part of an input-required v1.0 task.
fn approval_data(task: &Value) -> Value {
    task["status"]["message"]["parts"]
        .as_array()
        .unwrap_or_else(|| panic!("no status message: {task}"))
        .iter()
        .find_map(|part| part.get("data").cloned())
        .unwrap_or_else(|| panic!("no data part: {task}"))
}

/// What one hop carried: JSON-RPC method names and REST paths, and the
/// `A2A-Version` headers, of the A2A requests (the card fetches left out).
fn spoken(proxy: &RecordingProxy) -> (Vec<String>, Vec<String>) {
    let requests: Vec<_> = proxy
        .requests()
        .into_iter()
        .filter(|r| !r.uri.starts_with("/.well-known/"))
        .collect();
    let calls = requests
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
            match body["method"].as_str() {
                Some(method) => format!("{} {method}", r.uri),
                None => format!("{} {}", r.method, r.uri),
            }
        })
        .collect();
    let versions = requests
        .iter()
        .map(|r| {
            r.headers
                .iter()
                .find(|(name, _)| name == "a2a-version")
                .map_or("-".to_string(), |(_, v)| v.clone())
        })
        .collect();
    (calls, versions)
}

async fn chain() -> (
    Vec<tempfile::TempDir>,
    Agent,
    RecordingProxy,
    Agent,
    RecordingProxy,
    Agent,
) {
    let c = Agent::start(&testdata("e2e-chain-b.yaml"), AgentOptions::default()).await;
    let to_c = RecordingProxy::start(&c.url).await;
    let (dir_b, b) = delegator_with(&to_c.url, "    binding: http_json\n", &[]).await;
    let to_b = RecordingProxy::start(&b.url).await;
    let (dir_a, a) = delegator_with(&to_b.url, "    protocol: v0.3\n", &[]).await;
    (vec![dir_a, dir_b], a, to_b, b, to_c, c)
}

#[tokio::test]
async fn a_proxy_approval_decided_on_a_over_v1_runs_once_on_c_through_a_v03_hop() {
    let (_dirs, a, to_b, b, to_c, c) = chain().await;

    let asked = v1_rpc(
        &a,
        "SendMessage",
        message("add resource deep with value 3", None, None),
    )
    .await;
    let task = &asked["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    let data = approval_data(task);
    // A shows C's tool and exact arguments, relayed by B.
    assert_eq!(data["tool_name"], "resources_add", "{data}");
    assert_eq!(data["tool_args"], json!({"name": "deep", "value": 3}));
    assert!(
        c.resource_names().await.is_empty(),
        "ran before the approval"
    );

    let task_id = task["id"].as_str().unwrap();
    let decision = json!({"approved": true, "approval_uuid": data["approval_uuid"]});
    let done = v1_rpc(
        &a,
        "SendMessage",
        message("approved", Some(task_id), Some(decision.clone())),
    )
    .await;
    assert_eq!(
        done["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    assert_eq!(c.resource_names().await, ["deep"]);

    // A -> B spoke v0.3 JSON-RPC only; B -> C v1.0 HTTP+JSON only.
    let (calls, versions) = spoken(&to_b);
    assert_eq!(calls, ["/a2a message/send", "/a2a message/send"], "A -> B");
    assert!(
        versions.iter().all(|v| v == "-"),
        "A -> B sent A2A-Version: {versions:?}"
    );
    let (calls, versions) = spoken(&to_c);
    assert_eq!(
        calls,
        ["POST /a2a/v1/message:send", "POST /a2a/v1/message:send"],
        "B -> C"
    );
    assert!(versions.iter().all(|v| v == "1.0"), "B -> C: {versions:?}");

    // The same decision again runs nothing more: the approval is decided
    // (A takes the words as a new turn, which C does not act on).
    let again = v1_rpc(
        &a,
        "SendMessage",
        message("approved", Some(task_id), Some(decision)),
    )
    .await;
    assert_ne!(
        again["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{again}"
    );
    assert_eq!(c.resource_names().await, ["deep"], "ran twice");
    for agent in [&a, &b, &c] {
        let (_, pending) = agent.get("/approvals").await;
        assert_eq!(pending["approvals"], json!([]), "{}", agent.url);
    }
}

#[tokio::test]
async fn a_rejection_on_a_reaches_c_over_both_versions_and_nothing_runs() {
    let (_dirs, a, _to_b, _b, to_c, c) = chain().await;
    let asked = v1_rpc(
        &a,
        "SendMessage",
        message("add resource kept with value 1", None, None),
    )
    .await;
    let task = &asked["task"];
    let data = approval_data(task);
    let decision =
        json!({"approved": false, "approval_uuid": data["approval_uuid"], "reason": "not today"});
    let done = v1_rpc(
        &a,
        "SendMessage",
        message("rejected", task["id"].as_str(), Some(decision)),
    )
    .await;
    let state = done["task"]["status"]["state"].as_str().unwrap_or_default();
    assert_ne!(state, "TASK_STATE_INPUT_REQUIRED", "{done}");
    assert!(c.resource_names().await.is_empty(), "ran after a rejection");
    let (_, pending) = c.get("/approvals").await;
    assert_eq!(pending["approvals"], json!([]), "C still waits");
    // The rejection went to C as a v1.0 continuation naming C's approval.
    let last = to_c.requests().into_iter().last().unwrap();
    let body: Value = serde_json::from_str(&last.body).unwrap();
    let parts = &body["message"]["parts"];
    assert!(
        parts
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["data"]["approved"] == false),
        "{body}"
    );
}
