//! Questions in a real browser (headless Chromium) against the real
//! `web` and `agent` binaries on the offline model: the model asks with
//! `ask_human`; the chat shows a button per choice, and a form built
//! from the question's schema (a number, a button per enum value, a
//! checkbox) whose wrong answer the agent refuses in the card.

use asg_end2end::{Browser, web_dist};
use asg_tests::{Agent, AgentOptions, WebServer, testdata};

async fn click(browser: &Browser, css: &str) {
    browser
        .wait_for(css)
        .await
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {css}: {e}"));
}

/// Sends `message` once the agent is idle and waits for the question
/// whose text contains `question`.
async fn ask(browser: &Browser, message: &str, question: &str) {
    browser.wait_gone("#working").await;
    browser.send_message(message).await;
    browser
        .wait_text(".question-card .question-text", question)
        .await;
}

/// Presses Answer and waits until the card is gone (the answer taken).
async fn answer(browser: &Browser) {
    click(browser, ".question-card [data-action='answer']").await;
    browser.wait_gone(".question-card").await;
}

#[tokio::test]
async fn questions_are_answered_with_buttons_and_forms_in_the_browser() {
    let agent = Agent::start(&testdata("agent-questions.yaml"), AgentOptions::default()).await;
    let web = WebServer::start(&agent.url, &web_dist());
    let browser = Browser::start().await;
    browser.goto(&web.url).await;

    ask(&browser, "deploy the app", "Which environment?").await;
    browser.screenshot("question-choices").await;
    click(&browser, ".question-card [data-choice='staging']").await;
    browser.wait_gone(".question-card").await;
    browser
        .wait_text("#messages .message.assistant", "Going on with: staging")
        .await;

    ask(&browser, "scale it", "How many replicas").await;
    let replicas = browser.wait_for("input[data-field='replicas']").await;
    replicas.send_keys("0").await.expect("type the replicas");
    click(&browser, "[data-field='environment'][data-value='prod']").await;
    click(&browser, ".question-card [data-action='answer']").await;
    let refused = browser
        .wait_text(".question-error", "answer.replicas")
        .await;
    assert!(refused.contains("minimum"), "{refused}");
    assert_eq!(browser.count(".question-card").await, 1, "still pending");
    browser.screenshot("question-form-refused").await;

    replicas.clear().await.expect("clear");
    replicas.send_keys("3").await.expect("type the replicas");
    click(&browser, "input[data-field='confirm']").await;
    answer(&browser).await;
    let answered = browser
        .wait_text("#messages .message.assistant", "\"replicas\":3")
        .await;
    assert!(answered.contains("Going on with:"), "{answered}");
    assert!(answered.contains("\"replicas\":3"), "{answered}");
    assert!(answered.contains("\"confirm\":true"), "{answered}");
    assert!(answered.contains("\"environment\":\"prod\""), "{answered}");
    browser.screenshot("question-form-answered").await;

    // A fractional number typed in a number field stays fractional on its
    // way to the agent: 1.0, not the integer 1 (nor "01").
    ask(&browser, "tune it", "Which ratio?").await;
    let ratio = browser.wait_for("input[data-field='ratio']").await;
    ratio.send_keys("1.0").await.expect("type the ratio");
    answer(&browser).await;
    let tuned = browser
        .wait_text("#messages .message.assistant", "\"ratio\"")
        .await;
    assert!(tuned.contains("{\"ratio\":1.0}"), "{tuned}");
    browser.close().await;
}
