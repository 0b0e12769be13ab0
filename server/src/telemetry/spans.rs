//! The spans of a trace, named and attributed as OpenTelemetry's
//! semantic conventions say: HTTP server spans, GenAI spans for the turn
//! (`invoke_agent`), model calls (`chat`) and tool calls
//! (`execute_tool`, with `mcp.*`), A2A client calls, and the approval's
//! events. Values are bounded and never secret; tool arguments only with
//! `telemetry.record_arguments`.

use serde_json::{Map, Value};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::SPAN_TARGET;

/// The server span of one HTTP request (`GET /conversations/{id}`).
pub fn request_span(method: &str, route: &str, session: &str) -> Span {
    tracing::info_span!(
        target: SPAN_TARGET,
        "request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = Empty,
        otel.status_code = Empty,
        trace_id = Empty,
        session_id = %session,
    )
}

/// Records the answer's status on the request span.
pub fn end_request_span(span: &Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
}

/// A turn of the agent (`invoke_agent`).
pub fn turn_span() -> Span {
    tracing::info_span!(
        target: SPAN_TARGET,
        "turn",
        otel.name = "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
    )
}

/// One model call: `chat {model}`, client kind. `described` is the
/// client's `provider:model`.
pub fn model_span(described: &str) -> Span {
    let (provider, model) = described.split_once(':').unwrap_or(("", described));
    tracing::info_span!(
        target: SPAN_TARGET,
        "model call",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = %provider,
        gen_ai.request.model = %model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records the tokens the provider counted on a model span.
pub fn model_usage(span: &Span, input: u64, output: u64) {
    span.record("gen_ai.usage.input_tokens", input);
    span.record("gen_ai.usage.output_tokens", output);
}

/// Marks a model span failed, with the kind of failure (`timeout`,
/// `http`, …).
pub fn model_failed(span: &Span, error_type: &'static str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

/// One tool call: `execute_tool {tool}` with the MCP method and server
/// (`a2a` for a sub-agent); the arguments only when
/// `telemetry.record_arguments` is set.
pub fn tool_span(tool: &str, server: &str, arguments: &Map<String, Value>) -> Span {
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "tool call",
        otel.name = %format_args!("execute_tool {tool}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        mcp.method.name = "tools/call",
        mcp.server.name = %server,
        gen_ai.tool.call.arguments = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    if super::record_arguments() {
        span.record(
            "gen_ai.tool.call.arguments",
            Value::Object(arguments.clone()).to_string(),
        );
    }
    span
}

/// Marks a tool span failed when the call failed.
pub fn end_tool_span(span: &Span, is_error: bool) {
    if is_error {
        span.record("error.type", "tool_error");
        span.record("otel.status_code", "ERROR");
    }
}

/// A call to a sub-agent over A2A (`method` is the JSON-RPC method).
pub fn a2a_span(agent: &str, method: &str) -> Span {
    tracing::info_span!(
        target: SPAN_TARGET,
        "a2a call",
        otel.name = %format_args!("a2a {method}"),
        otel.kind = "client",
        rpc.system = "jsonrpc",
        rpc.method = %method,
        gen_ai.agent.name = %agent,
    )
}

/// An approval requested in the current span (an event; the decision
/// comes later, in the decider's request).
pub fn approval_requested(tool: &str, approval: &str) {
    Span::current().add_event(
        "approval.requested",
        vec![
            opentelemetry::KeyValue::new("gen_ai.tool.name", tool.to_string()),
            opentelemetry::KeyValue::new("approval.uuid", approval.to_string()),
        ],
    );
}

/// A decision made in the current span: who decided, through which
/// channel, how, and how long the approval waited.
pub fn approval_decided(approval: &str, outcome: &str, channel: &str, by: &str, waited: f64) {
    Span::current().add_event(
        "approval.decided",
        vec![
            opentelemetry::KeyValue::new("approval.uuid", approval.to_string()),
            opentelemetry::KeyValue::new("approval.outcome", outcome.to_string()),
            opentelemetry::KeyValue::new("approval.channel", channel.to_string()),
            opentelemetry::KeyValue::new("approval.decided_by", by.to_string()),
            opentelemetry::KeyValue::new("approval.wait_seconds", waited),
        ],
    );
}
