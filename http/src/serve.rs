//! Serving a router: what `axum::serve` does (an accept loop, a task per
//! connection, a graceful stop), with hyper's HTTP/1 connection made
//! directly instead of through hyper-util's version-detecting one.
//!
//! `axum::serve` makes each connection with hyper-util's `auto` builder,
//! which first reads the start of the stream to tell HTTP/1 from HTTP/2
//! and hands hyper the connection behind a rewinding reader. Through it,
//! a connection's read buffer had grown from hyper's 8 KiB to 16 KiB by
//! the time its request was being answered: a request in flight held
//! 26.5 KB, and holds 18.3 KB here (`http/tests/in_flight.rs`, which
//! counts every allocation), about 8 MiB less under a thousand requests
//! in flight. The servers speak HTTP/1.1 only (axum's `http2` is off).
//! hyper's HTTP/1 connection allocates its two 8 KiB buffers (read, and
//! the answers' heads) when it starts, so it is made only once the client
//! has sent something: an idle connection costs its task and socket
//! (1.4 KB), as with `axum::serve`. Each request is copied out of
//! hyper's read buffer before the router sees it ([`owned_request`]), so
//! a handler that keeps it while a turn waits does not keep that buffer.
//! A client has [`HEADER_READ_TIMEOUT`] to send each request's head.

use std::future::Future;
use std::io;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use http::HeaderValue;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;

/// How long a client may take to send a request's head: from when it
/// connects to its first byte, then to the head's end (hyper's
/// `header_read_timeout`), and on a kept-alive connection from the end of
/// the last answer to the next head's end. A client that connects and
/// sends nothing, or a head byte by byte (slowloris), or leaves an idle
/// connection open, is disconnected after it rather than held forever
/// (`axum::serve` set no limit). Answers being sent are not limited.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` until `shutdown` completes, then stops
/// accepting and waits for the open connections to finish what they are
/// answering (idle ones are closed at once), as `axum::serve(...)
/// .with_graceful_shutdown(shutdown)` does. One route table serves
/// every connection (a `Router` clone shares it).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with_header_timeout(listener, router, shutdown, HEADER_READ_TIMEOUT).await
}

/// [`serve`] with another [`HEADER_READ_TIMEOUT`].
pub async fn serve_with_header_timeout(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    header_timeout: Duration,
) -> io::Result<()> {
    let graceful = GracefulShutdown::new();
    let (stopping, stop) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = accept(&listener) => accepted,
            () = &mut shutdown => break,
        };
        let watched = (graceful.watcher(), stop.clone());
        tokio::spawn(serve_connection(
            stream,
            router.clone(),
            watched,
            header_timeout,
        ));
    }
    drop(listener);
    // Connections that never sent anything close now; the others finish
    // their answers.
    let _ = stopping.send(true);
    graceful.shutdown().await;
    Ok(())
}

/// Serves `router` on `listener` for as long as the process runs.
pub async fn serve_forever(listener: TcpListener, router: Router) -> io::Result<()> {
    serve(listener, router, std::future::pending()).await
}

/// Answers one connection's requests, once it has sent something (within
/// `header_timeout`).
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    (watcher, mut stop): (Watcher, watch::Receiver<bool>),
    header_timeout: Duration,
) {
    // `readable()` may answer before anything arrived; a peek waits for a
    // byte (or the end of the stream) and leaves it for hyper.
    let mut first = [0u8; 1];
    tokio::select! {
        peeked = stream.peek(&mut first) => if !matches!(peeked, Ok(1)) { return },
        _ = stop.wait_for(|stop| *stop) => return,
        () = tokio::time::sleep(header_timeout) => return,
    }
    let service = router.map_request(owned_request);
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
    if let Err(error) = watcher.watch(connection).await {
        tracing::trace!(%error, "connection ended with an error");
    }
}

/// The request with nothing in it that still points into hyper's read
/// buffer: hyper gives the header values, the target and the body's
/// chunks as slices of the buffer it read them into, and while any of
/// them is kept (a handler holding its headers or body while a turn
/// waits) that 8 KiB buffer cannot be reused, so hyper's next read of
/// the connection allocates another. Copied, they cost their own few
/// bytes instead (`tests/in_flight.rs`).
fn owned_request(request: http::Request<Incoming>) -> http::Request<Body> {
    let (mut parts, body) = request.into_parts();
    for value in parts.headers.values_mut() {
        *value = owned_value(value);
    }
    if let Ok(uri) = http::Uri::try_from(parts.uri.to_string()) {
        parts.uri = uri;
    }
    let body = body.map_frame(|frame| frame.map_data(|data| Bytes::copy_from_slice(&data)));
    http::Request::from_parts(parts, Body::new(body))
}

/// A header value in a buffer of its own (sensitivity kept).
fn owned_value(value: &HeaderValue) -> HeaderValue {
    let Ok(mut owned) = HeaderValue::from_bytes(value.as_bytes()) else {
        return value.clone();
    };
    owned.set_sensitive(value.is_sensitive());
    owned
}

/// The next accepted connection. Errors of one connection (reset before
/// it was accepted) are skipped; others (out of file descriptors, ...)
/// are logged and retried after a second, as `axum::serve` does.
async fn accept(listener: &TcpListener) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => return stream,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                tracing::error!(%error, "accepting a connection failed; retrying in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
