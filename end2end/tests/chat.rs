//! The chat in a real browser (headless Chromium) against the real `web`
//! and `agent` binaries on the offline model (FR-027, TS-021).

use asg_end2end::{Browser, web_dist};
use asg_tests::{
    Agent, AgentOptions, WebServer, approval_uuid, conversation_id, testdata, workspace_root,
};
use serde_json::{Value, json};

struct Stack {
    agent: Agent,
    web: WebServer,
    browser: Browser,
}

async fn stack() -> Stack {
    stack_with(&testdata("agent-resources.yaml")).await
}

async fn stack_with(config: &std::path::Path) -> Stack {
    let agent = Agent::start(config, AgentOptions::default()).await;
    let web = WebServer::start(&agent.url, &web_dist());
    let browser = Browser::start().await;
    browser.goto(&web.url).await;
    Stack {
        agent,
        web,
        browser,
    }
}

async fn pending_uuid(agent: &Agent) -> String {
    let (_, approvals) = agent.get("/approvals").await;
    approvals["approvals"][0]["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("no pending approval: {approvals}"))
        .to_string()
}

#[tokio::test]
async fn list_then_add_with_approval_in_the_browser() {
    let Stack {
        agent,
        web: _web,
        browser,
    } = stack().await;
    browser.send_message("list resources").await;
    browser
        .wait_text(".tool-call .tool-name", "resources_list")
        .await;
    browser
        .wait_text("#messages .message.assistant", "There are 0 resources")
        .await;

    browser
        .send_message("add resource web-1 with value 42")
        .await;
    let panel = browser.wait_for("#approval-panel").await;
    assert!(panel.text().await.unwrap().contains("resources_add"));
    browser.wait_text(".approval-tool", "resources_add").await;
    let args = browser.wait_text(".approval-args", "web-1").await;
    assert!(args.contains("42"), "{args}");
    let uuid = pending_uuid(&agent).await;
    browser.wait_text(".approval-uuid", &uuid).await;
    browser.screenshot("approval-panel").await;

    browser.wait_for("#approve").await.click().await.unwrap();
    browser.wait_gone("#approval-panel").await;
    browser
        .wait_text("#messages .message.assistant", "Created the resource")
        .await;
    browser.screenshot("approved-result").await;
    assert_eq!(agent.resource_names().await, ["web-1"]);
    browser.close().await;
}

#[tokio::test]
async fn reject_shows_the_cancellation_and_creates_nothing() {
    let Stack {
        agent,
        web: _web,
        browser,
    } = stack().await;
    browser.send_message("add resource nope with value 1").await;
    browser.wait_for("#approval-panel").await;
    browser
        .wait_for("#reject-reason")
        .await
        .send_keys("not today")
        .await
        .unwrap();
    browser.wait_for("#reject").await.click().await.unwrap();
    browser.wait_gone("#approval-panel").await;
    browser.wait_text("#messages .message", "Cancelled").await;
    browser.wait_text("#messages .message", "not today").await;
    assert!(agent.resource_names().await.is_empty());
    browser.close().await;
}

#[tokio::test]
async fn multi_turn_conversation_survives_a_reload() {
    let Stack {
        agent: _agent,
        web: _web,
        browser,
    } = stack().await;
    browser.send_message("list resources").await;
    browser
        .wait_text("#messages .message.assistant", "There are 0 resources")
        .await;
    browser.send_message("show me all resources").await;
    browser
        .wait_text("#messages .message.user", "show me all resources")
        .await;
    let url = browser.client.current_url().await.unwrap().to_string();
    assert!(
        url.contains("c="),
        "the URL does not name the conversation: {url}"
    );
    browser.client.refresh().await.unwrap();
    browser
        .wait_text("#messages .message.user", "list resources")
        .await;
    browser
        .wait_text("#messages .message.user", "show me all resources")
        .await;
    let items = browser
        .client
        .find_all(fantoccini::Locator::Css(".conversation-item"))
        .await
        .unwrap();
    assert_eq!(items.len(), 1);
    browser.close().await;
}

#[tokio::test]
async fn an_approval_made_elsewhere_shows_up_without_a_reload() {
    let Stack {
        agent,
        web: _web,
        browser,
    } = stack().await;
    browser
        .send_message("add resource live-1 with value 7")
        .await;
    browser.wait_for("#approval-panel").await;
    let uuid = pending_uuid(&agent).await;
    let (status, _) = agent
        .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 200);
    browser.wait_gone("#approval-panel").await;
    browser
        .wait_text("#messages .message.assistant", "live-1")
        .await;
    // The decision button would now conflict: the page must not offer it.
    assert!(
        browser
            .client
            .find(fantoccini::Locator::Css("#approve"))
            .await
            .is_err()
    );
    browser.close().await;
}

#[tokio::test]
async fn agent_down_is_a_visible_error() {
    let Stack {
        mut agent,
        web: _web,
        browser,
    } = stack().await;
    browser.wait_for("#composer").await;
    agent.kill();
    browser.send_message("list resources").await;
    let banner = browser.wait_for("#error-banner").await;
    let text = banner.text().await.unwrap();
    assert!(text.to_lowercase().contains("agent"), "{text}");
    browser.close().await;
}

#[tokio::test]
async fn ts021_proxy_approval_from_agent_b_approved_in_the_browser() {
    let b = Agent::start(&testdata("e2e-chain-b.yaml"), AgentOptions::default()).await;
    let a = Agent::start(
        &testdata("agent-delegator.yaml"),
        AgentOptions {
            env: vec![("DOWNSTREAM_URL".into(), b.url.clone())],
            ..Default::default()
        },
    )
    .await;
    let web = WebServer::start(&a.url, &web_dist());
    let browser = Browser::start().await;
    browser.goto(&web.url).await;
    browser
        .send_message("add resource chain-test with value 99")
        .await;
    browser.wait_for("#approval-panel").await;
    browser.wait_text(".approval-remote", "downstream").await;
    browser.wait_text(".approval-args", "chain-test").await;
    browser.screenshot("proxy-approval-panel").await;
    browser.wait_for("#approve").await.click().await.unwrap();
    browser.wait_gone("#approval-panel").await;
    browser
        .wait_text("#messages .message.assistant", "chain-test")
        .await;
    let (_, listed) = b.say_new("list resources").await;
    let text = serde_json::to_string(&listed).unwrap();
    assert!(text.contains("chain-test"), "B has no chain-test: {listed}");
    let _: Value = listed;
    browser.close().await;
}

/// Evaluates a JavaScript expression in the page, as a string.
async fn page_value(browser: &Browser, expression: &str) -> String {
    let value = browser
        .client
        .execute(&format!("return String({expression});"), vec![])
        .await
        .expect("script");
    value.as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn agent_markdown_renders_and_html_in_it_stays_text() {
    let Stack {
        agent: _agent,
        web: _web,
        browser,
    } = stack_with(&workspace_root().join("end2end/testdata/agent-markdown.yaml")).await;
    browser.send_message("show me markdown").await;
    let answer = "#messages .message.assistant .content.markdown";
    browser
        .wait_text(&format!("{answer} strong"), "Done.")
        .await;
    browser
        .wait_text(&format!("{answer} ul li"), "second item")
        .await;
    assert_eq!(browser.count(&format!("{answer} ul li")).await, 2);
    browser
        .wait_text(&format!("{answer} pre code"), "echo markdown-code")
        .await;
    // The user's own text is never Markdown.
    assert_eq!(browser.count("#messages .message.user .markdown").await, 0);

    browser.send_message("now some html").await;
    browser
        .wait_text(answer, "<img src=x onerror=alert(1)> stays text")
        .await;
    browser
        .wait_text(answer, "<script>window.pwned = 1</script>")
        .await;
    assert_eq!(browser.count("#messages img").await, 0);
    assert_eq!(browser.count("#messages script").await, 0);
    assert_eq!(
        browser.count("#messages a").await,
        0,
        "javascript: link kept"
    );
    browser.wait_text(answer, "click me").await;
    assert_eq!(page_value(&browser, "window.pwned").await, "undefined");
    browser.screenshot("markdown-and-html-as-text").await;

    browser.send_message("and json").await;
    let block = "#messages .message.assistant .json-block";
    let summary = browser
        .wait_text(&format!("{block} summary"), "object · 2 keys")
        .await;
    assert!(summary.contains("{\"count\":2,"), "{summary}");
    browser
        .wait_for(&format!("{block} summary"))
        .await
        .click()
        .await
        .unwrap();
    browser
        .wait_text(&format!("{block} pre"), "\"res_2\"")
        .await;
    browser.screenshot("json-answer-opened").await;
    browser.close().await;
}

#[tokio::test]
async fn an_approval_in_another_conversation_reaches_the_counter_and_sidebar_live() {
    let Stack {
        agent,
        web: _web,
        browser,
    } = stack().await;
    browser.send_message("list resources").await;
    browser
        .wait_text("#messages .message.assistant", "There are 0 resources")
        .await;
    browser.wait_for("#pending-count").await;
    browser.wait_text("#pending-count", "0").await;
    browser.wait_for(".pending[data-inbox='live']").await;
    // Survives only as long as the page is not reloaded.
    browser
        .client
        .execute("window.notReloaded = true; return null;", vec![])
        .await
        .unwrap();

    let (status, answer) = agent.say_new("add resource web-1 with value 42").await;
    assert_eq!(status, 201, "{answer}");
    let other = conversation_id(&answer);
    let uuid = approval_uuid(&answer);
    browser.wait_text("#pending-count", "1").await;
    let item = format!(".conversation-item[data-id='{other}']");
    browser
        .wait_for(&format!("{item}[data-pending='true']"))
        .await;
    browser
        .wait_text(&format!("{item} .badge"), "waiting for approval")
        .await;
    browser.wait_for(&format!("{item} .pending-marker")).await;
    // Still on the first conversation, same page.
    assert_eq!(browser.count("#approval-panel").await, 0);
    assert_eq!(page_value(&browser, "window.notReloaded").await, "true");
    browser.screenshot("inbox-pending-elsewhere").await;

    let (status, _) = agent
        .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 200);
    browser.wait_text("#pending-count", "0").await;
    browser
        .wait_for(&format!("{item}[data-pending='false']"))
        .await;
    browser.wait_gone(&format!("{item} .pending-marker")).await;
    assert_eq!(page_value(&browser, "window.notReloaded").await, "true");
    browser.close().await;
}

#[tokio::test]
async fn the_inbox_reconnects_after_the_agent_restarts() {
    let Stack {
        mut agent,
        web: _web,
        browser,
    } = stack().await;
    browser.wait_for(".pending[data-inbox='live']").await;
    let port: u16 = agent
        .url
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .expect("agent port");
    agent.kill();
    browser.wait_for(".pending[data-inbox='offline']").await;
    let options = AgentOptions {
        data_dir: Some(agent.data_dir.clone()),
        ..Default::default()
    };
    let restarted = Agent::start_on_port(&testdata("agent-resources.yaml"), options, port).await;
    browser.wait_for(".pending[data-inbox='live']").await;
    let (status, answer) = restarted
        .say_new("add resource after-restart with value 5")
        .await;
    assert_eq!(status, 201, "{answer}");
    browser.wait_text("#pending-count", "1").await;
    let other = conversation_id(&answer);
    browser
        .wait_for(&format!(
            ".conversation-item[data-id='{other}'][data-pending='true']"
        ))
        .await;
    browser.close().await;
}
