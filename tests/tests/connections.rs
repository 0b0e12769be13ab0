//! What an open connection costs the agent (Linux, `VmRSS` of
//! `/proc/<pid>/status`): a few KiB, whatever its routes. `axum::serve`
//! given a `Router` copies the whole route table for each connection it
//! accepts (about 40 KiB here); the agent serves one shared table.

use std::net::TcpStream;

use asg_tests::{Agent, AgentOptions, settled_rss, testdata};

/// Idle connections opened at once.
const CONNECTIONS: usize = 400;
/// Most resident memory one idle connection may add (one shared table:
/// about 2.6 KiB measured; a copied one: about 40).
const MAX_BYTES_PER_CONNECTION: u64 = 12 << 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_costs_the_agent_a_few_kib() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let pid = agent.pid();
    let address = agent
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    // Warm: the first requests allocate what every later one reuses.
    let client = reqwest::Client::new();
    for _ in 0..20 {
        let answer = client.get(format!("{}/health", agent.url)).send().await;
        assert_eq!(answer.unwrap().status(), 200);
    }
    let measured = tokio::task::spawn_blocking(move || {
        let before = settled_rss(pid);
        let open: Vec<TcpStream> = (0..CONNECTIONS)
            .map(|_| TcpStream::connect(&address).expect("a connection to the agent"))
            .collect();
        let after = settled_rss(pid);
        drop(open);
        (before, after)
    })
    .await
    .unwrap();
    let (before, after) = measured;
    let per_connection = after.saturating_sub(before) / CONNECTIONS as u64;
    assert!(
        per_connection <= MAX_BYTES_PER_CONNECTION,
        "{CONNECTIONS} idle connections took the agent from {before} to {after} bytes: \
         {per_connection} bytes each"
    );
    // Still serving.
    let answer = client.get(format!("{}/health", agent.url)).send().await;
    assert_eq!(answer.unwrap().status(), 200);
}
