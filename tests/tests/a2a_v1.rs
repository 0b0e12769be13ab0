//! A2A v1.0 beside v0.3 on the real agent (`testdata/agent-resources.yaml`
//! with two API keys: alice, an approver, and bob):
//! - the official Python SDK (a2a-sdk 1.3.0) in its native v1.0 mode runs
//!   `tests/interop/a2a_sdk_v1_client.py` as alice over JSON-RPC and
//!   HTTP+JSON (send, stream, get, list, cancel, subscribe to a waiting
//!   task and, refused with UnsupportedOperationError, to a completed one,
//!   an approval and its continuation, push configs and TaskNotFoundError
//!   for one not there; a v0.3 client and a refused `A2A-Version`);
//! - without the SDK: bob tries alice's tasks (finished ones too) on every
//!   v1.0 method and route (all not found, never the terminal-state
//!   refusal; nothing decided), lists only his own, and the
//!   `A2A-Version` header is checked and answered.
//!
//! The SDK is looked up like `a2a_interop.rs` does; without it the SDK
//! test is skipped on a developer machine and fails in CI.

use asg_tests::a2a::{client_sdk_python, run_interop_script, sdk_version};
use asg_tests::fake_http::{FakeHttp, Reply};
use asg_tests::{Agent, AgentOptions, workspace_root};
use serde_json::{Value, json};
use uuid::Uuid;

const ALICE: &str = "alice-key-0123456789abcdef";
const BOB: &str = "bob-key-0123456789abcdef01";

async fn agent() -> (tempfile::TempDir, Agent) {
    let keys = "a2a_push: { allow_private_networks: true }\nauth:\n  api_keys:\n    - { name: alice, key_env: ALICE_KEY, roles: [approver] }\n    \
                - { name: bob, key_env: BOB_KEY }\n";
    let (dir, config) = asg_tests::config_with("agent-resources.yaml", keys);
    let env = [("ALICE_KEY", ALICE), ("BOB_KEY", BOB)];
    let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
    (dir, agent)
}

/// One request as `key`: status, `A2A-Version` answered, body text.
async fn send(
    agent: &Agent,
    key: &str,
    method: reqwest::Method,
    path: &str,
    version: Option<&str>,
    body: Option<Value>,
) -> (u16, String, String) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", agent.url))
        .header("x-api-key", key);
    if let Some(version) = version {
        request = request.header("a2a-version", version);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request failed");
    let status = response.status().as_u16();
    let served = response
        .headers()
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (status, served, response.text().await.unwrap_or_default())
}

/// A v1.0 JSON-RPC call as `key`; the response (from the first SSE event
/// of a stream).
async fn rpc(agent: &Agent, key: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let post = reqwest::Method::POST;
    let (status, served, text) = send(agent, key, post, "/a2a", Some("1.0"), Some(body)).await;
    assert_eq!((status, served.as_str()), (200, "1.0"), "{method}: {text}");
    let data = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text);
    serde_json::from_str(data.trim()).unwrap_or_else(|e| panic!("{method}: {e}: {text}"))
}

fn message(parts: Value, task: Option<&str>) -> Value {
    let mut message =
        json!({"messageId": Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": parts});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({"message": message})
}

/// Alice's completed task and her task waiting for approval (its uuid).
async fn alices_tasks(agent: &Agent) -> (String, String, String) {
    let text = |t: &str| message(json!([{"text": t}]), None);
    let done = rpc(agent, ALICE, "SendMessage", text("list all resources")).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let add = text("add resource alice-item with value 1");
    let waiting = rpc(agent, ALICE, "SendMessage", add).await;
    let task = &waiting["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{waiting}"
    );
    let uuid = &task["status"]["message"]["parts"][1]["data"]["approval_uuid"];
    let id = |t: &Value| t["id"].as_str().unwrap().to_string();
    (
        id(&done["result"]["task"]),
        id(task),
        uuid.as_str().unwrap().to_string(),
    )
}

/// Bob's JSON-RPC attempts on one of alice's tasks, each -32001.
async fn bob_tries_rpc(agent: &Agent, id: &str, uuid: &str) {
    let decision = json!([{"data": {"approved": true, "approval_uuid": uuid}}]);
    let config = json!({"taskId": id, "id": "cfg", "url": "https://example.com/hook"});
    let attempts = [
        ("GetTask", json!({"id": id})),
        ("CancelTask", json!({"id": id})),
        ("SubscribeToTask", json!({"id": id})),
        ("SendMessage", message(decision.clone(), Some(id))),
        ("SendStreamingMessage", message(decision, Some(id))),
        ("CreateTaskPushNotificationConfig", config),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "cfg"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "cfg"}),
        ),
    ];
    for (method, params) in attempts {
        let answer = rpc(agent, BOB, method, params).await;
        assert_eq!(
            answer["error"]["code"], -32001,
            "bob {method} {id}: {answer}"
        );
    }
}

/// Bob's HTTP+JSON attempts on one of alice's tasks, each 404.
async fn bob_tries_rest(agent: &Agent, id: &str, uuid: &str) {
    use reqwest::Method;
    let decision = message(
        json!([{"data": {"approved": true, "approval_uuid": uuid}}]),
        Some(id),
    );
    let configs = format!("/a2a/v1/tasks/{id}/pushNotificationConfigs");
    let hook = json!({"id": "cfg", "url": "https://example.com/hook"});
    let attempts = [
        (Method::GET, format!("/a2a/v1/tasks/{id}"), None),
        (Method::POST, format!("/a2a/v1/tasks/{id}:cancel"), None),
        (Method::POST, format!("/a2a/v1/tasks/{id}:subscribe"), None),
        (Method::GET, format!("/a2a/v1/tasks/{id}:subscribe"), None),
        (
            Method::POST,
            "/a2a/v1/message:send".into(),
            Some(decision.clone()),
        ),
        (
            Method::POST,
            "/a2a/v1/message:stream".into(),
            Some(decision),
        ),
        (Method::GET, configs.clone(), None),
        (Method::POST, configs.clone(), Some(hook)),
        (Method::GET, format!("{configs}/cfg"), None),
        (Method::DELETE, format!("{configs}/cfg"), None),
    ];
    for (method, path, body) in attempts {
        let (status, served, text) = send(agent, BOB, method.clone(), &path, None, body).await;
        assert_eq!(
            (status, served.as_str()),
            (404, "1.0"),
            "bob {method} {path}: {text}"
        );
        let problem: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(problem["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    }
}

/// The task ids in a `ListTasks` result.
fn listed(answer: &Value) -> Vec<String> {
    answer["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no tasks in {answer}"))
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn another_principal_finds_none_of_alices_tasks_on_any_v1_method() {
    let (_dir, agent) = agent().await;
    let (done, waiting, uuid) = alices_tasks(&agent).await;
    for id in [&done, &waiting] {
        bob_tries_rpc(&agent, id, &uuid).await;
        bob_tries_rest(&agent, id, &uuid).await;
    }
    let still = rpc(&agent, ALICE, "GetTask", json!({"id": waiting})).await;
    assert_eq!(
        still["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{still}"
    );
    let bobs = rpc(&agent, BOB, "ListTasks", json!({})).await;
    assert_eq!(bobs["result"]["tasks"], json!([]), "{bobs}");
    assert_eq!(bobs["result"]["totalSize"], 0);
    let own = rpc(
        &agent,
        BOB,
        "SendMessage",
        message(json!([{"text": "hello"}]), None),
    )
    .await;
    let own = own["result"]["task"]["id"].as_str().unwrap().to_string();
    let bobs = rpc(&agent, BOB, "ListTasks", json!({})).await;
    assert_eq!(listed(&bobs["result"]), vec![own.clone()]);
    let get = reqwest::Method::GET;
    let (status, _, text) = send(&agent, BOB, get.clone(), "/a2a/v1/tasks", None, None).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(listed(&serde_json::from_str(&text).unwrap()), vec![own]);
    let (_, _, text) = send(&agent, ALICE, get, "/a2a/v1/tasks?pageSize=100", None, None).await;
    let mut alices = listed(&serde_json::from_str(&text).unwrap());
    alices.sort();
    let mut expected = vec![done, waiting];
    expected.sort();
    assert_eq!(alices, expected, "alice lists only hers");
}

#[tokio::test]
async fn the_version_header_picks_nothing_unsupported() {
    let (_dir, agent) = agent().await;
    let post = reqwest::Method::POST;
    let v1 = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let (status, _, text) = send(
        &agent,
        ALICE,
        post.clone(),
        "/a2a",
        Some("9.9"),
        Some(v1.clone()),
    )
    .await;
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["error"]["code"], -32009, "{answer}");
    let path = "/a2a/v1/tasks";
    let (status, _, text) =
        send(&agent, ALICE, reqwest::Method::GET, path, Some("9.9"), None).await;
    assert_eq!(status, 400);
    let problem: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        problem["error"]["details"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );
    let (_, served, _) = send(&agent, ALICE, post.clone(), "/a2a", None, Some(v1)).await;
    assert_eq!(served, "1.0");
    let v03 = json!({"jsonrpc": "2.0", "id": 2, "method": "message/send", "params": {"message":
        {"kind": "message", "role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "list all resources"}]}}});
    let (status, served, text) = send(&agent, ALICE, post, "/a2a", Some("0.3"), Some(v03)).await;
    assert_eq!((status, served.as_str()), (200, "0.3"));
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["result"]["status"]["state"], "completed", "{answer}");
}

#[tokio::test]
async fn the_official_python_sdk_speaks_v1_to_the_agent() {
    let version = match sdk_version().await {
        Ok(version) => version,
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!(
                "SKIPPED a2a_v1: the A2A Python SDK is not installed ({why}); run scripts/test.sh"
            );
            return;
        }
        Err(why) => panic!("CI must run the A2A v1 SDK test, but the SDK is missing: {why}"),
    };
    eprintln!("a2a-sdk {version}");
    let (_dir, agent) = agent().await;
    let hook = FakeHttp::start(vec![Reply::status(200, "{}")]).await;
    let hook_url = format!("{}/v1-hook", hook.url);
    let args = [agent.url.as_str(), ALICE, hook_url.as_str()];
    let script = "a2a_sdk_v1_client.py";
    let output = run_interop_script(&client_sdk_python(), script, &args, 180).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("interop v1 OK"),
        "the A2A v1 SDK script failed ({}):\n{stdout}\n{stderr}\nagent log:\n{}",
        output.status,
        agent.log()
    );
    // Bob finds none of the tasks the SDK made, on any binding.
    let tasks: Vec<&str> = stdout
        .lines()
        .find_map(|line| line.strip_prefix("TASKS "))
        .map(|ids| ids.split_whitespace().collect())
        .unwrap_or_default();
    assert!(tasks.len() > 10, "{stdout}");
    for id in tasks.iter().step_by(5) {
        let got = rpc(&agent, BOB, "GetTask", json!({"id": id})).await;
        assert_eq!(got["error"]["code"], -32001, "{got}");
    }
    let bobs = rpc(&agent, BOB, "ListTasks", json!({})).await;
    assert_eq!(bobs["result"]["tasks"], json!([]), "{bobs}");
}

/// The `CARD` line `tests/interop/a2a_sdk_card_check.py` prints with the
/// Python at `python`: what that SDK read of the agent's card.
async fn card_as_read_by(python: &std::path::Path, agent: &Agent) -> Value {
    let output = run_interop_script(python, "a2a_sdk_card_check.py", &[&agent.url], 60).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stdout.lines().find_map(|line| line.strip_prefix("CARD "));
    match (output.status.success(), line) {
        (true, Some(line)) => serde_json::from_str(line).unwrap(),
        _ => panic!(
            "{} could not read the card ({}):\n{stdout}\n{stderr}",
            python.display(),
            output.status
        ),
    }
}

/// What both SDKs must read of the card of an agent with `auth` (the
/// v1.0 SDK: scheme → its one-of member; the v0.3 SDK: scheme → its
/// pydantic class).
struct Expected {
    auth: &'static str,
    v1_schemes: Value,
    v03_schemes: Value,
    requirements: Value,
}

fn card_cases() -> [Expected; 3] {
    let key_doc = "A static key; also accepted as Authorization: Bearer.";
    let token_doc = "An access token from the OpenID Connect provider below.";
    let discovery = "http://127.0.0.1:9/.well-known/openid-configuration";
    [
        Expected {
            auth: "",
            v1_schemes: json!({}),
            v03_schemes: json!({}),
            requirements: json!([]),
        },
        Expected {
            auth: "auth:\n  api_keys:\n    - { name: alice, key_env: ALICE_KEY }\n",
            v1_schemes: json!({"apiKey": {"apiKeySecurityScheme":
                {"description": key_doc, "location": "header", "name": "X-API-Key"}}}),
            v03_schemes: json!({"apiKey": {"APIKeySecurityScheme":
                {"description": key_doc, "in": "header", "name": "X-API-Key", "type": "apiKey"}}}),
            requirements: json!([["apiKey"]]),
        },
        Expected {
            auth: "auth:\n  oidc: { issuer: \"http://127.0.0.1:9/\", audience: agent-stop-and-go }\n",
            v1_schemes: json!({
                "bearer": {"httpAuthSecurityScheme":
                    {"description": token_doc, "scheme": "Bearer", "bearerFormat": "JWT"}},
                "oidc": {"openIdConnectSecurityScheme": {"openIdConnectUrl": discovery}}}),
            v03_schemes: json!({
                "bearer": {"HTTPAuthSecurityScheme": {"description": token_doc,
                    "scheme": "Bearer", "bearerFormat": "JWT", "type": "http"}},
                "oidc": {"OpenIdConnectSecurityScheme":
                    {"openIdConnectUrl": discovery, "type": "openIdConnect"}}}),
            requirements: json!([["bearer"]]),
        },
    ]
}

/// The card of an agent with no auth, with API keys and with OpenID
/// Connect, as the official Python SDK reads it in both versions: the
/// v1.0 card (`A2A-Version: 1.0`) parses strictly into a2a-sdk 1.3.0's
/// `AgentCard` protobuf (no unknown field, every REQUIRED field), and the
/// card for both versions gives each SDK's client the same schemes and
/// requirements in its own form, and its own interfaces.
#[tokio::test]
async fn both_sdk_versions_read_the_card_and_the_v1_card_is_strictly_v1() {
    let pythons = [
        client_sdk_python(),
        workspace_root().join("target/a2a-sdk-v03/bin/python"),
    ];
    for python in &pythons {
        let probe = std::process::Command::new(python)
            .args(["-c", "import a2a.client"])
            .output();
        if !probe.is_ok_and(|p| p.status.success()) {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run the card check, but {} has no a2a-sdk",
                python.display()
            );
            eprintln!(
                "SKIPPED: no a2a-sdk at {}; run scripts/test.sh",
                python.display()
            );
            return;
        }
    }
    for case in card_cases() {
        let (_dir, config) = asg_tests::config_with("agent-resources.yaml", case.auth);
        let env = [("ALICE_KEY", ALICE)];
        let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
        let rpc_url = format!("{}/a2a", agent.url);
        let v1 = card_as_read_by(&pythons[0], &agent).await;
        assert!(v1["sdk"].as_str().unwrap().starts_with("1."), "{v1}");
        assert_eq!(v1["strict"], "ok", "{v1}");
        assert_eq!(v1["schemes"], case.v1_schemes, "{}", case.auth);
        assert_eq!(v1["requirements"], case.requirements, "{}", case.auth);
        assert_eq!(
            v1["interfaces"],
            json!([
                [rpc_url, "JSONRPC", "1.0"],
                [format!("{rpc_url}/v1"), "HTTP+JSON", "1.0"],
                [rpc_url, "JSONRPC", "0.3.0"]
            ])
        );
        let v03 = card_as_read_by(&pythons[1], &agent).await;
        assert!(v03["sdk"].as_str().unwrap().starts_with("0.3"), "{v03}");
        assert_eq!(v03["schemes"], case.v03_schemes, "{}", case.auth);
        assert_eq!(v03["requirements"], case.requirements, "{}", case.auth);
        assert_eq!(v03["interfaces"], json!([[rpc_url, "JSONRPC", "0.3.0"]]));
    }
}
