//! [`ToolRegistry`]: every configured MCP server, the union of their tools
//! (as [`Tool`]s with the effective approval requirement) and call
//! routing by tool name.
//!
//! Approval rule (the MCP specification's defaults, made configurable): a
//! tool needs approval when it is listed in `approval.always`; never when
//! listed in `approval.never`; never when annotated `readOnlyHint: true`;
//! otherwise when its `destructiveHint` is true, and, without a
//! `destructiveHint`, when `approval.unannotated_is_destructive` is set (the
//! default, as the specification's `destructiveHint` defaults to true).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, RwLock};

use rmcp::model::{CallToolResult, Tool as McpTool};
use serde_json::{Map, Value};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::availability::ServerStatus;
use super::server::McpServer;
use crate::config::{ApprovalConfig, McpServerConfig};
use crate::context::BearerToken;
use crate::tool::{Tool, ToolKind};

/// What the registry needs besides the server list.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// Approval policy, applied to every tool's `destructive_hint`.
    pub approval: ApprovalConfig,
    /// Exported to stdio servers as `ASG_DATA_DIR` unless their `env` sets it.
    pub data_dir: PathBuf,
    /// Names a server that joins after startup may not use (sub-agents,
    /// built-in tools); at startup the engine's catalog checks them.
    pub reserved: Vec<String>,
}

/// The text a tool call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Text parts joined with `\n`; the structured content as JSON when there
    /// is no text part.
    pub content: String,
    /// The server reported a tool-level error (`isError`).
    pub is_error: bool,
}

/// Why a tool call produced no [`ToolOutput`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolCallError {
    /// No configured server offers this tool.
    #[error("No tool named \"{0}\" is available.")]
    UnknownTool(String),
    /// No server offers this tool now, and some are unavailable: it may
    /// be one of theirs.
    #[error(
        "No tool named \"{tool}\" is available now: MCP server(s) {servers} could not be reached and are retried in the background; their tools appear once they answer. The tool was not run."
    )]
    NotYetAvailable {
        /// Tool name.
        tool: String,
        /// The unavailable servers, quoted and comma-separated.
        servers: String,
    },
    /// The call took longer than the server's `timeout_secs`. The tool may
    /// still have run.
    #[error(
        "The tool \"{tool}\" did not answer within {secs} seconds; it may still have run. It was not retried: check its effect before calling it again."
    )]
    Timeout {
        /// Tool name.
        tool: String,
        /// The timeout that expired.
        secs: u64,
    },
    /// The server is not running (it crashed, or cannot be restarted).
    #[error("MCP server \"{server}\" is unavailable: {message}.")]
    ServerUnavailable {
        /// Server name.
        server: String,
        /// What happened.
        message: String,
    },
    /// The server answered with a protocol error (e.g. invalid arguments).
    #[error("MCP server \"{server}\" rejected the call: {message}.")]
    Protocol {
        /// Server name.
        server: String,
        /// The error it returned.
        message: String,
    },
}

/// Every MCP server and its tools. A server reached over HTTP that does
/// not answer at startup does not stop the agent: it is reported
/// unavailable ([`ToolRegistry::health`]) and retried in the background
/// (`availability.rs`); its tools join once it answers.
pub struct ToolRegistry {
    pub(super) servers: Vec<Arc<McpServer>>,
    pub(super) offered: RwLock<Offered>,
    pub(super) status: Vec<StdMutex<ServerStatus>>,
    /// Bumped whenever tools join; readers rebuild what they derived.
    pub(super) version: AtomicU64,
    pub(super) options: RegistryOptions,
    pub(super) stop: CancellationToken,
    pub(super) retries: TaskTracker,
}

/// The tools offered now.
#[derive(Default)]
pub(super) struct Offered {
    tools: Vec<Tool>,
    /// Tool name → index in `servers`.
    routes: HashMap<String, usize>,
}

impl ToolRegistry {
    /// Starts every server (stdio subprocess or streamable HTTP), initializes
    /// it and lists its tools. A stdio server that fails, or a tool name
    /// used twice, is an error naming the server (every started server is
    /// stopped then); an HTTP server that does not answer is retried in
    /// the background.
    pub async fn start(
        servers: &[McpServerConfig],
        options: RegistryOptions,
    ) -> Result<Arc<ToolRegistry>, String> {
        let built = servers
            .iter()
            .map(|config| McpServer::new(config, &options.data_dir).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let registry = Arc::new(ToolRegistry::with_servers(built, options));
        let listed =
            futures::future::join_all(registry.servers.iter().map(|s| s.initialize())).await;
        let mut first_error = None;
        for (index, result) in listed.into_iter().enumerate() {
            let outcome = match result {
                Ok(tools) => registry.add_tools(index, tools, &[]),
                Err(error) if registry.servers[index].is_http() => {
                    registry.retry_in_background(index, error);
                    Ok(())
                }
                Err(error) => Err(error),
            };
            if let Err(error) = outcome {
                first_error.get_or_insert(error);
            }
        }
        if let Some(error) = first_error {
            registry.shutdown().await;
            return Err(error);
        }
        Ok(registry)
    }

    fn with_servers(servers: Vec<Arc<McpServer>>, options: RegistryOptions) -> ToolRegistry {
        ToolRegistry {
            status: servers
                .iter()
                .map(|_| StdMutex::new(ServerStatus::Starting))
                .collect(),
            servers,
            offered: RwLock::new(Offered::default()),
            version: AtomicU64::new(0),
            options,
            stop: CancellationToken::new(),
            retries: TaskTracker::new(),
        }
    }

    /// Adds a server's tools, all or none: a name another server offers,
    /// or one of `reserved` (sub-agents, built-ins: checked for servers
    /// that join late), refuses them.
    pub(super) fn add_tools(
        &self,
        index: usize,
        tools: Vec<McpTool>,
        reserved: &[String],
    ) -> Result<(), String> {
        let server = self.servers[index].name().to_string();
        let mut offered = self.offered.write().unwrap_or_else(|p| p.into_inner());
        let mut seen = std::collections::HashSet::new();
        for tool in &tools {
            let name = tool.name.as_ref();
            if let Some(&other) = offered.routes.get(name) {
                return Err(format!(
                    "tool \"{name}\" is offered by both MCP server \"{}\" and MCP server \"{server}\"; tool names must be unique",
                    self.servers[other].name()
                ));
            }
            if reserved.iter().any(|r| r == name) || !seen.insert(name) {
                return Err(format!(
                    "tool \"{name}\" of MCP server \"{server}\" clashes with a sub-agent or built-in tool of the same name; tool names must be unique"
                ));
            }
        }
        let count = tools.len();
        for tool in tools {
            offered.routes.insert(tool.name.to_string(), index);
            offered
                .tools
                .push(tool_info(&tool, &server, &self.options.approval));
        }
        drop(offered);
        self.set_status(index, ServerStatus::Ready { tools: count });
        self.version.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// A registry without servers or tools.
    pub fn empty() -> ToolRegistry {
        ToolRegistry::with_servers(Vec::new(), RegistryOptions::default())
    }

    /// Every tool offered now, in server order then the order each server
    /// listed them (a server that joined late comes after the others).
    pub fn tools(&self) -> Vec<Tool> {
        self.offered
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .tools
            .clone()
    }

    /// One tool by name.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        let offered = self.offered.read().unwrap_or_else(|p| p.into_inner());
        offered.tools.iter().find(|t| t.name == name).cloned()
    }

    /// Changes whenever tools join.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    /// Calls a tool on the server that offers it, with that server's timeout.
    /// A crashed server is restarted on the next call. An elicitation
    /// during the call is declined.
    pub async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        bearer: Option<&BearerToken>,
    ) -> Result<ToolOutput, ToolCallError> {
        self.call_asking(name, arguments, bearer, None).await
    }

    /// [`ToolRegistry::call`], with the [`super::Asker`] an elicitation
    /// during the call goes to.
    pub async fn call_asking(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        bearer: Option<&BearerToken>,
        asker: Option<std::sync::Arc<dyn super::Asker>>,
    ) -> Result<ToolOutput, ToolCallError> {
        let route = self
            .offered
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .routes
            .get(name)
            .copied();
        let Some(server) = route.and_then(|i| self.servers.get(i)) else {
            return Err(self.unknown_tool(name));
        };
        let result = server.call(name, arguments, bearer, asker).await?;
        Ok(tool_output(result))
    }

    /// Stops the background retries and every server (each bounded by a
    /// timeout); no child outlives it.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.retries.close();
        self.retries.wait().await;
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }
}

/// Whether a call of this tool needs approval (see the module docs).
pub fn needs_approval(tool: &McpTool, approval: &ApprovalConfig) -> bool {
    let name = tool.name.as_ref();
    if approval.always.iter().any(|n| n == name) {
        return true;
    }
    if approval.never.iter().any(|n| n == name) {
        return false;
    }
    let annotations = tool.annotations.as_ref();
    if annotations.and_then(|a| a.read_only_hint) == Some(true) {
        return false;
    }
    match annotations.and_then(|a| a.destructive_hint) {
        Some(hint) => hint,
        None => approval.unannotated_is_destructive,
    }
}

fn tool_info(tool: &McpTool, server: &str, approval: &ApprovalConfig) -> Tool {
    Tool {
        name: tool.name.to_string(),
        description: tool.description.as_deref().unwrap_or_default().to_string(),
        input_schema: Value::Object(tool.input_schema.as_ref().clone()),
        gated: needs_approval(tool, approval),
        read_only: tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false),
        kind: ToolKind::Mcp,
        server: server.to_string(),
    }
}

fn tool_output(result: CallToolResult) -> ToolOutput {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    let content = if !texts.is_empty() {
        texts.join("\n")
    } else if let Some(structured) = &result.structured_content {
        serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string())
    } else if !result.content.is_empty() {
        serde_json::to_string(&result.content).unwrap_or_default()
    } else {
        String::new()
    };
    ToolOutput {
        content,
        is_error: result.is_error.unwrap_or(false),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
