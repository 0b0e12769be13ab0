//! `agent.yaml` -> typed configuration: parsing, defaults and validation.
//!
//! Unknown fields, wrong types and missing required fields are errors that
//! name the file, the field path and the problem. Secrets never live here:
//! they come from the environment (see [`crate::llm::provider`]).

mod auth;
pub mod channels;
mod expand;
pub mod notify;
/// `approval.rules` as written (the core's format).
pub use asg_core::rule_config as rules;
pub mod tree;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use asg_core::duration::{ConfigDuration, format_secs};
pub use auth::{ApiKeyConfig, AuthConfig, OidcConfig};
pub use expand::expand_env;
pub use rules::{ConditionConfig, ConditionTests, RuleAction, RuleConfig};
pub use tree::{NodeConfig, NodeKind};

/// Default listen port.
pub const DEFAULT_PORT: u16 = 8080;
/// Default model.
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";
/// Default cap on an A2A response body (`limits.max_a2a_response_bytes`),
/// also the A2A client's cap when built without a configuration.
pub const DEFAULT_MAX_A2A_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// `telemetry:` in `agent.yaml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Tool arguments become span attributes (`gen_ai.tool.call.arguments`).
    /// Off by default: arguments may hold personal data.
    #[serde(default)]
    pub record_arguments: bool,
}

/// The whole `agent.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Agent name (agent card, logs).
    #[serde(default = "default_name")]
    pub name: String,
    /// What the agent does.
    #[serde(default)]
    pub description: String,
    /// System prompt.
    #[serde(default = "default_prompt")]
    pub prompt: String,
    /// Listen address.
    #[serde(default = "default_host")]
    pub host: String,
    /// Listen port (0 picks a free one).
    #[serde(default = "default_port")]
    pub port: u16,
    /// Where conversations (and the default resources database) live.
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// How peers reach this agent; defaults to `http://{host}:{port}`.
    #[serde(default)]
    pub public_url: Option<String>,
    /// The web chat in front of this agent, if any (an http(s) URL): the
    /// agent's index page (`GET /`) links to it.
    #[serde(default)]
    pub web_chat_url: Option<String>,
    /// A second listen address (`host:port`) serving only `GET /metrics`,
    /// without authentication, for a scraper on a private network; the
    /// API's own `/metrics` stays behind `auth:`.
    #[serde(default)]
    pub metrics_listen: Option<String>,
    /// Traces (`OTEL_*` variables turn them on).
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// Host names (the `Host` header, port ignored, any case) accepted
    /// besides the loopback names. On a loopback `host` other names are
    /// refused (DNS rebinding); on another address they are refused only
    /// when this list is not empty.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// The model.
    #[serde(default)]
    pub llm: LlmConfig,
    /// MCP tool servers.
    #[serde(default)]
    pub mcp_servers: Vec<McpServerConfig>,
    /// The reference implementation's single-server form.
    #[serde(default)]
    pub mcp: Option<McpServerConfig>,
    /// Approval policy.
    #[serde(default)]
    pub approval: ApprovalConfig,
    /// Questions for a human: the model's `ask_human` tool, and who
    /// answers questions (the model's and MCP servers').
    #[serde(default)]
    pub questions: QuestionsConfig,
    /// Most tool calls one turn may chain before giving up.
    #[serde(default = "default_max_tool_steps")]
    pub max_tool_steps: usize,
    /// The agent tree; without it the agent is a single `llm` node built
    /// from `name` and `prompt`.
    #[serde(default)]
    pub agent: Option<NodeConfig>,
    /// A2A sub-agents, offered to the model as tools.
    #[serde(default)]
    pub a2a: Vec<SubAgentConfig>,
    /// Most agents one request may pass through (A -> B -> C ...); stops
    /// delegation cycles.
    #[serde(default = "default_max_delegation_depth")]
    pub max_delegation_depth: u32,
    /// Seconds a graceful shutdown waits for running turns before it
    /// records them as interrupted.
    #[serde(default = "default_shutdown_timeout")]
    pub shutdown_timeout_secs: u64,
    /// Caps on results, bodies and subscribers.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Who may call the agent; absent: anyone who reaches the port.
    #[serde(default)]
    pub auth: AuthConfig,
    /// Which callback URLs A2A push notifications may use.
    #[serde(default)]
    pub a2a_push: notify::A2aPushConfig,
    /// Where approvals are also shown and decided: Slack, email.
    #[serde(default)]
    pub channels: channels::ChannelsConfig,
    /// Where conversations are stored: PostgreSQL when `store.url` (or
    /// `DATABASE_URL`) is set, else JSON files in `data_dir`.
    #[serde(default)]
    pub store: StoreConfig,
    /// Sub-agents offered to one node only (name -> node): an `llm`
    /// node's own `a2a:` entries, and the inline peers of `a2a` nodes
    /// (named after their node, so offered to no `llm` node). Filled by
    /// validation, which moves them into `a2a`.
    #[serde(skip)]
    pub sub_agent_scopes: BTreeMap<String, String>,
}

/// `questions:` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionsConfig {
    /// Offer the built-in `ask_human` tool to every `llm` node (a node's
    /// own `questions:` wins).
    #[serde(default)]
    pub enabled: bool,
    /// Roles or groups that may answer; empty: the conversation's owner.
    #[serde(default)]
    pub answerers: Vec<String>,
    /// The principal whose turn asked may not answer (four-eyes for
    /// questions; off by default: answering is not approving).
    #[serde(default)]
    pub separate_answerer: bool,
    /// A question still unanswered this long after it was asked expires
    /// (the model is told); default: `approval.expires_after`.
    #[serde(default)]
    pub expires_after: Option<ConfigDuration>,
    /// Longest an MCP server's elicitation waits for its answer while
    /// the tool call stays open (default 10m); past it the call is
    /// recorded as interrupted.
    #[serde(default)]
    pub elicitation_timeout: Option<ConfigDuration>,
}

/// `store:` section.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `postgres://user:password@host/db`; `${VAR}` expands. Absent: the
    /// `DATABASE_URL` environment variable, else the JSON files.
    #[serde(default)]
    pub url: Option<String>,
    /// Most pooled connections to the database.
    #[serde(default = "default_max_connections")]
    pub max_connections: u32,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            url: None,
            max_connections: default_max_connections(),
        }
    }
}

impl std::fmt::Debug for StoreConfig {
    // The URL may carry a password: only its database part is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreConfig")
            .field("url", &self.url.as_deref().map(describe_database_url))
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

impl StoreConfig {
    /// The database URL in effect: `store.url` (expanded), else a
    /// non-empty `DATABASE_URL`; `None` for the JSON files. A `store.url`
    /// that expands to nothing, or to something else than a postgres://
    /// URL, is an error (never a silent fall back to the files).
    pub fn database_url(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<String>, String> {
        let url = match &self.url {
            Some(raw) => {
                let url = expand_env(raw, env);
                if url.trim().is_empty() {
                    return Err(format!(
                        "store.url {raw:?} expands to nothing: set the variable it names, or remove store.url to use the JSON files"
                    ));
                }
                url
            }
            None => match env("DATABASE_URL").filter(|u| !u.trim().is_empty()) {
                Some(url) => url,
                None => return Ok(None),
            },
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(format!(
                "the store's database URL must be a postgres:// URL, got {}",
                describe_database_url(&url)
            ));
        }
        Ok(Some(url))
    }
}

/// The database part of a URL, without user, password or query (for
/// messages and logs).
pub fn describe_database_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(parsed) => format!(
            "{}://{}{}{}",
            parsed.scheme(),
            parsed.host_str().unwrap_or(""),
            parsed.port().map(|p| format!(":{p}")).unwrap_or_default(),
            parsed.path()
        ),
        Err(_) => "an unparsable URL".to_string(),
    }
}

/// Pooled connections per agent process. Each replica also holds one
/// for lease renewals and one for change notifications: three replicas
/// take 36 of PostgreSQL's default 100.
fn default_max_connections() -> u32 {
    10
}

/// One A2A sub-agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubAgentConfig {
    /// Tool name the model uses to delegate to it.
    pub name: String,
    /// Its base URL (the card is discovered from the origin) or its
    /// JSON-RPC endpoint. `${VAR}` / `${VAR:-default}` expand.
    pub url: String,
    /// What it does (offered to the model; default: the card's).
    #[serde(default)]
    pub description: Option<String>,
    /// Delegating needs a human approval first.
    #[serde(default, alias = "destructiveHint")]
    pub destructive_hint: bool,
    /// Seconds one delegation may take.
    #[serde(default = "default_sub_agent_timeout")]
    pub timeout_secs: u64,
    /// Environment variable holding a service credential sent as
    /// `Authorization: Bearer` when the caller brought no token.
    #[serde(default)]
    pub bearer_env: Option<String>,
    /// Pins the protocol version (default: the highest its card offers).
    #[serde(default)]
    pub protocol: Option<A2aProtocol>,
    /// Pins the binding (default: the card's preferred one).
    #[serde(default)]
    pub binding: Option<A2aBinding>,
}

/// An `a2a:` entry's `protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum A2aProtocol {
    /// A2A v1.0.
    #[serde(rename = "v1", alias = "v1.0", alias = "1.0")]
    V1,
    /// A2A v0.3.
    #[serde(rename = "v0.3", alias = "0.3")]
    V03,
}

impl A2aProtocol {
    /// As written in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            A2aProtocol::V1 => "v1",
            A2aProtocol::V03 => "v0.3",
        }
    }
}

/// An `a2a:` entry's `binding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum A2aBinding {
    /// JSON-RPC 2.0.
    Jsonrpc,
    /// HTTP+JSON (REST), v1.0 only.
    HttpJson,
}

impl A2aBinding {
    /// As written in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            A2aBinding::Jsonrpc => "jsonrpc",
            A2aBinding::HttpJson => "http_json",
        }
    }
}

/// `llm:` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Model name; the provider is picked from it.
    #[serde(default = "default_model")]
    pub model: String,
    /// Overrides the provider endpoint.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Output token limit.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Seconds one model call may take.
    #[serde(default = "default_llm_timeout")]
    pub timeout_secs: u64,
    /// Most history messages sent to the model (older ones are left out,
    /// tool results first); none: no count limit.
    #[serde(default)]
    pub max_history_messages: Option<usize>,
    /// Estimated tokens of history sent to the model (about 4 bytes a
    /// token): older tool results are elided first, then older messages.
    #[serde(default = "default_max_history_tokens")]
    pub max_history_tokens: usize,
    /// Largest model response body read, in bytes.
    #[serde(default = "default_max_model_response_bytes")]
    pub max_response_bytes: usize,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            model: default_model(),
            base_url: None,
            temperature: None,
            max_tokens: None,
            timeout_secs: default_llm_timeout(),
            max_history_messages: None,
            max_history_tokens: default_max_history_tokens(),
            max_response_bytes: default_max_model_response_bytes(),
        }
    }
}

fn default_max_history_tokens() -> usize {
    100_000
}

/// One MCP server: `command` (stdio) or `url` (streamable HTTP).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Name shown in `/tools` and logs.
    #[serde(default)]
    pub name: String,
    /// Executable of a stdio server. A bare name is looked up beside the
    /// agent binary first, then on `PATH`.
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment for the subprocess.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Endpoint of a streamable-HTTP server.
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP servers: the environment variable holding the server's
    /// service token (its own `auth_token_env`), read at startup and sent
    /// as `Authorization: Bearer` on every request, instead of the
    /// caller's token, which then never reaches that server.
    #[serde(default)]
    pub auth_token_env: Option<String>,
    /// Seconds one tool call may take.
    #[serde(default = "default_tool_timeout")]
    pub timeout_secs: u64,
}

/// `approval:` section: which tool calls stop for a human.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// Treat tools that carry neither `readOnlyHint: true` nor a
    /// `destructiveHint` as destructive: the MCP specification's default,
    /// and ours (true). Only an explicit `false` here lets unannotated
    /// tools run without approval.
    #[serde(default = "default_true")]
    pub unannotated_is_destructive: bool,
    /// Tools that always need approval, whatever their hints.
    #[serde(default)]
    pub always: Vec<String>,
    /// Tools that never need approval, whatever their hints.
    #[serde(default)]
    pub never: Vec<String>,
    /// The principal whose turn raised an approval may not decide it
    /// (four-eyes).
    #[serde(default)]
    pub separate_approver: bool,
    /// Policies on calls, first match wins (`config/rules.rs`); they come
    /// before the hints and the `always` / `never` lists.
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
    /// An approval still undecided this long after it was raised is
    /// rejected as expired (`90s`, `30m`, `24h`, `7d`); a rule's own
    /// `expires_after` wins. None: approvals wait until decided.
    #[serde(default)]
    pub expires_after: Option<ConfigDuration>,
    /// One reminder (inbox event `approval_reminder`) when an approval
    /// has waited this long.
    #[serde(default)]
    pub remind_after: Option<ConfigDuration>,
    /// A decision on an approval whose run depends on configuration that
    /// changed since it paused: `refuse` (the default: rejected, saying
    /// the agent changed) or `resume` (goes on; the change is recorded).
    #[serde(default)]
    pub on_config_change: OnConfigChange,
    /// Notifications (`notify/`): endpoints POSTed a signed JSON event
    /// when an approval is requested, reminded, decided or expired.
    #[serde(default)]
    pub webhooks: Vec<notify::WebhookConfig>,
    /// Base URL of the web chat for the links in webhook events
    /// (`{web_url}/?c={conversation}`); default: the agent's public URL.
    #[serde(default)]
    pub web_url: Option<String>,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            unannotated_is_destructive: true,
            always: Vec::new(),
            never: Vec::new(),
            separate_approver: false,
            rules: Vec::new(),
            expires_after: None,
            remind_after: None,
            on_config_change: OnConfigChange::default(),
            webhooks: Vec::new(),
            web_url: None,
        }
    }
}

/// What a decision does when the configuration changed under its run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnConfigChange {
    /// Reject the approval, saying the agent changed.
    #[default]
    Refuse,
    /// Go on with the current configuration; record the change.
    Resume,
}

/// `limits:` section: caps that keep one request, one tool or one peer
/// from exhausting the agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Longest tool result kept and sent to the model, in bytes; a longer
    /// one is cut with a visible note.
    #[serde(default = "default_max_tool_result_bytes")]
    pub max_tool_result_bytes: usize,
    /// Largest A2A response body read from a sub-agent, in bytes.
    #[serde(default = "default_max_a2a_response_bytes")]
    pub max_a2a_response_bytes: usize,
    /// Event-stream subscribers per conversation (503 past it).
    #[serde(default = "default_max_subscribers_per_conversation")]
    pub max_subscribers_per_conversation: usize,
    /// Event-stream subscribers in total (503 past it).
    #[serde(default = "default_max_subscribers")]
    pub max_subscribers: usize,
    /// Threads that run storage calls (file and database work), whatever
    /// the load.
    #[serde(default = "default_storage_threads")]
    pub storage_threads: usize,
    /// Bytes of recently read conversations kept in memory, so reading
    /// them again reads no file or database (0: none kept).
    #[serde(default = "default_read_cache_bytes")]
    pub read_cache_bytes: u64,
    /// Seconds after which a conversation nobody read leaves the read
    /// cache (about: between half of it and all of it), so an idle agent
    /// gives the memory back (0: only `read_cache_bytes` bounds it).
    #[serde(default = "default_read_cache_idle_secs")]
    pub read_cache_idle_secs: u64,
    /// Turns (messages, decisions, A2A sends) running at once.
    #[serde(default = "default_max_running_turns")]
    pub max_running_turns: usize,
    /// Turns waiting for a place to run; past it, 503 with `Retry-After`.
    #[serde(default = "default_max_queued_turns")]
    pub max_queued_turns: usize,
}

impl LimitsConfig {
    /// `read_cache_idle_secs` as a duration (`None`: 0, never).
    pub fn read_cache_idle(&self) -> Option<std::time::Duration> {
        (self.read_cache_idle_secs > 0)
            .then(|| std::time::Duration::from_secs(self.read_cache_idle_secs))
    }

    /// The counts that must be at least one.
    fn validate(&self) -> Result<(), (String, String)> {
        let counts = [
            ("limits.storage_threads", self.storage_threads),
            ("limits.max_running_turns", self.max_running_turns),
        ];
        match counts.into_iter().find(|(_, n)| *n == 0) {
            Some((field, _)) => Err((field.into(), "must be at least 1".into())),
            None => Ok(()),
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_tool_result_bytes: default_max_tool_result_bytes(),
            max_a2a_response_bytes: default_max_a2a_response_bytes(),
            max_subscribers_per_conversation: default_max_subscribers_per_conversation(),
            max_subscribers: default_max_subscribers(),
            storage_threads: default_storage_threads(),
            read_cache_bytes: default_read_cache_bytes(),
            read_cache_idle_secs: default_read_cache_idle_secs(),
            max_running_turns: default_max_running_turns(),
            max_queued_turns: default_max_queued_turns(),
        }
    }
}

fn default_true() -> bool {
    true
}
fn default_max_tool_result_bytes() -> usize {
    32 * 1024
}
fn default_max_model_response_bytes() -> usize {
    8 * 1024 * 1024
}
fn default_max_a2a_response_bytes() -> usize {
    DEFAULT_MAX_A2A_RESPONSE_BYTES
}
fn default_max_subscribers_per_conversation() -> usize {
    32
}
fn default_max_subscribers() -> usize {
    1024
}
/// Storage threads when `limits.storage_threads` is not set: enough for
/// concurrent saves to share a sync, few enough to stay flat under load.
pub const DEFAULT_STORAGE_THREADS: usize = 16;

fn default_storage_threads() -> usize {
    DEFAULT_STORAGE_THREADS
}
/// Bytes of conversations the read cache keeps by default. The
/// benchmark's random reads of 10,000 stored conversations of four
/// messages (21 MiB of files) answered at about 0.5× the hello-world
/// with 16 MiB, 0.7× with 32 MiB, for 9 MiB more memory once full. The
/// bodies made from them get half as much again
/// ([`crate::api::rendered`]).
pub const DEFAULT_READ_CACHE_BYTES: u64 = 32 << 20;

fn default_read_cache_bytes() -> u64 {
    DEFAULT_READ_CACHE_BYTES
}
/// How long a conversation nobody reads stays in the read cache by
/// default. Reads that keep a conversation (a client polling it, a
/// benchmark's random reads) come far more often; an agent left idle
/// gives the cache's memory back within this (20 s after 1,000 clients
/// did turns for 30 s: 46 MiB resident, against 96-98 with the cache
/// kept full; 28 at start).
pub const DEFAULT_READ_CACHE_IDLE: std::time::Duration = std::time::Duration::from_secs(10);

fn default_read_cache_idle_secs() -> u64 {
    DEFAULT_READ_CACHE_IDLE.as_secs()
}
fn default_max_running_turns() -> usize {
    256
}
fn default_max_queued_turns() -> usize {
    4096
}
fn default_shutdown_timeout() -> u64 {
    30
}

fn default_name() -> String {
    "agent".to_string()
}
fn default_prompt() -> String {
    "You are a helpful assistant. Use the available tools when they help.".to_string()
}
fn default_host() -> String {
    "0.0.0.0".to_string()
}
fn default_port() -> u16 {
    DEFAULT_PORT
}
fn default_data_dir() -> PathBuf {
    PathBuf::from("./data")
}
fn default_model() -> String {
    DEFAULT_MODEL.to_string()
}
fn default_llm_timeout() -> u64 {
    60
}
fn default_tool_timeout() -> u64 {
    30
}
fn default_max_tool_steps() -> usize {
    10
}
fn default_max_delegation_depth() -> u32 {
    4
}
fn default_sub_agent_timeout() -> u64 {
    120
}

/// Checks one sub-agent entry (top-level or an `llm` node's) at `field`.
fn check_sub_agent(
    agent: &SubAgentConfig,
    field: &str,
    names: &mut std::collections::BTreeSet<String>,
) -> Result<(), (String, String)> {
    if agent.name.trim().is_empty() {
        return Err((format!("{field}.name"), "must not be empty".into()));
    }
    if !tree::is_url(&agent.url) {
        return Err((
            format!("{field}.url"),
            format!("must be an http(s) URL, got {:?}", agent.url),
        ));
    }
    if agent.timeout_secs == 0 {
        return Err((format!("{field}.timeout_secs"), "must be at least 1".into()));
    }
    if agent.protocol == Some(A2aProtocol::V03) && agent.binding == Some(A2aBinding::HttpJson) {
        return Err((
            format!("{field}.binding"),
            "http_json is reached over protocol v1 only; use binding: jsonrpc with v0.3".into(),
        ));
    }
    if !names.insert(agent.name.clone()) {
        return Err((
            format!("{field}.name"),
            format!("duplicate sub-agent name {:?}", agent.name),
        ));
    }
    Ok(())
}

/// Collects the sub-agents declared inside the tree, each with the one
/// node it is offered to: an `llm` node's `a2a:` entries, and the inline
/// peer of an `a2a` node (`url`), which becomes a sub-agent named after
/// the node; that node then refers to it by `agent`.
fn hoist_sub_agents(
    node: &mut NodeConfig,
    field: &str,
    names: &mut std::collections::BTreeSet<String>,
    out: &mut Vec<(String, SubAgentConfig)>,
) -> Result<(), (String, String)> {
    for (i, agent) in node.a2a.iter().enumerate() {
        check_sub_agent(agent, &format!("{field}.a2a[{i}]"), names)?;
        out.push((node.name.clone(), agent.clone()));
    }
    if node.kind == NodeKind::A2a
        && let Some(url) = node.url.clone()
    {
        if !names.insert(node.name.clone()) {
            return Err((
                format!("{field}.name"),
                format!(
                    "node {:?}: its inline peer is a sub-agent named after the node, and a \
                     sub-agent with that name is already configured",
                    node.name
                ),
            ));
        }
        out.push((
            node.name.clone(),
            SubAgentConfig {
                name: node.name.clone(),
                url,
                description: node.description.clone(),
                destructive_hint: node.destructive_hint.unwrap_or(false),
                timeout_secs: default_sub_agent_timeout(),
                bearer_env: None,
                protocol: None,
                binding: None,
            },
        ));
        node.agent = Some(node.name.clone());
    }
    for (i, child) in node.agents.iter_mut().enumerate() {
        hoist_sub_agents(child, &format!("{field}.agents[{i}]"), names, out)?;
    }
    Ok(())
}

/// A reminder comes before the expiry it announces.
fn validate_store(store: &StoreConfig) -> Result<(), (String, String)> {
    // The URL is checked once expanded (`StoreConfig::database_url`), at
    // startup and by `agent migrate`.
    if store.max_connections == 0 {
        return Err(("store.max_connections".into(), "must be at least 1".into()));
    }
    Ok(())
}

fn validate_reminder(approval: &ApprovalConfig) -> Result<(), (String, String)> {
    match (approval.remind_after, approval.expires_after) {
        (Some(remind), Some(expires)) if remind >= expires => Err((
            "approval.remind_after".into(),
            format!("must be shorter than approval.expires_after ({expires}), got {remind}"),
        )),
        _ => Ok(()),
    }
}

/// A configuration problem, reported at startup.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read the configuration: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The YAML is malformed or does not match the schema.
    #[error("{path}: {field}: {message}")]
    Invalid {
        path: PathBuf,
        field: String,
        message: String,
    },
}

impl AgentConfig {
    /// Reads, parses and validates a configuration file.
    pub fn load(path: &Path) -> Result<AgentConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses and validates configuration text; `path` is used in errors.
    /// `${VAR}` / `${VAR:-default}` in model names expand from the process
    /// environment.
    pub fn parse(text: &str, path: &Path) -> Result<AgentConfig, ConfigError> {
        Self::parse_with_env(text, path, &|name| std::env::var(name).ok())
    }

    /// [`AgentConfig::parse`] with `env` looking variables up (tests pass
    /// a map instead of the process environment).
    pub fn parse_with_env(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<AgentConfig, ConfigError> {
        let invalid = |field: String, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            field,
            message,
        };
        let deserializer = serde_yaml::Deserializer::from_str(text);
        let mut config: AgentConfig =
            serde_path_to_error::deserialize(deserializer).map_err(|err| {
                let field = err.path().to_string();
                let field = if field == "." {
                    "(top level)".to_string()
                } else {
                    field
                };
                let message = err.into_inner().to_string();
                // The YAML error repeats the enclosing path ("llm: unknown
                // field ..."); the field path already says it.
                let message = match message.split_once(": ") {
                    Some((prefix, rest)) if !prefix.contains(' ') && field.starts_with(prefix) => {
                        rest.to_string()
                    }
                    _ => message,
                };
                invalid(field, message)
            })?;
        if let Some(single) = config.mcp.take() {
            let single = McpServerConfig {
                name: if single.name.is_empty() {
                    "mcp".into()
                } else {
                    single.name
                },
                ..single
            };
            config.mcp_servers.insert(0, single);
        }
        config.expand_models(env);
        config
            .validate()
            .map_err(|(field, message)| invalid(field, message))?;
        Ok(config)
    }

    /// Expands `${VAR}` / `${VAR:-default}` in `llm.model` and in every
    /// node's `model` (one that expands to nothing falls back to
    /// `llm.model`), so one file can run on the offline model by default
    /// and on another one chosen by the environment, e.g.
    /// `model: ${AGENT_MODEL:-scripted:rules.yaml}`.
    fn expand_models(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        fn expand_node(node: &mut NodeConfig, env: &dyn Fn(&str) -> Option<String>) {
            // A node model that expands to nothing falls back to
            // `llm.model`, as if it were not set.
            node.model = node
                .model
                .take()
                .map(|model| expand_env(&model, env))
                .filter(|model| !model.trim().is_empty());
            for child in &mut node.agents {
                expand_node(child, env);
            }
        }
        self.llm.model = expand_env(&self.llm.model, env);
        if let Some(root) = &mut self.agent {
            expand_node(root, env);
        }
    }

    fn validate(&mut self) -> Result<(), (String, String)> {
        self.validate_basics()?;
        asg_http::host_check::validate_allowed_hosts(&self.allowed_hosts)?;
        if let Some(root) = &self.agent {
            tree::validate_tree(root, "agent")?;
        }
        let agent_names = self.validate_sub_agents()?;
        self.validate_limits()?;
        rules::validate_rules(&self.approval.rules)?;
        validate_reminder(&self.approval)?;
        notify::validate(
            &self.approval.webhooks,
            self.approval.web_url.as_deref(),
            &self.a2a_push,
        )?;
        self.auth.validate()?;
        self.channels.validate(self.approval.rules.len())?;
        if self.max_delegation_depth == 0 {
            return Err(("max_delegation_depth".into(), "must be at least 1".into()));
        }
        validate_store(&self.store)?;
        if let Some(root) = &self.agent {
            tree::check_agent_refs(root, "agent", &agent_names)?;
        }
        self.validate_mcp_servers()
    }

    /// Name, model, steps and public URL.
    fn validate_basics(&self) -> Result<(), (String, String)> {
        if self.name.trim().is_empty() {
            return Err(("name".into(), "must not be empty".into()));
        }
        if self.llm.model.trim().is_empty() {
            return Err(("llm.model".into(), "must not be empty".into()));
        }
        if self.llm.timeout_secs == 0 {
            return Err(("llm.timeout_secs".into(), "must be at least 1".into()));
        }
        if let Some(t) = self.llm.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err((
                "llm.temperature".into(),
                format!("must be between 0 and 2, got {t}"),
            ));
        }
        if self.max_tool_steps == 0 {
            return Err(("max_tool_steps".into(), "must be at least 1".into()));
        }
        self.limits.validate()?;
        for (field, url) in [
            ("public_url", &self.public_url),
            ("web_chat_url", &self.web_chat_url),
        ] {
            if let Some(url) = url {
                check_http_url(field, url)?;
            }
        }
        if let Some(address) = &self.metrics_listen {
            asg_http::metrics::check_listen_address(address)
                .map_err(|problem| ("metrics_listen".to_string(), problem))?;
        }
        Ok(())
    }

    /// The `a2a:` entries, then the peers declared inside the tree (moved
    /// into `a2a`, with the node they are offered to); every name.
    fn validate_sub_agents(
        &mut self,
    ) -> Result<std::collections::BTreeSet<String>, (String, String)> {
        let mut agent_names = std::collections::BTreeSet::new();
        for (i, agent) in self.a2a.iter().enumerate() {
            check_sub_agent(agent, &format!("a2a[{i}]"), &mut agent_names)?;
        }
        if let Some(mut root) = self.agent.take() {
            let mut scoped = Vec::new();
            let hoisted = hoist_sub_agents(&mut root, "agent", &mut agent_names, &mut scoped);
            self.agent = Some(root);
            hoisted?;
            for (node, agent) in scoped {
                self.sub_agent_scopes.insert(agent.name.clone(), node);
                self.a2a.push(agent);
            }
        }
        Ok(agent_names)
    }

    /// Each MCP server: one transport, a URL, a timeout, a unique name.
    fn validate_mcp_servers(&mut self) -> Result<(), (String, String)> {
        let mut names = std::collections::BTreeSet::new();
        for (i, server) in self.mcp_servers.iter_mut().enumerate() {
            let field = format!("mcp_servers[{i}]");
            match (&server.command, &server.url) {
                (Some(_), Some(_)) => {
                    return Err((field, "set either `command` or `url`, not both".into()));
                }
                (None, None) => {
                    return Err((field, "needs `command` (stdio) or `url` (HTTP)".into()));
                }
                (None, Some(url))
                    if !(url.starts_with("http://") || url.starts_with("https://")) =>
                {
                    return Err((
                        format!("{field}.url"),
                        format!("must be an http(s) URL, got {url:?}"),
                    ));
                }
                _ => {}
            }
            match &server.auth_token_env {
                Some(_) if server.url.is_none() => {
                    return Err((
                        format!("{field}.auth_token_env"),
                        "is for servers reached by `url` (a stdio server needs no token)".into(),
                    ));
                }
                Some(var) if var.trim().is_empty() => {
                    return Err((
                        format!("{field}.auth_token_env"),
                        "must name an environment variable".into(),
                    ));
                }
                _ => {}
            }
            if server.name.trim().is_empty() {
                server.name = format!("mcp{i}");
            }
            if server.timeout_secs == 0 {
                return Err((format!("{field}.timeout_secs"), "must be at least 1".into()));
            }
            if !names.insert(server.name.clone()) {
                return Err((
                    format!("{field}.name"),
                    format!("duplicate server name {:?}", server.name),
                ));
            }
        }
        Ok(())
    }

    fn validate_limits(&self) -> Result<(), (String, String)> {
        let at_least = |field: &str, value: usize, min: usize| {
            if value < min {
                Err((
                    field.to_string(),
                    format!("must be at least {min}, got {value}"),
                ))
            } else {
                Ok(())
            }
        };
        let limits = &self.limits;
        at_least(
            "limits.max_tool_result_bytes",
            limits.max_tool_result_bytes,
            256,
        )?;
        at_least(
            "limits.max_a2a_response_bytes",
            limits.max_a2a_response_bytes,
            1024,
        )?;
        at_least(
            "limits.max_subscribers_per_conversation",
            limits.max_subscribers_per_conversation,
            1,
        )?;
        at_least("limits.max_subscribers", limits.max_subscribers, 1)?;
        at_least("llm.max_response_bytes", self.llm.max_response_bytes, 1024)?;
        at_least("llm.max_history_tokens", self.llm.max_history_tokens, 100)?;
        if let Some(n) = self.llm.max_history_messages {
            at_least("llm.max_history_messages", n, 1)?;
        }
        if self.shutdown_timeout_secs > 3600 {
            return Err((
                "shutdown_timeout_secs".into(),
                format!("must be at most 3600, got {}", self.shutdown_timeout_secs),
            ));
        }
        Ok(())
    }

    /// The agent tree: `agent:` as written, or the single `llm` node of a
    /// simple agent.
    pub fn tree(&self) -> NodeConfig {
        self.agent
            .clone()
            .unwrap_or_else(|| NodeConfig::single_llm(&self.name, &self.prompt))
    }

    /// Sets `web_chat_url` (the `--web-chat-url` flag), checked as in a
    /// config file.
    pub fn set_web_chat_url(&mut self, url: String) -> Result<(), String> {
        check_http_url("--web-chat-url", &url)
            .map_err(|(field, message)| format!("{field}: {message}"))?;
        self.web_chat_url = Some(url);
        Ok(())
    }

    /// The URL peers use to reach this agent, without a trailing slash.
    pub fn public_base_url(&self, bound_port: u16) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => {
                let host = match self.host.as_str() {
                    "0.0.0.0" | "::" | "" => "localhost",
                    host => host,
                };
                format!("http://{host}:{bound_port}")
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// An absolute `http://` or `https://` URL, with a host.
fn check_http_url(field: &str, url: &str) -> Result<(), (String, String)> {
    let parsed = reqwest::Url::parse(url).ok();
    match parsed {
        Some(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => Ok(()),
        _ => Err((field.into(), format!("must be an http(s) URL, got {url:?}"))),
    }
}
