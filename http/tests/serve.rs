//! `asg_http::serve`'s graceful stop: a connection that never sent
//! anything does not hold the server open, and a request being answered
//! is answered before the server ends. And its header read timeout: a
//! client that sends nothing, a head too slowly, or nothing more on a
//! kept-alive connection is disconnected after it.

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
    start_with(release, asg_http::serve::HEADER_READ_TIMEOUT).await
}

/// [`start`] with another header read timeout, and `GET /fast` too.
async fn start_with(
    release: Arc<Notify>,
    header_timeout: Duration,
) -> (String, tokio::task::JoinHandle<()>, oneshot::Sender<()>) {
    let router = Router::new()
        .route(
            "/slow",
            get(move || {
                let release = release.clone();
                async move {
                    release.notified().await;
                    "done"
                }
            }),
        )
        .route("/fast", get(|| async { "fast" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let stopped = async move {
            let _ = stopped.await;
        };
        asg_http::serve::serve_with_header_timeout(listener, router, stopped, header_timeout)
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

/// The header read timeout of the servers below.
const HEADER_TIMEOUT: Duration = Duration::from_millis(300);

/// Reads `stream` until the server closes it (or 5 s pass): what it
/// sent, and how long after `since` it closed.
async fn until_closed(mut stream: TcpStream, since: std::time::Instant) -> (String, Duration) {
    tokio::task::spawn_blocking(move || {
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut sent = Vec::new();
        let mut chunk = [0u8; 1024];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => sent.extend_from_slice(&chunk[..read]),
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(error) => panic!("not closed within 5 s ({error}); sent {sent:?}"),
            }
        }
        (String::from_utf8_lossy(&sent).into_owned(), since.elapsed())
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_client_that_sends_nothing_is_disconnected_after_the_header_timeout() {
    let (address, _server, _stop) = start_with(Arc::new(Notify::new()), HEADER_TIMEOUT).await;
    let connected = std::time::Instant::now();
    let silent = TcpStream::connect(&address).unwrap();
    let (sent, after) = until_closed(silent, connected).await;
    assert_eq!(sent, "");
    assert!(after >= HEADER_TIMEOUT, "closed after {after:?}");
}

#[tokio::test]
async fn a_head_sent_too_slowly_is_not_waited_for() {
    let (address, _server, _stop) = start_with(Arc::new(Notify::new()), HEADER_TIMEOUT).await;
    let mut slow = TcpStream::connect(&address).unwrap();
    let started = std::time::Instant::now();
    // A slowloris: the head's start, then a header line now and then.
    slow.write_all(b"GET /fast HTTP/1.1\r\n").unwrap();
    let mut writer = slow.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(100));
            if writer.write_all(b"X-Slow: 1\r\n").is_err() {
                return;
            }
        }
    });
    let (sent, after) = until_closed(slow, started).await;
    trickle.join().unwrap();
    assert!(!sent.contains("fast"), "the request was answered: {sent:?}");
    assert!(
        after < Duration::from_secs(2),
        "held for {after:?} while the head trickled in"
    );
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_after_its_answer_and_the_timeout() {
    let (address, _server, _stop) = start_with(Arc::new(Notify::new()), HEADER_TIMEOUT).await;
    let mut stream = TcpStream::connect(&address).unwrap();
    // Requests sent in time on the same connection are answered.
    for _ in 0..3 {
        stream
            .write_all(b"GET /fast HTTP/1.1\r\nHost: test\r\n\r\n")
            .unwrap();
        tokio::time::sleep(HEADER_TIMEOUT / 3).await;
    }
    let answered = std::time::Instant::now();
    let (sent, after) = until_closed(stream, answered).await;
    assert_eq!(sent.matches("HTTP/1.1 200").count(), 3, "{sent:?}");
    assert!(sent.ends_with("fast"), "{sent:?}");
    assert!(after >= HEADER_TIMEOUT / 2, "closed after {after:?}");
}
