//! The ADK-Rust anchor of the turn benchmark (`scripts/bench-adk.sh`):
//! ADK-Rust's own REST server (adk-server, the counterpart of Google
//! ADK's `api_server`) for one `LlmAgent` on Gemini `gemini-2.5-flash`,
//! with one in-process function tool `resources_list` and sessions in
//! memory (nothing durable).
//!
//! Environment:
//! - `GEMINI_BASE_URL`: origin of the (fake) Gemini, e.g.
//!   `http://127.0.0.1:40000`; `/v1beta/` is appended here (adk-model reads
//!   no base URL from the environment). Unset: Google's.
//! - `GEMINI_API_KEY` (or `GOOGLE_API_KEY`): the fake accepts only
//!   `fake-gemini-key`, the default.
//! - `PORT`: the port on 127.0.0.1 (default 8080).
//!
//! The app (agent) name is `resources`: `POST
//! /api/apps/resources/users/{user}/sessions/{id}` creates a session and
//! `POST /api/run` with `{"appName":"resources",...}` (camelCase only)
//! runs a turn and answers its events as one JSON array.

use std::sync::Arc;

use adk_rust::agent::LlmAgentBuilder;
use adk_rust::model::GeminiModel;
use adk_rust::server::{ServerConfig, create_app};
use adk_rust::session::InMemorySessionService;
use adk_rust::tool::FunctionTool;
use adk_rust::{
    Llm, LlmRequest, LlmResponseStream, SchemaAdapter, SingleAgentLoader, ToolContext, async_trait,
};
use serde_json::{Value, json};

/// The agent's name; `SingleAgentLoader` serves it only under this app
/// name (or the empty string), so requests use `appName: "resources"`.
const APP: &str = "resources";

/// `resources_list`: no arguments, a fixed listing.
async fn resources_list(_ctx: Arc<dyn ToolContext>, _args: Value) -> adk_rust::Result<Value> {
    Ok(json!({"resources": [
        {"id": 1, "name": "alpha", "kind": "server"},
        {"id": 2, "name": "beta", "kind": "database"},
        {"id": 3, "name": "gamma", "kind": "queue"},
    ]}))
}

/// The Gemini model with every call made unary (`:generateContent`).
///
/// ADK-Rust's `LlmAgent` always asks the model for a stream
/// (`generate_content(req, true)`, i.e. `:streamGenerateContent?alt=sse`),
/// even when the run is non-streaming (`POST /api/run` uses
/// `StreamingMode::None`). The fake Gemini serves only `:generateContent`,
/// as Google ADK's `/run` calls it, so this wrapper passes `stream = false`;
/// everything else (request building, response parsing) is GeminiModel's.
struct Unary(GeminiModel);

#[async_trait]
impl Llm for Unary {
    fn name(&self) -> &str {
        self.0.name()
    }

    async fn generate_content(
        &self,
        req: LlmRequest,
        _stream: bool,
    ) -> adk_rust::Result<LlmResponseStream> {
        self.0.generate_content(req, false).await
    }

    fn schema_adapter(&self) -> &dyn SchemaAdapter {
        self.0.schema_adapter()
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let api_key = env("GEMINI_API_KEY")
        .or_else(|| env("GOOGLE_API_KEY"))
        .unwrap_or_else(|| "fake-gemini-key".to_string());
    let port: u16 = env("PORT").map_or(Ok(8080), |p| p.parse())?;

    // adk-model's GeminiModel reads no base-URL env var; the base URL is
    // given explicitly. It is the REST base *with* the API version and a
    // trailing slash: the client joins `models/{model}:generateContent`.
    let model = match env("GEMINI_BASE_URL") {
        Some(origin) => {
            let base = format!("{}/v1beta/", origin.trim_end_matches('/'));
            GeminiModel::new_with_base_url(api_key, "gemini-2.5-flash", base)?
        }
        None => GeminiModel::new(api_key, "gemini-2.5-flash")?,
    };

    let tool = FunctionTool::new(
        "resources_list",
        "Lists the managed resources (no arguments).",
        resources_list,
    )
    .with_read_only(true);

    let agent = LlmAgentBuilder::new(APP)
        .description("Manages resources.")
        .model(Arc::new(Unary(model)))
        .instruction("You manage resources. Use resources_list to list them.")
        .tool(Arc::new(tool))
        .build()?;

    // adk-server: the agent behind a loader, sessions in memory.
    let config = ServerConfig::new(
        Arc::new(SingleAgentLoader::new(Arc::new(agent))),
        Arc::new(InMemorySessionService::new()),
    );
    let app = create_app(config);

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "adk-rust-anchor listening on http://{}",
        listener.local_addr()?
    );
    axum::serve(listener, app).await?;
    Ok(())
}
