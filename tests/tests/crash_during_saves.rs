//! A kill -9 in the middle of a burst of concurrent turns on the JSON
//! store (saves group-committed through its journal): every turn the agent
//! answered 2xx before it died is there after a restart, with its
//! messages.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use asg_tests::{Agent, AgentOptions, testdata};
use serde_json::{Value, json};

/// Clients sending turns at once.
const CLIENTS: usize = 50;
/// How long the burst runs before the kill.
const BEFORE_KILL: Duration = Duration::from_millis(1500);

/// What the agent acknowledged: conversation id → the user messages of
/// the turns it answered 2xx.
type Acknowledged = Arc<Mutex<BTreeMap<String, Vec<String>>>>;

/// One client: creates a conversation, then sends it messages, until a
/// request fails (the agent was killed). Records each acknowledged turn.
async fn client(http: reqwest::Client, url: String, n: usize, acknowledged: Acknowledged) {
    let mut conversation: Option<String> = None;
    for turn in 0.. {
        let message = format!("list resources, client {n} turn {turn}");
        let path = match &conversation {
            None => format!("{url}/conversations"),
            Some(id) => format!("{url}/conversations/{id}/messages"),
        };
        let Ok(response) = http
            .post(path)
            .json(&json!({ "message": message }))
            .send()
            .await
        else {
            return;
        };
        if !response.status().is_success() {
            return;
        }
        let Ok(answer) = response.json::<Value>().await else {
            return;
        };
        let Some(id) = answer["conversation"]["id"].as_str() else {
            return;
        };
        conversation = Some(id.to_string());
        let mut acknowledged = acknowledged.lock().unwrap();
        acknowledged
            .entry(id.to_string())
            .or_default()
            .push(message);
    }
}

/// The user messages of conversation `id` as the restarted agent has it.
async fn user_messages(agent: &Agent, id: &str) -> Vec<String> {
    let conversation = agent.conversation(id).await;
    conversation["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages in {conversation}"))
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_turn_acknowledged_before_a_kill_in_a_burst_is_there_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let config = testdata("agent-resources.yaml");
    let on = || AgentOptions {
        data_dir: Some(tmp.path().to_path_buf()),
        ..AgentOptions::default()
    };
    let mut first = Agent::start(&config, on()).await;
    let acknowledged = Acknowledged::default();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|n| {
            let (http, url) = (first.http.clone(), first.url.clone());
            tokio::spawn(client(http, url, n, acknowledged.clone()))
        })
        .collect();
    tokio::time::sleep(BEFORE_KILL).await;
    first.kill();
    for client in clients {
        client.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    let turns: usize = acknowledged.values().map(Vec::len).sum();
    assert!(
        turns >= 10,
        "the burst ran before the kill: {turns} turns\n{}",
        first.log()
    );

    let second = Agent::start(&config, on()).await;
    for (id, sent) in &acknowledged {
        let stored = user_messages(&second, id).await;
        for message in sent {
            assert!(
                stored.contains(message),
                "{id}: acknowledged {message:?} is lost; stored {stored:?}"
            );
        }
    }
    let (_, health) = second.get("/health").await;
    assert_eq!(health["details"]["quarantined_files"], 0, "{health}");
    println!(
        "{turns} acknowledged turns in {} conversations, all there after the kill",
        acknowledged.len()
    );
}
