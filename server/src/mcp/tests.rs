//! Unit tests of the registry's pure parts: the approval rule and the
//! conversion of tool results. The tests that run the real `mcp-resources`
//! binary live in `server/tests/mcp_registry.rs`.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::json;

use super::*;

fn tool(name: &str, annotations: Option<ToolAnnotations>) -> Tool {
    let tool = Tool::new(
        name.to_string(),
        "test tool",
        Arc::new(serde_json::Map::new()),
    );
    match annotations {
        Some(a) => tool.with_annotations(a),
        None => tool,
    }
}

#[test]
fn the_mcp_defaults_decide_by_default() {
    let approval = ApprovalConfig::default();
    let destructive = tool("d", Some(ToolAnnotations::new().destructive(true)));
    let safe = tool("s", Some(ToolAnnotations::new().destructive(false)));
    let read_only = tool("r", Some(ToolAnnotations::new().read_only(true)));
    let read_only_but_destructive = tool(
        "rd",
        Some(ToolAnnotations::new().read_only(true).destructive(true)),
    );
    let bare = tool("b", None);
    let hint_free = tool("h", Some(ToolAnnotations::new()));
    assert!(needs_approval(&destructive, &approval));
    assert!(!needs_approval(&safe, &approval));
    assert!(!needs_approval(&read_only, &approval));
    // readOnlyHint means the tool changes nothing, so destructiveHint is
    // meaningless next to it (MCP specification).
    assert!(!needs_approval(&read_only_but_destructive, &approval));
    // No annotation at all: destructive, as the specification's default
    // (`destructiveHint: true` unless `readOnlyHint: true`).
    assert!(needs_approval(&bare, &approval));
    assert!(needs_approval(&hint_free, &approval));
}

#[test]
fn policy_knobs_override_hints() {
    let lenient = ApprovalConfig {
        unannotated_is_destructive: false,
        ..ApprovalConfig::default()
    };
    assert!(!needs_approval(&tool("b", None), &lenient));
    assert!(needs_approval(
        &tool("d", Some(ToolAnnotations::new().destructive(true))),
        &lenient
    ));

    let lists = ApprovalConfig {
        unannotated_is_destructive: true,
        always: vec!["s".into()],
        never: vec!["d".into(), "b".into()],
        ..ApprovalConfig::default()
    };
    assert!(needs_approval(
        &tool("s", Some(ToolAnnotations::new().destructive(false))),
        &lists
    ));
    assert!(!needs_approval(
        &tool("d", Some(ToolAnnotations::new().destructive(true))),
        &lists
    ));
    assert!(!needs_approval(&tool("b", None), &lists));
}

#[test]
fn tool_info_carries_source_server_and_hints() {
    let t = tool(
        "resources_list",
        Some(ToolAnnotations::new().read_only(true).destructive(false)),
    );
    let info = tool_info(&t, "resources", &ApprovalConfig::default());
    assert_eq!(info.name, "resources_list");
    assert_eq!(info.description, "test tool");
    assert_eq!(info.kind, ToolKind::Mcp);
    assert_eq!(info.server, "resources");
    assert!(info.read_only);
    assert!(!info.gated);
    assert_eq!(info.input_schema, json!({}));
}

#[test]
fn output_joins_text_or_falls_back_to_structured() {
    let text = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
    assert_eq!(
        tool_output(text),
        ToolOutput {
            content: "a\nb".into(),
            is_error: false
        }
    );
    let mut structured = CallToolResult::structured(json!({"x": 1}));
    structured.content.clear();
    let out = tool_output(structured);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out.content).unwrap(),
        json!({"x": 1})
    );
    let error = CallToolResult::error(vec![ContentBlock::text("bad")]);
    assert!(tool_output(error).is_error);
}

#[test]
fn errors_read_as_sentences() {
    let e = ToolCallError::ServerUnavailable {
        server: "resources".into(),
        message: "it stopped during the call".into(),
    };
    assert_eq!(
        e.to_string(),
        "MCP server \"resources\" is unavailable: it stopped during the call."
    );
    assert_eq!(
        ToolCallError::Timeout {
            tool: "t".into(),
            secs: 2
        }
        .to_string(),
        "The tool \"t\" did not answer within 2 seconds; it may still have run. It was not retried: check its effect before calling it again."
    );
}
