//! A2A protocol v0.3 types (JSON-RPC binding): the agent card, tasks,
//! messages, parts, artifacts, streaming events and JSON-RPC envelopes.
//! Every object carries its `kind`, as v0.3 requires. Optional fields are
//! tolerated when absent so cards and tasks of other implementations
//! parse. The v1.0 wire types live beside them in [`v1`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub mod from_v1;
pub mod v1;

/// Protocol version this crate speaks.
pub const PROTOCOL_VERSION: &str = "0.3.0";

/// The agent card served at `/.well-known/agent-card.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// Agent name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Absolute URL of the JSON-RPC endpoint (v0.3; a v1.0 card has none
    /// and names its endpoints in `supportedInterfaces`).
    #[serde(default)]
    pub url: String,
    /// Agent version.
    #[serde(default)]
    pub version: String,
    /// A2A protocol version.
    #[serde(default = "default_protocol_version")]
    pub protocol_version: String,
    /// Transport of `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_transport: Option<String>,
    /// Every interface the agent serves, each with its binding and
    /// protocol version (the v1.0 field; v0.3 clients read `url`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supported_interfaces: Vec<v1::AgentInterface>,
    /// Optional features.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// Input media types.
    #[serde(default)]
    pub default_input_modes: Vec<String>,
    /// Output media types.
    #[serde(default)]
    pub default_output_modes: Vec<String>,
    /// What it can do.
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    /// Who provides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// Human documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// How callers authenticate: scheme name → security scheme, as the
    /// card's author wrote it. This server writes both forms in one object
    /// ([`v1::SecurityScheme::both_forms`]): v0.3's OpenAPI fields (`type`,
    /// …) and v1.0's one member (`httpAuthSecurityScheme`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_schemes: Option<serde_json::Map<String, serde_json::Value>>,
    /// Which schemes are required: any one of the listed alternatives
    /// (v1.0 `securityRequirements`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<v1::SecurityRequirement>,
    /// The same alternatives in the v0.3 form (`security`: scheme name →
    /// scopes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<Vec<serde_json::Map<String, serde_json::Value>>>,
}

fn default_protocol_version() -> String {
    PROTOCOL_VERSION.to_string()
}

/// Optional protocol features.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `message/stream` and `tasks/resubscribe`.
    #[serde(default)]
    pub streaming: bool,
    /// `tasks/pushNotificationConfig/*`.
    #[serde(default)]
    pub push_notifications: bool,
    /// Tasks keep a status history.
    #[serde(default)]
    pub state_transition_history: bool,
}

/// One skill of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Identifier.
    pub id: String,
    /// Name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// The organization behind an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// Organization.
    pub organization: String,
    /// Its URL.
    pub url: String,
}

/// Task lifecycle states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// Received, not started.
    Submitted,
    /// Being worked on.
    Working,
    /// Waits for the client (here: an approval).
    InputRequired,
    /// Done.
    Completed,
    /// Canceled by the client.
    Canceled,
    /// Failed.
    Failed,
    /// Refused by the agent.
    Rejected,
    /// Needs authentication.
    AuthRequired,
    /// Unknown.
    Unknown,
}

impl TaskState {
    /// The kebab-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Rejected => "rejected",
            TaskState::AuthRequired => "auth-required",
            TaskState::Unknown => "unknown",
        }
    }

    /// No further change is possible.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected
        )
    }
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    /// The client.
    User,
    /// The agent.
    Agent,
}

/// A file part's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    /// Base64 content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// Or a URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// File name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One part of a message or artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Extra data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
    /// A file.
    File {
        /// The file.
        file: FileContent,
        /// Extra data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
    /// Structured data.
    Data {
        /// The data.
        data: Map<String, Value>,
        /// Extra data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Map<String, Value>>,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text {
            text: text.into(),
            metadata: None,
        }
    }

    /// A data part.
    pub fn data(data: Map<String, Value>) -> Part {
        Part::Data {
            data,
            metadata: None,
        }
    }
}

/// A message between client and agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct A2aMessage {
    /// Sender.
    pub role: MessageRole,
    /// Content.
    pub parts: Vec<Part>,
    /// Unique id chosen by the sender.
    pub message_id: String,
    /// The task it belongs to (continuation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The context it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Related tasks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Always `"message"`.
    #[serde(default = "kind_message")]
    pub kind: String,
}

fn kind_message() -> String {
    "message".to_string()
}

impl A2aMessage {
    /// The text of all text parts, joined by newlines.
    pub fn text(&self) -> String {
        parts_text(&self.parts)
    }
}

/// Joins the text parts.
pub fn parts_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A task's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// State.
    pub state: TaskState,
    /// Message explaining the state (e.g. the approval request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<A2aMessage>,
    /// RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// Output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Identifier.
    pub artifact_id: String,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Content.
    pub parts: Vec<Part>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Task id (here: the conversation id).
    pub id: String,
    /// Context id.
    pub context_id: String,
    /// Current status.
    pub status: TaskStatus,
    /// Outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Messages so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<A2aMessage>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Always `"task"`.
    #[serde(default = "kind_task")]
    pub kind: String,
}

fn kind_task() -> String {
    "task".to_string()
}

impl Task {
    /// Text of every artifact, joined by newlines.
    pub fn artifacts_text(&self) -> String {
        self.artifacts
            .iter()
            .map(|a| parts_text(&a.parts))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A status change in a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// Task id.
    pub task_id: String,
    /// Context id.
    pub context_id: String,
    /// Always `"status-update"`.
    pub kind: String,
    /// New status.
    pub status: TaskStatus,
    /// Last event of the stream.
    #[serde(default, rename = "final")]
    pub is_final: bool,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A new or extended artifact in a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// Task id.
    pub task_id: String,
    /// Context id.
    pub context_id: String,
    /// Always `"artifact-update"`.
    pub kind: String,
    /// The artifact.
    pub artifact: Artifact,
    /// Appends to an earlier artifact with the same id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<bool>,
    /// Last chunk of the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_chunk: Option<bool>,
}

/// What `message/send` and stream events carry as `result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SendResult {
    /// A task (this server always answers with one).
    Task(Task),
    /// A direct message.
    Message(A2aMessage),
    /// A status update (streams).
    Status(TaskStatusUpdateEvent),
    /// An artifact update (streams).
    Artifact(TaskArtifactUpdateEvent),
}

/// `message/send` / `message/stream` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSendParams {
    /// The message.
    pub message: A2aMessage,
    /// Options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<MessageSendConfiguration>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `message/send` options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSendConfiguration {
    /// Accepted output media types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_output_modes: Option<Vec<String>>,
    /// Wait for the task to finish (this server always does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    /// Most history messages in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Where to push the task's updates (`tasks/pushNotificationConfig/set`
    /// for the task this message creates or continues).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config: Option<PushNotificationConfig>,
}

/// Where and how a server pushes a task's updates (A2A v0.3
/// `PushNotificationConfig`). `Debug` hides the token and credentials.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushNotificationConfig {
    /// The config's id within its task (several callbacks per task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The callback URL the task object is POSTed to.
    pub url: String,
    /// Sent back as `X-A2A-Notification-Token` so the receiver can check
    /// the notification is for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How the server authenticates to the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushNotificationAuthenticationInfo>,
    /// The A2A version whose form the notifications take: `1.0` (a v1.0
    /// `StreamResponse`) for a config created over v1.0, absent for the
    /// v0.3 task. Set by the server from the binding the config came in
    /// over (whatever the request said); kept with the config, never
    /// shown to clients.
    #[serde(
        default,
        rename = "asgNotifyAs",
        skip_serializing_if = "Option::is_none"
    )]
    pub notify_as: Option<String>,
}

/// [`PushNotificationConfig::notify_as`] of a config created over v1.0.
pub const NOTIFY_AS_V1: &str = "1.0";

impl std::fmt::Debug for PushNotificationConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushNotificationConfig")
            .field("id", &self.id)
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("authentication", &self.authentication)
            .field("notify_as", &self.notify_as)
            .finish()
    }
}

/// Credentials for the callback (A2A v0.3
/// `PushNotificationAuthenticationInfo`); `Debug` hides `credentials`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushNotificationAuthenticationInfo {
    /// Schemes, e.g. `["Bearer"]`.
    #[serde(default)]
    pub schemes: Vec<String>,
    /// The credential for the first usable scheme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

impl std::fmt::Debug for PushNotificationAuthenticationInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushNotificationAuthenticationInfo")
            .field("schemes", &self.schemes)
            .field(
                "credentials",
                &self.credentials.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// A push config with its task: `tasks/pushNotificationConfig/set`
/// params and the result of set, get and list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The task.
    pub task_id: String,
    /// The config.
    pub push_notification_config: PushNotificationConfig,
}

/// `tasks/pushNotificationConfig/get`, `list` and `delete` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushConfigParams {
    /// The task.
    pub id: String,
    /// The config (get: optional, the task's default one; delete:
    /// required; list: ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config_id: Option<String>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `tasks/get`, `tasks/cancel`, `tasks/resubscribe` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskQueryParams {
    /// Task id.
    pub id: String,
    /// Most history messages in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A JSON-RPC 2.0 request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest {
    /// Always "2.0".
    pub jsonrpc: String,
    /// Request id (string, number or null).
    #[serde(default)]
    pub id: Value,
    /// Method name.
    pub method: String,
    /// Parameters.
    #[serde(default)]
    pub params: Value,
}

/// A JSON-RPC 2.0 error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    /// Error code (see [`error_codes`]).
    pub code: i64,
    /// Message.
    pub message: String,
    /// Details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A JSON-RPC 2.0 response: `result` or `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse {
    /// Always "2.0".
    pub jsonrpc: String,
    /// The request's id.
    pub id: Value,
    /// Success value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JsonRpcError>,
}

/// JSON-RPC and A2A error codes.
pub mod error_codes {
    /// Body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad params.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Server failure.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// No such task.
    pub const TASK_NOT_FOUND: i64 = -32001;
    /// Task is terminal.
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    /// No push notifications.
    pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32003;
    /// Operation not supported.
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    /// Content type not supported.
    pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
    /// The caller may not do this (this project's server error code, in
    /// the range JSON-RPC reserves for implementations).
    pub const FORBIDDEN: i64 = -32010;
    /// The `A2A-Version` the request asks for is not served (v1.0
    /// `VersionNotSupportedError`).
    pub const VERSION_NOT_SUPPORTED: i64 = -32009;
}

/// Keys of the data part that carries an approval request in an
/// `input-required` status message (this project's convention).
pub mod approval_keys {
    /// Approval uuid at the agent that asks.
    pub const APPROVAL_UUID: &str = "approval_uuid";
    /// Tool to run.
    pub const TOOL_NAME: &str = "tool_name";
    /// Its exact arguments.
    pub const TOOL_ARGS: &str = "tool_args";
    /// Human-readable description.
    pub const DESCRIPTION: &str = "description";
    /// Decision key in a continuation's data part.
    pub const APPROVED: &str = "approved";
    /// Optional reason next to [`APPROVED`] in a continuation's data part.
    pub const REASON: &str = "reason";
    /// Sub-agent that asks, when the approval is a proxy for it.
    pub const REMOTE_AGENT_NAME: &str = "remote_agent_name";
    /// Task id at that sub-agent, when the approval is a proxy.
    pub const REMOTE_TASK_ID: &str = "remote_task_id";
    /// A question for a human (text, choices, schema, url), in the data
    /// part of a task waiting for an answer.
    pub const QUESTION: &str = "question";
    /// The answer in a continuation's data part (a string, or an object
    /// matching the question's schema).
    pub const ANSWER: &str = "answer";
    /// `decline` or `cancel` instead of an answer, in a continuation's
    /// data part.
    pub const ACTION: &str = "action";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_card_parses() {
        let card: AgentCard = serde_json::from_str(
            r#"{"name": "old-peer", "description": "d", "url": "", "version": "1",
                "skills": [{"id": "x", "name": "x", "description": "x", "tags": []}]}"#,
        )
        .unwrap();
        assert_eq!(card.protocol_version, PROTOCOL_VERSION);
        assert!(card.default_input_modes.is_empty());
    }
}
