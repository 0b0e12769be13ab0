//! The A2A client: sub-agents from the `a2a:` section, their cards, and
//! `message/send` to them with the caller's `Authorization: Bearer`,
//! `X-Session-ID` and the delegation depth.
//!
//! A sub-agent that is down at startup does not stop the agent: its card
//! is fetched again on the next call, and the call fails with a clear
//! "sub-agent unavailable" error until it answers.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use asg_shared::a2a::{
    A2aMessage, AgentCard, JsonRpcResponse, MessageRole, MessageSendParams, Part, Task, TaskState,
    approval_keys, parts_text,
};
use serde_json::{Map, Value, json};
use tracing::Instrument;

use crate::config::{SubAgentConfig, expand_env};
use crate::context::{BearerToken, DELEGATION_DEPTH_HEADER, RequestContext};
use crate::tool::{Tool, ToolKind};

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
    /// Not a JSON-RPC answer with a task.
    #[error("sub-agent {agent:?} sent an answer that could not be read: {message}")]
    InvalidResponse { agent: String, message: String },
    /// JSON-RPC error.
    #[error("sub-agent {agent:?} refused the request: {message} (JSON-RPC {code})")]
    Rpc {
        agent: String,
        code: i64,
        message: String,
    },
    /// Too many agents in the chain.
    #[error(
        "delegation to {agent:?} refused: the request already passed through {depth} agents (max_delegation_depth); is there a delegation cycle?"
    )]
    DepthLimit { agent: String, depth: u32 },
}

/// A sub-agent's request for approval, read from an `input-required` task.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteApproval {
    /// The sub-agent's task id (continue it to decide).
    pub task_id: String,
    /// The sub-agent's approval uuid (a decision names it).
    pub approval_uuid: Option<String>,
    /// The tool it wants to run.
    pub tool_name: String,
    /// With these arguments.
    pub tool_args: Map<String, Value>,
    /// Its description.
    pub description: String,
    /// Set when the sub-agent asks a question instead (its `question`
    /// data): answered here, the answer is forwarded.
    pub question: Option<Box<asg_shared::Question>>,
}

/// What a delegation produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Delegation {
    /// The task completed with this text.
    Completed(String),
    /// The sub-agent waits for an approval.
    InputRequired(RemoteApproval),
    /// The task failed, was rejected or canceled; the reason.
    Failed(String),
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
    card: RwLock<Option<AgentCard>>,
    /// Sent when the caller has no token of its own (`bearer_env`).
    service_token: Option<BearerToken>,
}

/// Every sub-agent and the HTTP client that reaches them.
pub struct A2aClient {
    http: reqwest::Client,
    agents: Vec<Arc<SubAgent>>,
    max_depth: u32,
    /// Largest JSON-RPC answer read from a sub-agent.
    max_response_bytes: usize,
}

/// Default cap on a sub-agent's answer (`limits.max_a2a_response_bytes`).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = crate::config::DEFAULT_MAX_A2A_RESPONSE_BYTES;

impl A2aClient {
    /// Builds the client and fetches the cards it can (failures are
    /// logged, not fatal).
    pub async fn start(configs: &[SubAgentConfig], max_depth: u32) -> A2aClient {
        let client = A2aClient {
            http: reqwest::Client::new(),
            agents: configs
                .iter()
                .map(|c| {
                    Arc::new(SubAgent {
                        name: c.name.clone(),
                        url: expand_env(&c.url, &|k| std::env::var(k).ok())
                            .trim_end_matches('/')
                            .to_string(),
                        destructive: c.destructive_hint,
                        description: c.description.clone(),
                        timeout: Duration::from_secs(c.timeout_secs),
                        card: RwLock::new(None),
                        service_token: c
                            .bearer_env
                            .as_deref()
                            .and_then(|name| std::env::var(name).ok())
                            .map(|token| token.trim().to_string())
                            .filter(|token| !token.is_empty())
                            .map(|token| BearerToken::new(&token)),
                    })
                })
                .collect(),
            max_depth,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        };
        futures::future::join_all(client.agents.iter().map(|agent| async {
            match client.card(agent).await {
                Ok(card) => tracing::info!(agent = %agent.name, card = %card.name, "sub-agent card fetched"),
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
    /// has never been obtained.
    pub async fn card(&self, agent: &SubAgent) -> Result<AgentCard, A2aError> {
        if let Some(card) = agent.cached_card() {
            return Ok(card);
        }
        let origin = origin(&agent.url);
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
                Ok(r) if r.status().is_success() => match r.json::<AgentCard>().await {
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

    /// Sends `text` to a sub-agent: a new task, or a continuation of
    /// `task_id`. `decision` adds the approval data part of a
    /// continuation, naming the sub-agent's approval it decides.
    pub async fn send(
        &self,
        agent: &SubAgent,
        text: &str,
        task_id: Option<&str>,
        decision: Option<&RemoteDecision>,
        ctx: &RequestContext,
    ) -> Result<Delegation, A2aError> {
        let mut parts = vec![Part::text(text)];
        if let Some(decision) = decision {
            parts.push(Part::data(decision.data()));
        }
        let params = MessageSendParams {
            message: A2aMessage {
                role: MessageRole::User,
                parts,
                message_id: uuid::Uuid::new_v4().to_string(),
                task_id: task_id.map(str::to_string),
                context_id: None,
                reference_task_ids: Vec::new(),
                metadata: None,
                kind: "message".into(),
            },
            configuration: None,
            metadata: None,
        };
        let params = serde_json::to_value(params).map_err(|e| A2aError::InvalidResponse {
            agent: agent.name.clone(),
            message: e.to_string(),
        })?;
        tracing::info!(agent = %agent.name, sid = %ctx.session_id, depth = ctx.depth + 1, continuation = task_id.is_some(), "delegating to sub-agent");
        let result = self.call(agent, "message/send", params, ctx).await?;
        if result.get("kind").and_then(Value::as_str) == Some("message") {
            let message: A2aMessage = serde_json::from_value(result)
                .map_err(|e| invalid_response(agent, e.to_string()))?;
            return Ok(Delegation::Completed(message.text()));
        }
        let task: Task =
            serde_json::from_value(result).map_err(|e| invalid_response(agent, e.to_string()))?;
        Ok(delegation_of(&task))
    }

    /// Reads a sub-agent's task (`tasks/get`): how to reconcile a
    /// forwarded decision whose answer was lost.
    pub async fn get_task(
        &self,
        agent: &SubAgent,
        task_id: &str,
        ctx: &RequestContext,
    ) -> Result<Task, A2aError> {
        let params = json!({"id": task_id, "historyLength": 0});
        let result = self.call(agent, "tasks/get", params, ctx).await?;
        serde_json::from_value(result).map_err(|e| invalid_response(agent, e.to_string()))
    }

    /// One JSON-RPC call in its own client span; see [`Self::call_traced`].
    async fn call(
        &self,
        agent: &SubAgent,
        method: &str,
        params: Value,
        ctx: &RequestContext,
    ) -> Result<Value, A2aError> {
        let span = crate::telemetry::a2a_span(&agent.name, method);
        self.call_traced(agent, method, params, ctx)
            .instrument(span)
            .await
    }

    /// One JSON-RPC call with the caller's Bearer, `X-Session-ID`, the
    /// delegation depth and the trace context; the answer's `result`, or
    /// the error.
    async fn call_traced(
        &self,
        agent: &SubAgent,
        method: &str,
        params: Value,
        ctx: &RequestContext,
    ) -> Result<Value, A2aError> {
        let depth = ctx.depth + 1;
        if depth > self.max_depth {
            return Err(A2aError::DepthLimit {
                agent: agent.name.clone(),
                depth: ctx.depth,
            });
        }
        let endpoint = self.endpoint(agent).await?;
        let body = json!({
            "jsonrpc": "2.0",
            "id": uuid::Uuid::new_v4().to_string(),
            "method": method,
            "params": params,
        });
        let mut request = self
            .http
            .post(&endpoint)
            .timeout(agent.timeout)
            .header("X-Session-ID", &ctx.session_id)
            .header(DELEGATION_DEPTH_HEADER, depth.to_string())
            .headers(trace_headers())
            .json(&body);
        if let Some(token) = ctx.bearer.as_ref().or(agent.service_token.as_ref()) {
            request = request.bearer_auth(token.expose());
        }
        let response = request.send().await.map_err(|e| {
            if !e.is_timeout() {
                agent.forget_card();
            }
            transport_error(agent, &e)
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(A2aError::Http {
                agent: agent.name.clone(),
                status: status.as_u16(),
            });
        }
        let bytes = read_capped(response, self.max_response_bytes)
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
        let rpc: JsonRpcResponse =
            serde_json::from_slice(&bytes).map_err(|e| invalid_response(agent, e.to_string()))?;
        if let Some(error) = rpc.error {
            return Err(A2aError::Rpc {
                agent: agent.name.clone(),
                code: error.code,
                message: error.message,
            });
        }
        rpc.result
            .ok_or_else(|| invalid_response(agent, "no result".into()))
    }

    /// The JSON-RPC endpoint. A URL with a path is the endpoint itself; a
    /// bare origin is resolved through the card, whose endpoint must be on
    /// the configured origin: tokens go only where the operator said.
    async fn endpoint(&self, agent: &SubAgent) -> Result<String, A2aError> {
        if has_path(&agent.url) {
            return Ok(agent.url.clone());
        }
        let card = self.card(agent).await?;
        if card.url.is_empty() {
            return Ok(format!("{}/a2a", agent.url));
        }
        if same_origin(&card.url, &agent.url) {
            return Ok(card.url);
        }
        let path = path_of(&card.url);
        let endpoint = format!(
            "{}{}",
            agent.url,
            if path.is_empty() { "/a2a" } else { path }
        );
        tracing::warn!(
            agent = %agent.name,
            card_url = %card.url,
            using = %endpoint,
            "the sub-agent's card names an endpoint on another origin than the configured url; using the configured origin (credentials are only sent there)"
        );
        Ok(endpoint)
    }
}

/// A human's decision forwarded to a sub-agent's task.
#[derive(Debug, Clone)]
pub struct RemoteDecision {
    /// Approve or reject.
    pub approve: bool,
    /// The sub-agent's approval uuid: it refuses a decision for anything
    /// else.
    pub approval_uuid: Option<String>,
    /// Why (a rejection's reason).
    pub reason: Option<String>,
    /// A question's reply, sent instead of `approve`.
    pub reply: Option<asg_shared::QuestionReply>,
}

impl RemoteDecision {
    fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        match &self.reply {
            Some(asg_shared::QuestionReply::Accept { answer }) => {
                data.insert(approval_keys::ANSWER.into(), answer.clone());
            }
            Some(reply) => {
                data.insert(approval_keys::ACTION.into(), Value::from(reply.action()));
            }
            None => {
                data.insert(approval_keys::APPROVED.into(), Value::Bool(self.approve));
            }
        }
        if let Some(uuid) = &self.approval_uuid {
            data.insert(
                approval_keys::APPROVAL_UUID.into(),
                Value::from(uuid.as_str()),
            );
        }
        if let Some(reason) = &self.reason {
            data.insert(approval_keys::REASON.into(), Value::from(reason.as_str()));
        }
        data
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

enum Capped {
    Transport(reqwest::Error),
    TooLarge,
}

/// A response body, refused past `limit` bytes (checked as it arrives).
async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Capped> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(Capped::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(Capped::Transport)? {
        if body.len() + chunk.len() > limit {
            return Err(Capped::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl SubAgent {
    fn cached_card(&self) -> Option<AgentCard> {
        self.card.read().ok().and_then(|c| c.clone())
    }

    fn forget_card(&self) {
        if let Ok(mut card) = self.card.write() {
            *card = None;
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

/// Reads a task as a delegation outcome.
pub fn delegation_of(task: &Task) -> Delegation {
    let status_text = task
        .status
        .message
        .as_ref()
        .map(|m| parts_text(&m.parts))
        .unwrap_or_default();
    match task.status.state {
        TaskState::Completed => {
            let text = task.artifacts_text();
            Delegation::Completed(if text.is_empty() { status_text } else { text })
        }
        TaskState::InputRequired => {
            let data = task.status.message.as_ref().and_then(|m| {
                m.parts.iter().find_map(|p| match p {
                    Part::Data { data, .. } => Some(data.clone()),
                    _ => None,
                })
            });
            let data = data.unwrap_or_default();
            let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_string);
            Delegation::InputRequired(RemoteApproval {
                task_id: task.id.clone(),
                approval_uuid: text(approval_keys::APPROVAL_UUID),
                tool_name: text(approval_keys::TOOL_NAME).unwrap_or_else(|| "remote action".into()),
                tool_args: data
                    .get(approval_keys::TOOL_ARGS)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
                description: text(approval_keys::DESCRIPTION).unwrap_or(status_text),
                question: data
                    .get(approval_keys::QUESTION)
                    .and_then(|q| serde_json::from_value(q.clone()).ok()),
            })
        }
        state => Delegation::Failed(if status_text.is_empty() {
            format!("the sub-agent's task ended in state {state:?}")
        } else {
            status_text
        }),
    }
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

fn has_path(url: &str) -> bool {
    origin(url).len() < url.trim_end_matches('/').len()
}

/// The path (and query) of a URL, after its origin.
fn path_of(url: &str) -> &str {
    &url[origin(url).len()..]
}

/// Same scheme, host and port (compared case-insensitively, default
/// ports made explicit).
fn same_origin(a: &str, b: &str) -> bool {
    let normalize = |url: &str| -> Option<(String, String, u16)> {
        let parsed = reqwest::Url::parse(url).ok()?;
        Some((
            parsed.scheme().to_ascii_lowercase(),
            parsed.host_str()?.to_ascii_lowercase(),
            parsed.port_or_known_default()?,
        ))
    };
    matches!((normalize(a), normalize(b)), (Some(x), Some(y)) if x == y)
}

/// A reqwest error's text without the URL (kept short for users).
fn without_url(error: &reqwest::Error) -> String {
    let text = error.to_string();
    let mut source = std::error::Error::source(error);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() { text } else { detail }
}

/// The current span's trace context as headers (none with traces off).
fn trace_headers() -> reqwest::header::HeaderMap {
    let mut headers = reqwest::header::HeaderMap::new();
    crate::telemetry::inject(&mut headers);
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_endpoints() {
        assert_eq!(origin("http://b:8082/a2a"), "http://b:8082");
        assert_eq!(origin("http://b:8082"), "http://b:8082");
        assert!(has_path("http://b:8082/a2a"));
        assert!(!has_path("http://b:8082/"));
        assert_eq!(path_of("http://b:8082/rpc/a2a"), "/rpc/a2a");
        assert!(same_origin("http://B:8082/a2a", "http://b:8082"));
        assert!(same_origin("https://b/a2a", "https://b:443"));
        assert!(!same_origin("http://evil:8082/a2a", "http://b:8082"));
        assert!(!same_origin("http://b:9999/a2a", "http://b:8082"));
        assert!(!same_origin("https://b:8082/a2a", "http://b:8082"));
        assert!(!same_origin("not a url", "http://b:8082"));
    }

    #[test]
    fn input_required_tasks_become_remote_approvals() {
        let task: Task = serde_json::from_value(json!({
            "id": "t1", "contextId": "c1", "kind": "task",
            "status": {"state": "input-required", "message": {
                "role": "agent", "messageId": "m", "kind": "message",
                "parts": [
                    {"kind": "text", "text": "Approve resources_add?"},
                    {"kind": "data", "data": {"approval_uuid": "u", "tool_name": "resources_add",
                        "tool_args": {"name": "x", "value": 1}, "description": "add x"}}
                ]}}
        }))
        .unwrap();
        let Delegation::InputRequired(approval) = delegation_of(&task) else {
            panic!("not input-required");
        };
        assert_eq!(approval.task_id, "t1");
        assert_eq!(approval.approval_uuid.as_deref(), Some("u"));
        assert_eq!(approval.tool_name, "resources_add");
        assert_eq!(json!(approval.tool_args), json!({"name": "x", "value": 1}));
        assert_eq!(approval.description, "add x");
    }

    #[tokio::test]
    async fn the_card_is_found_on_the_older_path_and_its_endpoint_used() {
        use wiremock::matchers::{method, path};
        use wiremock::{Mock, MockServer, ResponseTemplate};

        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/.well-known/agent-card.json"))
            .respond_with(ResponseTemplate::new(404))
            .mount(&server)
            .await;
        let card = json!({"name": "old", "description": "d", "url": format!("{}/rpc", server.uri()),
            "skills": [{"id": "x", "name": "x", "description": "x", "tags": []}]});
        Mock::given(method("GET"))
            .and(path("/.well-known/agent.json"))
            .respond_with(ResponseTemplate::new(200).set_body_json(card))
            .mount(&server)
            .await;
        let task = json!({"jsonrpc": "2.0", "id": "1", "result": {"kind": "task", "id": "t",
            "contextId": "c", "status": {"state": "completed"},
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "old path ok"}]}]}});
        Mock::given(method("POST"))
            .and(path("/rpc"))
            .respond_with(ResponseTemplate::new(200).set_body_json(task))
            .expect(1)
            .mount(&server)
            .await;
        let config = SubAgentConfig {
            name: "old".into(),
            url: server.uri(),
            description: None,
            destructive_hint: false,
            timeout_secs: 5,
            bearer_env: None,
        };
        let client = A2aClient::start(&[config], 4).await;
        let agent = client.agent("old").unwrap();
        assert_eq!(client.card(agent).await.unwrap().name, "old");
        let outcome = client
            .send(agent, "hi", None, None, &RequestContext::default())
            .await
            .unwrap();
        assert_eq!(outcome, Delegation::Completed("old path ok".into()));
    }

    #[test]
    fn completed_and_failed_tasks() {
        let completed: Task = serde_json::from_value(json!({
            "id": "t", "contextId": "c", "status": {"state": "completed"},
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "done"}]}]
        }))
        .unwrap();
        assert_eq!(
            delegation_of(&completed),
            Delegation::Completed("done".into())
        );
        let failed: Task = serde_json::from_value(json!({
            "id": "t", "contextId": "c", "status": {"state": "failed", "message": {
                "role": "agent", "messageId": "m", "parts": [{"kind": "text", "text": "boom"}]}}
        }))
        .unwrap();
        assert_eq!(delegation_of(&failed), Delegation::Failed("boom".into()));
    }
}
