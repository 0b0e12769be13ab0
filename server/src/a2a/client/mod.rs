//! The A2A client: sub-agents from the `a2a:` section, their cards, and
//! messages to them with the caller's `Authorization: Bearer`,
//! `X-Session-ID` and the delegation depth — over A2A v1.0 (JSON-RPC or
//! HTTP+JSON) when the card offers it, else v0.3 JSON-RPC ([`route`]).
//! Every version's answer is read as the same [`Delegation`], so proxy
//! approvals, reconciling with `GetTask` / `tasks/get`, token rules and
//! caps work the same on each.
//!
//! A sub-agent that is down at startup does not stop the agent: its card
//! is fetched again on the next call, and the call fails with a clear
//! "sub-agent unavailable" error until it answers.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use asg_shared::a2a::{A2aMessage, MessageRole, Part, Task};
use serde_json::json;
use tracing::Instrument;

use crate::config::{SubAgentConfig, expand_env};
use crate::context::{BearerToken, DELEGATION_DEPTH_HEADER, RequestContext};
use crate::tool::{Tool, ToolKind};

mod delegation;
pub mod route;
mod transport;
pub mod wire;

pub use delegation::{Continuation, Delegation, RemoteApproval, RemoteDecision, delegation_of};
use route::{PeerCard, Pins, Route};
use transport::{Capped, read_capped, trace_headers, without_url};
use wire::{Answer, Op, WireError};

/// Longest a card fetch may take.
const CARD_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a delegation failed. Messages are shown in the conversation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum A2aError {
    /// Cannot connect, or no card.
    #[error("sub-agent {agent:?} unavailable: {message}")]
    Unavailable { agent: String, message: String },
    /// No answer in time.
    #[error("sub-agent {agent:?} did not answer within {secs} s")]
    Timeout { agent: String, secs: u64 },
    /// HTTP error status.
    #[error("sub-agent {agent:?} answered HTTP {status}")]
    Http { agent: String, status: u16 },
    /// Not an answer with a task.
    #[error("sub-agent {agent:?} sent an answer that could not be read: {message}")]
    InvalidResponse { agent: String, message: String },
    /// JSON-RPC error.
    #[error("sub-agent {agent:?} refused the request: {message} (JSON-RPC {code})")]
    Rpc {
        agent: String,
        code: i64,
        message: String,
    },
    /// HTTP+JSON error (a problem detail).
    #[error("sub-agent {agent:?} refused the request: {message} (HTTP {status})")]
    Refused {
        agent: String,
        status: u16,
        message: String,
    },
    /// The sub-agent wants a credential (HTTP 401): none was sent, or it
    /// refused the one sent (`sent` says which: the caller's bearer or
    /// the entry's `bearer_env` token). Never carries the token.
    #[error("{}", unauthorized_text(agent, *sent))]
    Unauthorized {
        agent: String,
        sent: Option<&'static str>,
    },
    /// Too many agents in the chain.
    #[error(
        "delegation to {agent:?} refused: the request already passed through {depth} agents (max_delegation_depth); is there a delegation cycle?"
    )]
    DepthLimit { agent: String, depth: u32 },
}

impl A2aError {
    /// The sub-agent wants a credential this agent did not send, or
    /// refused the one it sent (HTTP 401).
    pub fn is_unauthorized(&self) -> bool {
        matches!(
            self,
            A2aError::Unauthorized { .. }
                | A2aError::Http { status: 401, .. }
                | A2aError::Refused { status: 401, .. }
        )
    }
}

/// What an [`A2aError::Unauthorized`] tells the user.
fn unauthorized_text(agent: &str, sent: Option<&str>) -> String {
    let again = "send the request again with an Authorization: Bearer it accepts";
    match sent {
        None => format!(
            "sub-agent {agent:?} needs a credential (HTTP 401): the caller sent none and the \
             entry has no bearer_env; {again}"
        ),
        Some(which) => {
            format!(
                "sub-agent {agent:?} refused the credential (HTTP 401) sent as {which}; {again}"
            )
        }
    }
}

/// One configured sub-agent.
pub struct SubAgent {
    /// Tool name.
    pub name: String,
    /// Configured URL.
    pub url: String,
    /// Delegating needs approval.
    pub destructive: bool,
    /// Description offered to the model.
    description: Option<String>,
    timeout: Duration,
    /// What the entry pins (`protocol`, `binding`).
    pins: Pins,
    card: RwLock<Option<PeerCard>>,
    route: RwLock<Option<Route>>,
    /// Sent when the caller has no token of its own (`bearer_env`).
    service_token: Option<BearerToken>,
}

/// Every sub-agent and the HTTP client that reaches them.
pub struct A2aClient {
    http: reqwest::Client,
    agents: Vec<Arc<SubAgent>>,
    max_depth: u32,
    /// Largest answer read from a sub-agent.
    max_response_bytes: usize,
}

/// Default cap on a sub-agent's answer (`limits.max_a2a_response_bytes`).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = crate::config::DEFAULT_MAX_A2A_RESPONSE_BYTES;

impl A2aClient {
    /// Builds the client and finds how to reach each sub-agent (failures
    /// are logged, not fatal).
    pub async fn start(configs: &[SubAgentConfig], max_depth: u32) -> A2aClient {
        let client = A2aClient {
            http: reqwest::Client::new(),
            agents: configs.iter().map(|c| Arc::new(SubAgent::new(c))).collect(),
            max_depth,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        };
        futures::future::join_all(client.agents.iter().map(|agent| async {
            match client.route(agent).await {
                Ok(route) => tracing::info!(agent = %agent.name, via = route.label(), url = %route.url, "sub-agent reachable"),
                Err(error) => tracing::warn!(agent = %agent.name, %error, "sub-agent unavailable at startup; will retry on use"),
            }
        }))
        .await;
        client
    }

    /// A client without sub-agents.
    pub fn empty() -> A2aClient {
        A2aClient {
            http: reqwest::Client::new(),
            agents: Vec::new(),
            max_depth: 4,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// Caps the size of a sub-agent's answer.
    pub fn with_max_response_bytes(mut self, bytes: usize) -> A2aClient {
        self.max_response_bytes = bytes;
        self
    }

    /// A sub-agent by name.
    pub fn agent(&self, name: &str) -> Option<&Arc<SubAgent>> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// The sub-agents as tools: one `message` argument.
    pub fn tools(&self) -> Vec<Tool> {
        self.agents.iter().map(|agent| agent.tool_info()).collect()
    }

    /// The agent card, fetched once and cached; fetched again while it
    /// has never been obtained. No credential is sent for it.
    pub async fn card(&self, agent: &SubAgent) -> Result<PeerCard, A2aError> {
        if let Some(card) = agent.cached_card() {
            return Ok(card);
        }
        let origin = route::origin(&agent.url);
        let mut last_error = String::new();
        for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
            let response = self
                .http
                .get(format!("{origin}{path}"))
                .headers(trace_headers())
                .timeout(CARD_TIMEOUT)
                .send()
                .await;
            match response {
                Ok(r) if r.status().is_success() => match r.json::<PeerCard>().await {
                    Ok(card) => {
                        if let Ok(mut cached) = agent.card.write() {
                            *cached = Some(card.clone());
                        }
                        return Ok(card);
                    }
                    Err(e) => last_error = format!("invalid agent card at {path}: {e}"),
                },
                Ok(r) => last_error = format!("{path} answered HTTP {}", r.status().as_u16()),
                Err(e) => last_error = without_url(&e),
            }
        }
        Err(A2aError::Unavailable {
            agent: agent.name.clone(),
            message: last_error,
        })
    }

    /// How to reach a sub-agent, chosen once from its card and the
    /// entry's pins, and chosen again after it could not be reached.
    pub async fn route(&self, agent: &SubAgent) -> Result<Route, A2aError> {
        if let Some(route) = agent.cached_route() {
            return Ok(route);
        }
        let card = if route::has_path(&agent.url) {
            self.card(agent).await.ok()
        } else {
            Some(self.card(agent).await?)
        };
        let chosen = route::choose(card.as_ref(), &agent.url, agent.pins).map_err(|message| {
            A2aError::Unavailable {
                agent: agent.name.clone(),
                message,
            }
        })?;
        tracing::debug!(agent = %agent.name, via = chosen.label(), url = %chosen.url, "sub-agent route chosen");
        if let Ok(mut cached) = agent.route.write() {
            *cached = Some(chosen.clone());
        }
        Ok(chosen)
    }

    /// Sends `text` to a sub-agent: a new task, or a continuation of a
    /// task (with its context id when known). `decision` adds the
    /// approval data part of a continuation, naming the sub-agent's
    /// approval it decides.
    pub async fn send(
        &self,
        agent: &SubAgent,
        text: &str,
        continues: Option<Continuation<'_>>,
        decision: Option<&RemoteDecision>,
        ctx: &RequestContext,
    ) -> Result<Delegation, A2aError> {
        let mut parts = vec![Part::text(text)];
        if let Some(decision) = decision {
            parts.push(Part::data(decision.data()));
        }
        let message = A2aMessage {
            role: MessageRole::User,
            parts,
            message_id: uuid::Uuid::new_v4().to_string(),
            task_id: continues.map(|c| c.task_id.to_string()),
            context_id: continues.and_then(|c| c.context_id.map(str::to_string)),
            reference_task_ids: Vec::new(),
            metadata: None,
            kind: "message".into(),
        };
        tracing::info!(agent = %agent.name, sid = %ctx.session_id, depth = ctx.depth + 1, continuation = continues.is_some(), "delegating to sub-agent");
        match self.exchange(agent, Op::Send(&message), ctx).await? {
            Answer::Message(reply) => Ok(Delegation::Completed(reply.text())),
            Answer::Task(task) => Ok(delegation_of(&task)),
        }
    }

    /// Reads a sub-agent's task (`GetTask` / `tasks/get`): how to
    /// reconcile a forwarded decision whose answer was lost.
    pub async fn get_task(
        &self,
        agent: &SubAgent,
        task_id: &str,
        ctx: &RequestContext,
    ) -> Result<Task, A2aError> {
        match self.exchange(agent, Op::GetTask(task_id), ctx).await? {
            Answer::Task(task) => Ok(task),
            Answer::Message(_) => Err(invalid_response(agent, "a message, not a task".into())),
        }
    }

    /// One operation on the sub-agent's route, in its own client span.
    async fn exchange(
        &self,
        agent: &SubAgent,
        op: Op<'_>,
        ctx: &RequestContext,
    ) -> Result<Answer, A2aError> {
        let depth = ctx.depth + 1;
        if depth > self.max_depth {
            return Err(A2aError::DepthLimit {
                agent: agent.name.clone(),
                depth: ctx.depth,
            });
        }
        let route = self.route(agent).await?;
        let request = wire::request(&route, op).map_err(|e| invalid_response(agent, e))?;
        let span = crate::telemetry::a2a_span(&agent.name, request.name);
        let (status, body) = self
            .round_trip(agent, request, ctx)
            .instrument(span)
            .await?;
        if status == 401 {
            return Err(A2aError::Unauthorized {
                agent: agent.name.clone(),
                sent: sent_credential(agent, ctx),
            });
        }
        let read = if (200..300).contains(&status) {
            wire::read(&route, op, &body)
        } else if route.binding == route::Binding::HttpJson {
            Err(wire::problem(status, &body))
        } else {
            return Err(A2aError::Http {
                agent: agent.name.clone(),
                status,
            });
        };
        read.map_err(|error| match error {
            WireError::Invalid(message) => invalid_response(agent, message),
            WireError::Rpc { code, message } => A2aError::Rpc {
                agent: agent.name.clone(),
                code,
                message,
            },
            WireError::Problem { status, message } => A2aError::Refused {
                agent: agent.name.clone(),
                status,
                message,
            },
        })
    }

    /// Sends one request with the caller's Bearer (else the entry's
    /// service token), `X-Session-ID`, the delegation depth, the trace
    /// context and the `A2A-Version`; the status and the capped body.
    async fn round_trip(
        &self,
        agent: &SubAgent,
        request: wire::Request,
        ctx: &RequestContext,
    ) -> Result<(u16, Vec<u8>), A2aError> {
        let mut builder = self
            .http
            .request(request.method, &request.url)
            .timeout(agent.timeout)
            .header("X-Session-ID", &ctx.session_id)
            .header(DELEGATION_DEPTH_HEADER, (ctx.depth + 1).to_string())
            .headers(trace_headers());
        if let Some(version) = request.version {
            builder = builder.header("A2A-Version", version);
        }
        if let Some(body) = &request.body {
            builder = builder.json(body);
        }
        if let Some(token) = ctx.bearer.as_ref().or(agent.service_token.as_ref()) {
            builder = builder.bearer_auth(token.expose());
        }
        let response = builder.send().await.map_err(|e| {
            if !e.is_timeout() {
                agent.forget_route();
            }
            transport_error(agent, &e)
        })?;
        let status = response.status().as_u16();
        let body = read_capped(response, self.max_response_bytes)
            .await
            .map_err(|e| match e {
                Capped::Transport(e) => transport_error(agent, &e),
                Capped::TooLarge => invalid_response(
                    agent,
                    format!(
                        "the answer is larger than {} bytes (limits.max_a2a_response_bytes)",
                        self.max_response_bytes
                    ),
                ),
            })?;
        Ok((status, body))
    }
}

/// Which credential a request to `agent` carries (as [`A2aClient::round_trip`]
/// picks it), named for an error message.
fn sent_credential(agent: &SubAgent, ctx: &RequestContext) -> Option<&'static str> {
    match (&ctx.bearer, &agent.service_token) {
        (Some(_), _) => Some("the caller's bearer"),
        (None, Some(_)) => Some("the entry's bearer_env token"),
        (None, None) => None,
    }
}

fn invalid_response(agent: &SubAgent, message: String) -> A2aError {
    A2aError::InvalidResponse {
        agent: agent.name.clone(),
        message,
    }
}

fn transport_error(agent: &SubAgent, error: &reqwest::Error) -> A2aError {
    if error.is_timeout() {
        A2aError::Timeout {
            agent: agent.name.clone(),
            secs: agent.timeout.as_secs(),
        }
    } else {
        A2aError::Unavailable {
            agent: agent.name.clone(),
            message: without_url(error),
        }
    }
}

impl SubAgent {
    fn new(config: &SubAgentConfig) -> SubAgent {
        SubAgent {
            name: config.name.clone(),
            url: expand_env(&config.url, &|k| std::env::var(k).ok())
                .trim_end_matches('/')
                .to_string(),
            destructive: config.destructive_hint,
            description: config.description.clone(),
            timeout: Duration::from_secs(config.timeout_secs),
            pins: Pins {
                protocol: config.protocol,
                binding: config.binding,
            },
            card: RwLock::new(None),
            route: RwLock::new(None),
            service_token: config
                .bearer_env
                .as_deref()
                .and_then(|name| std::env::var(name).ok())
                .map(|token| token.trim().to_string())
                .filter(|token| !token.is_empty())
                .map(|token| BearerToken::new(&token)),
        }
    }

    fn cached_card(&self) -> Option<PeerCard> {
        self.card.read().ok().and_then(|c| c.clone())
    }

    fn cached_route(&self) -> Option<Route> {
        self.route.read().ok().and_then(|r| r.clone())
    }

    /// Forgets the card and the route: both are found again on the next
    /// call (the sub-agent may have moved or been upgraded).
    fn forget_route(&self) {
        if let Ok(mut card) = self.card.write() {
            *card = None;
        }
        if let Ok(mut route) = self.route.write() {
            *route = None;
        }
    }

    /// Longest one call to it may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The sub-agent as a tool with one `message` argument.
    pub fn tool_info(&self) -> Tool {
        let description = self
            .description
            .clone()
            .or_else(|| self.cached_card().map(|c| c.description))
            .unwrap_or_else(|| format!("Delegate a task to the {} agent.", self.name));
        Tool {
            name: self.name.clone(),
            description,
            input_schema: json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "What to ask the agent, in plain words."}
                },
                "required": ["message"]
            }),
            gated: self.destructive,
            read_only: false,
            kind: ToolKind::SubAgent,
            server: self.url.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
