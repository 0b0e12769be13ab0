//! What a server binary does at start and stop, the same for the agent,
//! `web` and the tool servers: logging ([`init_logging`]), the
//! exit code of a failed start ([`exit_code`]), SIGINT / SIGTERM
//! ([`shutdown_signal`]), the limit of open files
//! ([`raise_open_files_limit`]) and the address its listening line
//! prints ([`shown`]).

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

/// The soft limit of open files before and after
/// [`raise_open_files_limit`] (`None`: unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFilesLimit {
    /// The soft limit the process started with.
    pub before: Option<u64>,
    /// The soft limit now: the hard limit when it could be raised.
    pub now: Option<u64>,
}

/// Raises the process's soft limit of open files to its hard limit, as
/// Go's runtime does at start. Every client connection and every file a
/// checkpoint writes takes one, and the usual soft limit (1,024) is
/// what a thousand clients exhaust first: past it `accept` fails and
/// clients wait. The hard limit is the administrator's (`ulimit -Hn`,
/// `LimitNOFILE=`); it is left as it is. Where the hard limit cannot be
/// taken whole (macOS refuses "unlimited"), the soft one stays.
#[cfg(unix)]
pub fn raise_open_files_limit() -> OpenFilesLimit {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let before = limit.current;
    let wanted = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    let raised = before.is_some() && setrlimit(Resource::Nofile, wanted).is_ok();
    OpenFilesLimit {
        before,
        now: if raised { limit.maximum } else { before },
    }
}

impl OpenFilesLimit {
    /// Logs the change, if any (after logging starts).
    pub fn log(&self) {
        if self.before != self.now {
            let shown =
                |limit: Option<u64>| limit.map_or("unlimited".to_string(), |n| n.to_string());
            tracing::info!(
                from = %shown(self.before),
                to = %shown(self.now),
                "raised the soft limit of open files to the hard limit"
            );
        }
    }
}

/// Elsewhere the limit is left as it is.
#[cfg(not(unix))]
pub fn raise_open_files_limit() -> OpenFilesLimit {
    OpenFilesLimit {
        before: None,
        now: None,
    }
}

/// The address to print: loopback for an unspecified bind address.
pub fn shown(bound: SocketAddr) -> String {
    if bound.ip().is_unspecified() {
        format!("127.0.0.1:{}", bound.port())
    } else {
        bound.to_string()
    }
}
