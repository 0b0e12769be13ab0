//! `mcp-resources`: a small MCP server over stdio that keeps named integer
//! resources in SQLite, with one read-only tool (`resources_list`) and two
//! destructive ones (`resources_add`, `resources_remove`).
//!
//! The `mcp-resources` binary is a thin wrapper around [`serve_stdio`]
//! (stdout is the protocol stream: everything else goes to stderr), or,
//! with `--config`, around [`http::serve_http`] (streamable HTTP at `/mcp`).
//!
//! Test-only fault injection (see [`tools::FaultInjection`]):
//! `MCP_RESOURCES_CRASH_ON=<tool>` makes the process exit with code 3 when
//! that tool is called; `MCP_RESOURCES_DELAY_MS=<ms>` delays every tool call.

pub mod db;
pub mod http;
pub mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use rmcp::ServiceExt as _;

pub use db::{Resource, ResourceDb};
pub use tools::{FaultInjection, ResourcesServer};

/// Where the database lives by default: `$MCP_RESOURCES_DB` if set, else
/// `$ASG_DATA_DIR/resources.db` if set, else `./data/resources.db`.
pub fn default_db_path() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = var("MCP_RESOURCES_DB") {
        return PathBuf::from(path);
    }
    if let Some(dir) = var("ASG_DATA_DIR") {
        return PathBuf::from(dir).join("resources.db");
    }
    PathBuf::from("./data").join("resources.db")
}

/// Opens the database at `db_path` (creating it and its directory) and
/// serves the MCP protocol on stdin/stdout until stdin closes.
pub async fn serve_stdio(db_path: PathBuf) -> anyhow::Result<()> {
    let db = {
        let path = db_path.clone();
        tokio::task::spawn_blocking(move || ResourceDb::open(&path))
            .await
            .context("database open task failed")??
    };
    let faults = FaultInjection::from_env();
    if faults.crash_on.is_some() || faults.delay.is_some() {
        tracing::warn!(?faults, "test fault injection is enabled");
    }
    tracing::info!(db = %db_path.display(), "mcp-resources serving on stdio");
    let server = ResourcesServer::new(Arc::new(db), faults);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .context("MCP initialization over stdio failed")?;
    let reason = running.waiting().await.context("MCP service task failed")?;
    tracing::info!(?reason, "mcp-resources stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_is_under_data() {
        // Only meaningful when the variables are unset in the test runner.
        if std::env::var_os("MCP_RESOURCES_DB").is_none()
            && std::env::var_os("ASG_DATA_DIR").is_none()
        {
            assert_eq!(default_db_path(), PathBuf::from("./data/resources.db"));
        }
    }
}
