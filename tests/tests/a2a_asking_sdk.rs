//! The SDK-built asking sub-agents (`asg_tests::a2a::AskingAgent`: one on
//! `@a2a-js/sdk`, one on the Python `a2a-sdk`) honour their contract, driven
//! over raw HTTP in A2A v1.0 (`A2A-Version: 1.0`) on each binding they
//! serve: a new message asks for approval with the data part; a wrong or
//! missing uuid executes nothing and keeps asking; the matching uuid
//! executes once; a rejection executes nothing; `GetTask` follows; the
//! bearer of every request is logged. Our A2A client's interop tests
//! build on these agents, so a broken agent must fail here first.
//!
//! Without the SDK (no `npm ci` in tests/interop-js, no venv) the tests
//! skip on a developer machine and fail in CI.

use asg_tests::a2a::{AskingAgent, Binding, js_sdk_version, sdk_present, sdk_version};
use serde_json::{Value, json};

/// One v1.0 binding of a running asking agent, spoken over raw HTTP.
struct Door<'a> {
    agent: &'a AskingAgent,
    rest: bool,
    bearer: String,
}

impl Door<'_> {
    fn request(&self, method: reqwest::Method, url: String) -> reqwest::RequestBuilder {
        reqwest::Client::new()
            .request(method, url)
            .header("a2a-version", "1.0")
            .header("authorization", format!("Bearer {}", self.bearer))
    }

    /// A JSON-RPC call; its `result` (panics on an error answer).
    async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let post = self.request(reqwest::Method::POST, self.agent.jsonrpc_url());
        let answer: Value = post.json(&body).send().await.unwrap().json().await.unwrap();
        assert!(answer["error"].is_null(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// An HTTP+JSON call; the body (panics unless 200).
    async fn rest(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.request(method, format!("{}{path}", self.agent.rest_url()));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(status, 200, "{path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// SendMessage with `parts` (continuing `task` when given): the task.
    async fn send(&self, parts: Value, task: Option<&str>) -> Value {
        let mut message = json!({"messageId": uuid::Uuid::new_v4().to_string(),
            "role": "ROLE_USER", "parts": parts});
        if let Some(task) = task {
            message["taskId"] = json!(task);
        }
        let params = json!({ "message": message });
        let answer = if self.rest {
            let post = reqwest::Method::POST;
            self.rest(post, "/message:send", Some(params)).await
        } else {
            self.rpc("SendMessage", params).await
        };
        assert!(answer["task"].is_object(), "not a task: {answer}");
        answer["task"].clone()
    }

    /// GetTask: the task now.
    async fn get(&self, id: &str) -> Value {
        if self.rest {
            let path = format!("/tasks/{id}");
            self.rest(reqwest::Method::GET, &path, None).await
        } else {
            self.rpc("GetTask", json!({ "id": id })).await
        }
    }
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

fn artifact_text(task: &Value) -> &str {
    task["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// The approval a task asks for (checked against the contract for `path`):
/// its uuid.
fn asked_uuid(task: &Value, path: &str) -> String {
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    let parts = &task["status"]["message"]["parts"];
    assert_eq!(
        parts[0]["text"],
        format!("Approve delete_file for {path}?"),
        "{task}"
    );
    let data = &parts[1]["data"];
    let uuid = data["approval_uuid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        uuid::Uuid::parse_str(&uuid).is_ok(),
        "approval_uuid: {data}"
    );
    let expected = json!({"approval_uuid": uuid, "tool_name": "delete_file",
        "tool_args": {"path": path}, "description": format!("delete {path}")});
    assert_eq!(data, &expected, "{task}");
    uuid
}

/// The whole contract on one binding; `done` is what earlier calls
/// executed already.
async fn contract(door: &Door<'_>, done: &mut Vec<String>) {
    let agent = door.agent;
    let path = format!("/srv/{}/a.txt", door.bearer);
    let task = door.send(json!([{"text": path}]), None).await;
    let id = task["id"].as_str().unwrap().to_string();
    let uuid = asked_uuid(&task, &path);
    let wrong = json!([{"data": {"approved": true, "approval_uuid": uuid::Uuid::new_v4()}}]);
    let again = door.send(wrong, Some(&id)).await;
    assert_eq!(asked_uuid(&again, &path), uuid, "the uuid changed");
    let bare = door
        .send(json!([{"data": {"approved": true}}]), Some(&id))
        .await;
    assert_eq!(asked_uuid(&bare, &path), uuid);
    assert_eq!(state(&door.get(&id).await), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(agent.executions(), *done, "executed without the uuid");

    let decision = json!([{"data": {"approved": true, "approval_uuid": uuid}}]);
    let finished = door.send(decision, Some(&id)).await;
    assert_eq!(state(&finished), "TASK_STATE_COMPLETED", "{finished}");
    assert_eq!(artifact_text(&finished), format!("deleted {path}"));
    done.push(format!("executed delete_file {path}"));
    assert_eq!(agent.executions(), *done);
    let now = door.get(&id).await;
    assert_eq!(
        (state(&now), artifact_text(&now)),
        ("TASK_STATE_COMPLETED", format!("deleted {path}").as_str())
    );

    let kept = format!("/srv/{}/b.txt", door.bearer);
    let task = door.send(json!([{"text": kept}]), None).await;
    let uuid = asked_uuid(&task, &kept);
    let id = task["id"].as_str().unwrap();
    let no = json!([{"data": {"approved": false, "approval_uuid": uuid, "reason": "test"}}]);
    let finished = door.send(no, Some(id)).await;
    assert_eq!(state(&finished), "TASK_STATE_COMPLETED", "{finished}");
    assert_eq!(artifact_text(&finished), format!("kept {kept}"));
    assert_eq!(agent.executions(), *done, "a rejection executed");
    assert!(
        agent
            .rejections()
            .contains(&format!("rejected delete_file {kept}"))
    );
    let bearer = format!("Bearer {}", door.bearer);
    assert!(
        agent.auth_headers().contains(&bearer),
        "{:?}",
        agent.log_lines()
    );
}

/// The card: the interfaces of `binding`, v1.0, absolute URLs on the agent.
async fn check_card(agent: &AskingAgent, binding: Binding) {
    let url = format!("{}/.well-known/agent-card.json", agent.url);
    let card: Value = reqwest::get(url).await.unwrap().json().await.unwrap();
    let interface = |name: &str, url: String| json!({"protocolBinding": name, "protocolVersion": "1.0", "url": url});
    let mut expected = Vec::new();
    if binding != Binding::HttpJson {
        expected.push(interface("JSONRPC", agent.jsonrpc_url()));
    }
    if binding != Binding::JsonRpc {
        expected.push(interface("HTTP+JSON", agent.rest_url()));
    }
    let got: Vec<Value> = card["supportedInterfaces"]
        .as_array()
        .unwrap_or_else(|| panic!("no supportedInterfaces: {card}"))
        .iter()
        .map(|i| {
            json!({"protocolBinding": i["protocolBinding"], "protocolVersion": i["protocolVersion"],
                "url": i["url"]})
        })
        .collect();
    assert_eq!(got, expected, "{card}");
}

/// Every binding of an agent started with both, then one agent per binding
/// (whose card lists only it, and which answers nothing on the other).
async fn honours_the_contract(start: fn(Binding) -> AskingAgent) {
    let both = start(Binding::Both);
    check_card(&both, Binding::Both).await;
    let mut done = Vec::new();
    for (rest, bearer) in [(false, "jsonrpc"), (true, "http-json")] {
        let door = Door {
            agent: &both,
            rest,
            bearer: bearer.into(),
        };
        contract(&door, &mut done).await;
    }
    assert_eq!(both.executions().len(), 2, "{:?}", both.log_lines());
    for binding in [Binding::JsonRpc, Binding::HttpJson] {
        let agent = start(binding);
        check_card(&agent, binding).await;
        let rest = binding == Binding::HttpJson;
        let door = Door {
            agent: &agent,
            rest,
            bearer: format!("only-{}", binding.arg()),
        };
        contract(&door, &mut Vec::new()).await;
        let other = if rest {
            agent.jsonrpc_url()
        } else {
            format!("{}/message:send", agent.rest_url())
        };
        let status = reqwest::Client::new()
            .post(other)
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 404, "{binding:?} also serves the other binding");
    }
}

#[tokio::test]
async fn the_js_sdk_asking_agent_honours_the_contract() {
    if !sdk_present("a2a_asking_sdk (JS)", js_sdk_version()) {
        return;
    }
    honours_the_contract(AskingAgent::start_js).await;
}

#[tokio::test]
async fn the_python_sdk_asking_agent_honours_the_contract() {
    if !sdk_present("a2a_asking_sdk (Python)", sdk_version().await) {
        return;
    }
    honours_the_contract(AskingAgent::start_python).await;
}
