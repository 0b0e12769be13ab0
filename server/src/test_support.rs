//! Test-only helpers shared by the router tests (`api::tests`,
//! `api::a2a::tests`): an app on the offline scripted model, with no
//! tools and no sub-agents, storing under a temp dir.

use std::path::Path;
use std::sync::Arc;

use axum::Router;

use crate::a2a::client::A2aClient;
use crate::api::{AgentInfo, AppState, never_shutdown, router};
use crate::engine::{AgentTree, Engine, EngineParts, LlmNode};
use crate::llm::scripted::ScriptedModel;
use crate::mcp::ToolRegistry;
use crate::store::JsonFileStore;

/// The router of an agent named `test-agent` (version `0.0.1`) whose
/// model follows `rules` (scripted-model YAML).
pub async fn scripted_app(dir: &Path, rules: &str) -> Router {
    let engine = Engine::start(EngineParts {
        tree: AgentTree::single(LlmNode {
            name: "root".into(),
            prompt: "You are a test agent.".into(),
            llm: Arc::new(ScriptedModel::parse(rules, "test").unwrap()),
            tools: Default::default(),
            output_key: None,
            can_exit_loop: false,
        }),
        tools: Arc::new(ToolRegistry::empty()),
        agents: Arc::new(A2aClient::empty()),
        store: Arc::new(JsonFileStore::open(dir).unwrap()),
        max_tool_steps: 3,
        catalog: Default::default(),
        rules: Default::default(),
        pinning: Default::default(),
        limits: Default::default(),
        policy: Default::default(),
        audit: None,
        expiry: Default::default(),
    })
    .await
    .unwrap();
    router(AppState {
        engine,
        agent: Arc::new(AgentInfo {
            name: "test-agent".into(),
            description: "A test agent.".into(),
            public_url: "http://agent.test".into(),
            version: "0.0.1".into(),
            security: Default::default(),
        }),
        shutdown: never_shutdown(),
        quarantined_files: 0,
        hosts: Arc::new(asg_http::host_check::HostPolicy::any()),
        auth: crate::auth::Authenticator::disabled(),
    })
}
