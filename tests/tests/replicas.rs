//! Three real `agent` processes on one PostgreSQL database, as replicas
//! behind a load balancer: any replica serves any conversation and
//! approval, an approval runs once whichever replicas the decisions hit,
//! live events follow a turn that runs elsewhere, a replica killed in the
//! middle of an approved call is taken over (the call reported "may have
//! run", never re-run), a rolling restart loses no waiting approval, and
//! the audit trail of a conversation decided on two replicas is one table
//! in the database, in order.

use std::time::{Duration, Instant};

use asg_tests::a2a::{rpc, send_params};
use asg_tests::pg::TestDb;
use asg_tests::sse::EventStream;
use asg_tests::{Agent, AgentOptions, approval_uuid, conversation_id, poll, sample, testdata};
use futures::future::join_all;
use serde_json::{Value, json};

/// Options for a replica on `db` (each with a data directory of its own).
fn on(db: &TestDb, env: &[(&str, &str)]) -> AgentOptions {
    let mut pairs = vec![("DATABASE_URL", db.url.as_str())];
    pairs.extend_from_slice(env);
    AgentOptions::with_env(&pairs)
}

async fn replicas(db: &TestDb, env: &[(&str, &str)]) -> Vec<Agent> {
    let config = testdata("agent-resources.yaml");
    join_all((0..3).map(|_| Agent::start(&config, on(db, env)))).await
}

/// How many times `tool` ran in the conversation (its results).
fn runs(conversation: &Value, tool: &str) -> usize {
    conversation["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["tool_result"]["name"] == tool)
        .count()
}

/// Polls `agent` until the conversation satisfies `done` (or panics
/// after `wait`).
async fn wait_until(
    agent: &Agent,
    id: &str,
    wait: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + wait;
    loop {
        let conversation = agent.conversation(id).await;
        if done(&conversation) {
            return conversation;
        }
        assert!(Instant::now() < deadline, "never reached: {conversation}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The value of the sample `series` in the agent's `GET /metrics` (0
/// when absent).
async fn metric(agent: &Agent, series: &str) -> f64 {
    sample(&agent.metrics().await, series).unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn any_replica_serves_any_conversation_and_an_approval_runs_once_across_three() {
    let db = TestDb::create().await;
    let agents = replicas(&db, &[]).await;
    let (_, answer) = agents[0].say_new("add resource rep-1 with value 1").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let (id, uuid) = (conversation_id(&answer), approval_uuid(&answer));
    for agent in &agents[1..] {
        let shown = agent.conversation(&id).await;
        assert_eq!(shown["status"], "waiting_approval", "{shown}");
        let (_, listed) = agent.get("/approvals").await;
        assert_eq!(listed["approvals"][0]["uuid"], json!(uuid), "{listed}");
        let (_, page) = agent.get("/conversations").await;
        assert_eq!(page["summary"]["waiting_approval"], 1, "{page}");
    }
    // A message to another replica meets the same conflict as on the first.
    let (status, refused) = agents[2].say(&id, "and another").await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "waiting_approval", "{refused}");

    // 50 concurrent approvals spread over the three: one runs the call.
    let decisions = (0..50).map(|n| agents[n % 3].decide(&uuid, json!({"approved": true})));
    let statuses: Vec<u16> = join_all(decisions)
        .await
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        49,
        "{statuses:?}"
    );
    for agent in &agents {
        let shown = agent.conversation(&id).await;
        assert_eq!(runs(&shown, "resources_add"), 1, "{shown}");
        assert_eq!(shown["status"], "active", "{shown}");
    }
    // Each replica counted its claims on the shared store.
    let mut taken = 0.0;
    for agent in &agents {
        taken += metric(agent, r#"asg_store_claims_total{result="taken"}"#).await
            + metric(agent, r#"asg_store_claims_total{result="waited"}"#).await;
    }
    assert!(taken >= 2.0, "claims counted: {taken}");
    // A replica with no cached copy answers the next turn from the store.
    let (status, next) = agents[1].say(&id, "list resources").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(runs(&next["conversation"], "resources_add"), 1, "{next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stream_on_one_replica_follows_a_turn_on_another() {
    let db = TestDb::create().await;
    let agents = replicas(&db, &[]).await;
    let (_, answer) = agents[0].say_new("add resource rep-2 with value 2").await;
    let (id, uuid) = (conversation_id(&answer), approval_uuid(&answer));
    let url = format!("{}/conversations/{id}/events", agents[1].url);
    let (status, events) = EventStream::open(&url, &[]).await;
    assert_eq!(status, 200);
    let mut events = events.unwrap();
    assert_eq!(
        events.next_of("snapshot").await["conversation"]["id"],
        json!(id)
    );

    let (status, decided) = agents[2].decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{decided}");
    // What a turn running on this replica would send, in order.
    let mut seen: Vec<Value> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.iter().any(|e| e["type"] == "turn_finished") {
        assert!(Instant::now() < deadline, "no turn_finished: {seen:?}");
        seen.extend(events.within(Duration::from_millis(200)).await);
    }
    let kinds: Vec<&str> = seen.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = |kind: &str| kinds.iter().position(|k| *k == kind);
    let resolved = &seen[at("approval_resolved").expect("approval_resolved")];
    assert_eq!(resolved["uuid"], json!(uuid), "{resolved}");
    assert_eq!(resolved["decision"]["approved"], true, "{resolved}");
    assert!(
        seen.iter()
            .any(|e| e["message"]["tool_result"]["name"] == "resources_add"),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|e| e["type"] == "status" && e["status"] == "active"),
        "{seen:?}"
    );
    let started = at("turn_started").expect("turn_started");
    assert!(Some(started) < at("approval_resolved"), "{kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_killed_in_an_approved_call_is_taken_over_and_the_call_never_reruns() {
    let db = TestDb::create().await;
    let config = testdata("agent-resources.yaml");
    // The first replica's tool call takes long enough to be killed in it.
    let mut slow = Agent::start(&config, on(&db, &[("MCP_RESOURCES_DELAY_MS", "30000")])).await;
    let others = join_all((0..2).map(|_| Agent::start(&config, on(&db, &[])))).await;
    let (_, answer) = slow.say_new("add resource rep-3 with value 3").await;
    let (id, uuid) = (conversation_id(&answer), approval_uuid(&answer));
    let client = slow.http.clone();
    let decide = format!("{}/approvals/{uuid}", slow.url);
    let _decision = tokio::spawn(async move {
        client
            .post(decide)
            .json(&json!({"approved": true}))
            .send()
            .await
    });
    wait_until(&others[0], &id, Duration::from_secs(10), |c| {
        c["pending_approval"]["state"] == "executing"
    })
    .await;
    slow.kill();
    let killed = Instant::now();

    // Within the lease time (10 s) plus a sweep, a survivor records it.
    let taken = wait_until(&others[1], &id, Duration::from_secs(30), |c| {
        c["status"] == "active" && c["pending_approval"].is_null()
    })
    .await;
    assert!(
        killed.elapsed() < Duration::from_secs(25),
        "{:?}",
        killed.elapsed()
    );
    let messages = taken["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m["content"].as_str().unwrap_or("").contains("may have run")),
        "{taken}"
    );
    assert_eq!(
        runs(&taken, "resources_add"),
        1,
        "one recorded result, never re-run: {taken}"
    );
    let took_over = others[0].log() + &others[1].log();
    assert!(took_over.contains("taking it over"), "{took_over}");
    // Counted once, by the survivor that took it over (just after its
    // save, which the others may see first).
    let takeovers = poll("the takeover counted", Duration::from_secs(5), || async {
        let sum = metric(&others[0], "asg_store_lease_takeovers_total").await
            + metric(&others[1], "asg_store_lease_takeovers_total").await;
        (sum > 0.0).then_some(sum)
    })
    .await;
    assert_eq!(takeovers, 1.0);
    // The conversation goes on on the survivors.
    let (status, next) = others[0].say(&id, "list resources").await;
    assert_eq!(status, 200, "{next}");
    let (again, _) = others[0].decide(&uuid, json!({"approved": true})).await;
    assert_eq!(again, 409, "an interrupted approval is not decided again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_of_every_replica_keeps_a_hundred_waiting_approvals() {
    let db = TestDb::create().await;
    let config = testdata("agent-resources.yaml");
    let mut agents = replicas(&db, &[]).await;
    let asked = (0..100).map(|n| {
        let agent = &agents[n % 3];
        async move {
            agent
                .say_new(&format!("add resource roll-{n} with value {n}"))
                .await
        }
    });
    let mut waiting = Vec::new();
    for (status, answer) in join_all(asked).await {
        assert_eq!(status, 201, "{answer}");
        waiting.push((conversation_id(&answer), approval_uuid(&answer)));
    }
    for agent in agents.iter_mut() {
        let stopped = agent.stop();
        assert!(stopped.is_some_and(|s| s.success()), "{}", agent.log());
        *agent = Agent::start(&config, on(&db, &[])).await;
    }
    // Listed once each across pages, on any replica.
    let mut listed = Vec::new();
    let mut cursor = String::new();
    for page in 0.. {
        let agent = &agents[page % 3];
        let (status, body) = agent
            .get(&format!("/approvals?limit=30&cursor={cursor}"))
            .await;
        assert_eq!(status, 200, "{body}");
        for approval in body["approvals"].as_array().unwrap() {
            listed.push(approval["uuid"].as_str().unwrap().to_string());
        }
        match body["next_cursor"].as_str() {
            Some(next) => cursor = next.to_string(),
            None => break,
        }
    }
    let mut expected: Vec<String> = waiting.iter().map(|(_, uuid)| uuid.clone()).collect();
    expected.sort();
    listed.sort();
    assert_eq!(listed, expected);
    // And each is approvable, on any replica, once.
    let decisions = waiting
        .iter()
        .enumerate()
        .map(|(n, (_, uuid))| agents[(n + 1) % 3].decide(uuid, json!({"approved": true})));
    let statuses: Vec<u16> = join_all(decisions)
        .await
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    for (n, (id, _)) in waiting.iter().enumerate().step_by(7) {
        let shown = agents[n % 3].conversation(id).await;
        assert_eq!(runs(&shown, "resources_add"), 1, "{shown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_is_one_webhook_and_reaches_every_replicas_inbox() {
    use asg_tests::fake_http::{FakeHttp, Reply};
    let fake = FakeHttp::start(vec![Reply::status(204, "")]).await;
    let hooks = format!(
        "approval:\n  webhooks:\n    - url: {}/hooks\n      secret_env: ASG_WEBHOOK_SECRET\n",
        fake.url
    );
    let (_dir, config) = asg_tests::config_with("agent-resources.yaml", &hooks);
    let db = TestDb::create().await;
    let env = [("ASG_WEBHOOK_SECRET", "webhook-secret-0123456789")];
    let agents = join_all((0..3).map(|_| Agent::start(&config, on(&db, &env)))).await;
    // An operator's inbox on a replica that neither raises nor decides.
    let (_, inbox) = EventStream::open(&format!("{}/events", agents[1].url), &[]).await;
    let mut inbox = inbox.unwrap();
    inbox.next_of("pending").await;
    let (_, answer) = agents[0].say_new("add resource rep-5 with value 5").await;
    let (id, uuid) = (conversation_id(&answer), approval_uuid(&answer));
    // The two other replicas follow the conversation (an open stream).
    let mut streams = Vec::new();
    for agent in &agents[1..] {
        let url = format!("{}/conversations/{id}/events", agent.url);
        let (_, events) = EventStream::open(&url, &[]).await;
        streams.push(events.unwrap());
    }
    let requested = inbox.next_of("approval_requested").await;
    assert_eq!(requested["approval"]["uuid"], json!(uuid), "{requested}");
    assert_eq!(requested["approval"]["tool_name"], "resources_add");
    let (status, _) = agents[2].decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200);
    let resolved = inbox.next_of("approval_resolved").await;
    assert_eq!(resolved["uuid"], json!(uuid), "{resolved}");
    assert_eq!(resolved["decision"]["approved"], true, "{resolved}");
    for events in &mut streams {
        events.next_of("approval_resolved").await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let kinds: Vec<String> = fake
        .requests()
        .iter()
        .filter_map(|r| {
            r.headers
                .iter()
                .find(|(name, _)| name == "x-asg-event")
                .map(|(_, value)| value.clone())
        })
        .collect();
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!(count("approval.requested"), 1, "{kinds:?}");
    assert_eq!(count("approval.decided"), 1, "{kinds:?}");
}

fn message(text: &str, task: Option<&str>, context: &str) -> Value {
    let mut params = send_params(text, task);
    params["message"]["contextId"] = json!(context);
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_a2a_task_keeps_its_clients_context_on_every_replica() {
    let db = TestDb::create().await;
    let agents = replicas(&db, &[]).await;
    let sent = rpc(
        &agents[0],
        "message/send",
        message("list resources", None, "ctx-lb-1"),
    )
    .await;
    let task = sent["result"]["id"].as_str().expect("a task").to_string();
    assert_eq!(sent["result"]["contextId"], "ctx-lb-1", "{sent}");
    for agent in &agents[1..] {
        let got = rpc(agent, "tasks/get", json!({"id": task})).await;
        assert_eq!(got["result"]["contextId"], "ctx-lb-1", "{got}");
    }
    // Another replica refuses a different context for the task, and
    // continues it in its own.
    let refused = rpc(
        &agents[2],
        "message/send",
        message("list resources", Some(&task), "ctx-other"),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let continued = rpc(
        &agents[1],
        "message/send",
        message("list resources", Some(&task), "ctx-lb-1"),
    )
    .await;
    assert_eq!(continued["result"]["contextId"], "ctx-lb-1", "{continued}");
    assert_eq!(continued["result"]["id"], task.as_str(), "{continued}");
}

/// The audit lines of conversation `id` in the database, in order.
async fn audit_lines(db: &TestDb, id: &str) -> Vec<Value> {
    use sqlx::Connection;
    let mut connection = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let id = uuid::Uuid::parse_str(id).unwrap();
    sqlx::query_scalar("SELECT line FROM audit_log WHERE conversation = $1 ORDER BY id")
        .bind(id)
        .fetch_all(&mut connection)
        .await
        .expect("the audit_log table")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_trail_of_a_conversation_decided_on_two_replicas_is_one_table_in_order() {
    let db = TestDb::create().await;
    let config = testdata("agent-resources.yaml");
    let agents = join_all((0..2).map(|_| Agent::start(&config, on(&db, &[])))).await;
    let (_, first) = agents[0].say_new("add resource aud-1 with value 1").await;
    let (id, one) = (conversation_id(&first), approval_uuid(&first));
    let (status, _) = agents[0].decide(&one, json!({"approved": true})).await;
    assert_eq!(status, 200);
    let (status, second) = agents[1].say(&id, "add resource aud-2 with value 2").await;
    assert_eq!(status, 200, "{second}");
    let two = approval_uuid(&second);
    let rejected = json!({"approved": false, "reason": "not this one"});
    let (status, _) = agents[1].decide(&two, rejected).await;
    assert_eq!(status, 200);

    let lines = audit_lines(&db, &id).await;
    let seen: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|l| {
            let text = |key: &str| l[key].as_str().unwrap_or("");
            (text("event"), text("approval"), text("outcome"))
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("decision", one.as_str(), "executing"),
            ("outcome", one.as_str(), "succeeded"),
            ("decision", two.as_str(), "not_run"),
            // A refused call's outcome, as in audit.jsonl.
            ("outcome", two.as_str(), "failed"),
        ],
        "{lines:?}"
    );
    assert_eq!(lines[2]["decision"], "rejected");
    assert_eq!(lines[2]["reason"], "not this one");
    assert!(lines.iter().all(|l| l["conversation"] == json!(id)));
    for agent in &agents {
        let file = agent.data_dir.join("audit.jsonl");
        assert!(!file.exists(), "no trail on a replica's disk: {file:?}");
    }
}
