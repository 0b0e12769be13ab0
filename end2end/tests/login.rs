//! Sign-in in a real browser (headless Chromium): a real OpenID Connect
//! provider (`asg_tests::oidc`), an agent that requires its tokens and the
//! `web` binary with `oidc:`. alice (approver) and bob (no roles) sign in
//! through the provider's login page.

use asg_end2end::login::LoginStack;
use asg_end2end::{Browser, web_dist};
use asg_tests::oidc::{LOGIN_PASSWORD_INPUT, LOGIN_USER_INPUT, SUBMIT_BUTTON};
use fantoccini::Locator;

/// Signs `user` in from the chat's Sign in button through the provider's
/// login and consent pages, back to the chat.
async fn sign_in(browser: &Browser, stack: &LoginStack, user: &str, shot: Option<&str>) {
    browser.goto(&stack.web.url).await;
    browser.wait_for("#sign-in-prompt").await;
    browser.wait_for("#sign-in").await.click().await.unwrap();
    let login = browser.wait_for(LOGIN_USER_INPUT).await;
    login.send_keys(user).await.unwrap();
    browser
        .wait_for(LOGIN_PASSWORD_INPUT)
        .await
        .send_keys("test")
        .await
        .unwrap();
    if let Some(name) = shot {
        browser.screenshot(name).await;
    }
    browser.wait_for(SUBMIT_BUTTON).await.click().await.unwrap();
    // The consent page ("Continue"), unless the provider skips it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let url = browser.client.current_url().await.unwrap().to_string();
        if url.starts_with(&stack.web.url) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still at {url}; provider log:\n{}",
            stack.provider.log()
        );
        if let Ok(button) = browser.client.find(Locator::Css(SUBMIT_BUTTON)).await {
            let _ = button.click().await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    browser.wait_text("#user .user-name", "").await;
}

#[tokio::test]
async fn alice_signs_in_and_approves_bob_sees_no_buttons() {
    let stack = LoginStack::start(&web_dist()).await;

    // alice: an approver.
    let browser = Browser::start().await;
    browser.goto(&stack.web.url).await;
    browser.wait_for("#sign-in-prompt").await;
    browser.screenshot("login-signed-out").await;
    sign_in(&browser, &stack, "alice", Some("login-provider-page")).await;
    browser
        .wait_text("#user .user-name", "Alice Approver")
        .await;
    browser.wait_text("#user .user-roles", "approver").await;
    browser
        .send_message("add resource web-1 with value 42")
        .await;
    browser.wait_for("#approval-panel").await;
    browser
        .wait_text(
            ".approval-requested-by",
            // The provider's subject reads as its `sub`.
            "Alice Approver (alice)",
        )
        .await;
    browser.wait_for("#approve").await;
    browser.screenshot("login-approval-requested-by").await;
    let url = browser.client.current_url().await.unwrap().to_string();

    // bob (no roles) opens the same conversation: the agent does not show
    // him alice's conversation (404), and in his own he has no buttons.
    let bob = Browser::start().await;
    sign_in(&bob, &stack, "bob", None).await;
    bob.wait_text("#user .user-name", "Bob User").await;
    bob.wait_text("#user .user-roles", "no roles").await;
    bob.goto(&url).await;
    bob.wait_for("#error-banner").await;
    bob.send_message("add resource bob-1 with value 7").await;
    bob.wait_for("#approval-panel").await;
    bob.wait_text(".approval-requested-by", "Bob User (bob)")
        .await;
    bob.wait_for(".approval-no-permission").await;
    assert!(
        bob.client.find(Locator::Css("#approve")).await.is_err(),
        "bob must not see Approve"
    );
    assert!(bob.client.find(Locator::Css("#reject")).await.is_err());
    bob.screenshot("login-bob-no-approve").await;

    // alice approves her own request; the card shows who decided.
    browser.wait_for("#approve").await.click().await.unwrap();
    browser.wait_gone("#approval-panel").await;
    browser
        .wait_text("#messages .message.assistant", "Created the resource")
        .await;
    browser
        .wait_text(".tool-decided-by", "Approved by Alice Approver (alice)")
        .await;
    let decided = browser
        .wait_text(".tool-decided-by", "Alice Approver")
        .await;
    assert!(decided.contains("via web"), "{decided}");
    browser.screenshot("login-approved-decided-by").await;

    // Sign out: back to the provider's sign-out page, then signed out.
    browser.wait_for("#sign-out").await.click().await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let url = browser.client.current_url().await.unwrap().to_string();
        if url.starts_with(&stack.provider.issuer) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no end-session page: {url}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    browser.goto(&stack.web.url).await;
    browser.wait_for("#sign-in-prompt").await;

    // zoe (not a listed user: her name is her id, in lower case) gets an
    // upper-case initial in the avatar, upper-cased by the stylesheet.
    let zoe = Browser::start().await;
    sign_in(&zoe, &stack, "zoe", None).await;
    zoe.wait_text("#user .user-name", "zoe").await;
    assert_eq!(zoe.wait_text("#user .user-avatar", "Z").await, "Z");
    zoe.close().await;
    bob.close().await;
    browser.close().await;
}
