//! [`ToolRegistry`]: every configured MCP server, the union of their tools
//! (as [`ToolInfo`] with the effective approval requirement) and call
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
use std::sync::Arc;

use asg_shared::rest::ToolInfo;
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value};

use super::server::McpServer;
use crate::config::{ApprovalConfig, McpServerConfig};
use crate::context::BearerToken;

/// What the registry needs besides the server list.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// Approval policy, applied to every tool's `destructive_hint`.
    pub approval: ApprovalConfig,
    /// Exported to stdio servers as `ASG_DATA_DIR` unless their `env` sets it.
    pub data_dir: PathBuf,
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

/// Every MCP server and its tools.
pub struct ToolRegistry {
    servers: Vec<Arc<McpServer>>,
    tools: Vec<ToolInfo>,
    /// Tool name → index in `servers`.
    routes: HashMap<String, usize>,
}

impl ToolRegistry {
    /// Starts every server (stdio subprocess or streamable HTTP), initializes
    /// it and lists its tools. On error every started server is stopped and
    /// the message names the server and what failed.
    pub async fn start(
        servers: &[McpServerConfig],
        options: RegistryOptions,
    ) -> Result<ToolRegistry, String> {
        let started = futures::future::join_all(
            servers
                .iter()
                .map(|config| McpServer::start(config, &options.data_dir)),
        )
        .await;
        let mut registry = ToolRegistry::empty();
        let mut first_error = None;
        for result in started {
            match result {
                Ok((server, tools)) => {
                    let index = registry.servers.len();
                    registry.servers.push(Arc::new(server));
                    if first_error.is_none()
                        && let Err(e) = registry.add_tools(index, tools, &options.approval)
                    {
                        first_error = Some(e);
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            registry.shutdown().await;
            return Err(e);
        }
        Ok(registry)
    }

    fn add_tools(
        &mut self,
        index: usize,
        tools: Vec<Tool>,
        approval: &ApprovalConfig,
    ) -> Result<(), String> {
        let server = self.servers[index].name().to_string();
        for tool in tools {
            let name = tool.name.to_string();
            if let Some(&other) = self.routes.get(&name) {
                return Err(format!(
                    "tool \"{name}\" is offered by both MCP server \"{}\" and MCP server \"{server}\"; tool names must be unique",
                    self.servers[other].name()
                ));
            }
            self.routes.insert(name, index);
            self.tools.push(tool_info(&tool, &server, approval));
        }
        Ok(())
    }

    /// A registry without servers or tools.
    pub fn empty() -> ToolRegistry {
        ToolRegistry {
            servers: Vec::new(),
            tools: Vec::new(),
            routes: HashMap::new(),
        }
    }

    /// Every tool, in server order then the order each server listed them.
    pub fn tools(&self) -> &[ToolInfo] {
        &self.tools
    }

    /// One tool by name.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Calls a tool on the server that offers it, with that server's timeout.
    /// A crashed server is restarted on the next call.
    pub async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        bearer: Option<&BearerToken>,
    ) -> Result<ToolOutput, ToolCallError> {
        let server = self
            .routes
            .get(name)
            .and_then(|&i| self.servers.get(i))
            .ok_or_else(|| ToolCallError::UnknownTool(name.to_string()))?;
        let result = server.call(name, arguments, bearer).await?;
        Ok(tool_output(result))
    }

    /// Stops every server (each bounded by a timeout); no child outlives it.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }
}

/// Whether a call of this tool needs approval (see the module docs).
pub fn needs_approval(tool: &Tool, approval: &ApprovalConfig) -> bool {
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

fn tool_info(tool: &Tool, server: &str, approval: &ApprovalConfig) -> ToolInfo {
    ToolInfo {
        name: tool.name.to_string(),
        description: tool.description.as_deref().unwrap_or_default().to_string(),
        input_schema: Value::Object(tool.input_schema.as_ref().clone()),
        destructive_hint: needs_approval(tool, approval),
        read_only_hint: tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false),
        source: "mcp".to_string(),
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
