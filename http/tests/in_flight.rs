//! What a connection costs a server served by `asg_http::serve`, counted
//! allocation by allocation: idle, little (no hyper connection is made
//! before the client sends something); with a request in flight, hyper's
//! two 8 KiB buffers (read, answer heads) and the request. Through
//! `axum::serve`'s version-detecting connection the read buffer grew to
//! 16 KiB: 26.5 KB a request in flight here, against 18.3 KB. A handler
//! that keeps its request's headers and body while it waits (as the
//! agent's do while a turn runs) kept hyper's read buffer too, and hyper
//! allocated another for its next read: 27.5 KB, 19.4 KB now that the
//! request is copied out of it. Its own test binary: it counts every
//! allocation of the process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use tokio::sync::{Mutex, Notify, watch};

/// Bytes allocated and not yet freed, by anyone in this process.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

// SAFETY: every call is passed on to `System` unchanged; only sizes are
// counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Connections, and requests kept in flight at once.
const REQUESTS: usize = 200;
/// Most bytes an idle connection may hold: 1.4 KB measured (its task and
/// socket); a hyper connection made at once holds its two 8 KiB buffers.
const MAX_BYTES_PER_IDLE_CONNECTION: isize = 4 << 10;
/// Most bytes one request in flight may hold, its connection included:
/// 18.3 KB measured (hyper's 8 KiB read and 8 KiB answer-head buffers
/// among them), 19.4 KB when the handler keeps the request's headers and
/// body; 26.5 KB through `axum::serve` (a 16 KiB read buffer), 27.5 KB
/// when the kept headers and body were slices of hyper's read buffer.
const MAX_BYTES_PER_REQUEST: isize = 22 << 10;

/// The tests one at a time: each counts what the whole process holds.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// A request whose handler waits with nothing of the request kept.
const GET_WAIT: &[u8] = b"GET /wait HTTP/1.1\r\nHost: test\r\n\r\n";
/// A request whose handler keeps its headers and body while it waits.
const POST_HOLD: &[u8] = b"POST /hold HTTP/1.1\r\nHost: test\r\n\
Content-Type: application/json\r\nContent-Length: 16\r\n\r\n{\"text\":\"hello\"}";

/// A server whose `GET /wait` answers once `release` is notified, and
/// how many of those requests are being answered.
struct Waiting {
    address: String,
    entered: Arc<AtomicUsize>,
    release: Arc<Notify>,
    stop: watch::Sender<bool>,
}

async fn start() -> Waiting {
    let entered = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(Notify::new());
    let router = Router::new()
        .route(
            "/wait",
            get({
                let (entered, release) = (entered.clone(), release.clone());
                move || wait_for(entered, release)
            }),
        )
        .route(
            "/hold",
            post({
                let (entered, release) = (entered.clone(), release.clone());
                move |headers: HeaderMap, body: Bytes| async move {
                    let answer = wait_for(entered, release).await;
                    // Kept until now, as a handler keeps them while its
                    // turn runs.
                    std::hint::black_box((&headers, &body));
                    answer
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (stop, mut stopped) = watch::channel(false);
    tokio::spawn(asg_http::serve::serve(listener, router, async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    }));
    Waiting {
        address,
        entered,
        release,
        stop,
    }
}

/// Counts the request in, waits for the release.
async fn wait_for(entered: Arc<AtomicUsize>, release: Arc<Notify>) -> &'static str {
    let released = release.notified();
    entered.fetch_add(1, Ordering::SeqCst);
    released.await;
    "done"
}

/// Sends `request` on a new connection.
fn send(address: &str, request: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.write_all(request).unwrap();
    stream
}

/// Waits until `count` requests are being answered.
async fn until_entered(server: &Waiting, count: usize) {
    for _ in 0..500 {
        if server.entered.load(Ordering::SeqCst) >= count {
            // hyper's own reads around the dispatch settle.
            tokio::time::sleep(Duration::from_millis(200)).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "only {} of {count} requests reached the handler",
        server.entered.load(Ordering::SeqCst)
    );
}

/// Releases every waiting request and reads the answers.
async fn release_all(server: &Waiting, streams: Vec<TcpStream>) -> Vec<String> {
    let answers = tokio::task::spawn_blocking(move || {
        streams
            .into_iter()
            .map(|mut stream| {
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                // Kept alive: read until the whole answer is in.
                let mut answer = Vec::new();
                let mut chunk = [0u8; 1024];
                while !answer.ends_with(b"done") {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(read) => answer.extend_from_slice(&chunk[..read]),
                    }
                }
                String::from_utf8_lossy(&answer).into_owned()
            })
            .collect::<Vec<_>>()
    });
    // Notified repeatedly: a handler entered after one wake-up still ends.
    while !answers.is_finished() {
        server.release.notify_waiters();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    answers.await.unwrap()
}

/// A server warmed by 20 requests: what the first requests allocate once
/// (the runtime's queues, the router's) is not counted.
async fn warmed(request: &'static [u8]) -> Waiting {
    let server = start().await;
    let warm: Vec<TcpStream> = (0..20).map(|_| send(&server.address, request)).collect();
    until_entered(&server, 20).await;
    release_all(&server, warm).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    server
}

/// Bytes held by each of [`REQUESTS`] requests in flight at once, after
/// checking that each is answered once released.
async fn held_per_request(server: &Waiting, request: &'static [u8]) -> isize {
    let already = server.entered.load(Ordering::SeqCst);
    let before = LIVE.load(Ordering::SeqCst);
    let address = server.address.clone();
    let streams = tokio::task::spawn_blocking(move || {
        (0..REQUESTS)
            .map(|_| send(&address, request))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    until_entered(server, already + REQUESTS).await;
    let during = LIVE.load(Ordering::SeqCst);
    let answers = release_all(server, streams).await;
    let _ = server.stop.send(true);
    assert!(
        answers
            .iter()
            .all(|a| a.starts_with("HTTP/1.1 200") && a.ends_with("done")),
        "every request is answered once released: {:?}",
        answers.iter().find(|a| !a.ends_with("done"))
    );
    (during - before) / REQUESTS as isize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_costs_little_and_a_request_in_flight_one_http1_connection() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = warmed(GET_WAIT).await;
    let before_idle = LIVE.load(Ordering::SeqCst);
    let address = server.address.clone();
    let idle: Vec<TcpStream> = tokio::task::spawn_blocking(move || {
        (0..REQUESTS)
            .map(|_| TcpStream::connect(&address).unwrap())
            .collect()
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let per_idle_connection = (LIVE.load(Ordering::SeqCst) - before_idle) / REQUESTS as isize;
    drop(idle);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        per_idle_connection <= MAX_BYTES_PER_IDLE_CONNECTION,
        "an idle connection holds {per_idle_connection} bytes"
    );
    let per_request = held_per_request(&server, GET_WAIT).await;
    assert!(
        per_request <= MAX_BYTES_PER_REQUEST,
        "{REQUESTS} requests in flight hold {per_request} bytes each"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_keeping_its_request_does_not_keep_hypers_read_buffer() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = warmed(POST_HOLD).await;
    let per_request = held_per_request(&server, POST_HOLD).await;
    assert!(
        per_request <= MAX_BYTES_PER_REQUEST,
        "{REQUESTS} requests in flight, their handlers keeping their headers and body, \
         hold {per_request} bytes each"
    );
}
