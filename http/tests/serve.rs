//! `asg_http::serve`'s graceful stop: a connection that never sent
//! anything does not hold the server open, and a request being answered
//! is answered before the server ends.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use tokio::sync::{Notify, oneshot};

/// A server whose `GET /slow` answers once `release` is notified; the
/// server's task, and the sender that stops it.
async fn start(release: Arc<Notify>) -> (String, tokio::task::JoinHandle<()>, oneshot::Sender<()>) {
    let router = Router::new().route(
        "/slow",
        get(move || {
            let release = release.clone();
            async move {
                release.notified().await;
                "done"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        asg_http::serve::serve(listener, router, async move {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (address, server, stop)
}

#[tokio::test]
async fn a_connection_that_never_sent_anything_does_not_hold_the_stop() {
    let (address, server, stop) = start(Arc::new(Notify::new())).await;
    let idle = TcpStream::connect(&address).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server stops with an idle connection open")
        .unwrap();
    drop(idle);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_being_answered_is_answered_before_the_server_ends() {
    let release = Arc::new(Notify::new());
    let (address, server, stop) = start(release.clone()).await;
    let mut stream = TcpStream::connect(&address).unwrap();
    stream
        .write_all(b"GET /slow HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!server.is_finished(), "the server waits for the answer");
    release.notify_waiters();
    let answer = tokio::task::spawn_blocking(move || {
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    })
    .await
    .unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("done"),
        "{answer:?}"
    );
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server ends once the answer is sent")
        .unwrap();
}
