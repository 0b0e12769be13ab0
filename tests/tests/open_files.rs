//! The agent raises its soft limit of open files to the hard one at
//! start, so a low soft limit (`ulimit -S -n`, the usual 1,024) does not
//! turn clients away while the administrator's hard limit allows more.
#![cfg(target_os = "linux")]

use std::time::Duration;

use asg_tests::{Agent, AgentOptions, testdata};

/// The agent's soft limit at start: fewer than [`CLIENTS`].
const LOW_SOFT_LIMIT: u64 = 64;
/// Clients that each keep a connection open to the agent at once.
const CLIENTS: usize = 300;

/// "Max open files" of `/proc/<who>/limits`: (soft, hard); `None` is
/// unlimited.
fn open_files_limits(who: &str) -> (Option<u64>, Option<u64>) {
    let limits = std::fs::read_to_string(format!("/proc/{who}/limits")).expect("limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("a Max open files line");
    let mut values = line["Max open files".len()..]
        .split_whitespace()
        .map(|value| value.parse::<u64>().ok());
    (values.next().flatten(), values.next().flatten())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_low_soft_limit_of_open_files_is_raised_and_hundreds_of_clients_are_served() {
    let (_, hard) = open_files_limits("self");
    if hard.is_some_and(|hard| hard < 2 * CLIENTS as u64) {
        eprintln!("hard limit {hard:?}: too low to show a raise");
        return;
    }
    let options = AgentOptions {
        soft_open_files: Some(LOW_SOFT_LIMIT as u32),
        ..AgentOptions::default()
    };
    let agent = Agent::start(&testdata("agent-resources.yaml"), options).await;

    assert_eq!(
        open_files_limits(&agent.pid().to_string()),
        (hard, hard),
        "the soft limit is raised to the hard one, which is kept"
    );
    assert!(
        agent
            .log()
            .contains("raised the soft limit of open files to the hard limit"),
        "{}",
        agent.log()
    );

    // Each client keeps its connection (reqwest keeps it idle in its
    // pool), so the agent holds them all open at once.
    let mut clients = Vec::new();
    for n in 0..CLIENTS {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let answer = client
            .get(format!("{}/health", agent.url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("client {n}: {e}\n{}", agent.log()));
        assert_eq!(answer.status(), 200, "client {n}");
        clients.push(client);
    }
    let (status, _) = agent.get("/conversations").await;
    assert_eq!(status, 200, "still serving with {CLIENTS} connections open");
    assert!(
        !agent.log().contains("Too many open files"),
        "{}",
        agent.log()
    );
}
