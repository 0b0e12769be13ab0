//! `mcp-resources`: the SQLite-backed MCP tool server.
//!
//! Without `--config` it serves stdio (what the agent spawns); logs go to
//! stderr only (stdout carries the protocol) and it stops when stdin
//! closes. With `--config FILE` (the reference's `host`, `port`,
//! `db_path`) it serves streamable HTTP at `/mcp` plus `GET /health`,
//! prints `mcp-resources listening on http://ADDR:PORT/mcp` once bound,
//! and stops on SIGTERM / Ctrl-C. `/mcp` answers only loopback names and
//! `allowed_hosts`, and with `auth_token_env` only requests carrying that
//! variable's token (a missing or short token stops the start, exit 2). `RUST_LOG` sets the level (default
//! `warn`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// MCP server storing named integer resources in SQLite (stdio, or
/// streamable HTTP with --config).
#[derive(Debug, Parser)]
#[command(name = "mcp-resources", version)]
struct Args {
    /// SQLite database file (overrides `db_path` of --config). Default:
    /// $MCP_RESOURCES_DB, else $ASG_DATA_DIR/resources.db, else
    /// ./data/resources.db.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Serve streamable HTTP with this YAML file (`host`, `port`,
    /// `db_path`) instead of stdio.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Overrides `port` of --config (0 picks a free port).
    #[arg(long, requires = "config")]
    port: Option<u16>,
    /// Overrides `host` of --config.
    #[arg(long, requires = "config")]
    host: Option<String>,
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
    let Some(config_path) = args.config else {
        let db = args.db.unwrap_or_else(asg_mcp_resources::default_db_path);
        return match asg_mcp_resources::serve_stdio(db).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("mcp-resources failed: {e:#}");
                ExitCode::FAILURE
            }
        };
    };
    let mut config = match asg_mcp_resources::http::HttpConfig::load(&config_path) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    if let Some(db) = args.db {
        config.db_path = db;
    }
    if let Some(port) = args.port {
        config.port = port;
    }
    if let Some(host) = args.host {
        config.host = host;
    }
    let access = match config.access() {
        Ok(access) => access,
        Err(message) => {
            eprintln!("error: {}: {message}", config_path.display());
            return ExitCode::from(2);
        }
    };
    let shutdown = asg_http::process::shutdown_signal();
    match asg_mcp_resources::http::serve_http(config, access, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
