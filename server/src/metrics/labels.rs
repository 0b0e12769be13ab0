//! The label sets of the agent's families. Every value is bounded: names
//! from the config (tools, servers, models, sub-agents) or words from a
//! fixed list — never an id, a user or an argument.

use prometheus_client::encoding::EncodeLabelSet;

/// A tool (MCP tool or sub-agent) by name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolLabels {
    /// Its name as the model sees it.
    pub tool: String,
}

/// A tool call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolCallLabels {
    /// Its name (`unknown` for a name this agent does not offer).
    pub tool: String,
    /// The MCP server's name, `a2a` for a sub-agent, `unknown`.
    pub server: String,
    /// `ok` or `error`.
    pub result: &'static str,
}

/// A call run after its approval.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApprovedCallLabels {
    /// The tool.
    pub tool: String,
    /// `ok`, `error`, `approval` (a sub-agent stopped for its own) or
    /// `interrupted` (the process running it stopped: it may have run).
    pub result: &'static str,
}

/// A model call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModelLabels {
    /// Provider and model, as configured (never a key).
    pub model: String,
    /// `ok` or `error`.
    pub result: &'static str,
}

/// Tokens of a model.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenLabels {
    /// Provider and model.
    pub model: String,
    /// `input` or `output`.
    pub direction: &'static str,
}

/// An A2A JSON-RPC request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct A2aLabels {
    /// A method this server knows, `unknown` or `invalid` (no envelope).
    pub method: &'static str,
    /// The protocol version served (`0.3`).
    pub version: &'static str,
    /// `ok`, `error` (a JSON-RPC error) or `stream`.
    pub result: &'static str,
}

/// A call to a sub-agent over A2A.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SubAgentLabels {
    /// The sub-agent's tool name.
    pub agent: String,
    /// `answered`, `proxy_approval` (it waits for a decision of its
    /// own), `failed` (the task failed or was rejected) or `error`
    /// (not reached, or an answer we could not use).
    pub result: &'static str,
}

/// A notification sent.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabels {
    /// `webhook` or `a2a_push`.
    pub kind: &'static str,
    /// `delivered`, `failed` (after its retries) or `dropped` (the queue
    /// was full).
    pub result: &'static str,
}

/// A decision.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// `approved`, `rejected`, `edited`, `expired`, `cancelled`, …
    pub outcome: &'static str,
    /// The door it came through (`rest`, `a2a`, `chat`, …; `system` for
    /// expiry and refusals by the engine).
    pub channel: String,
}

/// A store operation's result.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// `ok` or `error` (saves); `taken`, `waited` or `busy` (claims).
    pub result: &'static str,
}
