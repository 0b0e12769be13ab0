//! The `web` binary: serves the chat bundle (with a single-page-app
//! fallback) and proxies `/api/*` to the agent, streaming included.

use std::time::Duration;

use asg_tests::{Agent, AgentOptions, WebServer, testdata};
use futures::StreamExt;
use serde_json::{Value, json};

fn dist_with_index() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("index.html"),
        "<html><body>chat bundle</body></html>",
    )
    .unwrap();
    std::fs::write(dir.path().join("app.js"), "console.log(1)").unwrap();
    dir
}

#[tokio::test]
async fn serves_the_bundle_and_proxies_the_api_with_headers() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let dist = dist_with_index();
    let web = WebServer::start(&agent.url, dist.path());
    let http = reqwest::Client::new();

    for path in ["/", "/conversations/some-id", "/app.js"] {
        let response = http.get(format!("{}{path}", web.url)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let text = response.text().await.unwrap();
        let expected = if path == "/app.js" {
            "console.log(1)"
        } else {
            "chat bundle"
        };
        assert!(text.contains(expected), "{path}: {text}");
    }

    let response = http
        .post(format!("{}/api/conversations", web.url))
        .header("content-type", "application/json")
        .header("x-session-id", "beef0001")
        .header("authorization", "Bearer web-token")
        .body(json!({"message": "list resources"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["x-session-id"], "beef0001");
    let created: Value = response.json().await.unwrap();
    assert_eq!(created["conversation"]["session_id"], "beef0001");
    let id = created["conversation"]["id"].as_str().unwrap().to_string();

    // Errors of the agent pass through unchanged.
    let response = http
        .get(format!("{}/api/conversations/nope", web.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);

    // The event stream passes through as it is produced.
    let response = http
        .get(format!("{}/api/conversations/{id}/events", web.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream = response.bytes_stream();
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("no event through the proxy")
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&first);
    assert!(text.contains("\"type\":\"snapshot\""), "{text}");
    agent.wait_log("sid=beef0001").await;
}

#[tokio::test]
async fn an_unreachable_agent_or_a_missing_bundle_gives_a_clear_answer() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let empty = tempfile::tempdir().unwrap();
    let web = WebServer::start(&down, empty.path());
    let http = reqwest::Client::new();

    let response = http
        .get(format!("{}/api/conversations", web.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 502);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "agent_unreachable");
    assert!(body["error"]["message"].as_str().unwrap().contains(&down));

    let response = http.get(format!("{}/", web.url)).send().await.unwrap();
    assert_eq!(response.status(), 503);
    let page = response.text().await.unwrap();
    assert!(
        page.contains("not built") && page.contains("build-web.sh"),
        "{page}"
    );
}
