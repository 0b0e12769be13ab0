//! The approver's choices in a real browser (headless Chromium) against
//! the real `web` and `agent` binaries on the offline model: approving
//! with edited arguments (JSON checked in the page, the agent's schema
//! refusal shown in the editor), "Approve & always allow in this
//! conversation", the list of remembered approvals and Revoke.

use asg_end2end::{Browser, web_dist};
use asg_tests::{Agent, AgentOptions, WebServer, testdata};
use serde_json::Value;

/// Replaces the editor's text with `text` and presses "Approve with these
/// arguments".
async fn submit_arguments(browser: &Browser, text: &str) {
    let editor = browser.wait_for("#args-json").await;
    editor.clear().await.expect("clear the editor");
    editor.send_keys(text).await.expect("type into the editor");
    browser
        .wait_for("#approve-edited")
        .await
        .click()
        .await
        .expect("click Approve with these arguments");
}

/// Sends `text` once the previous turn is over.
async fn send_when_idle(browser: &Browser, text: &str) {
    browser.wait_gone("#working").await;
    browser.send_message(text).await;
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

/// Invalid JSON, then arguments the tool's schema refuses, then good ones.
async fn approve_with_edited_arguments(browser: &Browser, agent: &Agent) {
    browser
        .send_message("add resource web-1 with value 42")
        .await;
    browser.wait_text(".approval-args", "web-1").await;
    browser.wait_for("#more").await.click().await.unwrap();
    browser.wait_for("#edit-args").await.click().await.unwrap();
    let editor = browser.wait_for("#args-json").await;
    let shown = editor.prop("value").await.unwrap().unwrap_or_default();
    assert!(shown.contains("\"name\": \"web-1\""), "{shown}");
    assert!(shown.contains("\"value\": 42"), "{shown}");

    submit_arguments(browser, "{\"name\": \"web-2\", ").await;
    browser.wait_text("#args-error", "Not valid JSON").await;
    browser.screenshot("edit-args-invalid-json").await;

    submit_arguments(browser, r#"{"name": "web-2", "value": "x"}"#).await;
    let refused = browser
        .wait_text("#args-error", "invalid edited arguments")
        .await;
    assert!(refused.contains("value"), "{refused}");
    // Still pending, the editor still open, no banner.
    assert_eq!(browser.count("#approval-panel").await, 1);
    assert_eq!(browser.count("#error-banner").await, 0);
    browser.screenshot("edit-args-refused").await;

    submit_arguments(browser, r#"{"name": "web-2", "value": 7}"#).await;
    browser.wait_gone("#approval-panel").await;
    browser
        .wait_text("#messages .message.assistant", "web-2")
        .await;
    browser
        .wait_text(".tool-decided-by", "approved with edited arguments")
        .await;
    browser.wait_text(".tool-edited-args", "web-2").await;
    // The edit as a diff: each changed argument, requested (struck) and
    // as it ran.
    browser.wait_text(".args-diff del", "web-1").await;
    browser.wait_text(".args-diff ins", "web-2").await;
    assert_eq!(
        browser.count(".args-diff tr").await,
        2,
        "name and value changed"
    );
    browser.screenshot("edit-args-approved").await;
    assert_eq!(agent.resource_names().await, ["web-2"]);
}

/// "Approve & always allow": the next call runs without asking.
async fn approve_and_always_allow(browser: &Browser, agent: &Agent) {
    send_when_idle(browser, "add resource web-3 with value 1").await;
    browser.wait_text(".approval-args", "web-3").await;
    browser.wait_for("#more").await.click().await.unwrap();
    browser
        .wait_for("#approve-always")
        .await
        .click()
        .await
        .unwrap();
    browser.wait_gone("#approval-panel").await;
    browser
        .wait_text("#grants .grant", "resources_add (by")
        .await;
    browser
        .wait_text(".tool-decided-by", "always allowed in this conversation")
        .await;

    send_when_idle(browser, "add resource web-4 with value 2").await;
    browser
        .wait_text("#messages .message.assistant", "web-4")
        .await;
    assert_eq!(browser.count("#approval-panel").await, 0);
    browser.screenshot("always-allowed").await;
    let conversation = open_conversation(browser, agent).await;
    assert_eq!(conversation["grants"][0]["tool"], "resources_add");
    assert_eq!(conversation["grants"][0]["scope"], "conversation");
    assert_eq!(agent.resource_names().await, ["web-2", "web-3", "web-4"]);
}

/// Revoke: the grant goes, and the next call asks again.
async fn revoke_then_asked_again(browser: &Browser, agent: &Agent) {
    browser.wait_gone("#working").await;
    browser
        .wait_for("#grants .grant-revoke")
        .await
        .click()
        .await
        .unwrap();
    browser.wait_gone("#grants").await;
    let conversation = open_conversation(browser, agent).await;
    assert!(
        conversation["grants"]
            .as_array()
            .is_none_or(|grants| grants.is_empty()),
        "{conversation}"
    );

    send_when_idle(browser, "add resource web-5 with value 3").await;
    browser.wait_for("#approval-panel").await;
    browser.wait_text(".approval-args", "web-5").await;
    browser.screenshot("asked-again-after-revoke").await;
}

#[tokio::test]
async fn edit_arguments_always_allow_and_revoke_in_the_browser() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let web = WebServer::start(&agent.url, &web_dist());
    let browser = Browser::start().await;
    browser.goto(&web.url).await;

    approve_with_edited_arguments(&browser, &agent).await;
    approve_and_always_allow(&browser, &agent).await;
    revoke_then_asked_again(&browser, &agent).await;
    browser.close().await;
}
