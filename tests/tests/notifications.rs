//! Notifications (issue 9), end to end with the real agent on the offline
//! model and local receivers: approval webhooks (signed, retried, never
//! in a turn's way, no secrets in the body) and A2A push notifications
//! (`tasks/pushNotificationConfig/*`: the callback follows the task,
//! SSRF refusals, only the task's owner, configs kept across a restart;
//! on PostgreSQL, configs shared by the replicas, each state notified
//! once by the replica that changed the task, a replica's old
//! `a2a-push.json` imported).

use std::time::{Duration, Instant};

use asg_tests::a2a::{call_with, rpc, rpc_with, send_params};
use asg_tests::fake_http::{FakeHttp, Recorded, Reply};
use asg_tests::{Agent, AgentOptions, approval_uuid, config_with, conversation_id, poll};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

const SECRET: &str = "webhook-secret-0123456789";
const OPS_KEY: &str = "ops-key-0123456789abcdef";
const ALICE_KEY: &str = "alice-key-0123456789abcdef";
const BOB_KEY: &str = "bob-key-0123456789abcdef";
const ADMIN_KEY: &str = "admin-key-0123456789abcdef";
const ADD: &str = "add resource x with value 1";

/// Waits until `fake` has recorded `n` requests to `path`.
async fn requests_to(fake: &FakeHttp, path: &str, n: usize, limit: Duration) -> Vec<Recorded> {
    poll(&format!("{n} request(s) to {path}"), limit, || async {
        let got: Vec<Recorded> = fake
            .requests()
            .into_iter()
            .filter(|r| r.uri == path)
            .collect();
        (got.len() >= n).then_some(got)
    })
    .await
}

fn header<'a>(request: &'a Recorded, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn body(request: &Recorded) -> Value {
    serde_json::from_str(&request.body).expect("a JSON body")
}

/// The receiver's check: HMAC-SHA256 of the raw body, hex, `sha256=`.
fn signature_ok(request: &Recorded) -> bool {
    let Some(given) = header(request, "x-asg-signature") else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(request.body.as_bytes());
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    given == format!("sha256={expected}")
}

fn webhook_yaml(url: &str, events: &str) -> String {
    format!(
        "approval:\n  web_url: http://chat.example:8081\n  webhooks:\n    - url: {url}\n      \
         secret_env: ASG_WEBHOOK_SECRET\n{events}"
    )
}

async fn webhook_agent(extra: &str, env: &[(&str, &str)]) -> (tempfile::TempDir, Agent) {
    let (dir, config) = config_with("agent-resources.yaml", extra);
    let mut pairs = vec![("ASG_WEBHOOK_SECRET", SECRET)];
    pairs.extend_from_slice(env);
    let agent = Agent::start(&config, AgentOptions::with_env(&pairs)).await;
    (dir, agent)
}

#[tokio::test]
async fn webhooks_are_signed_and_carry_no_secrets() {
    let fake = FakeHttp::start(vec![Reply::status(204, "")]).await;
    let auth = "auth:\n  api_keys:\n    - { name: ops, key_env: OPS_KEY, roles: [approver] }\n";
    let extra = format!("{}{auth}", webhook_yaml(&format!("{}/hooks", fake.url), ""));
    let (_dir, agent) = webhook_agent(&extra, &[("OPS_KEY", OPS_KEY)]).await;
    let key = [("x-api-key", OPS_KEY)];
    let (status, answer) = agent
        .post_with("/conversations", json!({"message": ADD}).to_string(), &key)
        .await;
    assert_eq!(status, 201, "{answer}");
    let (id, uuid) = (conversation_id(&answer), approval_uuid(&answer));
    let first = requests_to(&fake, "/hooks", 1, Duration::from_secs(10)).await;
    let requested = &first[0];
    assert!(signature_ok(requested), "bad signature: {requested:?}");
    assert_eq!(header(requested, "x-asg-event"), Some("approval.requested"));
    assert_eq!(header(requested, "content-type"), Some("application/json"));
    let event = body(requested);
    assert_eq!(event["event"], "approval.requested");
    assert_eq!(
        event["delivery"],
        header(requested, "x-asg-delivery").unwrap()
    );
    assert_eq!(event["agent"], "resource-manager");
    assert_eq!(event["approval"]["uuid"], uuid);
    assert_eq!(event["approval"]["tool_name"], "resources_add");
    assert_eq!(
        event["approval"]["tool_args"],
        json!({"name": "x", "value": 1})
    );
    assert_eq!(event["link"], format!("http://chat.example:8081/?c={id}"));
    assert!(event["time"].as_str().unwrap().ends_with('Z'));

    let (status, decided) = agent
        .post_with(
            &format!("/approvals/{uuid}"),
            json!({"approved": true}).to_string(),
            &key,
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    let both = requests_to(&fake, "/hooks", 2, Duration::from_secs(10)).await;
    let decision = &both[1];
    assert!(signature_ok(decision));
    assert_eq!(header(decision, "x-asg-event"), Some("approval.decided"));
    let event = body(decision);
    assert_eq!(event["approval"]["uuid"], uuid);
    assert_eq!(event["approval"]["conversation_id"], id);
    assert_eq!(event["approval"]["decision"]["approved"], true);
    assert_eq!(
        event["approval"]["decision"]["decided_by"]["subject"],
        "key:ops"
    );
    assert_ne!(event["delivery"], body(requested)["delivery"]);
    for request in &both {
        for secret in [SECRET, OPS_KEY] {
            assert!(
                !request.body.contains(secret),
                "a secret in {}",
                request.body
            );
            assert!(request.headers.iter().all(|(_, v)| !v.contains(secret)));
        }
    }
    let log = agent.log();
    assert!(!log.contains(SECRET) && !log.contains(OPS_KEY));
}

#[tokio::test]
async fn webhook_retries_after_server_errors_with_the_same_delivery() {
    let replies = vec![
        Reply::status(500, "down"),
        Reply::status(503, "still down"),
        Reply::status(200, "{}"),
    ];
    let fake = FakeHttp::start(replies).await;
    let events = "      events: [approval.requested]\n";
    let (_dir, agent) = webhook_agent(&webhook_yaml(&format!("{}/h", fake.url), events), &[]).await;
    let started = Instant::now();
    let (status, answer) = agent.say_new(ADD).await;
    assert_eq!(status, 201, "{answer}");
    let tries = requests_to(&fake, "/h", 3, Duration::from_secs(15)).await;
    // Backoff: 1 s, then 2 s.
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let delivery = header(&tries[0], "x-asg-delivery").unwrap();
    assert!(
        tries
            .iter()
            .all(|t| header(t, "x-asg-delivery") == Some(delivery))
    );
    assert!(tries.iter().all(signature_ok));
    agent.wait_log("notification delivered").await;
    // The decision is not wanted by this webhook: nothing more arrives.
    let uuid = approval_uuid(&answer);
    assert_eq!(agent.decide(&uuid, json!({"approved": false})).await.0, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn receivers_that_are_down_or_hang_do_not_slow_turns_or_shutdown() {
    let hanging = FakeHttp::start(vec![
        Reply::status(200, "{}").delayed(Duration::from_secs(30)),
    ])
    .await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let extra = format!(
        "{}    - url: http://127.0.0.1:{closed}/down\n      secret_env: ASG_WEBHOOK_SECRET\n",
        webhook_yaml(&format!("{}/slow", hanging.url), "")
    );
    let (_dir, mut agent) = webhook_agent(&extra, &[]).await;
    for _ in 0..3 {
        let started = Instant::now();
        let (status, answer) = agent.say_new(ADD).await;
        assert_eq!(status, 201, "{answer}");
        let uuid = approval_uuid(&answer);
        assert_eq!(agent.decide(&uuid, json!({"approved": false})).await.0, 200);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "a turn and a decision took {:?}",
            started.elapsed()
        );
    }
    agent
        .wait_log("notification attempt failed; retrying")
        .await;
    let stopping = Instant::now();
    let status = agent.stop().expect("the agent ran");
    assert!(status.success(), "{status:?}");
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "shutdown waited {:?} for the receivers",
        stopping.elapsed()
    );
}

/// One JSON-RPC call on `POST /a2a` with `key` as `x-api-key`.
async fn rpc_as(agent: &Agent, key: Option<&str>, method: &str, params: Value) -> Value {
    let headers: Vec<(&str, &str)> = key.map(|k| ("x-api-key", k)).into_iter().collect();
    rpc_with(agent, &headers, method, params).await
}

fn push_config(url: &str, id: Option<&str>) -> Value {
    let mut config = json!({"url": url, "token": "tok-123",
        "authentication": {"schemes": ["Bearer"], "credentials": "cred-456"}});
    if let Some(id) = id {
        config["id"] = json!(id);
    }
    config
}

fn state_of(request: &Recorded) -> String {
    body(request)["status"]["state"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

async fn push_agent(extra: &str, options: AgentOptions) -> (tempfile::TempDir, Agent) {
    let (dir, config) = config_with("agent-resources.yaml", extra);
    let agent = Agent::start(&config, options).await;
    (dir, agent)
}

#[tokio::test]
async fn push_notifications_follow_the_task_until_it_completes() {
    let fake = FakeHttp::start(vec![Reply::status(200, "{}")]).await;
    let (_dir, agent) = push_agent(
        "a2a_push: { allow_private_networks: true }",
        AgentOptions::default(),
    )
    .await;
    let (_, card) = agent.get("/.well-known/agent-card.json").await;
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    let sent = rpc(&agent, "message/send", send_params(ADD, None)).await;
    let task = sent["result"]["id"].as_str().expect("a task").to_string();
    assert_eq!(sent["result"]["status"]["state"], "input-required");

    let url = format!("{}/cb", fake.url);
    let set = rpc(
        &agent,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": task, "pushNotificationConfig": push_config(&url, None)}),
    )
    .await;
    let stored = &set["result"];
    assert_eq!(stored["taskId"], task, "{set}");
    assert_eq!(stored["pushNotificationConfig"]["id"], task);
    assert_eq!(stored["pushNotificationConfig"]["token"], "tok-123");
    assert!(
        stored["pushNotificationConfig"]["authentication"]
            .get("credentials")
            .is_none()
    );

    let first = requests_to(&fake, "/cb", 1, Duration::from_secs(10)).await;
    assert_eq!(state_of(&first[0]), "input-required");
    assert_eq!(body(&first[0])["id"], task);
    assert_eq!(body(&first[0])["kind"], "task");
    assert_eq!(
        header(&first[0], "x-a2a-notification-token"),
        Some("tok-123")
    );
    assert_eq!(header(&first[0], "authorization"), Some("Bearer cred-456"));

    let approved = rpc(&agent, "message/send", send_params("approved", Some(&task))).await;
    assert_eq!(
        approved["result"]["status"]["state"], "completed",
        "{approved}"
    );
    let both = requests_to(&fake, "/cb", 2, Duration::from_secs(10)).await;
    assert_eq!(state_of(&both[1]), "completed");
    assert_eq!(body(&both[1])["artifacts"][0]["parts"][0]["kind"], "text");
    assert_eq!(
        header(&both[1], "x-a2a-notification-token"),
        Some("tok-123")
    );
    assert_eq!(both.len(), 2, "one notification per state");
    // The same answer as tasks/get.
    let got = rpc(&agent, "tasks/get", json!({"id": task})).await;
    assert_eq!(got["result"]["status"], body(&both[1])["status"]);
    manage_configs(&agent, &task, &url).await;
}

#[tokio::test]
async fn a_task_continued_after_its_final_state_is_notified_again_once_per_state() {
    let fake = FakeHttp::start(vec![Reply::status(200, "{}")]).await;
    let (_dir, agent) = push_agent(
        "a2a_push: { allow_private_networks: true }",
        AgentOptions::default(),
    )
    .await;
    let sent = rpc(&agent, "message/send", send_params(ADD, None)).await;
    let task = sent["result"]["id"].as_str().expect("a task").to_string();
    let url = format!("{}/cb", fake.url);
    let config = json!({"taskId": task, "pushNotificationConfig": push_config(&url, None)});
    rpc(&agent, "tasks/pushNotificationConfig/set", config).await;
    requests_to(&fake, "/cb", 1, Duration::from_secs(10)).await;

    rpc(&agent, "message/send", send_params("approved", Some(&task))).await;
    let two = requests_to(&fake, "/cb", 2, Duration::from_secs(10)).await;
    assert_eq!(state_of(&two[1]), "completed");

    // Continued after its final state: notified again.
    let again = rpc(&agent, "message/send", send_params(ADD, Some(&task))).await;
    assert_eq!(
        again["result"]["status"]["state"], "input-required",
        "{again}"
    );
    let three = requests_to(&fake, "/cb", 3, Duration::from_secs(10)).await;
    assert_eq!(state_of(&three[2]), "input-required");
    rpc(&agent, "message/send", send_params("approved", Some(&task))).await;
    let four = requests_to(&fake, "/cb", 4, Duration::from_secs(10)).await;
    assert_eq!(state_of(&four[3]), "completed");
    // Reads change nothing: no state is sent twice.
    rpc(&agent, "tasks/get", json!({"id": task})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let states: Vec<String> = requests_to(&fake, "/cb", 4, Duration::from_secs(1))
        .await
        .iter()
        .map(state_of)
        .collect();
    assert_eq!(
        states,
        ["input-required", "completed", "input-required", "completed"]
    );
}

/// get, list and delete on a task with one config.
async fn manage_configs(agent: &Agent, task: &str, url: &str) {
    let set = rpc(
        agent,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": task, "pushNotificationConfig": push_config(url, Some("second"))}),
    )
    .await;
    assert_eq!(
        set["result"]["pushNotificationConfig"]["id"], "second",
        "{set}"
    );
    let listed = rpc(
        agent,
        "tasks/pushNotificationConfig/list",
        json!({"id": task}),
    )
    .await;
    assert_eq!(
        listed["result"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    let got = rpc(
        agent,
        "tasks/pushNotificationConfig/get",
        json!({"id": task, "pushNotificationConfigId": "second"}),
    )
    .await;
    assert_eq!(got["result"]["pushNotificationConfig"]["url"], url);
    let deleted = rpc(
        agent,
        "tasks/pushNotificationConfig/delete",
        json!({"id": task, "pushNotificationConfigId": "second"}),
    )
    .await;
    assert!(
        deleted["result"].is_null() && deleted.get("error").is_none(),
        "{deleted}"
    );
    let listed = rpc(
        agent,
        "tasks/pushNotificationConfig/list",
        json!({"id": task}),
    )
    .await;
    assert_eq!(listed["result"].as_array().map(Vec::len), Some(1));
    for method in [
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/delete",
    ] {
        let missing = rpc(
            agent,
            method,
            json!({"id": task, "pushNotificationConfigId": "nope"}),
        )
        .await;
        assert_eq!(missing["error"]["code"], -32602, "{missing}");
    }
}

#[tokio::test]
async fn a_config_sent_with_the_message_gets_the_first_state() {
    let fake = FakeHttp::start(vec![Reply::status(200, "{}")]).await;
    let (_dir, agent) = push_agent(
        "a2a_push: { allowed_hosts: [127.0.0.1] }",
        AgentOptions::default(),
    )
    .await;
    let mut params = send_params(ADD, None);
    params["configuration"] =
        json!({"pushNotificationConfig": push_config(&format!("{}/m", fake.url), Some("m"))});
    let sent = rpc(&agent, "message/send", params).await;
    let task = sent["result"]["id"].as_str().expect("a task").to_string();
    let first = requests_to(&fake, "/m", 1, Duration::from_secs(10)).await;
    assert_eq!(state_of(&first[0]), "input-required");
    assert_eq!(body(&first[0])["id"], task);
    let canceled = rpc(&agent, "tasks/cancel", json!({"id": task})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    let both = requests_to(&fake, "/m", 2, Duration::from_secs(10)).await;
    assert_eq!(state_of(&both[1]), "canceled");
}

#[tokio::test]
async fn callbacks_on_loopback_and_odd_schemes_are_refused_by_default() {
    let (_dir, agent) = push_agent("", AgentOptions::default()).await;
    let sent = rpc(&agent, "message/send", send_params(ADD, None)).await;
    let task = sent["result"]["id"].as_str().expect("a task").to_string();
    for (url, why) in [
        ("http://127.0.0.1:9/cb", "loopback"),
        ("http://localhost:9/cb", "loopback"),
        ("http://[::1]:9/cb", "loopback"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://10.0.0.7/cb", "private"),
        ("file:///etc/passwd", "scheme"),
    ] {
        let refused = rpc(
            &agent,
            "tasks/pushNotificationConfig/set",
            json!({"taskId": task, "pushNotificationConfig": {"url": url}}),
        )
        .await;
        assert_eq!(refused["error"]["code"], -32602, "{url}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{url}: {message}");
    }
    let listed = rpc(
        &agent,
        "tasks/pushNotificationConfig/list",
        json!({"id": task}),
    )
    .await;
    assert_eq!(listed["result"], json!([]));
    // Refused before anything runs: no task is created.
    let before = agent.get("/conversations").await.1["summary"]["total"].clone();
    let mut params = send_params(ADD, None);
    params["configuration"] = json!({"pushNotificationConfig": {"url": "http://127.0.0.1:9/"}});
    let refused = rpc(&agent, "message/send", params).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        agent.get("/conversations").await.1["summary"]["total"],
        before
    );
    let unknown = rpc(
        &agent,
        "tasks/pushNotificationConfig/list",
        json!({"id": uuid::Uuid::new_v4().to_string()}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32001);
}

#[tokio::test]
async fn only_the_owner_manages_push_configs_and_they_survive_a_restart() {
    let fake = FakeHttp::start(vec![Reply::status(200, "{}")]).await;
    let extra = "a2a_push: { allow_private_networks: true }\nauth:\n  api_keys:\n    \
        - { name: alice, key_env: ALICE_KEY }\n    - { name: bob, key_env: BOB_KEY }\n    \
        - { name: root, key_env: ADMIN_KEY, roles: [admin] }\n";
    let keys = [
        ("ALICE_KEY", ALICE_KEY),
        ("BOB_KEY", BOB_KEY),
        ("ADMIN_KEY", ADMIN_KEY),
    ];
    let (dir, config) = config_with("agent-resources.yaml", extra);
    let mut agent = Agent::start(&config, AgentOptions::with_env(&keys)).await;
    let alice = Some(ALICE_KEY);
    let sent = rpc_as(&agent, alice, "message/send", send_params(ADD, None)).await;
    let task = sent["result"]["id"].as_str().expect("a task").to_string();
    let url = format!("{}/alice", fake.url);
    let set_params =
        json!({"taskId": task, "pushNotificationConfig": push_config(&url, Some("a"))});
    let set = rpc_as(
        &agent,
        alice,
        "tasks/pushNotificationConfig/set",
        set_params.clone(),
    )
    .await;
    assert!(set.get("error").is_none(), "{set}");
    let id_params = json!({"id": task, "pushNotificationConfigId": "a"});
    for method in ["get", "list", "delete"] {
        let method = format!("tasks/pushNotificationConfig/{method}");
        let bob = rpc_as(&agent, Some(BOB_KEY), &method, id_params.clone()).await;
        assert_eq!(bob["error"]["code"], -32001, "{method}: {bob}");
        let admin = rpc_as(&agent, Some(ADMIN_KEY), &method, id_params.clone()).await;
        assert_eq!(admin["error"]["code"], -32010, "{method}: {admin}");
    }
    let bob = rpc_as(
        &agent,
        Some(BOB_KEY),
        "tasks/pushNotificationConfig/set",
        set_params,
    )
    .await;
    assert_eq!(bob["error"]["code"], -32001, "{bob}");
    let (status, anonymous) = call_with(
        &agent,
        &[],
        "tasks/pushNotificationConfig/list",
        json!({"id": task}),
    )
    .await;
    assert_eq!(status, 401, "{anonymous}");
    // The REST view of the conversation does not show the callback.
    let (_, conversation) = agent
        .get_with(
            &format!("/conversations/{task}"),
            &[("x-api-key", ALICE_KEY)],
        )
        .await;
    assert!(!conversation.to_string().contains("tok-123"));

    let data_dir = agent.data_dir.clone();
    agent.stop();
    let options = AgentOptions {
        data_dir: Some(data_dir),
        ..AgentOptions::with_env(&keys)
    };
    let agent = Agent::start(&config, options).await;
    let listed = rpc_as(
        &agent,
        alice,
        "tasks/pushNotificationConfig/list",
        json!({"id": task}),
    )
    .await;
    assert_eq!(
        listed["result"][0]["pushNotificationConfig"]["id"], "a",
        "{listed}"
    );
    // The restarted agent still follows the task.
    let before = fake.requests().len();
    let canceled = rpc_as(&agent, alice, "tasks/cancel", json!({"id": task})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    let all = requests_to(&fake, "/alice", before + 1, Duration::from_secs(10)).await;
    assert_eq!(state_of(all.last().unwrap()), "canceled");
    drop(dir);
}

/// The configs of `task` as `agent` lists them (their ids).
async fn listed_ids(agent: &Agent, task: &str) -> Vec<String> {
    let method = "tasks/pushNotificationConfig/list";
    let listed = rpc(agent, method, json!({"id": task})).await;
    let configs = listed["result"].as_array().cloned().unwrap_or_default();
    configs
        .iter()
        .map(|c| {
            c["pushNotificationConfig"]["id"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_share_push_configs_and_the_replica_that_changes_a_task_notifies_it_once() {
    let fake = FakeHttp::start(vec![Reply::status(200, "{}")]).await;
    let db = asg_tests::pg::TestDb::create().await;
    let (_dir, config) = config_with(
        "agent-resources.yaml",
        "a2a_push: { allow_private_networks: true }",
    );
    let on_db = || AgentOptions::with_env(&[("DATABASE_URL", db.url.as_str())]);
    let replicas = futures::future::join_all((0..3).map(|_| Agent::start(&config, on_db()))).await;
    let (a, b, c) = (&replicas[0], &replicas[1], &replicas[2]);
    let sent = rpc(a, "message/send", send_params(ADD, None)).await;
    let task = sent["result"]["id"].as_str().expect("a task").to_string();
    let url = format!("{}/cb", fake.url);
    let set = json!({"taskId": task, "pushNotificationConfig": push_config(&url, Some("p"))});
    rpc(a, "tasks/pushNotificationConfig/set", set).await;
    requests_to(&fake, "/cb", 1, Duration::from_secs(10)).await;
    // Every replica answers alike.
    for replica in [b, c] {
        assert_eq!(listed_ids(replica, &task).await, ["p"]);
        let got = rpc(
            replica,
            "tasks/pushNotificationConfig/get",
            json!({"id": task, "pushNotificationConfigId": "p"}),
        )
        .await;
        assert_eq!(got["result"]["pushNotificationConfig"]["url"], url, "{got}");
    }

    // Decided on B (A2A): B notifies, once.
    let approved = rpc(b, "message/send", send_params("approved", Some(&task))).await;
    assert_eq!(
        approved["result"]["status"]["state"], "completed",
        "{approved}"
    );
    requests_to(&fake, "/cb", 2, Duration::from_secs(10)).await;
    // Continued on C, decided on B over REST.
    let again = rpc(c, "message/send", send_params(ADD, Some(&task))).await;
    assert_eq!(
        again["result"]["status"]["state"], "input-required",
        "{again}"
    );
    requests_to(&fake, "/cb", 3, Duration::from_secs(10)).await;
    let uuid = c.conversation(&task).await["pending_approval"]["uuid"]
        .as_str()
        .expect("a pending approval")
        .to_string();
    let (status, _) = b.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200);
    requests_to(&fake, "/cb", 4, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let states: Vec<String> = fake.requests().iter().map(state_of).collect();
    assert_eq!(
        states,
        ["input-required", "completed", "input-required", "completed"],
        "one notification per state, whichever replicas saw it"
    );
    // A delete on C is seen by A.
    let delete = json!({"id": task, "pushNotificationConfigId": "p"});
    rpc(c, "tasks/pushNotificationConfig/delete", delete).await;
    assert!(listed_ids(a, &task).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replicas_own_push_file_is_imported_into_the_database_at_start() {
    let fake = FakeHttp::start(vec![Reply::status(200, "{}")]).await;
    let db = asg_tests::pg::TestDb::create().await;
    let (_dir, config) = config_with(
        "agent-resources.yaml",
        "a2a_push: { allow_private_networks: true }",
    );
    let on_db = || AgentOptions::with_env(&[("DATABASE_URL", db.url.as_str())]);
    let mut a = Agent::start(&config, on_db()).await;
    let sent = rpc(&a, "message/send", send_params(ADD, None)).await;
    let task = sent["result"]["id"].as_str().expect("a task").to_string();
    a.stop();
    // What a replica kept on its disk before the configs moved.
    let url = format!("{}/old", fake.url);
    let mut old = push_config(&url, Some("old"));
    old["token"] = json!("tok-old");
    let file = json!({"tasks": {&task: {"context_id": &task, "configs": [old]}}});
    let path = a.data_dir.join("a2a-push.json");
    std::fs::write(&path, file.to_string()).unwrap();
    let options = AgentOptions {
        data_dir: Some(a.data_dir.clone()),
        ..on_db()
    };
    let _a = Agent::start(&config, options).await;
    poll("the import", Duration::from_secs(10), || {
        let imported = !path.exists() && path.with_extension("json.imported").exists();
        async move { imported.then_some(()) }
    })
    .await;
    let b = Agent::start(&config, on_db()).await;
    assert_eq!(listed_ids(&b, &task).await, ["old"]);
    rpc(&b, "message/send", send_params("approved", Some(&task))).await;
    let sent = requests_to(&fake, "/old", 1, Duration::from_secs(10)).await;
    assert_eq!(state_of(&sent[0]), "completed");
    assert_eq!(
        header(&sent[0], "x-a2a-notification-token"),
        Some("tok-old")
    );
}

#[tokio::test]
async fn a_config_created_over_v1_gets_v1_stream_responses() {
    let fake = FakeHttp::start(vec![Reply::status(200, "{}")]).await;
    let (_dir, agent) = push_agent(
        "a2a_push: { allow_private_networks: true }",
        AgentOptions::default(),
    )
    .await;
    let sent = rpc(&agent, "message/send", send_params(ADD, None)).await;
    let task = sent["result"]["id"].as_str().expect("a task").to_string();
    let url = format!("{}/v1", fake.url);
    let created = rpc(
        &agent,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": url, "token": "tok-v1"}),
    )
    .await;
    assert_eq!(created["result"]["url"], url, "{created}");
    assert!(created["result"].get("asgNotifyAs").is_none(), "{created}");
    let first = requests_to(&fake, "/v1", 1, Duration::from_secs(10)).await;
    let streamed = body(&first[0]);
    assert_eq!(streamed["task"]["id"], task, "{streamed}");
    assert_eq!(
        streamed["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert!(streamed.get("kind").is_none(), "{streamed}");
    assert_eq!(
        header(&first[0], "x-a2a-notification-token"),
        Some("tok-v1")
    );
    rpc(&agent, "message/send", send_params("approved", Some(&task))).await;
    let both = requests_to(&fake, "/v1", 2, Duration::from_secs(10)).await;
    assert_eq!(
        body(&both[1])["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}
