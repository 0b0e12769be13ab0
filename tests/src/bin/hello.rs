//! `hello`: the axum hello-world anchor of the benchmark (`scripts/bench.sh`
//! runs it beside the agent's `GET /conversations/{id}` figure).
//!
//! One route, `GET /` answering `Hello, World!`, served by `axum::serve`
//! on a `#[tokio::main]` multi-thread runtime: the agent's own HTTP stack
//! and runtime settings, with nothing behind them.
//!
//! Usage: `hello [PORT]` (default 0: a free port); prints
//! `hello listening on http://127.0.0.1:PORT` once it accepts connections.

use std::process::ExitCode;

use axum::Router;
use axum::routing::get;

/// The answer to every `GET /`.
const GREETING: &str = "Hello, World!";

#[tokio::main]
async fn main() -> ExitCode {
    let port = match std::env::args().nth(1).map(|p| p.parse::<u16>()) {
        None => 0,
        Some(Ok(port)) => port,
        Some(Err(error)) => {
            eprintln!("hello: the port must be a number (0 to 65535): {error}");
            return ExitCode::FAILURE;
        }
    };
    match serve(port).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("hello: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Serves until the process is stopped.
async fn serve(port: u16) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let bound = listener.local_addr()?;
    println!("hello listening on http://{bound}");
    let app = Router::new().route("/", get(|| async { GREETING }));
    axum::serve(listener, app).await
}
