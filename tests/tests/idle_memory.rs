//! An idle agent gives back the memory its read cache and the bodies made
//! for GETs held (Linux, `VmRSS`): a conversation nobody read for about
//! `limits.read_cache_idle_secs` leaves the cache, and the body of a
//! version nobody holds goes with it. Reading it again still answers it,
//! from its file.
#![cfg(target_os = "linux")]

use std::time::Duration;

use asg_tests::{Agent, AgentOptions, config_with, settled_rss};

/// Conversations made, each with one long message.
const CONVERSATIONS: usize = 320;
/// The message's length (the most a message may have is 64 KiB): 320 of
/// them are about 19 MiB, under the read cache's default 32 MiB.
const MESSAGE_BYTES: usize = 60 * 1024;
/// Seconds a conversation nobody reads stays cached, here.
const IDLE_SECS: u64 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idle_agent_gives_back_its_read_caches_memory_and_still_answers() {
    let extra = format!("limits:\n  read_cache_idle_secs: {IDLE_SECS}\n");
    let (_dir, config) = config_with("agent-resources.yaml", &extra);
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let pid = agent.pid();
    let start = tokio::task::spawn_blocking(move || settled_rss(pid))
        .await
        .unwrap();

    let ids = agent
        .create_conversations(CONVERSATIONS, |n| {
            format!("{n} {}", "x".repeat(MESSAGE_BYTES))
        })
        .await;
    read_each(&agent, &ids).await;
    let loaded = tokio::task::spawn_blocking(move || settled_rss(pid))
        .await
        .unwrap();
    let added = loaded.saturating_sub(start);
    assert!(
        added >= 16 << 20,
        "the conversations and their bodies are held: {start} -> {loaded} bytes"
    );

    // Unread for three times the idle time (the sweeps run every half of
    // it, slots are dropped every 2 s, freed pages go back in 1 s).
    tokio::time::sleep(Duration::from_secs(3 * IDLE_SECS + 3)).await;
    let idle = tokio::task::spawn_blocking(move || settled_rss(pid))
        .await
        .unwrap();
    assert!(
        idle.saturating_sub(start) < added * 4 / 10,
        "idle, most of what the caches held is given back: {start} at start, {loaded} \
         loaded, {idle} idle"
    );

    read_each(&agent, &ids).await;
}

/// Reads every conversation: its long message is there.
async fn read_each(agent: &Agent, ids: &[String]) {
    for id in ids {
        let (status, answer) = agent.get(&format!("/conversations/{id}")).await;
        assert_eq!(status, 200, "{id}");
        let longest = answer["conversation"]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|message| message["content"].as_str())
            .map(str::len)
            .max();
        assert!(
            longest > Some(MESSAGE_BYTES),
            "{id}: the long message is there"
        );
    }
}
