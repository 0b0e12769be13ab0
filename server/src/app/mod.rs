//! Wiring: config -> model client, tool servers, store, engine, router;
//! and serving with graceful shutdown. The `agent` binary is a thin
//! wrapper around [`App::build`] and [`App::serve`].

mod tree;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use asg_http::host_check::HostPolicy;
use axum::Router;
use tokio::net::TcpListener;

use crate::a2a::client::A2aClient;
use crate::api::{self, AgentInfo, AppParts, CardSecurity};
use crate::audit::AuditLog;
use crate::auth::Authenticator;
use crate::channels::Channels;
use crate::config::AgentConfig;
use crate::engine::catalog::ToolCatalog;
use crate::engine::rules::ApprovalRules;
use crate::engine::{
    AgentTree, DecisionPolicy, Engine, EngineLimits, EngineParts, ExpiryPolicy, HistoryBudget,
};
use crate::mcp::ToolRegistry;
use crate::mcp::registry::RegistryOptions;
use crate::notify::Notifier;
use crate::store::{JsonFileStore, PgStore, Store};

/// A startup failure, with a message meant for the operator.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartupError(pub String);

/// A built agent, ready to serve.
pub struct App {
    /// The configuration it was built from.
    pub config: AgentConfig,
    /// The engine.
    pub engine: Engine,
    tools: Arc<ToolRegistry>,
    /// Conversation files the store set aside at startup.
    quarantined_files: usize,
    /// Who may call.
    auth: Authenticator,
    /// Webhooks and A2A push notifications.
    notifier: Arc<Notifier>,
    /// Slack and email.
    channels: Arc<Channels>,
    /// Bodies of `GET /conversations/{id}`, made once per version.
    rendered: api::rendered::RenderedBodies,
}

impl App {
    /// Builds the agent. `config_dir` resolves relative paths in the
    /// config (e.g. a scripted model's rules file); `env` reads secrets.
    pub async fn build(
        config: AgentConfig,
        config_dir: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<App, StartupError> {
        // Once per process (the first app's setting stays: tests build
        // many).
        crate::engine::configure_storage_threads(config.limits.storage_threads);
        let Storage {
            store,
            audit,
            database,
        } = open_storage(&config, env).await?;
        let auth = Authenticator::from_config(&config.auth, env).map_err(StartupError)?;
        warn_if_open(&config, &auth);
        let tools = start_tools(&config).await?;
        let tree = match tree::build_tree(&config, &tools.registry, &tools.agents, config_dir, env)
        {
            Ok(tree) => tree,
            Err(error) => {
                tools.registry.shutdown().await;
                return Err(error);
            }
        };
        let registry = tools.registry.clone();
        let engine = Engine::start(engine_parts(&config, tree, tools, store.clone(), audit))
            .await
            .map_err(|e| StartupError(e.to_string()))?;
        let tools = registry;
        let built = Notifier::build(&config, &engine, env, database).and_then(|notifier| {
            Channels::build(&config, &engine, env).map(|channels| (notifier, channels))
        });
        let (notifier, channels) = match built {
            Ok(built) => built,
            Err(error) => {
                tools.shutdown().await;
                return Err(StartupError(error));
            }
        };
        // Sub-agents may have moved on while this agent was down.
        let reconciling = engine.clone();
        tokio::spawn(async move { reconciling.reconcile_proxy_approvals().await });
        auth.warm_up();
        let rendered =
            api::rendered::RenderedBodies::beside_read_cache(config.limits.read_cache_bytes);
        Ok(App {
            rendered,
            auth,
            notifier: Arc::new(notifier),
            channels: Arc::new(channels),
            quarantined_files: store.quarantined(),
            config,
            engine,
            tools,
        })
    }

    /// The HTTP router; `bound_port` builds the default public URL,
    /// `shutdown` ends the event streams.
    pub fn router(&self, bound_port: u16, shutdown: tokio::sync::watch::Receiver<bool>) -> Router {
        let router = api::router(AppParts {
            shutdown,
            engine: self.engine.clone(),
            quarantined_files: self.quarantined_files,
            auth: self.auth.clone(),
            rendered: self.rendered.clone(),
            hosts: Arc::new(HostPolicy::new(
                &self.config.host,
                &self.config.allowed_hosts,
            )),
            agent: Arc::new(AgentInfo {
                name: self.config.name.clone(),
                description: self.config.description.clone(),
                public_url: self.config.public_base_url(bound_port),
                version: env!("CARGO_PKG_VERSION").to_string(),
                web_chat_url: self.config.web_chat_url.clone(),
                security: CardSecurity {
                    oidc_issuer: self.config.auth.oidc.as_ref().map(|o| o.issuer.clone()),
                    api_keys: !self.config.auth.api_keys.is_empty(),
                },
            }),
        });
        router
            .layer(axum::Extension(self.notifier.push()))
            .layer(axum::Extension(self.channels.clone()))
    }

    /// `GET /metrics` alone, for `metrics_listen`.
    pub fn metrics_router(&self) -> Router {
        api::system::metrics_router(self.engine.clone())
    }

    /// Serves until `shutdown` completes, then stops the tool servers.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let port = listener.local_addr()?.port();
        let (stopping, stop_flag) = tokio::sync::watch::channel(false);
        let router = self.router(port, stop_flag);
        self.rendered.start_dropping_orphans();
        self.notifier
            .start(&self.config.public_base_url(port))
            .await;
        self.channels
            .start(&self.config.public_base_url(port))
            .await;
        let notifier = self.notifier.clone();
        let channels = self.channels.clone();
        let engine = self.engine.clone();
        let closing = self.engine.clone();
        let deadline = std::time::Duration::from_secs(self.config.shutdown_timeout_secs);
        let result = asg_http::serve::serve(listener, router, async move {
            shutdown.await;
            // No new turns; running ones finish (or are recorded as
            // interrupted at the deadline) while requests are still
            // answered, so their callers get the outcome.
            engine.shutdown(deadline).await;
            // What the engine's shutdown recorded is still notified,
            // within a short bound.
            notifier.shutdown().await;
            channels.shutdown().await;
            // End the open event streams so the server can drain.
            let _ = stopping.send(true);
        })
        .await;
        closing.close_store().await;
        tracing::info!("shutting down tool servers");
        self.tools.shutdown().await;
        result
    }
}

/// What the engine starts with: the agent tree, its tools and the
/// policies the configuration sets.
fn engine_parts(
    config: &AgentConfig,
    tree: AgentTree,
    tools: Tools,
    store: Arc<dyn Store>,
    audit: AuditLog,
) -> EngineParts {
    EngineParts {
        tree,
        tools: tools.registry,
        agents: tools.agents,
        store,
        max_tool_steps: config.max_tool_steps,
        catalog: tools.catalog,
        rules: tools.rules,
        pinning: crate::engine::pin::Pinning::from_config(config),
        limits: engine_limits(config),
        policy: DecisionPolicy {
            separate_approver: config.approval.separate_approver,
        },
        audit: Some(Arc::new(audit)),
        expiry: ExpiryPolicy::from_config(&config.approval)
            .with_questions(config.questions.expires_after.map(|d| d.get())),
        questions: crate::engine::QuestionPolicy::from_config(&config.questions),
    }
}

/// Where the agent keeps its state.
struct Storage {
    store: Arc<dyn Store>,
    audit: AuditLog,
    /// The PostgreSQL store's pool (`None`: the JSON files), for the push
    /// configs that live beside the conversations.
    database: Option<sqlx::PgPool>,
}

/// The conversation store (PostgreSQL with `store.url` or
/// `DATABASE_URL`, else JSON files in `data_dir`, created) and the audit
/// log beside it (the database's `audit_log` table, or
/// `data_dir/audit.jsonl`).
async fn open_storage(
    config: &AgentConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Storage, StartupError> {
    let data_dir = config.data_dir.display();
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| StartupError(format!("cannot create data_dir {data_dir}: {e}")))?;
    if let Some(url) = config.store.database_url(env).map_err(StartupError)? {
        let store = PgStore::open(&url, config.store.max_connections)
            .await
            .map_err(|e| StartupError(e.to_string()))?;
        let pool = store.pool();
        return Ok(Storage {
            store: Arc::new(store),
            audit: AuditLog::postgres(pool.clone()),
            database: Some(pool),
        });
    }
    tracing::info!(dir = %data_dir, "using the JSON store (no store.url or DATABASE_URL)");
    let store = JsonFileStore::open(&config.data_dir).map_err(|e| StartupError(e.to_string()))?;
    let audit = AuditLog::open(&config.data_dir)
        .map_err(|e| StartupError(format!("cannot open the audit log in {data_dir}: {e}")))?;
    Ok(Storage {
        store: Arc::new(store),
        audit,
        database: None,
    })
}

/// What the agent can call: MCP servers, sub-agents, the catalog that
/// resolves their names, and the rules that judge calls.
struct Tools {
    registry: Arc<ToolRegistry>,
    agents: Arc<A2aClient>,
    catalog: ToolCatalog,
    rules: ApprovalRules,
}

/// Starts the MCP servers and sub-agent clients and resolves every tool
/// name; on an error the started servers are stopped.
async fn start_tools(config: &AgentConfig) -> Result<Tools, StartupError> {
    let options = RegistryOptions {
        approval: config.approval.clone(),
        data_dir: config.data_dir.clone(),
        reserved: reserved_tool_names(config),
    };
    let registry = ToolRegistry::start(&config.mcp_servers, options)
        .await
        .map_err(StartupError)?;
    let agents = A2aClient::start(&config.a2a, config.max_delegation_depth)
        .await
        .with_max_response_bytes(config.limits.max_a2a_response_bytes);
    let resolved = ToolCatalog::build(registry.tools(), agents.tools())
        .map_err(StartupError)
        .and_then(|catalog| {
            let rules = approval_rules(config, &catalog, &registry)?;
            Ok((catalog, rules))
        });
    match resolved {
        Ok((catalog, rules)) => Ok(Tools {
            registry,
            agents: Arc::new(agents),
            catalog,
            rules,
        }),
        Err(error) => {
            registry.shutdown().await;
            Err(error)
        }
    }
}

/// The engine's caps, from `limits:` and `llm:`.
fn engine_limits(config: &AgentConfig) -> EngineLimits {
    EngineLimits {
        max_tool_result_bytes: config.limits.max_tool_result_bytes,
        history: HistoryBudget {
            max_messages: config.llm.max_history_messages,
            max_tokens: config.llm.max_history_tokens,
        },
        max_subscribers_per_conversation: config.limits.max_subscribers_per_conversation,
        max_subscribers: config.limits.max_subscribers,
        read_cache_bytes: config.limits.read_cache_bytes,
        read_cache_idle: config.limits.read_cache_idle(),
        max_running_turns: config.limits.max_running_turns,
        max_queued_turns: config.limits.max_queued_turns,
    }
}

/// `approval.rules`, compiled; a rule whose tool pattern matches no tool
/// is a startup error (a typo would never apply), unless an MCP server
/// that could offer it is still unreachable.
fn approval_rules(
    config: &AgentConfig,
    catalog: &ToolCatalog,
    tools: &ToolRegistry,
) -> Result<ApprovalRules, StartupError> {
    let rules = ApprovalRules::compile(&config.approval.rules).map_err(StartupError)?;
    let names: Vec<String> = catalog.tools().into_iter().map(|t| t.name).collect();
    let waiting = tools.unavailable_servers();
    for rule in rules.unmatched(&names) {
        let message = format!(
            "{}: tool pattern {:?} matches no tool (tools: {})",
            rule.label(),
            rule.tool,
            names.join(", ")
        );
        if waiting.is_empty() {
            return Err(StartupError(message));
        }
        tracing::warn!(
            "{message}; MCP server(s) {} may offer it once they answer",
            waiting.join(", ")
        );
    }
    Ok(rules)
}

/// Names an MCP server that answers after startup may not take: the
/// sub-agents' and the built-in `exit_loop`.
fn reserved_tool_names(config: &AgentConfig) -> Vec<String> {
    config
        .a2a
        .iter()
        .map(|agent| agent.name.clone())
        .chain([crate::engine::EXIT_LOOP_TOOL.to_string()])
        .collect()
}

/// A loud warning when the agent listens beyond loopback with no
/// credentials required: anyone who reaches the port can approve.
fn warn_if_open(config: &AgentConfig, auth: &Authenticator) {
    let loopback = matches!(config.host.as_str(), "localhost" | "::1" | "[::1]")
        || config.host.starts_with("127.");
    if !loopback && !auth.enabled() {
        tracing::warn!(
            host = %config.host,
            "NO AUTHENTICATION: the agent listens on a non-loopback address without an `auth:` section; anyone who can reach it can read conversations and approve destructive actions"
        );
    }
}
