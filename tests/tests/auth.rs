//! Identity and authorization (issue 8) against a real OpenID Connect
//! provider (tests/oidc, npm `oidc-provider`) and real agents: who may
//! chat, read, approve, and the record of who did.
//!
//! Users of the provider: alice and grace are approvers, bob is a plain
//! user, carol is in the IdP group `sre`, dana is an admin; `role_map`
//! (the only source of roles when set) maps `approver` and `sre` to
//! approver and `admin` to admin.

use std::path::PathBuf;
use std::time::Duration;

use asg_tests::oidc::{OTHER_AUDIENCE, OidcOptions, OidcProvider, free_port};
use asg_tests::sse::EventStream;
use asg_tests::{Agent, AgentOptions, a2a, config_with};
use serde_json::{Value, json};

const OPS_KEY: &str = "ops-bot-key-0123456789";
/// A key with no role: a plain principal other than bob.
const SCRIPT_KEY: &str = "script-key-0123456789";

fn auth_yaml(issuer: &str, separate: bool) -> String {
    format!(
        "auth:\n  oidc: {{ issuer: \"{issuer}\", audience: agent-stop-and-go, clock_skew_secs: 0 }}\n  \
         api_keys:\n    - {{ name: ops-bot, key_env: OPS_BOT_KEY, roles: [approver] }}\n    \
         - {{ name: script, key_env: SCRIPT_KEY }}\n  \
         role_map: {{ approver: [approver, sre], admin: [admin] }}\napproval: {{ separate_approver: {separate} }}\n"
    )
}

struct Secured {
    agent: Agent,
    _config: tempfile::TempDir,
    config: PathBuf,
}

async fn secured_agent(base: &str, issuer: &str, separate: bool, env: &[(&str, &str)]) -> Secured {
    let (dir, config) = config_with(base, &auth_yaml(issuer, separate));
    let mut pairs = vec![("OPS_BOT_KEY", OPS_KEY), ("SCRIPT_KEY", SCRIPT_KEY)];
    pairs.extend_from_slice(env);
    let agent = Agent::start(&config, AgentOptions::with_env(&pairs)).await;
    Secured {
        agent,
        _config: dir,
        config,
    }
}

async fn setup(separate: bool) -> (OidcProvider, Secured) {
    let provider = OidcProvider::start().await;
    let agent = secured_agent("agent-resources.yaml", &provider.issuer, separate, &[]).await;
    (provider, agent)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// POST as a principal.
async fn post_as(agent: &Agent, token: &str, path: &str, body: Value) -> (u16, Value) {
    let auth = bearer(token);
    agent
        .post_with(path, body.to_string(), &[("authorization", &auth)])
        .await
}

async fn get_as(agent: &Agent, token: &str, path: &str) -> (u16, Value) {
    let auth = bearer(token);
    agent.get_with(path, &[("authorization", &auth)]).await
}

#[tokio::test]
async fn credentials_are_required_and_every_rejection_says_why() {
    let (provider, secured) = setup(false).await;
    let agent = &secured.agent;
    // Public pages stay open; the card declares what it accepts.
    assert_eq!(agent.get("/health").await.0, 200);
    let (status, card) = agent.get("/.well-known/agent-card.json").await;
    assert_eq!(status, 200);
    assert_eq!(card["securitySchemes"]["bearer"]["bearerFormat"], "JWT");
    assert_eq!(card["securitySchemes"]["apiKey"]["name"], "X-API-Key");

    let response = agent
        .http
        .get(format!("{}/conversations", agent.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthenticated");
    // Rendering Markdown reads nothing, but takes a caller too: an open
    // route would be anyone's CPU.
    let texts = json!({"texts": ["**done**"]});
    let (status, body) = agent.post("/markdown", texts.clone()).await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = agent
        .post_with("/markdown", texts.to_string(), &[("x-api-key", SCRIPT_KEY)])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["html"][0], "<p><strong>done</strong></p>\n");

    let wrong_audience = provider.token_for_resource("bob", OTHER_AUDIENCE).await;
    let (status, body) = get_as(agent, &wrong_audience, "/conversations").await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("audience")
    );

    let short = provider.short_lived_token("bob").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (status, body) = get_as(agent, &short, "/conversations").await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired")
    );

    let (status, _) = get_as(agent, "not-a-token", "/conversations").await;
    assert_eq!(status, 401);
    let es256 = provider.token_signed_with("erin", "ES256").await;
    assert_eq!(get_as(agent, &es256, "/me").await.0, 200);
}

#[tokio::test]
async fn users_see_only_their_own_conversations() {
    let (provider, secured) = setup(false).await;
    let agent = &secured.agent;
    let (bob, frank, dana) = (
        provider.token("bob").await,
        provider.token("frank").await,
        provider.token("dana").await,
    );
    let (status, created) = post_as(
        agent,
        &bob,
        "/conversations",
        json!({"message": "list resources"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["conversation"]["owner"], provider.subject("bob"));
    let id = created["conversation"]["id"].as_str().unwrap().to_string();
    let path = format!("/conversations/{id}");
    assert_eq!(get_as(agent, &bob, &path).await.0, 200);
    // Another user (an approver, but no approval in it): not found.
    assert_eq!(get_as(agent, &frank, &path).await.0, 404);
    let (status, _) = post_as(
        agent,
        &frank,
        &format!("{path}/messages"),
        json!({"message": "list resources"}),
    )
    .await;
    assert_eq!(status, 404);
    let (_, list) = get_as(agent, &frank, "/conversations").await;
    assert_eq!(list["summary"]["total"], 0, "{list}");
    // An admin reads everything.
    assert_eq!(get_as(agent, &dana, &path).await.0, 200);
    let (_, me) = get_as(agent, &dana, "/me").await;
    assert_eq!(me["roles"], json!(["admin"]));
}

/// Bob asks for an add; returns (conversation id, approval uuid).
async fn bob_adds(
    provider: &OidcProvider,
    agent: &Agent,
    bob: &str,
    name: &str,
) -> (String, String) {
    let (status, answer) = post_as(
        agent,
        bob,
        "/conversations",
        json!({"message": format!("add resource {name} with value 7")}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        answer["result"]["approval"]["requested_by"]["subject"],
        provider.subject("bob"),
        "{answer}"
    );
    (
        answer["conversation"]["id"].as_str().unwrap().to_string(),
        answer["result"]["approval"]["uuid"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

#[tokio::test]
async fn only_approvers_decide_and_the_decision_names_them() {
    let (provider, secured) = setup(false).await;
    let agent = &secured.agent;
    let (bob, alice) = (provider.token("bob").await, provider.token("alice").await);
    let (id, uuid) = bob_adds(&provider, agent, &bob, "decided-1").await;
    let decide = format!("/approvals/{uuid}");
    let (status, body) = post_as(agent, &bob, &decide, json!({"approved": true})).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "forbidden");
    // Approvers see every pending approval; bob sees his own.
    let (_, listed) = get_as(agent, &alice, "/approvals").await;
    assert_eq!(listed["approvals"][0]["uuid"], uuid.as_str());
    let (status, body) = post_as(agent, &alice, &decide, json!({"approved": true})).await;
    assert_eq!(status, 200, "{body}");
    let (_, conversation) = get_as(agent, &alice, &format!("/conversations/{id}")).await;
    let decision = &conversation["conversation"]["decisions"][0];
    assert_eq!(decision["decided_by"]["subject"], provider.subject("alice"));
    assert_eq!(decision["decided_by"]["name"], "Alice Approver");
    assert_eq!(decision["decided_by"]["role"], "approver");
    assert_eq!(decision["decided_by"]["via"], "rest");
    assert_eq!(decision["approved"], true);

    // The audit log holds the decision, and no credential.
    let audit = std::fs::read_to_string(agent.data_dir.join("audit.jsonl")).unwrap();
    let lines: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let line = lines
        .iter()
        .find(|l| l["event"] == "decision")
        .expect("a decision line");
    assert_eq!(line["approval"], uuid.as_str());
    assert_eq!(line["by"]["subject"], provider.subject("alice"));
    assert_eq!(line["requested_by"]["subject"], provider.subject("bob"));
    assert!(
        line["arguments_sha256"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(
        lines
            .iter()
            .any(|l| l["event"] == "outcome" && l["outcome"] == "succeeded")
    );
    for secret in [&bob, &alice] {
        assert!(!audit.contains(secret.as_str()), "a token in the audit log");
    }
    assert!(!audit.contains(OPS_KEY));
    assert!(!agent.log().contains(alice.as_str()), "a token in the log");
}

#[tokio::test]
async fn with_separate_approver_nobody_approves_their_own_request() {
    let (provider, secured) = setup(true).await;
    let agent = &secured.agent;
    let (alice, grace) = (provider.token("alice").await, provider.token("grace").await);
    let (status, answer) = post_as(
        agent,
        &alice,
        "/conversations",
        json!({"message": "add resource four-eyes-1 with value 1"}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let uuid = answer["result"]["approval"]["uuid"].as_str().unwrap();
    let decide = format!("/approvals/{uuid}");
    let (status, body) = post_as(agent, &alice, &decide, json!({"approved": true})).await;
    assert_eq!(status, 403, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("separate_approver"), "{message}");
    let (_, listed) = get_as(agent, &grace, "/approvals").await;
    assert_eq!(listed["approvals"][0]["uuid"], uuid, "still pending");
    let (status, body) = post_as(agent, &grace, &decide, json!({"approved": true})).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn an_approval_raised_after_someone_else_approved_is_still_the_requesters() {
    // A loop asks for every add: grace approves alice's first, and the
    // loop's next add is alice's request again, not grace's.
    let provider = OidcProvider::start().await;
    let secured = secured_agent("e2e-loop-approval.yaml", &provider.issuer, true, &[]).await;
    let agent = &secured.agent;
    let (alice, grace) = (provider.token("alice").await, provider.token("grace").await);
    let (status, answer) = post_as(
        agent,
        &alice,
        "/conversations",
        json!({"message": "ensure we have at least 2 resources"}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let first = answer["result"]["approval"]["uuid"].as_str().unwrap();
    let (status, second) = post_as(
        agent,
        &grace,
        &format!("/approvals/{first}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    let next = &second["result"]["approval"];
    assert_eq!(
        next["requested_by"]["subject"],
        provider.subject("alice"),
        "{next}"
    );
    let decide = format!("/approvals/{}", next["uuid"].as_str().unwrap());
    // So with four eyes grace still decides it, and alice cannot.
    let (status, body) = post_as(agent, &alice, &decide, json!({"approved": true})).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = post_as(agent, &grace, &decide, json!({"approved": true})).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn an_api_key_and_a_mapped_group_approve_too() {
    let (provider, secured) = setup(false).await;
    let agent = &secured.agent;
    let bob = provider.token("bob").await;
    let (_, uuid) = bob_adds(&provider, agent, &bob, "keyed-1").await;
    let (status, body) = agent
        .post_with(
            &format!("/approvals/{uuid}"),
            json!({"approved": true}).to_string(),
            &[("x-api-key", OPS_KEY)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let decision = &body["conversation"]["decisions"][0];
    assert_eq!(decision["decided_by"]["subject"], "key:ops-bot");
    // carol is in the IdP group `sre`, mapped to approver.
    let carol = provider.token("carol").await;
    let (_, me) = get_as(agent, &carol, "/me").await;
    assert_eq!(me["roles"], json!(["approver"]), "{me}");
}

/// One JSON-RPC call with `token` as bearer; status and body.
async fn rpc(agent: &Agent, token: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let auth = token.map(bearer).unwrap_or_default();
    let headers: Vec<(&str, &str)> = match token {
        Some(_) => vec![("authorization", auth.as_str())],
        None => vec![],
    };
    a2a::call_with(agent, &headers, method, params).await
}

fn text_message(text: &str, task: Option<&str>) -> Value {
    json!({"message": {"role": "user", "kind": "message", "messageId": uuid::Uuid::new_v4().to_string(),
        "parts": [{"kind": "text", "text": text}], "taskId": task}})
}

#[tokio::test]
async fn a2a_needs_credentials_and_continuations_need_an_approver() {
    let (provider, secured) = setup(false).await;
    let agent = &secured.agent;
    let (status, _) = rpc(
        agent,
        None,
        "message/send",
        text_message("list resources", None),
    )
    .await;
    assert_eq!(status, 401, "before any JSON-RPC processing");
    let (bob, alice) = (provider.token("bob").await, provider.token("alice").await);
    let (_, sent) = rpc(
        agent,
        Some(&bob),
        "message/send",
        text_message("add resource rpc-1 with value 2", None),
    )
    .await;
    assert_eq!(
        sent["result"]["status"]["state"], "input-required",
        "{sent}"
    );
    let task = sent["result"]["id"].as_str().unwrap().to_string();
    // Bob may not approve his own task's call: he is no approver.
    let (_, refused) = rpc(
        agent,
        Some(&bob),
        "message/send",
        text_message("approved", Some(&task)),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    let (_, decided) = rpc(
        agent,
        Some(&alice),
        "message/send",
        text_message("approved", Some(&task)),
    )
    .await;
    assert_eq!(
        decided["result"]["status"]["state"], "completed",
        "{decided}"
    );
    let (_, conversation) = get_as(agent, &alice, &format!("/conversations/{task}")).await;
    let decision = &conversation["conversation"]["decisions"][0];
    assert_eq!(decision["decided_by"]["subject"], provider.subject("alice"));
    assert_eq!(decision["decided_by"]["via"], "a2a");
}

#[tokio::test]
async fn a_provider_down_at_startup_means_503_until_it_answers() {
    let port = free_port();
    let mut provider = OidcProvider::start_with(OidcOptions {
        port,
        ..Default::default()
    })
    .await;
    let bob = provider.token("bob").await;
    provider.kill();
    let issuer = format!("http://127.0.0.1:{port}");
    let secured = secured_agent("agent-resources.yaml", &issuer, false, &[]).await;
    let (status, body) = get_as(&secured.agent, &bob, "/conversations").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "auth_unavailable");
    provider.restart(true).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _) = get_as(&secured.agent, &bob, "/conversations").await;
        if status == 200 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never recovered");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = &secured.config;
}

#[tokio::test]
async fn an_api_key_named_like_a_user_is_not_that_user() {
    const BOB_KEY: &str = "bob-key-0123456789";
    let provider = OidcProvider::start().await;
    let auth = format!(
        "auth:\n  oidc: {{ issuer: \"{}\", audience: agent-stop-and-go }}\n  \
         api_keys:\n    - {{ name: bob, key_env: BOB_KEY }}\n",
        provider.issuer
    );
    let (_dir, config) = config_with("agent-resources.yaml", &auth);
    let agent = Agent::start(&config, AgentOptions::with_env(&[("BOB_KEY", BOB_KEY)])).await;
    let bob = provider.token("bob").await;
    let (status, created) = post_as(
        &agent,
        &bob,
        "/conversations",
        json!({"message": "list resources"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["conversation"]["id"].as_str().unwrap();
    let key = [("x-api-key", BOB_KEY)];
    let (status, _) = agent.get_with(&format!("/conversations/{id}"), &key).await;
    assert_eq!(status, 404, "the key named bob is not the user bob");
    let (_, me) = agent.get_with("/me", &key).await;
    assert_eq!(me["subject"], "key:bob");
    let (_, me) = get_as(&agent, &bob, "/me").await;
    assert_eq!(me["subject"], provider.subject("bob"));
}

#[tokio::test]
async fn a_key_the_provider_rotated_away_stops_verifying_after_the_ttl() {
    let mut provider = OidcProvider::start().await;
    let auth = format!(
        "auth:\n  oidc: {{ issuer: \"{}\", audience: agent-stop-and-go, jwks_ttl_secs: 1 }}\n",
        provider.issuer
    );
    let (_dir, config) = config_with("agent-resources.yaml", &auth);
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let old = provider.token("bob").await;
    assert_eq!(get_as(&agent, &old, "/me").await.0, 200);
    // New signing keys with new key ids; the old ones are gone from the
    // provider's key set, though the old token has not expired.
    provider.restart(false).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, body) = get_as(&agent, &old, "/me").await;
    assert_eq!(status, 401, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not one of the provider's keys"), "{body}");
    let new = provider.token("bob").await;
    assert_eq!(get_as(&agent, &new, "/me").await.0, 200);
}

#[tokio::test]
async fn through_a_chain_the_human_who_decides_on_a_is_recorded_on_b() {
    let provider = OidcProvider::start().await;
    let b = secured_agent("e2e-chain-b.yaml", &provider.issuer, false, &[]).await;
    let a = secured_agent(
        "agent-delegator.yaml",
        &provider.issuer,
        false,
        &[("DOWNSTREAM_URL", &b.agent.url)],
    )
    .await;
    let (bob, alice) = (provider.token("bob").await, provider.token("alice").await);
    let (status, answer) = post_as(
        &a.agent,
        &bob,
        "/conversations",
        json!({"message": "add resource chained-1 with value 4"}),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let proxy = &answer["result"]["approval"];
    assert_eq!(
        proxy["requested_by"]["subject"],
        provider.subject("bob"),
        "{answer}"
    );
    let remote_task = proxy["remote_task_id"].as_str().unwrap().to_string();
    // On B the task belongs to bob too: his token travelled with it.
    let (_, on_b) = get_as(&b.agent, &bob, &format!("/conversations/{remote_task}")).await;
    assert_eq!(
        on_b["conversation"]["owner"],
        provider.subject("bob"),
        "{on_b}"
    );
    let uuid = proxy["uuid"].as_str().unwrap();
    let (status, decided) = post_as(
        &a.agent,
        &alice,
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    let (_, on_b) = get_as(&b.agent, &alice, &format!("/conversations/{remote_task}")).await;
    let decision = &on_b["conversation"]["decisions"][0];
    assert_eq!(
        decision["decided_by"]["subject"],
        provider.subject("alice"),
        "{on_b}"
    );
    assert_eq!(decision["decided_by"]["via"], "a2a");
}

#[tokio::test]
async fn streams_and_tasks_of_others_stay_hidden() {
    let (provider, secured) = setup(false).await;
    let agent = &secured.agent;
    let (bob, alice) = (provider.token("bob").await, provider.token("alice").await);
    let script = [("x-api-key", SCRIPT_KEY)];
    let bob_auth = bearer(&bob);
    let alice_auth = bearer(&alice);
    let inbox = format!("{}/events", agent.url);

    // Without credentials, no stream at all.
    assert_eq!(EventStream::open(&inbox, &[]).await.0, 401);
    let (_, script_inbox) = EventStream::open(&inbox, &script).await;
    let mut script_inbox = script_inbox.unwrap();
    let (_, alice_inbox) = EventStream::open(&inbox, &[("authorization", &alice_auth)]).await;
    let mut alice_inbox = alice_inbox.unwrap();
    assert_eq!(
        script_inbox.next_of("pending").await["approvals"],
        json!([])
    );
    alice_inbox.next_of("pending").await;

    let (id, uuid) = bob_adds(&provider, agent, &bob, "hidden-1").await;
    // The approver sees bob's request; another plain principal does not.
    let seen = alice_inbox.next_of("approval_requested").await;
    assert_eq!(seen["approval"]["uuid"], uuid.as_str());
    let leaked = script_inbox.within(Duration::from_millis(700)).await;
    assert!(
        !leaked
            .iter()
            .any(|e| e.to_string().contains(&uuid) || e.to_string().contains(&id)),
        "another principal saw bob's approval: {leaked:?}"
    );
    // Nor can it open bob's conversation stream, read it, or its task.
    let stream = format!("{}/conversations/{id}/events", agent.url);
    assert_eq!(EventStream::open(&stream, &script).await.0, 404);
    assert_eq!(
        EventStream::open(&stream, &[("authorization", &bob_auth)])
            .await
            .0,
        200
    );
    let (status, _) = agent
        .get_with(&format!("/conversations/{id}"), &script)
        .await;
    assert_eq!(status, 404);
    let rpc_as = |method: &str| a2a::request(method, json!({"id": id})).to_string();
    let (_, got) = agent.post_with("/a2a", rpc_as("tasks/get"), &script).await;
    assert_eq!(got["error"]["code"], -32001, "{got}");
    let (_, canceled) = agent
        .post_with("/a2a", rpc_as("tasks/cancel"), &script)
        .await;
    assert_eq!(canceled["error"]["code"], -32001, "{canceled}");
    // An approver may read it but not cancel bob's task for him.
    let (_, refused) = agent
        .post_with(
            "/a2a",
            rpc_as("tasks/cancel"),
            &[("authorization", &alice_auth)],
        )
        .await;
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    let (_, listed) = get_as(agent, &bob, "/approvals").await;
    assert_eq!(
        listed["approvals"][0]["uuid"],
        uuid.as_str(),
        "still pending"
    );
}

#[tokio::test]
async fn an_event_stream_ends_when_the_token_that_opened_it_expires() {
    let (provider, secured) = setup(false).await;
    let agent = &secured.agent;
    let lasting = provider.token("alice").await;
    let bob = provider.token("bob").await;
    let (id, _) = bob_adds(&provider, agent, &bob, "short-1").await;
    let resource = asg_tests::oidc::resource(asg_tests::oidc::AUDIENCE, None, Some(3));
    let short = provider.token_with("alice", &resource).await;
    let inbox = format!("{}/events", agent.url);
    let stream = format!("{}/conversations/{id}/events", agent.url);
    let mut opened = Vec::new();
    for (url, token) in [(&inbox, &short), (&stream, &short), (&inbox, &lasting)] {
        let auth = bearer(token);
        let (status, events) = EventStream::open(url, &[("authorization", &auth)]).await;
        assert_eq!(status, 200, "{url}");
        opened.push(events.unwrap());
    }
    let script = [("x-api-key", SCRIPT_KEY)];
    let (_, keyed) = EventStream::open(&inbox, &script).await;
    opened.push(keyed.unwrap());
    let [short_inbox, short_stream, long_inbox, keyed_inbox] = &mut opened[..] else {
        unreachable!()
    };
    // The 3 s token's streams end with it; the others go on.
    assert!(short_inbox.ended_within(Duration::from_secs(8)).await);
    assert!(short_stream.ended_within(Duration::from_secs(2)).await);
    assert!(!long_inbox.ended_within(Duration::from_secs(1)).await);
    assert!(!keyed_inbox.ended_within(Duration::from_millis(200)).await);
}
