//! The agent's interactive API page (`/docs`) in headless Chromium against
//! the real `agent` binary: every endpoint opened, the page stays inside
//! the window, the response examples are filled in (no `null` where the
//! schema has an object), and "Try it" with an empty path parameter says
//! which one is missing instead of sending a request.

use asg_end2end::Browser;
use asg_tests::{Agent, AgentOptions, testdata};
use fantoccini::Locator;
use serde_json::Value;

async fn script(browser: &Browser, source: &str) -> Value {
    browser
        .client
        .execute(source, vec![])
        .await
        .unwrap_or_else(|e| panic!("script failed: {e}\n{source}"))
}

/// An agent on the offline model and a browser showing its `/docs`, the
/// endpoints listed.
async fn open_docs() -> (Agent, Browser) {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let browser = Browser::start().await;
    browser.goto(&format!("{}/docs", agent.url)).await;
    browser.wait_for("details").await;
    (agent, browser)
}

/// The first value under `key`, anywhere in `value`.
fn find_key<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map
            .get(key)
            .or_else(|| map.values().find_map(|v| find_key(v, key))),
        Value::Array(items) => items.iter().find_map(|v| find_key(v, key)),
        _ => None,
    }
}

#[tokio::test]
async fn every_endpoint_opened_fits_the_window_with_filled_examples() {
    let (_agent, browser) = open_docs().await;
    let opened = script(
        &browser,
        "const all = document.querySelectorAll('details'); all.forEach((d) => d.open = true); return all.length;",
    )
    .await;
    assert!(opened.as_u64().unwrap_or(0) >= 12, "endpoints: {opened}");

    let overflow = script(
        &browser,
        "const d = document.documentElement; return d.scrollWidth - d.clientWidth;",
    )
    .await;
    browser.screenshot("docs-all-open").await;
    assert!(
        overflow.as_i64().unwrap_or(i64::MAX) <= 0,
        "with every endpoint open the page scrolls sideways by {overflow} px"
    );

    let examples = script(
        &browser,
        "return [...document.querySelectorAll('table.responses td pre')].map((p) => p.textContent);",
    )
    .await;
    let examples = examples.as_array().expect("examples");
    assert!(
        examples.len() >= 12,
        "response examples: {}",
        examples.len()
    );
    for example in examples {
        let text = example.as_str().unwrap_or_default();
        assert!(
            !text.contains(": null"),
            "a response example shows a field as null:\n{text}"
        );
    }
    // A generated example fills objects nested several levels deep: an
    // approval's `requested_by` (error body → approval → actor).
    let nested: Vec<Value> = examples
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|text| serde_json::from_str::<Value>(text).ok())
        .filter_map(|example| find_key(&example, "requested_by").cloned())
        .collect();
    assert!(
        !nested.is_empty(),
        "no example shows an approval's requester"
    );
    for actor in &nested {
        assert!(
            actor["name"].is_string() && actor["via"].is_string(),
            "nested fields are filled in: {actor}"
        );
    }
    browser.close().await;
}

#[tokio::test]
async fn try_it_names_a_missing_path_parameter_and_sends_nothing() {
    let (_agent, browser) = open_docs().await;
    let found = script(
        &browser,
        r#"const d = [...document.querySelectorAll('details')].find((d) =>
             d.querySelector('summary .path').textContent === '/conversations/{id}'
             && d.querySelector('summary .method').textContent === 'GET');
           if (!d) return false;
           d.open = true; d.id = 'show-conversation'; return true;"#,
    )
    .await;
    assert_eq!(
        found,
        Value::Bool(true),
        "GET /conversations/{{id}} is listed"
    );
    let button = browser
        .client
        .find(Locator::Css("#show-conversation button"))
        .await
        .expect("its Send button");
    button.click().await.expect("click Send");
    let output = browser
        .wait_text("#show-conversation pre", "path parameter")
        .await;
    assert!(
        output.contains("Fill in the path parameter id") && output.contains("nothing was sent"),
        "{output}"
    );
    assert!(!output.contains("HTTP 404"), "{output}");

    let input = browser
        .client
        .find(Locator::Css("#show-conversation input"))
        .await
        .expect("the id input");
    input
        .send_keys("00000000-0000-4000-8000-000000000000")
        .await
        .expect("type an id");
    button.click().await.expect("click Send again");
    let output = browser
        .wait_text("#show-conversation pre", "HTTP 404")
        .await;
    assert!(output.contains("not_found"), "{output}");
    browser.close().await;
}
