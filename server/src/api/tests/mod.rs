//! Router tests with `oneshot`: error shapes and status codes, the docs.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;

const RULES: &str = r#"
rules:
  - when: { user: "(?i)fail" }
    fail: "scripted failure"
  - reply: "echo: {user}"
"#;

async fn app(dir: &std::path::Path) -> Router {
    crate::test_support::scripted_app(dir, RULES).await
}

async fn call(app: &Router, method: &str, uri: &str, body: impl Into<Body>) -> (StatusCode, Value) {
    let response = app
        .clone()
        .oneshot(
            Request::builder()
                .method(method)
                .uri(uri)
                .header("content-type", "application/json")
                .body(body.into())
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

fn files_in(dir: &std::path::Path) -> usize {
    asg_tests::json_files_settled(dir);
    std::fs::read_dir(dir.join("conversations"))
        .unwrap()
        .count()
}

#[tokio::test]
async fn create_send_and_get_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (status, created) = call(&app, "POST", "/conversations", "").await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(created["conversation"]["status"], "active");
    assert_eq!(created["conversation"]["messages"][0]["role"], "system");
    assert!(created.get("result").is_none());
    let id = created["conversation"]["id"].as_str().unwrap().to_string();

    let (status, sent) = call(
        &app,
        "POST",
        &format!("/conversations/{id}/messages"),
        r#"{"message": "hello"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(sent["result"]["response"], "echo: hello");
    assert_eq!(sent["result"]["waiting_approval"], false);

    let (status, got) = call(&app, "GET", &format!("/conversations/{id}"), "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["conversation"]["messages"].as_array().unwrap().len(), 3);
    let (_, list) = call(&app, "GET", "/conversations", "").await;
    assert_eq!(
        list["summary"],
        json!({"total": 1, "active": 1, "waiting_approval": 0, "completed": 0, "canceled": 0})
    );
    assert_eq!(list["conversations"][0]["title"], "hello");
}

#[tokio::test]
async fn bad_input_gets_a_json_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (_, created) = call(&app, "POST", "/conversations", "").await;
    let id = created["conversation"]["id"].as_str().unwrap().to_string();
    let messages = format!("/conversations/{id}/messages");
    asg_tests::json_files_settled(dir.path());
    let before =
        std::fs::read(dir.path().join("conversations").join(format!("{id}.json"))).unwrap();

    let cases: Vec<(&str, String, Body, StatusCode, &str)> = vec![
        (
            "POST",
            messages.clone(),
            Body::from("{not json"),
            StatusCode::BAD_REQUEST,
            "malformed JSON",
        ),
        (
            "POST",
            messages.clone(),
            Body::from(""),
            StatusCode::BAD_REQUEST,
            "empty",
        ),
        (
            "POST",
            messages.clone(),
            Body::from(r#"{"message": 5}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid type",
        ),
        (
            "POST",
            messages.clone(),
            Body::from(r#"{}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing field `message`",
        ),
        (
            "POST",
            messages.clone(),
            Body::from(r#"{"message": "  "}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "must not be empty",
        ),
        (
            "POST",
            messages.clone(),
            Body::from(format!(
                r#"{{"message": "{}"}}"#,
                "x".repeat(MAX_BODY_BYTES)
            )),
            StatusCode::PAYLOAD_TOO_LARGE,
            "larger than",
        ),
        (
            "POST",
            "/conversations/not-a-uuid/messages".into(),
            Body::from(r#"{"message": "x"}"#),
            StatusCode::BAD_REQUEST,
            "must be a UUID",
        ),
        (
            "GET",
            "/conversations/..%2F..%2Fetc%2Fpasswd".into(),
            Body::empty(),
            StatusCode::BAD_REQUEST,
            "must be a UUID",
        ),
        (
            "GET",
            format!("/conversations/{}", uuid::Uuid::new_v4()),
            Body::empty(),
            StatusCode::NOT_FOUND,
            "not found",
        ),
        (
            "POST",
            format!("/approvals/{}", uuid::Uuid::new_v4()),
            Body::from(r#"{"approved": true}"#),
            StatusCode::NOT_FOUND,
            "not found",
        ),
        (
            "POST",
            "/approvals/123".into(),
            Body::from(r#"{"approved": true}"#),
            StatusCode::BAD_REQUEST,
            "must be a UUID",
        ),
        (
            "POST",
            format!("/approvals/{}", uuid::Uuid::new_v4()),
            Body::from(r#"{"approved": "maybe"}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid type",
        ),
        (
            "POST",
            format!("/approvals/{}", uuid::Uuid::new_v4()),
            Body::from(r#"{}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "decision",
        ),
        (
            "POST",
            "/conversations".into(),
            Body::from(r#"{"mesage": "typo"}"#),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown field",
        ),
        (
            "GET",
            "/nope".into(),
            Body::empty(),
            StatusCode::NOT_FOUND,
            "no such route",
        ),
        (
            "DELETE",
            "/health".into(),
            Body::empty(),
            StatusCode::METHOD_NOT_ALLOWED,
            "not allowed",
        ),
    ];
    for (method, uri, body, status, needle) in cases {
        let (got, value) = call(&app, method, &uri, body).await;
        assert_eq!(got, status, "{method} {uri}: {value}");
        let message = value["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(needle),
            "{method} {uri}: {message:?} lacks {needle:?}"
        );
        assert!(value["error"]["code"].is_string());
    }
    asg_tests::json_files_settled(dir.path());
    let after = std::fs::read(dir.path().join("conversations").join(format!("{id}.json"))).unwrap();
    assert_eq!(
        before, after,
        "a rejected request changed the stored conversation"
    );
    assert_eq!(
        files_in(dir.path()),
        1,
        "a rejected request created a conversation"
    );
}

#[tokio::test]
async fn model_failure_is_recorded_and_answers_502() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (status, body) = call(
        &app,
        "POST",
        "/conversations",
        r#"{"message": "please fail"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert_eq!(body["error"]["code"], "llm_error");
    let messages = body["error"]["conversation"]["messages"]
        .as_array()
        .unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["is_error"], true);
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("scripted failure")
    );
}

#[tokio::test]
async fn docs_and_openapi_cover_every_route() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (status, spec) = call(&app, "GET", "/openapi.json", "").await;
    assert_eq!(status, StatusCode::OK);
    for (path, method) in [
        ("/health", "get"),
        ("/tools", "get"),
        ("/markdown", "post"),
        ("/conversations", "post"),
        ("/conversations", "get"),
        ("/conversations/{id}", "get"),
        ("/conversations/{id}/messages", "post"),
        ("/approvals", "get"),
        ("/approvals/{uuid}", "post"),
        ("/conversations/{id}/events", "get"),
        ("/a2a", "post"),
        ("/.well-known/agent-card.json", "get"),
        ("/.well-known/agent.json", "get"),
    ] {
        assert!(
            spec["paths"][path][method].is_object(),
            "{method} {path} undocumented"
        );
    }
    let example = |path: &str, method: &str, status: &str| {
        spec["paths"][path][method]["responses"][status]["content"]["application/json"].clone()
    };
    let created = example("/conversations", "post", "201");
    assert_eq!(created["example"]["result"]["waiting_approval"], true);
    let approved = example("/approvals/{uuid}", "post", "200");
    assert_eq!(approved["example"]["result"]["waiting_approval"], false);
    let rpc = spec["paths"]["/a2a"]["post"].to_string();
    for needle in ["message/send", "tasks/cancel", "-32001", "-32700"] {
        assert!(rpc.contains(needle), "POST /a2a docs lack {needle}");
    }
    let intro = spec["info"]["description"].as_str().unwrap();
    assert!(intro.contains("415") && intro.contains("421"), "{intro}");
    let (status, page) = call(&app, "GET", "/docs", "").await;
    assert_eq!(status, StatusCode::OK);
    let page = page.as_str().unwrap();
    assert!(page.contains("/openapi.json") && page.contains("Try it"));
    assert!(
        page.contains("function markdown"),
        "descriptions are rendered as Markdown"
    );
    assert!(
        !page.contains("https://"),
        "the docs page must not load anything from the internet"
    );
}

#[tokio::test]
async fn session_id_is_reused_or_generated_and_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let response = app
        .clone()
        .oneshot(
            Request::post("/conversations")
                .header("x-session-id", "cafe0001")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.headers()["x-session-id"], "cafe0001");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(value["conversation"]["session_id"], "cafe0001");

    let (_, value) = call(&app, "POST", "/conversations", "").await;
    let sid = value["conversation"]["session_id"].as_str().unwrap();
    assert_eq!(sid.len(), 8);
    assert!(sid.bytes().all(|b| b.is_ascii_hexdigit()));
}

#[tokio::test]
async fn events_stream_starts_with_a_snapshot_then_follows_the_turn() {
    use futures::StreamExt;

    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (_, created) = call(&app, "POST", "/conversations", "").await;
    let id = created["conversation"]["id"].as_str().unwrap().to_string();
    let response = app
        .clone()
        .oneshot(
            Request::get(format!("/conversations/{id}/events"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body().into_data_stream();
    let sender = {
        let app = app.clone();
        let uri = format!("/conversations/{id}/messages");
        tokio::spawn(async move { call(&app, "POST", &uri, r#"{"message": "hi"}"#).await })
    };
    let mut types = Vec::new();
    let mut text = String::new();
    while !types.contains(&"turn_finished".to_string()) {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(5), body.next())
            .await
            .expect("no event within 5 s")
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            if let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) {
                let event: Value = serde_json::from_str(data).unwrap();
                types.push(event["type"].as_str().unwrap().to_string());
                if event["type"] == "turn_finished" {
                    assert_eq!(event["response"], "echo: hi");
                }
            }
        }
    }
    assert_eq!(
        types,
        [
            "snapshot",
            "turn_started",
            "message",
            "message",
            "turn_finished"
        ]
    );
    assert_eq!(sender.await.unwrap().0, StatusCode::OK);
    let (status, _) = call(
        &app,
        "GET",
        &format!("/conversations/{}/events", uuid::Uuid::new_v4()),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

async fn call_typed(
    app: &Router,
    uri: &str,
    content_type: &str,
    body: &str,
) -> (StatusCode, Value) {
    let response = app
        .clone()
        .oneshot(
            Request::post(uri)
                .header("content-type", content_type)
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn bodies_that_are_not_json_get_415_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let approval = format!("/approvals/{}", uuid::Uuid::new_v4());
    let cases = [
        ("/conversations", "text/plain", r#"{"message": "hi"}"#),
        (
            "/conversations",
            "application/x-www-form-urlencoded",
            "message=hi",
        ),
        (approval.as_str(), "text/plain", r#"{"approved": true}"#),
        (
            "/a2a",
            "text/plain",
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/get"}"#,
        ),
    ];
    for (uri, content_type, body) in cases {
        let (status, answer) = call_typed(&app, uri, content_type, body).await;
        assert_eq!(
            status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{uri}: {answer}"
        );
        assert_eq!(answer["error"]["code"], "unsupported_media_type");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(content_type), "{message}");
        assert!(message.contains("application/json"), "{message}");
    }
    assert_eq!(files_in(dir.path()), 0);
    let (status, _) = call_typed(
        &app,
        "/conversations",
        "application/json; charset=utf-8",
        "{}",
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let empty = Request::post("/conversations").body(Body::empty()).unwrap();
    let response = app.clone().oneshot(empty).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(files_in(dir.path()), 2);
}

#[tokio::test]
async fn the_index_links_every_page_and_health_has_details() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let (status, page) = call(&app, "GET", "/", "").await;
    assert_eq!(status, StatusCode::OK);
    let page = page.as_str().unwrap();
    for link in [
        "/docs",
        "/health",
        "/tools",
        "/conversations",
        "/approvals",
        "/.well-known/agent-card.json",
    ] {
        assert!(page.contains(&format!("href=\"{link}\"")), "{link} missing");
    }
    assert!(page.contains("test-agent") && page.contains("A test agent."));
    let (status, health) = call(&app, "GET", "/health", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        health,
        json!({"status": "ok", "details": {"quarantined_files": 0, "store": "ok"}})
    );
}

#[tokio::test]
async fn markdown_comes_back_as_safe_html_one_fragment_per_text_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path()).await;
    let texts = json!({"texts": [
        "**Done.** Created `res_1`.",
        "<script>alert(1)</script>",
        "[x](javascript:alert(1)) and [docs](https://x.test/d)",
        "",
    ]});
    let (status, body) = call(&app, "POST", "/markdown", texts.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let html: Vec<&str> = body["html"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert_eq!(html.len(), 4);
    assert_eq!(
        html[0],
        "<p><strong>Done.</strong> Created <code>res_1</code>.</p>\n"
    );
    assert!(!html[1].contains("<script"), "{}", html[1]);
    assert!(html[1].contains("&lt;script&gt;"), "{}", html[1]);
    assert!(!html[2].contains("javascript:"), "{}", html[2]);
    assert!(html[2].contains("href=\"https://x.test/d\""), "{}", html[2]);
    assert_eq!(html[3], "");

    // Bad batches are refused by name and render nothing.
    let too_many = json!({"texts": vec!["a"; 201]}).to_string();
    let (status, body) = call(&app, "POST", "/markdown", too_many).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too many texts: 201")
    );
    let at_most = json!({"texts": vec!["a"; 200]}).to_string();
    assert_eq!(
        call(&app, "POST", "/markdown", at_most).await.0,
        StatusCode::OK
    );
    for (bad, status) in [
        (r#"{"texts": "one"}"#, StatusCode::UNPROCESSABLE_ENTITY),
        (r#"{"texts": [1]}"#, StatusCode::UNPROCESSABLE_ENTITY),
        (r#"{}"#, StatusCode::UNPROCESSABLE_ENTITY),
        (r#"{"texts": ["#, StatusCode::BAD_REQUEST),
        ("", StatusCode::BAD_REQUEST),
    ] {
        let (got, body) = call(&app, "POST", "/markdown", bad).await;
        assert_eq!(got, status, "{bad}: {body}");
        assert!(body["error"]["message"].is_string(), "{bad}: {body}");
    }
    let (status, _) = call(&app, "GET", "/markdown", "").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    // 200 texts of 2 KiB: over the body limit, refused before rendering.
    let huge = json!({"texts": vec!["*x*".repeat(700); 200]}).to_string();
    assert!(huge.len() > 256 * 1024);
    let (status, body) = call(&app, "POST", "/markdown", huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
}

mod load;
