//! The sidebar in pages, in a real browser (headless Chromium) against
//! the real `web` and `agent` binaries on the offline model: with 60
//! conversations the chat lists the newest 50 (the agent's first page),
//! scrolling the list to its end appends the other 10 once each and the
//! "Load more" button goes. And the countdown on an approval card that
//! expires (`approval.expires_after`).

use std::collections::HashSet;

use asg_end2end::{Browser, web_dist};
use asg_tests::{Agent, AgentOptions, WebServer, config_with, conversation_id, testdata};
use fantoccini::Locator;

/// The `data-id` of every conversation in the sidebar, top to bottom.
async fn listed_ids(browser: &Browser) -> Vec<String> {
    let items = browser
        .client
        .find_all(Locator::Css("#conversation-list .conversation-item"))
        .await
        .expect("the sidebar items");
    let mut ids = Vec::new();
    for item in items {
        let id = item.attr("data-id").await.expect("data-id");
        ids.push(id.unwrap_or_default());
    }
    ids
}

/// Creates `n` conversations over the agent's REST API; their ids, oldest
/// first.
async fn create_conversations(agent: &Agent, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let (status, answer) = agent.say_new("list resources").await;
        assert_eq!(status, 201, "{answer}");
        ids.push(conversation_id(&answer));
    }
    ids
}

/// Scrolls the sidebar list to its end, as a user would.
async fn scroll_list_to_end(browser: &Browser) {
    browser
        .client
        .execute(
            "const list = document.getElementById('conversation-list'); \
             list.scrollTop = list.scrollHeight; return null;",
            vec![],
        )
        .await
        .expect("scroll the sidebar");
}

#[tokio::test]
async fn the_sidebar_loads_the_next_page_when_scrolled_to_its_end() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let created = create_conversations(&agent, 60).await;
    let web = WebServer::start(&agent.url, &web_dist());
    let browser = Browser::start().await;
    browser.goto(&web.url).await;

    // The first page: the 50 newest, newest first, and "Load more".
    browser
        .wait_count("#conversation-list .conversation-item", 50)
        .await;
    browser.wait_for("#load-more").await;
    let first = listed_ids(&browser).await;
    let newest: Vec<String> = created.iter().rev().take(50).cloned().collect();
    assert_eq!(first, newest, "the first page is the 50 newest");
    browser.screenshot("sidebar-first-page").await;

    // Scrolled to the end: the other 10, once each, and no more button.
    scroll_list_to_end(&browser).await;
    browser
        .wait_count("#conversation-list .conversation-item", 60)
        .await;
    browser.wait_gone("#load-more").await;
    let all = listed_ids(&browser).await;
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), 60, "a conversation listed twice: {all:?}");
    let expected: Vec<String> = created.iter().rev().cloned().collect();
    assert_eq!(all, expected, "every conversation, newest first");
    browser.screenshot("sidebar-all-pages").await;
    browser.close().await;
}

#[tokio::test]
async fn an_approval_card_counts_down_to_its_expiry() {
    let (_dir, config) = config_with("agent-resources.yaml", "approval:\n  expires_after: 1h\n");
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let web = WebServer::start(&agent.url, &web_dist());
    let browser = Browser::start().await;
    browser.goto(&web.url).await;

    browser.send_message("add resource x with value 1").await;
    browser.wait_text(".approval-args", "x").await;
    let shown = browser
        .wait_text(".approval-card .approval-expiry", "expires in")
        .await;
    assert!(
        shown.contains("59 min") || shown.contains("1 h"),
        "about an hour left: {shown:?}"
    );
    let (_, approvals) = agent.get("/approvals").await;
    assert!(
        approvals["approvals"][0]["expires_at"].is_string(),
        "{approvals}"
    );
    browser.screenshot("approval-expiry-countdown").await;
    browser.close().await;
}
