//! Servers that are not there yet. Compose and Kubernetes start services
//! in any order, so an MCP server reached over HTTP that does not answer
//! when the agent starts is retried in the background with exponential
//! backoff (1 s doubling to 30 s) until it answers or the agent stops; its
//! tools then join the registry. Meanwhile `/health` details and the log
//! say it is unavailable, and a call that may be one of its tools fails
//! with [`ToolCallError::NotYetAvailable`].

use std::sync::Arc;
use std::time::Duration;

use super::registry::{ToolCallError, ToolRegistry};

/// First wait before retrying an unavailable server.
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// Longest wait between two retries.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// One server and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerHealth {
    /// Its configured name.
    pub name: String,
    /// Reached over HTTP (else stdio).
    pub http: bool,
    /// Where it stands.
    pub status: ServerStatus,
}

impl ServerHealth {
    /// The status as `/health` words it.
    pub fn label(&self) -> &'static str {
        match self.status {
            ServerStatus::Starting => "starting",
            ServerStatus::Ready { .. } => "ready",
            ServerStatus::Unavailable => "unavailable",
            ServerStatus::Refused => "refused",
        }
    }

    /// How many tools it offers now.
    pub fn tools(&self) -> usize {
        match self.status {
            ServerStatus::Ready { tools } => tools,
            _ => 0,
        }
    }
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Being started.
    Starting,
    /// Connected once; its tools are offered.
    Ready {
        /// How many tools it offers.
        tools: usize,
    },
    /// Not reached yet; retried in the background (the log says why).
    Unavailable,
    /// Reached, but its tools cannot be offered (a name clash, logged);
    /// not retried.
    Refused,
}

impl ToolRegistry {
    /// Retries server `index` until it answers (its tools then join) or
    /// the registry shuts down. `error` is why the first attempt failed.
    pub(super) fn retry_in_background(self: &Arc<Self>, index: usize, error: String) {
        let name = self.servers[index].name().to_string();
        tracing::warn!(
            target: "mcp",
            server = %name,
            "{error}; the agent starts without its tools and retries in the background"
        );
        self.set_status(index, ServerStatus::Unavailable);
        let registry = Arc::clone(self);
        self.retries.spawn(async move {
            let mut delay = FIRST_RETRY;
            loop {
                tokio::select! {
                    () = registry.stop.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                match registry.servers[index].initialize().await {
                    Ok(tools) => return registry.join_late(index, tools),
                    Err(error) => {
                        delay = (delay * 2).min(MAX_RETRY);
                        tracing::info!(
                            target: "mcp",
                            server = %name,
                            "still unavailable ({error}); next attempt in {}s",
                            delay.as_secs()
                        );
                    }
                }
            }
        });
    }

    /// Offers the tools of a server that answered after startup, unless
    /// one of them clashes with a tool already offered, a sub-agent or a
    /// built-in.
    fn join_late(&self, index: usize, tools: Vec<rmcp::model::Tool>) {
        let name = self.servers[index].name();
        let count = tools.len();
        match self.add_tools(index, tools, &self.options.reserved) {
            Ok(()) => tracing::info!(
                target: "mcp",
                server = %name,
                tools = count,
                "MCP server is available now; its tools are offered"
            ),
            Err(error) => {
                tracing::error!(target: "mcp", server = %name, "{error}; its tools are not offered");
                self.set_status(index, ServerStatus::Refused);
            }
        }
    }

    pub(super) fn set_status(&self, index: usize, status: ServerStatus) {
        if let Some(slot) = self.status.get(index) {
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = status;
        }
    }

    /// Every server and where it stands (`/health` details; the reasons are
    /// in the log only, as `/health` is public).
    pub fn health(&self) -> Vec<ServerHealth> {
        self.servers
            .iter()
            .zip(&self.status)
            .map(|(server, status)| ServerHealth {
                name: server.name().to_string(),
                http: server.is_http(),
                status: status.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            })
            .collect()
    }

    /// Whether every server is ready.
    pub fn all_ready(&self) -> bool {
        self.status.iter().all(|s| {
            matches!(
                *s.lock().unwrap_or_else(|p| p.into_inner()),
                ServerStatus::Ready { .. }
            )
        })
    }

    /// The names of the servers not reached yet, quoted.
    pub fn unavailable_servers(&self) -> Vec<String> {
        self.health()
            .into_iter()
            .filter(|s| s.status == ServerStatus::Unavailable)
            .map(|s| format!("{:?}", s.name))
            .collect()
    }

    /// The error for a call to a tool no server offers now.
    pub fn unknown_tool(&self, tool: &str) -> ToolCallError {
        let servers = self.unavailable_servers();
        if servers.is_empty() {
            ToolCallError::UnknownTool(tool.to_string())
        } else {
            ToolCallError::NotYetAvailable {
                tool: tool.to_string(),
                servers: servers.join(", "),
            }
        }
    }
}
