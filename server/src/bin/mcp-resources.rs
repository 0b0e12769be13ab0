//! `mcp-resources`: the SQLite-backed MCP tool server, over stdio.
//!
//! Logs go to stderr only (stdout carries the protocol); `RUST_LOG` sets the
//! level (default `warn`). Stops when stdin closes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// MCP server (stdio) storing named integer resources in SQLite.
#[derive(Debug, Parser)]
#[command(name = "mcp-resources", version)]
struct Args {
    /// SQLite database file. Default: $MCP_RESOURCES_DB, else
    /// $ASG_DATA_DIR/resources.db, else ./data/resources.db.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
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
    let db = args
        .db
        .unwrap_or_else(agent_server::resources::default_db_path);
    match agent_server::resources::serve_stdio(db).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("mcp-resources failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}
