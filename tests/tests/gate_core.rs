//! Issue 26: the holes a review found where one door skipped a check
//! another door made, each closed by the core's one authorization
//! (`asg_core::gate`), against the real binaries with tokens of a real
//! OpenID Connect provider. Users (tests/src/oidc.rs): bob has no role,
//! alice is an approver, frank an approver in `sre`, carol in `sre` only.

use std::path::Path;

use asg_tests::a2a::rpc_with;
use asg_tests::oidc::OidcProvider;
use asg_tests::recording_proxy::RecordingProxy;
use asg_tests::tool_server::ToolServer;
use asg_tests::{Agent, AgentOptions, approval_uuid, config_with, conversation_id};
use serde_json::{Value, json};

const RULES: &str = r#"approval:
  rules:
    - { tool: resources_add, when: { name: prod }, action: deny }
    - { tool: resources_add, when: { value: { gt: 1000 } }, action: ask, approvers: [sre] }
"#;

/// An agent with `RULES` and OIDC sign-in.
async fn agent_with_auth(provider: &OidcProvider) -> (tempfile::TempDir, Agent) {
    let auth = format!(
        "auth:\n  oidc: {{ issuer: \"{}\", audience: agent-stop-and-go, clock_skew_secs: 0 }}\n",
        provider.issuer
    );
    let (dir, config) = config_with("agent-resources.yaml", &format!("{RULES}{auth}"));
    let agent = Agent::start(&config, AgentOptions::default()).await;
    (dir, agent)
}

struct Caller {
    header: String,
}

impl Caller {
    async fn of(provider: &OidcProvider, user: &str) -> Caller {
        Caller {
            header: format!("Bearer {}", provider.token(user).await),
        }
    }

    async fn post(&self, agent: &Agent, path: &str, body: Value) -> (u16, Value) {
        agent
            .post_with(path, body.to_string(), &[("authorization", &self.header)])
            .await
    }

    async fn get(&self, agent: &Agent, path: &str) -> (u16, Value) {
        agent
            .get_with(path, &[("authorization", &self.header)])
            .await
    }

    /// Names of the resources, read in a conversation of this caller's.
    async fn resource_names(&self, agent: &Agent) -> Vec<String> {
        let (status, answer) = self
            .post(
                agent,
                "/conversations",
                json!({"message": "list resources"}),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
        let text = answer["result"]["response"].as_str().unwrap_or_default();
        let start = text
            .find('{')
            .unwrap_or_else(|| panic!("no list in {text}"));
        let listed: Value = serde_json::from_str(&text[start..]).unwrap();
        listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str().map(str::to_string))
            .collect()
    }
}

/// bob asks for `message`; the approval it stops on.
async fn bobs_approval(agent: &Agent, bob: &Caller, message: &str) -> (String, String) {
    let (status, answer) = bob
        .post(agent, "/conversations", json!({ "message": message }))
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    (conversation_id(&answer), approval_uuid(&answer))
}

fn message(body: &Value) -> String {
    body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn an_edit_is_judged_by_the_rules_like_a_new_call() {
    let provider = OidcProvider::start().await;
    let (_dir, agent) = agent_with_auth(&provider).await;
    let bob = Caller::of(&provider, "bob").await;
    let alice = Caller::of(&provider, "alice").await;
    let frank = Caller::of(&provider, "frank").await;
    let (id, uuid) = bobs_approval(&agent, &bob, "add resource web-1 with value 42").await;
    let path = format!("/approvals/{uuid}");

    // Into the deny rule: refused, even for an approver in sre.
    for approver in [&alice, &frank] {
        let edit = json!({"approved": true, "arguments": {"name": "prod", "value": 5000}});
        let (status, refused) = approver.post(&agent, &path, edit).await;
        assert_eq!(status, 403, "{refused}");
        let text = message(&refused);
        assert!(
            text.contains("edited call") && text.contains("approval.rules[0]"),
            "{text}"
        );
    }
    // Into the rule that only sre may approve: alice is not in sre.
    let big = json!({"approved": true, "arguments": {"name": "big", "value": 5000}});
    let (status, refused) = alice.post(&agent, &path, big.clone()).await;
    assert_eq!(status, 403, "{refused}");
    let text = message(&refused);
    assert!(text.contains("alice") && text.contains("sre"), "{text}");
    // Nothing was decided: still waiting, and frank (sre) may.
    let (_, shown) = bob.get(&agent, &format!("/conversations/{id}")).await;
    assert_eq!(
        shown["conversation"]["status"], "waiting_approval",
        "{shown}"
    );
    let (status, approved) = frank.post(&agent, &path, big).await;
    assert_eq!(status, 200, "{approved}");
    let names = bob.resource_names(&agent).await;
    assert_eq!(names, ["big"], "prod never created");
}

/// One A2A JSON-RPC call with `caller`'s token.
async fn a2a(agent: &Agent, caller: &Caller, method: &str, params: Value) -> Value {
    rpc_with(agent, &[("authorization", &caller.header)], method, params).await
}

/// An A2A message to task `id` with text and a decision part.
fn text_and_decision(id: &str, text: &str) -> Value {
    json!({"message": {"role": "user", "messageId": uuid::Uuid::new_v4().to_string(), "taskId": id,
        "parts": [{"kind": "text", "text": text}, {"kind": "data", "data": {"approved": false}}]}})
}

#[tokio::test]
async fn a_decision_part_does_not_open_another_principals_task() {
    let provider = OidcProvider::start().await;
    let (_dir, agent) = agent_with_auth(&provider).await;
    let bob = Caller::of(&provider, "bob").await;
    let alice = Caller::of(&provider, "alice").await;

    // Without a grant: bob's call was rejected; alice can read the task.
    let (plain, uuid) = bobs_approval(&agent, &bob, "add resource first with value 1").await;
    let (status, _) = alice
        .post(
            &agent,
            &format!("/approvals/{uuid}"),
            json!({"approved": false}),
        )
        .await;
    assert_eq!(status, 200);
    // With a grant: alice approved bob's call and remembered it for the
    // conversation, so a resources_add there would run unasked.
    let (granted, uuid) = bobs_approval(&agent, &bob, "add resource second with value 2").await;
    let remember = json!({"approved": true, "remember": "conversation"});
    let (status, body) = alice
        .post(&agent, &format!("/approvals/{uuid}"), remember)
        .await;
    assert_eq!(status, 200, "{body}");

    for id in [&plain, &granted] {
        let before = bob.get(&agent, &format!("/conversations/{id}")).await.1;
        let count = before["conversation"]["messages"].as_array().unwrap().len();
        let params = text_and_decision(id, "add resource injected with value 9");
        let answer = a2a(&agent, &alice, "message/send", params).await;
        assert_eq!(answer["error"]["code"], -32010, "{answer}");
        let after = bob.get(&agent, &format!("/conversations/{id}")).await.1;
        let messages = after["conversation"]["messages"].as_array().unwrap();
        assert_eq!(messages.len(), count, "no turn ran: {after}");
    }
    let names = bob.resource_names(&agent).await;
    assert_eq!(names, ["second"], "the injected call never ran");
}

#[tokio::test]
async fn a_resolved_approval_reveals_nothing_to_a_stranger() {
    let provider = OidcProvider::start().await;
    let (_dir, agent) = agent_with_auth(&provider).await;
    let bob = Caller::of(&provider, "bob").await;
    let alice = Caller::of(&provider, "alice").await;
    let carol = Caller::of(&provider, "carol").await;
    let (_, uuid) = bobs_approval(&agent, &bob, "add resource secret-name with value 3").await;
    let path = format!("/approvals/{uuid}");
    let (status, _) = alice.post(&agent, &path, json!({"approved": true})).await;
    assert_eq!(status, 200);

    // carol (no approver role) may not read bob's conversation.
    let (status, body) = carol.post(&agent, &path, json!({"approved": true})).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.get("conversation").is_none(), "{body}");
    assert!(!body.to_string().contains("secret-name"), "{body}");
    // The same answer as for an approval that never existed.
    let (status, _) = carol
        .post(
            &agent,
            &format!("/approvals/{}", uuid::Uuid::new_v4()),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(status, 404);
    // A reader still learns that it was resolved.
    let (status, body) = alice.post(&agent, &path, json!({"approved": true})).await;
    assert_eq!(status, 409, "{body}");
}

/// Rules of the offline model: add, then list after the add ran.
const ADD_THEN_LIST: &str = r#"rules:
  - when: { user: "(?i)add resource (?P<name>[\\w-]+) with value (?P<value>\\d+)" }
    call: { tool: resources_add, args: { name: "{name}", value: "{value:int}" } }
  - when: { after_tool: resources_add, tool_error: false }
    call: { tool: resources_list, args: {} }
  - when: { after_tool: "*" }
    reply: "{tool} returned: {result}"
  - reply: "Say: add resource NAME with value N"
"#;

fn tool_server(dir: &Path) -> ToolServer {
    let config = dir.join("mcp-resources.yaml");
    let db = dir.join("resources.db");
    let text = format!("host: 127.0.0.1\nport: 8090\ndb_path: {}\n", db.display());
    std::fs::write(&config, text).unwrap();
    ToolServer::start("mcp-resources", &config, 0)
}

/// Which `Authorization` each `tools/call` of `tool` carried.
fn credentials_of(proxy: &RecordingProxy, tool: &str) -> Vec<Option<String>> {
    proxy
        .requests()
        .iter()
        .filter(|r| r.body.contains("tools/call") && r.body.contains(&format!("\"{tool}\"")))
        .map(|r| {
            r.headers
                .iter()
                .find(|(k, _)| k == "authorization")
                .map(|(_, v)| v.clone())
        })
        .collect()
}

// Multi-threaded: the proxy answers while `Agent::start` blocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approvers_token_runs_the_approved_call_only() {
    let provider = OidcProvider::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server = tool_server(dir.path());
    let proxy = RecordingProxy::start(&server.url).await;
    let scripted = dir.path().join("rules.yaml");
    std::fs::write(&scripted, ADD_THEN_LIST).unwrap();
    let config = dir.path().join("agent.yaml");
    let text = format!(
        "name: resource-manager\nprompt: You manage resources.\nhost: 127.0.0.1\n\
         llm:\n  model: scripted:{}\nmcp_servers:\n  - name: resources\n    url: {}/mcp\n\
         auth:\n  oidc: {{ issuer: \"{}\", audience: agent-stop-and-go }}\n",
        scripted.display(),
        proxy.url,
        provider.issuer
    );
    std::fs::write(&config, text).unwrap();
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let bob = Caller::of(&provider, "bob").await;
    let alice = Caller::of(&provider, "alice").await;

    let (_, uuid) = bobs_approval(&agent, &bob, "add resource tok-1 with value 5").await;
    let (status, answer) = alice
        .post(
            &agent,
            &format!("/approvals/{uuid}"),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let response = answer["result"]["response"].as_str().unwrap_or_default();
    assert!(response.contains("resources_list returned"), "{answer}");

    // The approved call ran with the approver's token (README: credentials)...
    assert_eq!(
        credentials_of(&proxy, "resources_add"),
        [Some(alice.header.clone())]
    );
    // ...and the rest of bob's run never carried it.
    let later = credentials_of(&proxy, "resources_list");
    assert_eq!(later.len(), 1, "{:?}", proxy.requests());
    assert_ne!(later[0].as_deref(), Some(alice.header.as_str()));
}
