//! `fake-gemini`: a fast fake of Gemini's `generateContent` for the
//! turn anchors of the benchmark (`scripts/bench-adk.sh`), so the agent
//! and Google's ADK answer the same turn from the same model: "list
//! resources" calls the MCP tool `resources_list`, and the tool's result
//! comes back as the reply. No call is kept (it runs under load).
//!
//! Usage: `fake-gemini`; prints `fake-gemini listening on URL` once it
//! accepts connections, then serves until stopped. Point an agent at it
//! with `GEMINI_BASE_URL=URL GEMINI_API_KEY=fake-gemini-key` (ADK:
//! `GOOGLE_GEMINI_BASE_URL` and `GOOGLE_API_KEY`).

use asg_tests::fake_gemini::{FakeGemini, GeminiCall, GeminiReply};
use serde_json::json;

/// The tool the turn calls (the agent's and ADK's name for
/// mcp-resources' listing).
const LIST_TOOL: &str = "resources_list";

/// The turn: list when asked, then answer with the listing.
fn answer(call: &GeminiCall) -> GeminiReply {
    match call.last_function_response() {
        Some(listed) => GeminiReply::text(format!("The resources: {}", listed.text())),
        None if call.offers(LIST_TOOL) => GeminiReply::call(LIST_TOOL, json!({})),
        None => GeminiReply::text("I have no tool to list resources."),
    }
}

#[tokio::main]
async fn main() {
    let fake = FakeGemini::start_unrecorded(answer).await;
    println!("fake-gemini listening on {}", fake.url);
    // Serves on its own task until the process is stopped.
    std::future::pending::<()>().await;
}
