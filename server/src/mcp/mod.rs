//! MCP tool servers: the client side that runs them and calls their tools.
//!
//! [`ToolRegistry`] owns one [`server::McpServer`] per configured server
//! (stdio subprocess or streamable HTTP), lists their tools and routes calls.
//! A crashed server is restarted on next use; every call has a timeout; an
//! HTTP server that is down at startup is retried in the background
//! (`availability.rs`).

mod availability;
pub mod elicit;
pub mod registry;
pub mod server;
mod traced_http;

pub use availability::{ServerHealth, ServerStatus};
pub use elicit::{Asker, Elicitation};
pub use registry::{ToolCallError, ToolOutput, ToolRegistry};
