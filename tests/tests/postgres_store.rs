//! The PostgreSQL store with the real `agent` binary and a real database
//! (a fresh one per test): state lives in the database, not the data
//! directory; `agent migrate`; `/health` and the
//! API when the database goes away and comes back.

use std::process::Command;
use std::time::{Duration, Instant};

use asg_tests::pg::TestDb;
use asg_tests::{Agent, AgentOptions, approval_uuid, binary, conversation_id, testdata};
use serde_json::json;

/// Options for an agent on `db` with a data directory of its own.
fn on(db: &TestDb) -> AgentOptions {
    AgentOptions::with_env(&[("DATABASE_URL", &db.url)])
}

#[tokio::test]
async fn a_waiting_approval_lives_in_the_database_across_a_crash() {
    let db = TestDb::create().await;
    let mut first = Agent::start(&testdata("agent-resources.yaml"), on(&db)).await;
    let (_, health) = first.get("/health").await;
    assert_eq!(health["details"]["store"], "ok", "{health}");
    let (_, answer) = first.say_new("add resource pg-1 with value 1").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let uuid = approval_uuid(&answer);
    let id = conversation_id(&answer);
    first.kill();

    // Another process, another (empty) data directory, the same database.
    let second = Agent::start(&testdata("agent-resources.yaml"), on(&db)).await;
    let (_, listed) = second.get("/approvals").await;
    assert_eq!(listed["approvals"][0]["uuid"], json!(uuid), "{listed}");
    let (status, done) = second.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["conversation"]["status"], "active");
    let (again, _) = second.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(again, 409, "decided once");
    let shown = second.conversation(&id).await;
    let added = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["tool_result"]["name"] == "resources_add")
        .count();
    assert_eq!(added, 1, "{shown}");
}

#[tokio::test]
async fn migrate_creates_the_schema_and_says_what_it_needs() {
    let db = TestDb::create().await;
    let config = testdata("agent-resources.yaml");
    let run = |url: Option<&str>| {
        let mut command = Command::new(binary("agent"));
        command.args(["migrate", "--config"]).arg(&config);
        command.env_remove("DATABASE_URL");
        if let Some(url) = url {
            command.env("DATABASE_URL", url);
        }
        command.output().expect("run agent migrate")
    };
    let migrated = run(Some(&db.url));
    let out = String::from_utf8_lossy(&migrated.stdout);
    assert!(
        migrated.status.success(),
        "{out} {}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    assert!(out.contains("is migrated"), "{out}");
    // Twice is fine.
    assert!(run(Some(&db.url)).status.success());
    let without = run(None);
    assert!(!without.status.success());
    assert!(String::from_utf8_lossy(&without.stderr).contains("DATABASE_URL"));
    // A password in the URL never shows.
    let wrong = run(Some("postgres://agent:pw-s3cr3t@127.0.0.1:1/nowhere"));
    assert!(!wrong.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&wrong.stdout),
        String::from_utf8_lossy(&wrong.stderr)
    );
    assert!(said.contains("127.0.0.1:1/nowhere"), "{said}");
    assert!(!said.contains("pw-s3cr3t"), "{said}");
}

#[tokio::test]
async fn a_database_that_goes_away_is_a_503_and_the_agent_recovers_when_it_returns() {
    let db = TestDb::create().await;
    let agent = Agent::start(&testdata("agent-resources.yaml"), on(&db)).await;
    let (_, kept) = agent.say_new("list resources").await;
    let id = conversation_id(&kept);

    db.admin("ALTER DATABASE {db} ALLOW_CONNECTIONS false")
        .await;
    db.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db}'")
        .await;
    // The store pings the database every 2 s; /health says what it saw.
    let deadline = Instant::now() + Duration::from_secs(15);
    let (status, health) = loop {
        let (status, health) = agent.get("/health").await;
        if status != 200 || Instant::now() > deadline {
            break (status, health);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status, 503, "{health}");
    assert_eq!(health["status"], "unavailable");
    assert_eq!(health["details"]["store"], "unavailable");
    let (status, refused) = agent.say(&id, "list resources").await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["error"]["code"], "storage_unavailable", "{refused}");

    db.admin("ALTER DATABASE {db} ALLOW_CONNECTIONS true").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _) = agent.get("/health").await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the agent never recovered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, answer) = agent.say(&id, "list resources").await;
    assert_eq!(status, 200, "{answer}");
    // Nothing was lost: the first turn is still there.
    let shown = agent.conversation(&id).await;
    let users = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert!(users >= 2, "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_waiting_approvals_survive_a_restart_and_each_runs_once() {
    let db = TestDb::create().await;
    let config = testdata("agent-resources.yaml");
    let mut first = Agent::start(&config, on(&db)).await;
    let asked = (0..100).map(|n| {
        let first = &first;
        async move {
            let (status, answer) = first
                .say_new(&format!("add resource r-{n} with value {n}"))
                .await;
            assert_eq!(status, 201, "{answer}");
            approval_uuid(&answer)
        }
    });
    let mut asked: Vec<String> = futures::future::join_all(asked).await;
    first.stop();

    let second = Agent::start(&config, on(&db)).await;
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(cursor) => format!("/approvals?limit=30&cursor={cursor}"),
            None => "/approvals?limit=30".to_string(),
        };
        let (status, page) = second.get(&query).await;
        assert_eq!(status, 200, "{page}");
        for approval in page["approvals"].as_array().unwrap() {
            listed.push(approval["uuid"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    listed.sort();
    asked.sort();
    assert_eq!(listed, asked, "every waiting approval is listed once");

    // Decided all at once (saves committed together): each runs once.
    let decided = asked
        .iter()
        .map(|uuid| second.decide(uuid, json!({"approved": true})));
    for (status, body) in futures::future::join_all(decided).await {
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(second.resource_names().await.len(), 100);
    let (_, left) = second.get("/approvals").await;
    assert_eq!(left["approvals"], json!([]));
    let (_, all) = second.get("/conversations?status=waiting_approval").await;
    assert_eq!(all["summary"]["waiting_approval"], 0, "{all}");
}
