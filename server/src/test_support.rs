//! Test-only helpers shared by the router tests (`api::tests`,
//! `api::a2a::tests`) and the engine's own tests: an engine (or an app)
//! on the offline scripted model, with no tools and no sub-agents.

use std::path::Path;
use std::sync::Arc;

use asg_shared::{
    Conversation, ConversationStatus, Message, PendingApproval, Role, ToolCall, fixtures,
};
use axum::Router;
use chrono::Utc;
use serde_json::Map;
use uuid::Uuid;

use crate::a2a::client::A2aClient;
use crate::api::{AgentInfo, AppParts, never_shutdown, router};
use crate::engine::{AgentTree, Engine, EngineParts, LlmNode, new_message};
use crate::llm::scripted::ScriptedModel;
use crate::mcp::ToolRegistry;
use crate::store::{JsonFileStore, Store};

mod watched;
pub use watched::WatchedStore;

/// The parts of an engine whose one `llm` node follows `rules`
/// (scripted-model YAML), over `store`, with no tools, no sub-agents and
/// no audit log.
pub fn scripted_parts(store: Arc<dyn Store>, rules: &str) -> EngineParts {
    EngineParts {
        tree: AgentTree::single(LlmNode {
            name: "root".into(),
            prompt: "You are a test agent.".into(),
            llm: Arc::new(ScriptedModel::parse(rules, "test").unwrap()),
            tools: Default::default(),
            output_key: None,
            can_exit_loop: false,
            ask_human: false,
            offered: Default::default(),
        }),
        tools: Arc::new(ToolRegistry::empty()),
        agents: Arc::new(A2aClient::empty()),
        store,
        max_tool_steps: 3,
        catalog: Default::default(),
        rules: Default::default(),
        pinning: Default::default(),
        limits: Default::default(),
        policy: Default::default(),
        audit: None,
        expiry: Default::default(),
        questions: Default::default(),
    }
}

/// An engine from [`scripted_parts`].
pub async fn scripted_engine(store: Arc<dyn Store>, rules: &str) -> Engine {
    Engine::start(scripted_parts(store, rules)).await.unwrap()
}

/// The router of an agent named `test-agent` (version `0.0.1`) whose
/// model follows `rules` (scripted-model YAML).
pub async fn scripted_app(dir: &Path, rules: &str) -> Router {
    let engine = scripted_engine(Arc::new(JsonFileStore::open(dir).unwrap()), rules).await;
    app_of(engine)
}

/// The router of an agent named `test-agent` (version `0.0.1`) over
/// `engine`, with no auth.
pub fn app_of(engine: Engine) -> Router {
    app_with_auth(engine, crate::auth::Authenticator::disabled())
}

/// As [`app_of`], authenticating requests with `auth`.
pub fn app_with_auth(engine: Engine, auth: crate::auth::Authenticator) -> Router {
    router(AppParts {
        engine,
        agent: Arc::new(AgentInfo {
            name: "test-agent".into(),
            description: "A test agent.".into(),
            public_url: "http://agent.test".into(),
            version: "0.0.1".into(),
            web_chat_url: None,
            security: Default::default(),
        }),
        shutdown: never_shutdown(),
        quarantined_files: 0,
        rendered: Default::default(),
        hosts: Arc::new(asg_http::host_check::HostPolicy::any()),
        auth,
    })
}

/// A conversation waiting for `pending` (as if a turn had paused).
pub fn waiting(mut pending: PendingApproval) -> Conversation {
    let now = Utc::now();
    let id = Uuid::new_v4();
    pending.conversation_id = id;
    let mut call = new_message(Role::Assistant, "");
    call.tool_call = Some(Box::new(ToolCall {
        id: pending.call_id.clone(),
        name: pending.tool_name.clone(),
        arguments: Map::new(),
        needs_approval: true,
        approval_uuid: Some(pending.uuid),
        provider_signature: None,
    }));
    let messages: Vec<Message> = vec![
        new_message(Role::System, "test"),
        new_message(Role::User, "add resource x with value 1"),
        call,
    ];
    Conversation {
        id,
        session_id: "0000abcd".into(),
        status: ConversationStatus::WaitingApproval,
        messages: messages.into_iter().map(Into::into).collect(),
        pending_approval: Some(pending),
        created_at: now,
        updated_at: now,
        ..fixtures::conversation()
    }
}

/// `auth:` with one API key, `ops-bot`, read from `OPS_BOT_KEY`.
pub fn ops_bot_key(roles: &[&str], groups: &[&str]) -> crate::config::AuthConfig {
    let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect();
    crate::config::AuthConfig {
        oidc: None,
        api_keys: vec![crate::config::ApiKeyConfig {
            name: "ops-bot".into(),
            key_env: "OPS_BOT_KEY".into(),
            roles: names(roles),
            groups: names(groups),
        }],
        role_map: None,
    }
}
