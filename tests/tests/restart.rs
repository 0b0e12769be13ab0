//! Restarts: TS-005 (a pending approval survives a restart), no orphaned
//! tool servers after SIGTERM, an approval interrupted between
//! "approved" and "result recorded" is reported, never run again, and the
//! JSON store's catalog kept across a kill, closed by a graceful stop and
//! rebuilt when it is gone, and more conversations saved than the agent
//! may open files, there after a kill.

use std::time::{Duration, Instant};

use asg_tests::{
    Agent, AgentOptions, approval_uuid, assert_error, conversation_id, mcp_children_for, testdata,
    tool_messages,
};
use serde_json::json;

fn on(dir: &std::path::Path) -> AgentOptions {
    AgentOptions {
        data_dir: Some(dir.to_path_buf()),
        ..AgentOptions::default()
    }
}

/// Waits (briefly) until no `mcp-resources` started for `dir` runs.
fn wait_no_children(dir: &std::path::Path) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = mcp_children_for(dir);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn ts005_pending_approval_survives_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let config = testdata("agent-resources.yaml");
    let mut first = Agent::start(&config, on(tmp.path())).await;
    let (status, answer) = first
        .say_new("create a server restart-1 with value 99")
        .await;
    assert_eq!(status, 201, "{answer}");
    let uuid = approval_uuid(&answer);
    let id = conversation_id(&answer);
    let args = answer["result"]["approval"]["tool_args"].clone();
    assert_eq!(args, json!({"name": "restart-1", "value": 99}));
    let (_, before) = first.get("/approvals").await;

    let children = mcp_children_for(tmp.path());
    assert!(
        !children.is_empty(),
        "the agent runs an mcp-resources child for its data dir"
    );
    let exit = first.stop().expect("the agent was running");
    assert!(
        exit.success(),
        "graceful stop exits 0: {exit:?}\n{}",
        first.log()
    );
    let left = wait_no_children(tmp.path());
    assert!(
        left.is_empty(),
        "orphaned mcp-resources after SIGTERM: {left:?}"
    );
    drop(first);

    let second = Agent::start(&config, on(tmp.path())).await;
    let (status, after) = second.get("/approvals").await;
    assert_eq!(status, 200);
    assert_eq!(
        after, before,
        "the same pending approvals after the restart"
    );
    let listed = &after["approvals"][0];
    assert_eq!(listed["uuid"], uuid.as_str());
    assert_eq!(listed["tool_args"], args);
    assert_eq!(second.conversation(&id).await["status"], "waiting_approval");

    let (status, approved) = second.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{approved}");
    let result = tool_messages(&approved["conversation"]).pop().unwrap();
    assert_eq!(result["tool_result"]["is_error"], false, "{result}");
    let resources = second.list_resources().await;
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(resources[0]["name"], "restart-1");
    assert_eq!(resources[0]["value"], 99);
}

#[tokio::test]
async fn an_interrupted_approval_is_reported_not_run_again() {
    let tmp = tempfile::tempdir().unwrap();
    let conversations = tmp.path().join("conversations");
    std::fs::create_dir_all(&conversations).unwrap();
    let id = uuid::Uuid::new_v4();
    let approval = uuid::Uuid::new_v4();
    let conversation = asg_tests::executing_conversation(id, approval);
    std::fs::write(
        conversations.join(format!("{id}.json")),
        serde_json::to_vec_pretty(&conversation).unwrap(),
    )
    .unwrap();

    let agent = Agent::start(&testdata("agent-resources.yaml"), on(tmp.path())).await;
    let stored = agent.conversation(&id.to_string()).await;
    assert_eq!(stored["status"], "active", "{stored}");
    assert!(stored["pending_approval"].is_null(), "{stored}");
    let messages = stored["messages"].as_array().unwrap();
    // The call's result says it may have run and was not run again; the
    // turn ends with an error answer saying it was interrupted.
    let result = &messages[messages.len() - 2];
    assert_eq!(result["role"], "tool", "{stored}");
    assert_eq!(result["tool_result"]["call_id"], "call_1");
    assert_eq!(result["tool_result"]["is_error"], true);
    let text = result["content"].as_str().unwrap();
    assert!(
        text.contains("Interrupted")
            && text.contains("NOT run again")
            && text.contains("may have run"),
        "{text}"
    );
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant", "{stored}");
    assert_eq!(last["is_error"], true, "{stored}");
    assert!(last["content"].as_str().unwrap().starts_with("Interrupted"));
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(approvals["approvals"], json!([]));
    // Counted as an approved call whose result is "interrupted".
    assert_eq!(
        asg_tests::sample(
            &agent.metrics().await,
            r#"asg_approved_calls_total{tool="resources_add",result="interrupted"}"#
        ),
        Some(1.0)
    );
    let got = agent
        .decide(&approval.to_string(), json!({"approved": true}))
        .await;
    assert_error(&got, 409);
    assert!(agent.resource_names().await.is_empty(), "not run again");
    // The recovery is saved: the file no longer holds an executing approval
    // (saves reach the files at the store's next checkpoint, within a
    // second or so).
    let file = conversations.join(format!("{id}.json"));
    let on_disk = asg_tests::poll("the recovery in the file", Duration::from_secs(10), || {
        let file = file.clone();
        async move {
            let on_disk: serde_json::Value =
                serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
            (on_disk["status"] == "active").then_some(on_disk)
        }
    })
    .await;
    assert!(on_disk["pending_approval"].is_null());
    // The conversation takes messages again.
    let (status, next) = agent.say(&id.to_string(), "list").await;
    assert_eq!(status, 200, "{next}");
}

#[tokio::test]
async fn sigterm_does_not_wait_for_open_event_streams() {
    use futures::StreamExt;

    let mut agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let (_, created) = agent.post("/conversations", serde_json::json!({})).await;
    let id = created["conversation"]["id"].as_str().unwrap().to_string();
    let response = agent
        .http
        .get(format!("{}/conversations/{id}/events", agent.url))
        .send()
        .await
        .unwrap();
    let mut stream = response.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("snapshot"));
    let started = std::time::Instant::now();
    let status = agent.stop().expect("the agent was running");
    assert!(status.success(), "{status}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "shutdown waited {:?} for an open event stream",
        started.elapsed()
    );
}

/// The catalog's recorded state (`closed`, or `open <boot id>`).
fn catalog_state(data_dir: &std::path::Path) -> String {
    let catalog = rusqlite::Connection::open(data_dir.join("index/catalog.sqlite3")).unwrap();
    catalog
        .query_row("SELECT value FROM meta WHERE key = 'state'", [], |row| {
            row.get(0)
        })
        .unwrap()
}

async fn summary(agent: &Agent) -> (u64, u64) {
    let (status, list) = agent.get("/conversations?limit=1").await;
    assert_eq!(status, 200, "{list}");
    let summary = &list["summary"];
    (
        summary["total"].as_u64().unwrap(),
        summary["waiting_approval"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn the_catalog_is_kept_across_a_kill_closed_by_a_stop_and_rebuilt_when_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let config = testdata("agent-resources.yaml");
    let mut first = Agent::start(&config, on(tmp.path())).await;
    for _ in 0..2 {
        assert_eq!(first.say_new("list resources").await.0, 201);
    }
    let (status, waiting) = first.say_new("create a server kept-1 with value 7").await;
    assert_eq!(status, 201, "{waiting}");
    let uuid = approval_uuid(&waiting);
    assert!(catalog_state(tmp.path()).starts_with("open "));
    first.kill();
    // A file the catalog does not know: a start that trusts the catalog
    // never reads it.
    let stray = tmp
        .path()
        .join("conversations")
        .join(format!("{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&stray, "{not json").unwrap();

    let mut second = Agent::start(&config, on(tmp.path())).await;
    assert_eq!(summary(&second).await, (3, 1), "as before the kill");
    let (_, approvals) = second.get("/approvals").await;
    assert_eq!(approvals["approvals"][0]["uuid"], uuid.as_str());
    let (_, health) = second.get("/health").await;
    assert_eq!(health["details"]["quarantined_files"], 0, "{health}");
    assert!(stray.exists(), "the files were not read at startup");
    let (status, approved) = second.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{approved}");
    assert!(second.stop().unwrap().success(), "{}", second.log());
    assert_eq!(
        catalog_state(tmp.path()),
        "closed",
        "a graceful stop closes it"
    );

    std::fs::remove_dir_all(tmp.path().join("index")).unwrap();
    let third = Agent::start(&config, on(tmp.path())).await;
    assert_eq!(summary(&third).await, (3, 0), "rebuilt from the files");
    let (_, health) = third.get("/health").await;
    assert_eq!(health["details"]["quarantined_files"], 1, "{health}");
    assert!(!stray.exists(), "a rebuild sets the unreadable file aside");
    assert_eq!(third.list_resources().await.len(), 1);
}

/// Conversations created at once by [`more_conversations_than_open_files_are_there_after_a_kill`].
const MANY: usize = 600;
/// Its agent's limit of open files: far fewer than [`MANY`].
const FEW_FILES: u32 = 160;

/// Checkpoints and the replay at start held every conversation file they
/// wrote open until one sync, so past the process's limit of open files
/// they failed ("Too many open files"), and an agent with that many
/// conversations in its journal did not start again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn more_conversations_than_open_files_are_there_after_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let config = testdata("agent-resources.yaml");
    let few_files = || AgentOptions {
        max_open_files: Some(FEW_FILES),
        ..on(tmp.path())
    };
    let mut first = Agent::start(&config, few_files()).await;
    let ids = first
        .create_conversations(MANY, |n| format!("hello {n}"))
        .await;
    first.kill();

    let second = Agent::start(&config, few_files()).await;
    for id in &ids {
        let (status, conversation) = second.get(&format!("/conversations/{id}")).await;
        assert_eq!(status, 200, "{id}: {conversation}\n{}", second.log());
    }
    let (_, health) = second.get("/health").await;
    assert_eq!(health["details"]["quarantined_files"], 0, "{health}");
    assert!(
        !second.log().contains("Too many open files"),
        "{}",
        second.log()
    );
}
