//! The agent's threads (Linux, `/proc/<pid>/task`): a fixed set whatever
//! the load — tokio's workers, the storage threads and jemalloc's one
//! thread returning freed memory to the system while the agent is idle;
//! and jemalloc's options an operator sets in the environment.

use std::collections::BTreeMap;

use asg_tests::{Agent, AgentOptions, testdata};

/// Thread names (`comm`, at most 15 bytes) and how many of each.
fn threads_of(pid: u32) -> BTreeMap<String, usize> {
    let mut names = BTreeMap::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the agent's threads");
    for task in tasks.flatten() {
        if let Ok(name) = std::fs::read_to_string(task.path().join("comm")) {
            *names.entry(name.trim().to_string()).or_insert(0) += 1;
        }
    }
    names
}

#[tokio::test]
async fn the_agent_runs_a_fixed_set_of_threads_with_jemallocs_own() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let before = threads_of(agent.pid());
    assert_eq!(
        before.get("jemalloc_bg_thd"),
        Some(&1),
        "jemalloc's options (background_thread) are in effect: {before:?}"
    );
    assert_eq!(before.get("asg-storage-0"), Some(&1), "{before:?}");

    let client = reqwest::Client::new();
    let requests = (0..200).map(|_| client.get(format!("{}/conversations", agent.url)).send());
    for answer in futures::future::join_all(requests).await {
        assert_eq!(answer.unwrap().status(), 200);
    }
    let after = threads_of(agent.pid());
    let count = |threads: &BTreeMap<String, usize>| threads.values().sum::<usize>();
    assert!(
        count(&after) <= count(&before) + 2,
        "200 concurrent requests started threads: {before:?} -> {after:?}"
    );
}

/// README's "Where memory is tight": the operator's jemalloc options in
/// `_RJEM_MALLOC_CONF` take effect beside the agent's own (its
/// background thread stays). `stats_print` lists the options in effect
/// as the process exits.
#[tokio::test]
async fn the_allocator_takes_the_operators_options_from_the_environment() {
    let options = AgentOptions::with_env(&[(
        "_RJEM_MALLOC_CONF",
        "tcache_max:4096,dirty_decay_ms:0,stats_print:true",
    )]);
    let mut agent = Agent::start(&testdata("agent-resources.yaml"), options).await;
    let threads = threads_of(agent.pid());
    assert_eq!(
        threads.get("jemalloc_bg_thd"),
        Some(&1),
        "the agent's own options stay in effect: {threads:?}"
    );
    let answer = reqwest::get(format!("{}/conversations", agent.url))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);

    assert!(agent.stop().is_some_and(|status| status.success()));
    // The output reader may lag the exit by a moment.
    for option in ["opt.tcache_max: 4096", "opt.dirty_decay_ms: 0"] {
        agent.wait_log(option).await;
    }
}
