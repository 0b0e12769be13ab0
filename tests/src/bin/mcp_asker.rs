//! A stdio MCP server for the elicitation tests (tests/tests/elicitation.rs):
//! each tool asks the client a question during its call and reports
//! what came back.
//!
//! - `configure` (read-only): form mode, `{region: eu|us, size: 1..=9}`.
//! - `consent` (read-only): URL mode, a consent page to open.
//! - `purge` (no hints, so gated): form mode, `{confirm: string}`, asked
//!   during the approved call.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

struct Asker;

fn tool(name: &'static str, description: &'static str, read_only: bool) -> Tool {
    let schema = json!({"type": "object", "properties": {}});
    let Value::Object(schema) = schema else {
        unreachable!("an object")
    };
    let tool = Tool::new(name, description, Arc::new(schema));
    match read_only {
        true => tool.annotate(ToolAnnotations::new().read_only(true)),
        false => tool,
    }
}

/// The form-mode request `message` with `schema`.
fn form(message: &str, schema: Value) -> ElicitRequestParams {
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_string(),
        requested_schema: serde_json::from_value(schema).expect("an elicitation schema"),
    }
}

impl Asker {
    async fn ask(
        &self,
        name: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let request = match name {
            "configure" => form(
                "Which region and size?",
                json!({"type": "object", "properties": {
                    "region": {"type": "string", "enum": ["eu", "us"]},
                    "size": {"type": "integer", "minimum": 1, "maximum": 9}},
                    "required": ["region"]}),
            ),
            "purge" => form(
                "Type the name of what to purge to confirm",
                json!({"type": "object", "properties": {"confirm": {"type": "string"}},
                    "required": ["confirm"]}),
            ),
            "consent" => ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: "Grant access to the calendar".into(),
                url: "https://auth.example.test/consent?state=abc".into(),
                elicitation_id: "consent-1".into(),
            },
            other => return Err(format!("no tool {other}")),
        };
        let answer = context
            .peer
            .create_elicitation(request)
            .await
            .map_err(|e| format!("elicitation failed: {e}"))?;
        let action = match answer.action {
            ElicitationAction::Accept => "accept",
            ElicitationAction::Decline => "decline",
            ElicitationAction::Cancel => "cancel",
            _ => "unknown",
        };
        let content = answer.content.map(|c| c.to_string()).unwrap_or_default();
        Ok(format!("{name}: {action} {content}").trim().to_string())
    }
}

impl ServerHandler for Asker {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcp-asker", "0.0.1"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool(
                "configure",
                "Configures a service; asks for region and size.",
                true,
            ),
            tool(
                "consent",
                "Connects the calendar; asks for consent at a URL.",
                true,
            ),
            tool(
                "purge",
                "Purges data; asks for a typed confirmation.",
                false,
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match self.ask(&request.name, &context).await {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
        };
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let service = Asker.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
