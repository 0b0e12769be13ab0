//! `mcp-filesystem`: a sandboxed filesystem MCP server (15 tools) over
//! named roots, each with its `allowed_tools`.
//!
//! - [`config`]: `config/mcp-filesystem.yaml` (`FsConfig`).
//! - [`sandbox`]: the roots as capability directories (`cap-std`), path
//!   checks and errors — **every filesystem access goes through it**.
//! - [`read`], [`read_file`], [`search`], [`grep`]: the read-only tools.
//! - [`write`], [`transfer`]: the mutating tools.
//! - [`args`], [`tools`], [`tools_write`]: the rmcp tool router.
//! - [`http`]: streamable HTTP at `/mcp` with `GET /health`;
//!   [`serve_stdio`]: the same server on stdin/stdout.

pub mod args;
pub mod config;
pub mod grep;
pub mod http;
pub mod read;
pub mod read_file;
pub mod sandbox;
pub mod search;
pub mod tools;
pub mod tools_write;
pub mod transfer;
pub mod write;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use rmcp::ServiceExt as _;

pub use config::FsConfig;
pub use sandbox::Sandbox;
pub use tools::FilesystemServer;

/// Loads the configuration file and opens its roots; the error names the
/// file and the problem.
pub fn load(path: &Path) -> Result<(FsConfig, Sandbox), String> {
    let config = FsConfig::load(path)?;
    let sandbox = Sandbox::open(&config).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((config, sandbox))
}

/// Serves the MCP protocol on stdin/stdout until stdin closes.
pub async fn serve_stdio(sandbox: Arc<Sandbox>) -> anyhow::Result<()> {
    tracing::info!(roots = %sandbox.names(), "mcp-filesystem serving on stdio");
    let running = FilesystemServer::new(sandbox)
        .serve(rmcp::transport::stdio())
        .await
        .context("MCP initialization over stdio failed")?;
    let reason = running.waiting().await.context("MCP service task failed")?;
    tracing::info!(?reason, "mcp-filesystem stopped");
    Ok(())
}
