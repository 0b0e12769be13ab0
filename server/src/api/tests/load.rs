//! The read path and admission under load: GETs served from the read
//! cache (no store read), and turns past the configured places refused
//! with 503 and `Retry-After`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::{RULES, call};
use crate::engine::Engine;
use crate::store::JsonFileStore;
use crate::test_support::{WatchedStore, app_of, scripted_parts};

/// An app over watched JSON files in `dir`, with `running` and `queued`
/// places for turns.
async fn watched_app(
    dir: &std::path::Path,
    running: usize,
    queued: usize,
) -> (axum::Router, Arc<WatchedStore>) {
    let store = Arc::new(WatchedStore::new(JsonFileStore::open(dir).unwrap()));
    let mut parts = scripted_parts(store.clone(), RULES);
    parts.limits.max_running_turns = running;
    parts.limits.max_queued_turns = queued;
    (app_of(Engine::start(parts).await.unwrap()), store)
}

async fn created(app: &axum::Router) -> String {
    let (status, created) = call(app, "POST", "/conversations", "").await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["conversation"]["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_conversation_read_again_is_served_without_a_store_read() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let (app, _) = watched_app(dir.path(), 8, 8).await;
        let id = created(&app).await;
        let body = r#"{"message":"hello"}"#;
        let (status, _) = call(&app, "POST", &format!("/conversations/{id}/messages"), body).await;
        assert_eq!(status, StatusCode::OK);
        id
    };
    // A new process over the same files: nothing in memory yet.
    let (app, store) = watched_app(dir.path(), 8, 8).await;
    let uri = format!("/conversations/{id}");
    let (status, first) = call(&app, "GET", &uri, Body::empty()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(store.loads(), 1);
    for _ in 0..5 {
        let (status, again) = call(&app, "GET", &uri, Body::empty()).await;
        assert_eq!((status, &again), (StatusCode::OK, &first));
    }
    assert_eq!(store.loads(), 1, "reads again came from the cache");

    let body = r#"{"message":"once more"}"#;
    let (status, _) = call(&app, "POST", &format!("{uri}/messages"), body).await;
    assert_eq!(status, StatusCode::OK);
    let (_, after) = call(&app, "GET", &uri, Body::empty()).await;
    let texts: Vec<&str> = after["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        texts.contains(&"echo: once more"),
        "the saved version is served: {texts:?}"
    );
    let loads = store.loads();
    for _ in 0..3 {
        let (_, again) = call(&app, "GET", &uri, Body::empty()).await;
        assert_eq!(again, after);
    }
    assert!(
        store.loads() <= loads + 1,
        "the new version is read at most once"
    );
}

/// Sends `text` to the conversation at `uri`; the turn answers 200.
async fn send(app: &axum::Router, uri: &str, text: &str) {
    let body = json!({ "message": text }).to_string();
    let (status, answer) = call(app, "POST", &format!("{uri}/messages"), body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

#[tokio::test]
async fn a_conversation_idle_for_a_while_is_used_again_without_a_store_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(WatchedStore::new(JsonFileStore::open(dir.path()).unwrap()));
    let engine = Engine::start(scripted_parts(store.clone(), RULES))
        .await
        .unwrap();
    let app = app_of(engine.clone());
    let id = created(&app).await;
    let uri = format!("/conversations/{id}");
    send(&app, &uri, "one").await;
    let loads = store.loads();

    // Its slot is dropped idle (every 2 s in the agent).
    engine.evict_idle_now();
    let (status, read) = call(&app, "GET", &uri, Body::empty()).await;
    assert_eq!(status, StatusCode::OK);
    send(&app, &uri, "two").await;
    assert_eq!(store.loads(), loads, "neither read nor turn read the store");

    // The turn started from the last saved version: nothing was lost.
    engine.evict_idle_now();
    let (_, after) = call(&app, "GET", &uri, Body::empty()).await;
    let texts = |body: &Value| -> Vec<String> {
        body["conversation"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(texts(&read)[1..], ["one", "echo: one"]);
    assert_eq!(texts(&after)[1..], ["one", "echo: one", "two", "echo: two"]);
    assert_eq!(store.loads(), loads);

    // And a new process reads the same from the files.
    drop((app, engine));
    let (fresh, _) = watched_app(dir.path(), 8, 8).await;
    let (_, stored) = call(&fresh, "GET", &uri, Body::empty()).await;
    assert_eq!(texts(&stored), texts(&after));
}

#[tokio::test]
async fn a_turn_past_the_running_and_queued_places_gets_503_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let (app, store) = watched_app(dir.path(), 1, 0).await;
    let (first, second) = (created(&app).await, created(&app).await);
    store.hold_saves();
    let running = tokio::spawn({
        let app = app.clone();
        async move {
            let uri = format!("/conversations/{first}/messages");
            call(&app, "POST", &uri, r#"{"message":"slow"}"#).await
        }
    });
    while store.saves_waiting() == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let response = app
        .clone()
        .oneshot(
            Request::post(format!("/conversations/{second}/messages"))
                .header("content-type", "application/json")
                .body(Body::from(r#"{"message":"one too many"}"#))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let refused: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(refused["error"]["code"], "overloaded");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("limits.max_running_turns"), "{message}");
    refused_on_every_a2a_binding(&app).await;

    store.release_saves();
    let (status, answered) = running.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answered}");
    let uri = format!("/conversations/{second}/messages");
    let (status, _) = call(&app, "POST", &uri, r#"{"message":"now"}"#).await;
    assert_eq!(status, StatusCode::OK, "a place is free again");
}

/// A2A callers meet the same refusal as REST ones: 503 with
/// `Retry-After`, the body in their binding's error form.
async fn refused_on_every_a2a_binding(app: &axum::Router) {
    let message = json!({"role": "user", "parts": [{"kind": "text", "text": "one too many"}],
        "messageId": "m-1"});
    let v03 = json!({"jsonrpc": "2.0", "id": 7, "method": "message/send",
        "params": {"message": message}});
    let v1_message = json!({"role": "ROLE_USER", "parts": [{"text": "one too many"}],
        "messageId": "m-2"});
    let v1 = json!({"jsonrpc": "2.0", "id": 8, "method": "SendMessage",
        "params": {"message": v1_message}});
    let rest = json!({"message": v1_message});
    for (uri, body, version) in [
        ("/a2a", v03, None),
        ("/a2a", v1, Some("1.0")),
        ("/a2a/v1/message:send", rest, Some("1.0")),
    ] {
        let mut request = Request::post(uri).header("content-type", "application/json");
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        let response = app
            .clone()
            .oneshot(request.body(Body::from(body.to_string())).unwrap())
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "{uri} {body}"
        );
        assert_eq!(response.headers()[header::RETRY_AFTER], "1", "{uri}");
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let refused: Value = serde_json::from_slice(&bytes).unwrap();
        let text = if uri == "/a2a" {
            assert_eq!(refused["error"]["code"], -32603, "{refused}");
            assert_eq!(refused["id"], body["id"], "{refused}");
            refused["error"]["message"].clone()
        } else {
            assert_eq!(refused["status"], 503, "{refused}");
            assert_eq!(refused["reason"], "UNAVAILABLE", "{refused}");
            assert_eq!(refused["error"]["status"], "UNAVAILABLE", "{refused}");
            refused["detail"].clone()
        };
        let text = text.as_str().unwrap_or_default();
        assert!(
            text.contains("limits.max_running_turns"),
            "{uri}: {refused}"
        );
    }
}

/// A turn waiting for its place holds only what starts it: the turn's
/// own future (tens of KiB: every step it may take) is made once it has
/// a place, in the task that runs it. Before, each of 1,000 clients
/// waiting for a place held one.
#[tokio::test]
async fn a_turn_waiting_for_a_place_is_small() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonFileStore::open(dir.path()).unwrap());
    let engine = Engine::start(scripted_parts(store, RULES)).await.unwrap();
    let ctx = crate::context::RequestContext::default();
    let id = uuid::Uuid::new_v4();
    let sizes = [
        (
            "send",
            std::mem::size_of_val(&engine.send(id, &ctx, "hi".into())),
        ),
        ("create", std::mem::size_of_val(&engine.create(&ctx, None))),
        (
            "decide",
            std::mem::size_of_val(&engine.resolve_approval(id, &ctx, true, None)),
        ),
        (
            "cancel",
            std::mem::size_of_val(&engine.cancel(id, &ctx, None)),
        ),
    ];
    for (what, size) in sizes {
        assert!(size <= 4096, "a waiting {what} holds {size} bytes");
    }
}
