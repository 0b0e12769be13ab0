//! What a server binary does at start and stop, the same for the agent,
//! `web` and the tool servers: logging ([`init_logging`]), the
//! exit code of a failed start ([`exit_code`]), SIGINT / SIGTERM
//! ([`shutdown_signal`]) and the address its listening line prints
//! ([`shown`]).

use std::net::SocketAddr;

pub use crate::logging::DEFAULT_LOG_FILTER;

/// Logging for the server binaries (`crate::logging`): `RUST_LOG`
/// (default [`DEFAULT_LOG_FILTER`]), `LOG_FORMAT=text|json`.
pub fn init_logging() {
    crate::logging::init_with(None::<tracing_subscriber::layer::Identity>);
}

/// What a server binary's `main` does with its `run` result: exit 0, or
/// print the error and exit 2. Log lines still buffered are written
/// first.
pub fn exit_code(result: Result<(), String>) -> std::process::ExitCode {
    crate::logging::flush();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            std::process::ExitCode::from(2)
        }
    }
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutdown signal received");
}

/// The address to print: loopback for an unspecified bind address.
pub fn shown(bound: SocketAddr) -> String {
    if bound.ip().is_unspecified() {
        format!("127.0.0.1:{}", bound.port())
    } else {
        bound.to_string()
    }
}
