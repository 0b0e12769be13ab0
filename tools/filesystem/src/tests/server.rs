//! The MCP surface, through a real rmcp client over an in-process pipe:
//! the 15 tools with their annotations, results as JSON text, and every
//! failure an error *tool result* naming the problem.

use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

use super::super::config::TOOL_NAMES;
use super::super::tools::FilesystemServer;
use super::{Fixture, SECRET};

type Client = RunningService<RoleClient, ()>;

async fn connect(fx: &Fixture) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let server = FilesystemServer::new(fx.sandbox.clone());
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("client handshake")
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
    client.call_tool(params).await.expect("call_tool")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// The JSON answer of a successful call.
async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let result = call(client, tool, args).await;
    assert_ne!(result.is_error, Some(true), "{tool}: {}", text(&result));
    serde_json::from_str(&text(&result)).unwrap()
}

/// The message of a failed call (an error tool result).
async fn fails(client: &Client, tool: &str, args: Value) -> String {
    let result = call(client, tool, args).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{tool} should fail: {}",
        text(&result)
    );
    text(&result)
}

#[tokio::test]
async fn the_fifteen_tools_and_their_annotations() {
    let fx = Fixture::new();
    let client = connect(&fx).await;
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    let mut expected = TOOL_NAMES.to_vec();
    expected.sort();
    assert_eq!(names, expected);
    for tool in &tools {
        let a = tool.annotations.clone().unwrap();
        let read_only = TOOL_NAMES[..8].contains(&tool.name.as_ref());
        assert_eq!(a.read_only_hint, Some(read_only), "{}", tool.name);
        assert_eq!(a.destructive_hint, Some(!read_only), "{}", tool.name);
    }
    let read = tools.iter().find(|t| t.name == "read_file").unwrap();
    let schema = serde_json::to_value(&*read.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["root", "path"]), "{schema}");
    assert!(
        schema["properties"]["offset_lines"]["description"].is_string(),
        "{schema}"
    );
    let info = client.peer_info().unwrap();
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("mcp-filesystem")
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn calls_answer_json_and_failures_are_error_results() {
    let fx = Fixture::new();
    fx.link(fx.host("outside"), "main/outdir");
    let client = connect(&fx).await;
    let written = ok(
        &client,
        "write_file",
        json!({"root": "main", "path": "notes/a.txt", "content": "hello\n"}),
    )
    .await;
    assert_eq!(written["created"], true);
    let read = ok(
        &client,
        "read_file",
        json!({"root": "main", "path": "notes/a.txt"}),
    )
    .await;
    assert_eq!(read["content"], "hello\n");
    assert_eq!(
        ok(&client, "list_roots", json!({})).await["roots"][1]["name"],
        "other"
    );

    let cases = [
        (
            "read_file",
            json!({"root": "main", "path": "../outside/secret.txt"}),
            "`..` components are not allowed",
        ),
        (
            "read_file",
            json!({"root": "main", "path": fx.host("outside/secret.txt")}),
            "absolute paths are not allowed",
        ),
        (
            "read_file",
            json!({"root": "main", "path": "outdir/secret.txt"}),
            "leads outside the root",
        ),
        (
            "write_file",
            json!({"root": "ro", "path": "x", "content": "x"}),
            "not allowed in root \"ro\"",
        ),
        (
            "copy",
            json!({"source_root": "main", "source_path": "notes/a.txt", "dest_root": "ro", "dest_path": "a"}),
            "copy is not allowed in root \"ro\"",
        ),
        (
            "read_file",
            json!({"root": "nope", "path": "x"}),
            "unknown root \"nope\"",
        ),
        (
            "read_file",
            json!({"root": "main"}),
            "invalid arguments: missing field `path`",
        ),
        (
            "read_file",
            json!({"root": "main", "path": "a", "offset": 1}),
            "unknown field `offset`",
        ),
        (
            "hash_file",
            json!({"root": "main", "path": "notes/a.txt", "algorithm": "crc"}),
            "unknown algorithm",
        ),
        (
            "remove_folder",
            json!({"root": "main", "path": "."}),
            "the root itself cannot be removed",
        ),
        (
            "remove_folder",
            json!({"root": "main", "path": ""}),
            "the root itself cannot be removed",
        ),
        (
            "grep",
            json!({"root": "main", "pattern": "(unclosed"}),
            "is invalid",
        ),
    ];
    for (tool, args, needle) in cases {
        let message = fails(&client, tool, args.clone()).await;
        assert!(message.starts_with(&format!("{tool}: ")), "{message}");
        assert!(message.contains(needle), "{tool} {args}: {message}");
        assert!(!message.contains(SECRET.trim()), "{message}");
    }
    client.cancel().await.unwrap();
}
