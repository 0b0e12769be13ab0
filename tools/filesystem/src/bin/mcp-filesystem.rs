//! `mcp-filesystem`: the sandboxed filesystem MCP server.
//!
//! `mcp-filesystem --config FILE [--port N] [--host H]` serves streamable
//! HTTP at `/mcp` plus `GET /health`, prints
//! `mcp-filesystem listening on http://ADDR:PORT/mcp` once bound, and
//! stops on SIGTERM / Ctrl-C. With `--stdio` it serves stdin/stdout
//! instead (what an agent spawns as a subprocess) and stops when stdin
//! closes. Over HTTP, `/mcp` answers only loopback names and
//! `allowed_hosts`, and with `auth_token_env` only requests carrying that
//! variable's token (a missing or short token stops the start, exit 2). Logs go to stderr only; `RUST_LOG` sets the level (default
//! `warn`). A bad configuration (unknown key, no roots, a root that is not
//! a directory, an unknown tool name) stops it at startup with exit code 2.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Sandboxed filesystem MCP server over named roots (streamable HTTP, or
/// stdio with --stdio).
#[derive(Debug, Parser)]
#[command(name = "mcp-filesystem", version)]
struct Args {
    /// The YAML configuration (`host`, `port`, `max_full_read_size`,
    /// `roots`).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Overrides `port` of --config (0 picks a free port).
    #[arg(long, conflicts_with = "stdio")]
    port: Option<u16>,
    /// Overrides `host` of --config.
    #[arg(long, conflicts_with = "stdio")]
    host: Option<String>,
    /// Serve MCP on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .init();
    let (config, sandbox) = match asg_mcp_filesystem::load(&args.config) {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let sandbox = Arc::new(sandbox);
    let served = if args.stdio {
        asg_mcp_filesystem::serve_stdio(sandbox).await
    } else {
        let host = args.host.clone().unwrap_or_else(|| config.host.clone());
        let port = args.port.unwrap_or(config.port);
        let access = match config.access(&host) {
            Ok(access) => access,
            Err(message) => {
                eprintln!("error: {}: {message}", args.config.display());
                return ExitCode::from(2);
            }
        };
        let shutdown = asg_http::process::shutdown_signal();
        asg_mcp_filesystem::http::serve_http(sandbox, &host, port, access, shutdown).await
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
