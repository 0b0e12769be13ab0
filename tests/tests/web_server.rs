//! The `web` binary: serves the chat bundle (with a single-page-app
//! fallback) and proxies `/api/*` to the agent, streaming included.

use std::time::Duration;

use asg_tests::fake_http::{FakeHttp, Reply};
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

/// What the browser is sent for `path` with `accept-encoding` (None: no
/// such header): status, `content-encoding`, `content-type`, `vary` and
/// the bytes as they travel (this client decodes nothing).
async fn fetch_encoded(
    url: &str,
    path: &str,
    accept: Option<&str>,
) -> (u16, Option<String>, String, String, Vec<u8>) {
    let mut request = reqwest::Client::new().get(format!("{url}{path}"));
    if let Some(accept) = accept {
        request = request.header("accept-encoding", accept);
    }
    let response = request.send().await.unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_string())
    };
    let encoding = header("content-encoding");
    let kind = header("content-type").unwrap_or_default();
    let vary = header("vary").unwrap_or_default();
    let status = response.status().as_u16();
    (
        status,
        encoding,
        kind,
        vary,
        response.bytes().await.unwrap().to_vec(),
    )
}

/// `scripts/build-web.sh` writes each file's `.br` and `.gz` beside it;
/// a browser that accepts one is sent it, with the file's own type, and
/// one that accepts neither (or a file without them) gets the file.
#[tokio::test]
async fn the_bundle_is_sent_compressed_to_a_browser_that_accepts_it() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let dist = dist_with_index();
    let wasm = b"\0asm plain module".to_vec();
    std::fs::write(dist.path().join("chat_bg.wasm"), &wasm).unwrap();
    std::fs::write(dist.path().join("chat_bg.wasm.gz"), b"gzip bytes").unwrap();
    std::fs::write(dist.path().join("chat_bg.wasm.br"), b"brotli bytes").unwrap();
    std::fs::write(dist.path().join("index.html.gz"), b"gzip index").unwrap();
    let web = WebServer::start(&agent.url, dist.path());

    let (status, encoding, kind, vary, body) =
        fetch_encoded(&web.url, "/chat_bg.wasm", Some("gzip, deflate")).await;
    assert_eq!(status, 200);
    assert_eq!(encoding.as_deref(), Some("gzip"));
    assert_eq!(kind, "application/wasm");
    assert!(
        vary.to_ascii_lowercase().contains("accept-encoding"),
        "{vary}"
    );
    assert_eq!(body, b"gzip bytes");

    let (_, encoding, kind, _, body) =
        fetch_encoded(&web.url, "/chat_bg.wasm", Some("gzip, deflate, br")).await;
    assert_eq!(encoding.as_deref(), Some("br"));
    assert_eq!(kind, "application/wasm");
    assert_eq!(body, b"brotli bytes");

    // Refused or not offered: the file itself.
    for accept in [None, Some("identity"), Some("gzip;q=0, br;q=0")] {
        let (status, encoding, kind, _, body) =
            fetch_encoded(&web.url, "/chat_bg.wasm", accept).await;
        assert_eq!((status, encoding), (200, None), "{accept:?}");
        assert_eq!(kind, "application/wasm");
        assert_eq!(body, wasm, "{accept:?}");
    }
    let (_, encoding, _, _, body) = fetch_encoded(&web.url, "/app.js", Some("gzip, br")).await;
    assert_eq!(encoding, None, "no app.js.gz was written");
    assert_eq!(body, b"console.log(1)");

    // The single-page fallback is the index, compressed the same way.
    let (status, encoding, kind, _, body) =
        fetch_encoded(&web.url, "/conversations/some-id", Some("gzip")).await;
    assert_eq!((status, encoding.as_deref()), (200, Some("gzip")));
    assert!(kind.starts_with("text/html"), "{kind}");
    assert_eq!(body, b"gzip index");

    // A compressed copy asked for by name is a file like any other, and
    // a name climbing out of the bundle is still refused.
    let (status, encoding, _, _, body) =
        fetch_encoded(&web.url, "/chat_bg.wasm.gz", Some("gzip")).await;
    assert_eq!((status, encoding), (200, None));
    assert_eq!(body, b"gzip bytes");
    let (status, _, _, _, body) =
        fetch_encoded(&web.url, "/..%2f..%2fetc%2fpasswd", Some("gzip")).await;
    assert!(
        !String::from_utf8_lossy(&body).contains("root:"),
        "{status}"
    );
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

/// `POST url` as a rebinding page would send it: its own `Host` and a
/// matching `Origin`, a JSON body.
async fn post_as(url: &str, host: &str, origin: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .header("host", host)
        .header("origin", origin)
        .header("content-type", "application/json")
        .body(json!({"message": "add resource rebound-1 with value 1"}).to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn port_of(url: &str) -> &str {
    url.rsplit(':').next().unwrap()
}

/// DNS rebinding through the web proxy: a page on `evil.example` resolved
/// to this machine sends `Host: evil.example:PORT` with `Origin:
/// http://evil.example:PORT`. The web server refuses it (421) whatever it
/// listens on, and nothing reaches the agent; a forged Origin behind a
/// loopback Host gets 403; the loopback chat keeps working.
#[tokio::test]
async fn a_rebinding_page_cannot_drive_the_agent_through_the_web_proxy() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let dist = dist_with_index();
    let config = asg_tests::workspace_root().join("config/web.yaml");
    let total = || async {
        let (_, list) = agent.get("/conversations").await;
        list["summary"]["total"].as_u64().unwrap()
    };
    for listen in ["127.0.0.1", "0.0.0.0"] {
        let before = total().await;
        let web = WebServer::start_with(&config, listen, &agent.url, dist.path());
        let port = port_of(&web.url);
        let evil = format!("evil.example:{port}");
        let create = format!("{}/api/conversations", web.url);
        let (status, body) = post_as(&create, &evil, &format!("http://{evil}")).await;
        assert_eq!(status, 421, "{listen}: {body}");
        assert_eq!(body["error"]["code"], "misdirected_request", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&evil) && message.contains("allowed_hosts"),
            "{message}"
        );
        for path in ["/", "/api/conversations", "/web/health"] {
            let response = reqwest::Client::new()
                .get(format!("{}{path}", web.url))
                .header("host", &evil)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 421, "{listen} GET {path}");
        }
        // A loopback Host with a foreign Origin: the Origin is compared
        // with the configured origins, not with the Host.
        let local = format!("localhost:{port}");
        let (status, body) = post_as(&create, &local, "http://evil.example").await;
        assert_eq!(status, 403, "{listen}: {body}");
        assert_eq!(
            total().await,
            before,
            "{listen}: a refused request reached the agent"
        );
        // The chat itself, on a loopback origin.
        for origin in [
            format!("http://{local}"),
            format!("http://127.0.0.1:{port}"),
        ] {
            let (status, body) = post_as(&create, &local, &origin).await;
            assert_eq!(status, 201, "{listen} {origin}: {body}");
        }
        assert_eq!(total().await, before + 2, "{listen}");
    }
    assert!(agent.resource_names().await.is_empty());
}

/// A name in the web config's `allowed_hosts` is answered, and its
/// origin at the listen port may post; other names still get 421.
#[tokio::test]
async fn a_name_in_allowed_hosts_is_answered() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let dist = dist_with_index();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("web.yaml");
    std::fs::write(&config, "allowed_hosts: [Chat.Test]\n").unwrap();
    let web = WebServer::start_with(&config, "0.0.0.0", &agent.url, dist.path());
    let port = port_of(&web.url);
    let named = format!("chat.test:{port}");
    let create = format!("{}/api/conversations", web.url);
    let (status, body) = post_as(&create, &named, &format!("http://{named}")).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = post_as(&create, &format!("other.test:{port}"), "http://other.test").await;
    assert_eq!(status, 421, "{body}");
}

/// The proxy never passes the browser's `Host` (or forwarding headers)
/// on: the agent sees its own host, as in `agent_url`.
#[tokio::test]
async fn the_proxy_sends_the_agents_own_host() {
    let fake = FakeHttp::start(vec![Reply::json(json!({"conversations": []}))]).await;
    let dist = dist_with_index();
    let web = WebServer::start(&fake.url, dist.path());
    let response = reqwest::Client::new()
        .get(format!("{}/api/conversations", web.url))
        .header("host", format!("localhost:{}", port_of(&web.url)))
        .header("x-forwarded-host", "evil.example")
        .header(
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let header = |name: &str| {
        requests[0]
            .headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let agent_host = fake.url.trim_start_matches("http://");
    assert_eq!(header("host").as_deref(), Some(agent_host));
    assert_eq!(header("x-forwarded-host"), None);
    // The trace context goes on to the agent.
    assert_eq!(
        header("traceparent").as_deref(),
        Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    );

    // A refused request never reaches it.
    let refused = reqwest::Client::new()
        .delete(format!("{}/api/conversations/x", web.url))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 421);
    assert_eq!(fake.requests().len(), 1);
}

/// The `web` binary's `GET /metrics`: its requests by route template
/// (never the raw path) and the process values; behind sign-in when
/// sign-in is configured.
#[tokio::test]
async fn the_web_binary_serves_its_own_metrics() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let dist = dist_with_index();
    let web = WebServer::start(&agent.url, dist.path());
    let http = reqwest::Client::new();
    for path in ["/web/health", "/api/conversations/made-up-7c1d"] {
        http.get(format!("{}{path}", web.url)).send().await.unwrap();
    }
    let response = http
        .get(format!("{}/metrics", web.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = response.text().await.unwrap();
    for series in [
        r#"asg_http_requests_total{method="GET",route="/web/health",status="2xx"} 1"#,
        r#"asg_http_requests_total{method="GET",route="/api/{*path}",status="4xx"} 1"#,
        "process_resident_memory_bytes",
    ] {
        assert!(text.contains(series), "{series}\n{text}");
    }
    assert!(
        !text.contains("made-up-7c1d"),
        "a raw path in a label:\n{text}"
    );

    // With sign-in configured, a browser without a session gets 401.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("web.yaml");
    std::fs::write(
        &config,
        "oauth2:\n  client_id: asg-web\n  auth_url: http://127.0.0.1:9/authorize\n  \
         token_url: http://127.0.0.1:9/token\n  redirect_url: http://127.0.0.1:3000/auth/callback\n",
    )
    .unwrap();
    let guarded = WebServer::start_with(&config, "127.0.0.1", &agent.url, dist.path());
    let response = http
        .get(format!("{}/metrics", guarded.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    // metrics_listen: the metrics alone, without sign-in, on their own
    // address.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("metrics_listen: 127.0.0.1:{port}\n"));
    std::fs::write(&config, text).unwrap();
    let _listening = WebServer::start_with(&config, "127.0.0.1", &agent.url, dist.path());
    let metrics_url = format!("http://127.0.0.1:{port}");
    let response = http
        .get(format!("{metrics_url}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("process_resident_memory_bytes")
    );
    let response = http
        .get(format!("{metrics_url}/web/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404, "only /metrics there");
}
