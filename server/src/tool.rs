//! [`Tool`]: a tool the agent can call, as the agent itself knows it —
//! the internal model of the tool catalog (`engine::catalog`), built by
//! the MCP registry (`mcp`) and the sub-agent client (`a2a`).
//!
//! Architecture invariant: this is not a wire type. The REST view
//! (`asg_shared::rest::ToolInfo`, `GET /tools` and the A2A card's skills)
//! is built from it at the door (`api::system`), and the pure core
//! (`asg_core`) gets only what it judges with: the input schema (an edited
//! call is checked against it) and the effective gate.

use serde_json::Value;

/// What a tool name stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// A tool of an MCP server.
    Mcp,
    /// A sub-agent reached over A2A.
    SubAgent,
}

/// One tool, with its effective gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Name as the model sees it (unique across kinds, see the catalog).
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// The effective gate: a call needs a human's approval (the
    /// annotations and `approval.always` / `never` for an MCP tool, the
    /// configured `destructiveHint` for a sub-agent).
    pub gated: bool,
    /// The tool says it only reads (`readOnlyHint`).
    pub read_only: bool,
    /// What it is.
    pub kind: ToolKind,
    /// The MCP server's name, or the sub-agent's URL.
    pub server: String,
}
