//! Several approvals pending at once, in a real browser (headless
//! Chromium) against the real `web` and `agent` binaries: `parallel`
//! branches (adder-a, adder-b) each stop for their own approval, the chat
//! shows one card per approval, each decided on its own (one approved
//! with "Approve & allow these same arguments", one rejected), and the
//! run goes on with the tally once both are decided.

use asg_end2end::{Browser, web_dist};
use asg_tests::{Agent, AgentOptions, WebServer, testdata, tool_messages};
use serde_json::Value;

/// The card of the approval node `node` waits for.
fn card(node: &str) -> String {
    format!(".approval-card[data-node='{node}']")
}

/// The open conversation, read from the agent (its id is in the URL).
async fn open_conversation(browser: &Browser, agent: &Agent) -> Value {
    let url = browser.client.current_url().await.expect("url").to_string();
    let id = url
        .split("c=")
        .nth(1)
        .and_then(|rest| rest.split('&').next())
        .unwrap_or_else(|| panic!("the URL does not name the conversation: {url}"));
    agent.conversation(id).await
}

/// The outputs of the `resources_add` calls that ran in the open
/// conversation, as `(is_error, content)`. (Not `Agent::resource_names`:
/// it says "list resources" in a new conversation, which runs this
/// pipeline and raises two more approvals.)
async fn additions(browser: &Browser, agent: &Agent) -> Vec<(bool, String)> {
    let conversation = open_conversation(browser, agent).await;
    tool_messages(&conversation)
        .iter()
        .filter(|m| m["tool_result"]["name"] == "resources_add")
        .map(|m| {
            (
                m["tool_result"]["is_error"] == true,
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Clicks the button `action` (`approve`, `reject`, …) of `node`'s card.
async fn click(browser: &Browser, node: &str, action: &str) {
    if action.starts_with("approve-") || action == "edit-args" {
        // One click away, under "More…".
        browser
            .wait_for(&format!("{} [data-action='more']", card(node)))
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("open More on {node}: {e}"));
    }
    browser
        .wait_for(&format!("{} [data-action='{action}']", card(node)))
        .await
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {action} on {node}: {e}"));
}

/// "add both": two cards, each with its own arguments and buttons, the
/// line over them, and the sidebar counting both.
async fn two_cards_show(browser: &Browser, agent: &Agent) {
    browser.send_message("add both").await;
    browser
        .wait_text(
            &format!("{} .approval-args", card("adder-a")),
            "from-adder-a",
        )
        .await;
    browser
        .wait_text(
            &format!("{} .approval-args", card("adder-b")),
            "from-adder-b",
        )
        .await;
    browser.wait_count(".approval-card", 2).await;
    browser
        .wait_text("#approvals-summary", "2 approvals are pending")
        .await;
    // Each card has its own buttons; the ids stay unique.
    assert_eq!(browser.count("[data-action='approve']").await, 2);
    assert_eq!(browser.count("[data-action='approve-same-args']").await, 2);
    assert_eq!(browser.count("#approve").await, 1);
    browser.wait_text("#pending-count", "2").await;
    browser
        .wait_text(
            ".conversation-item[data-pending-count='2'] .pending-marker",
            "2",
        )
        .await;

    let conversation = open_conversation(browser, agent).await;
    let listed = conversation["pending_approvals"].as_array().cloned();
    for approval in listed.unwrap_or_default() {
        let uuid = approval["uuid"].as_str().unwrap_or_default();
        assert_eq!(
            browser
                .count(&format!(".approval-card[data-approval='{uuid}']"))
                .await,
            1,
            "no card for {approval}"
        );
    }
    browser.screenshot("parallel-two-approval-cards").await;
    assert!(
        additions(browser, agent).await.is_empty(),
        "added before approval"
    );
}

/// The reject reason typed into adder-a's card.
async fn reason_of_a(browser: &Browser) -> String {
    let field = browser
        .wait_for(&format!("{} .reject-reason", card("adder-a")))
        .await;
    field.prop("value").await.unwrap().unwrap_or_default()
}

/// adder-b approved (and remembered for these same arguments) while a
/// reason is being typed into adder-a's card: b's card goes, a's stays
/// as it was, the reason still in it, and the page says the run still
/// waits.
async fn approve_b_while_a_waits(browser: &Browser, agent: &Agent) {
    let reason = browser
        .wait_for(&format!("{} .reject-reason", card("adder-a")))
        .await;
    reason.send_keys("not a").await.expect("type the reason");
    click(browser, "adder-b", "approve-same-args").await;
    browser.wait_count(".approval-card", 1).await;
    browser.wait_for(&card("adder-a")).await;
    assert_eq!(
        reason_of_a(browser).await,
        "not a",
        "adder-a's card was drawn again when b's went"
    );
    browser
        .wait_text("#approvals-summary", "the run still waits")
        .await;
    browser
        .wait_text(".chat-head .badge", "waiting for approval")
        .await;
    browser.wait_text("#pending-count", "1").await;
    browser
        .wait_text(".tool-decided-by", "always allowed with the same arguments")
        .await;
    browser
        .wait_text("#grants .grant", "same arguments only")
        .await;
    browser.screenshot("parallel-one-approval-left").await;
    let added = additions(browser, agent).await;
    assert!(
        matches!(added.as_slice(), [(false, text)] if text.contains("from-adder-b")),
        "{added:?}"
    );
    let conversation = open_conversation(browser, agent).await;
    assert_eq!(conversation["status"], "waiting_approval", "{conversation}");
    assert_eq!(conversation["grants"][0]["scope"], "same_arguments");
}

/// adder-a rejected with the reason typed before: no card left, the
/// tally reports the refusal next to b's addition, and the decision
/// carries the reason.
async fn reject_a_and_the_run_goes_on(browser: &Browser, agent: &Agent) {
    click(browser, "adder-a", "reject").await;
    browser.wait_gone("#approval-panel").await;
    let answer = browser
        .wait_text(
            "#messages .message.assistant",
            "TALLY a=[Not done: resources_add was rejected",
        )
        .await;
    assert!(answer.contains("b=[ADDED: "), "{answer}");
    browser.wait_text("#pending-count", "0").await;
    browser.screenshot("parallel-approvals-done").await;
    let added = additions(browser, agent).await;
    let (failed, ran): (Vec<_>, Vec<_>) = added.iter().partition(|(is_error, _)| *is_error);
    assert_eq!((failed.len(), ran.len()), (1, 1), "{added:?}");
    assert!(ran[0].1.contains("from-adder-b"), "{added:?}");
    let conversation = open_conversation(browser, agent).await;
    assert_eq!(conversation["status"], "active", "{conversation}");
    let rejected: Vec<&Value> = conversation["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .filter(|d| d["approved"] == false)
        .collect();
    assert!(
        matches!(rejected.as_slice(), [d] if d["reason"] == "not a"),
        "the reason typed before b was approved is not a's decision's: {rejected:?}"
    );
}

#[tokio::test]
async fn two_approval_cards_decided_one_by_one_in_the_browser() {
    let agent = Agent::start(
        &testdata("e2e-parallel-approvals.yaml"),
        AgentOptions::default(),
    )
    .await;
    let web = WebServer::start(&agent.url, &web_dist());
    let browser = Browser::start().await;
    browser.goto(&web.url).await;

    two_cards_show(&browser, &agent).await;
    approve_b_while_a_waits(&browser, &agent).await;
    reject_a_and_the_run_goes_on(&browser, &agent).await;
    browser.close().await;
}
