//! A2A v1.0 wire types (the JSON form of the specification's `a2a.proto`,
//! as the official SDKs read and write it): one `Part` with no `kind`,
//! enum values such as `TASK_STATE_INPUT_REQUIRED` and `ROLE_USER`,
//! `StreamResponse` as a one-of object, and the request and response
//! objects of the v1.0 methods.
//!
//! The agent keeps one task model, the v0.3 one beside this module
//! ([`super`]); the `From` / `TryFrom` conversions here carry it to and
//! from v1.0, field by field, so both wire versions always say the same.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super as v03;

/// The protocol version of this module (the `A2A-Version` header value
/// and the `protocolVersion` of its card interfaces).
pub const PROTOCOL_VERSION: &str = "1.0";

/// The `protocolBinding` of the JSON-RPC interface.
pub const BINDING_JSONRPC: &str = "JSONRPC";

/// The `protocolBinding` of the HTTP+JSON (REST) interface.
pub const BINDING_HTTP_JSON: &str = "HTTP+JSON";

/// The media type of a data part.
pub const JSON_MEDIA_TYPE: &str = "application/json";

/// One interface of an agent card's `supportedInterfaces`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// Absolute URL of the endpoint.
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON` or `GRPC`.
    pub protocol_binding: String,
    /// `1.0`, `0.3.0`, …
    #[serde(default)]
    pub protocol_version: String,
    /// The tenant to name in requests, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// How a caller authenticates (v1.0 `SecurityScheme`): exactly one member,
/// named by the scheme's kind (`{"httpAuthSecurityScheme": {…}}`), where
/// v0.3 has an OpenAPI object with a `type` ([`SecurityScheme::v03`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    /// An API key in a header, query parameter or cookie.
    ApiKeySecurityScheme(ApiKeySecurityScheme),
    /// HTTP authentication (`Bearer`, …).
    HttpAuthSecurityScheme(HttpAuthSecurityScheme),
    /// OpenID Connect, by its discovery URL.
    OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme),
}

/// An API key (v1.0 `APIKeySecurityScheme`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `header`, `query` or `cookie` (v0.3: `in`).
    pub location: String,
    /// The header, parameter or cookie name.
    pub name: String,
}

/// HTTP authentication (v1.0 `HTTPAuthSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The RFC 7235 scheme (`Bearer`).
    pub scheme: String,
    /// What the bearer token is (`JWT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
}

/// OpenID Connect (v1.0 `OpenIdConnectSecurityScheme`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The provider's discovery document.
    pub open_id_connect_url: String,
}

impl SecurityScheme {
    /// The names a v1.0 scheme's one member may have (the proto's one-of,
    /// OAuth 2 and mutual TLS included).
    pub const MEMBERS: [&str; 5] = [
        "apiKeySecurityScheme",
        "httpAuthSecurityScheme",
        "oauth2SecurityScheme",
        "openIdConnectSecurityScheme",
        "mtlsSecurityScheme",
    ];

    /// The v0.3 form: an OpenAPI security scheme object with its `type`.
    pub fn v03(&self) -> Map<String, Value> {
        let (kind, description, fields) = match self {
            SecurityScheme::ApiKeySecurityScheme(key) => (
                "apiKey",
                &key.description,
                vec![("in", Some(&key.location)), ("name", Some(&key.name))],
            ),
            SecurityScheme::HttpAuthSecurityScheme(http) => (
                "http",
                &http.description,
                vec![
                    ("scheme", Some(&http.scheme)),
                    ("bearerFormat", http.bearer_format.as_ref()),
                ],
            ),
            SecurityScheme::OpenIdConnectSecurityScheme(oidc) => (
                "openIdConnect",
                &oidc.description,
                vec![("openIdConnectUrl", Some(&oidc.open_id_connect_url))],
            ),
        };
        let mut object = Map::new();
        object.insert("type".into(), Value::from(kind));
        for (key, value) in fields
            .into_iter()
            .chain([("description", description.as_ref())])
        {
            if let Some(value) = value {
                object.insert(key.into(), Value::from(value.as_str()));
            }
        }
        object
    }

    /// The scheme as both versions read it: the v0.3 object with the
    /// v1.0 member beside its fields, the form the a2a-sdk 1.3.0 server
    /// serves (its 1.x clients read the member, 0.3.x clients the rest).
    pub fn both_forms(&self) -> Map<String, Value> {
        let mut object = self.v03();
        if let Ok(Value::Object(member)) = serde_json::to_value(self) {
            object.extend(member);
        }
        object
    }
}

/// Which schemes a caller must satisfy, all of them (v1.0
/// `SecurityRequirement`): scheme name → the scopes it needs. A card's
/// list of requirements means any one of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SecurityRequirement {
    /// Scheme name (a key of the card's `securitySchemes`) → scopes.
    #[serde(default)]
    pub schemes: std::collections::BTreeMap<String, StringList>,
}

/// A list of strings (v1.0 `StringList`, the scopes of a requirement).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StringList {
    /// The strings.
    #[serde(default)]
    pub list: Vec<String>,
}

/// Task lifecycle states, as v1.0 names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::TaskState)
)]
pub enum TaskState {
    /// Not given (a filter that matches every state).
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// Received, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// Being worked on.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Done.
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Failed.
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Canceled by the client.
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Waits for the client (here: an approval or an answer).
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// Refused by the agent.
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// Needs authentication.
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl From<v03::TaskState> for TaskState {
    fn from(state: v03::TaskState) -> TaskState {
        match state {
            v03::TaskState::Submitted => TaskState::Submitted,
            v03::TaskState::Working => TaskState::Working,
            v03::TaskState::InputRequired => TaskState::InputRequired,
            v03::TaskState::Completed => TaskState::Completed,
            v03::TaskState::Canceled => TaskState::Canceled,
            v03::TaskState::Failed => TaskState::Failed,
            v03::TaskState::Rejected => TaskState::Rejected,
            v03::TaskState::AuthRequired => TaskState::AuthRequired,
            v03::TaskState::Unknown => TaskState::Unspecified,
        }
    }
}

impl TaskState {
    /// The v0.3 state; none for `TASK_STATE_UNSPECIFIED`.
    pub fn v03(self) -> Option<v03::TaskState> {
        match self {
            TaskState::Unspecified => None,
            TaskState::Submitted => Some(v03::TaskState::Submitted),
            TaskState::Working => Some(v03::TaskState::Working),
            TaskState::Completed => Some(v03::TaskState::Completed),
            TaskState::Failed => Some(v03::TaskState::Failed),
            TaskState::Canceled => Some(v03::TaskState::Canceled),
            TaskState::InputRequired => Some(v03::TaskState::InputRequired),
            TaskState::Rejected => Some(v03::TaskState::Rejected),
            TaskState::AuthRequired => Some(v03::TaskState::AuthRequired),
        }
    }
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::Role)
)]
pub enum Role {
    /// Not given.
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client.
    #[serde(rename = "ROLE_USER")]
    User,
    /// The agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// One part of a message or artifact: exactly one of `text`, `raw`
/// (base64), `url` or `data` (any JSON value), no `kind`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::Part)
)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// File content, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// File content by reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<Map<String, Value>>,
    /// File name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Media type of the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl From<&v03::Part> for Part {
    fn from(part: &v03::Part) -> Part {
        match part {
            v03::Part::Text { text, metadata } => Part {
                text: Some(text.clone()),
                metadata: metadata.clone(),
                ..Part::default()
            },
            v03::Part::Data { data, metadata } => Part {
                data: Some(Value::Object(data.clone())),
                metadata: metadata.clone(),
                media_type: Some(JSON_MEDIA_TYPE.into()),
                ..Part::default()
            },
            v03::Part::File { file, metadata } => Part {
                raw: file.bytes.clone(),
                url: file.uri.clone(),
                metadata: metadata.clone(),
                filename: file.name.clone(),
                media_type: file.mime_type.clone(),
                ..Part::default()
            },
        }
    }
}

impl TryFrom<Part> for v03::Part {
    type Error = String;

    /// A v1.0 part as the engine's part; a data part must be a JSON
    /// object (an approval decision or an answer is one).
    fn try_from(part: Part) -> Result<v03::Part, String> {
        let Part {
            text,
            raw,
            url,
            data,
            metadata,
            filename,
            media_type,
        } = part;
        match (text, data) {
            (Some(text), None) if raw.is_none() && url.is_none() => {
                Ok(v03::Part::Text { text, metadata })
            }
            (None, Some(Value::Object(data))) if raw.is_none() && url.is_none() => {
                Ok(v03::Part::Data { data, metadata })
            }
            (None, Some(other)) => Err(format!(
                "a data part must hold a JSON object here, got {other}"
            )),
            (None, None) if raw.is_some() != url.is_some() => Ok(v03::Part::File {
                file: v03::FileContent {
                    bytes: raw,
                    uri: url,
                    mime_type: media_type,
                    name: filename,
                },
                metadata,
            }),
            _ => Err("a part holds exactly one of text, raw, url or data".into()),
        }
    }
}

/// A message between client and agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::Message)
)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique id chosen by the sender.
    #[serde(default)]
    pub message_id: String,
    /// The context it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task it belongs to (a continuation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Sender.
    pub role: Role,
    /// Content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<Map<String, Value>>,
    /// Extensions the message uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Related tasks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl From<&v03::A2aMessage> for Message {
    fn from(message: &v03::A2aMessage) -> Message {
        Message {
            message_id: message.message_id.clone(),
            context_id: message.context_id.clone(),
            task_id: message.task_id.clone(),
            role: match message.role {
                v03::MessageRole::User => Role::User,
                v03::MessageRole::Agent => Role::Agent,
            },
            parts: message.parts.iter().map(Part::from).collect(),
            metadata: message.metadata.clone(),
            extensions: Vec::new(),
            reference_task_ids: message.reference_task_ids.clone(),
        }
    }
}

impl TryFrom<Message> for v03::A2aMessage {
    type Error = String;

    /// A v1.0 message as the engine's; the error names the bad part.
    fn try_from(message: Message) -> Result<v03::A2aMessage, String> {
        let parts = message
            .parts
            .into_iter()
            .enumerate()
            .map(|(i, part)| v03::Part::try_from(part).map_err(|e| format!("parts[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let role = match message.role {
            Role::User => v03::MessageRole::User,
            Role::Agent => v03::MessageRole::Agent,
            Role::Unspecified => return Err("role must be ROLE_USER".into()),
        };
        Ok(v03::A2aMessage {
            role,
            parts,
            message_id: message.message_id,
            task_id: message.task_id.filter(|t| !t.is_empty()),
            context_id: message.context_id.filter(|c| !c.is_empty()),
            reference_task_ids: message.reference_task_ids,
            metadata: message.metadata,
            kind: "message".into(),
        })
    }
}

/// A task's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::TaskStatus)
)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// State.
    pub state: TaskState,
    /// Message explaining the state (e.g. the approval request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl From<&v03::TaskStatus> for TaskStatus {
    fn from(status: &v03::TaskStatus) -> TaskStatus {
        TaskStatus {
            state: status.state.into(),
            message: status.message.as_ref().map(Message::from),
            timestamp: status.timestamp.clone(),
        }
    }
}

/// Output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::Artifact)
)]
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
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<Map<String, Value>>,
}

impl From<&v03::Artifact> for Artifact {
    fn from(artifact: &v03::Artifact) -> Artifact {
        Artifact {
            artifact_id: artifact.artifact_id.clone(),
            name: artifact.name.clone(),
            description: artifact.description.clone(),
            parts: artifact.parts.iter().map(Part::from).collect(),
            metadata: artifact.metadata.clone(),
        }
    }
}

/// A task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::Task)
)]
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
    pub history: Vec<Message>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<Map<String, Value>>,
}

impl From<&v03::Task> for Task {
    fn from(task: &v03::Task) -> Task {
        Task {
            id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: (&task.status).into(),
            artifacts: task.artifacts.iter().map(Artifact::from).collect(),
            history: task.history.iter().map(Message::from).collect(),
            metadata: task.metadata.clone(),
        }
    }
}

/// A status change in a stream (no `final`: the stream's end says it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::TaskStatusUpdateEvent)
)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// Task id.
    pub task_id: String,
    /// Context id.
    pub context_id: String,
    /// New status.
    pub status: TaskStatus,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<Map<String, Value>>,
}

/// A new or extended artifact in a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::TaskArtifactUpdateEvent)
)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// Task id.
    pub task_id: String,
    /// Context id.
    pub context_id: String,
    /// The artifact.
    pub artifact: Artifact,
    /// Appends to an earlier artifact with the same id.
    #[serde(default)]
    pub append: bool,
    /// Last chunk of the artifact.
    #[serde(default)]
    pub last_chunk: bool,
}

/// `SendMessage`'s result and every event of a stream: exactly one of
/// its fields (`{"task": …}`, `{"statusUpdate": …}`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::StreamResponse)
)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// A task.
    Task(Task),
    /// A direct message.
    Message(Message),
    /// A status update.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact update.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl From<&v03::SendResult> for StreamResponse {
    fn from(result: &v03::SendResult) -> StreamResponse {
        match result {
            v03::SendResult::Task(task) => StreamResponse::Task(task.into()),
            v03::SendResult::Message(message) => StreamResponse::Message(message.into()),
            v03::SendResult::Status(event) => StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: event.task_id.clone(),
                context_id: event.context_id.clone(),
                status: (&event.status).into(),
                metadata: event.metadata.clone(),
            }),
            v03::SendResult::Artifact(event) => {
                StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: event.task_id.clone(),
                    context_id: event.context_id.clone(),
                    artifact: (&event.artifact).into(),
                    append: event.append.unwrap_or(false),
                    last_chunk: event.last_chunk.unwrap_or(false),
                })
            }
        }
    }
}

/// `SendMessage` / `SendStreamingMessage` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::SendMessageRequest)
)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The message.
    pub message: Message,
    /// Options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<Map<String, Value>>,
}

/// `SendMessage` options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::SendMessageConfiguration)
)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Accepted output media types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// Where to push the task's updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<Value>,
    /// Most history messages in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Answer before the task finishes (this server always waits for the
    /// turn, which ends at an approval at the latest).
    #[serde(default)]
    pub return_immediately: bool,
}

/// `GetTask`, `CancelTask` and `SubscribeToTask` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdRequest {
    /// Task id.
    pub id: String,
    /// Most history messages in the answer (`GetTask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Extra data (`CancelTask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `ListTasks` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// Only tasks of this context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// Tasks per page (1 to 100, default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i64>,
    /// The `nextPageToken` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    /// Most history messages per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i64>,
    /// Only tasks whose status changed at or after this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    /// Include the artifacts (default no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

/// `ListTasks` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::ListTasksResponse)
)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The page, newest first.
    pub tasks: Vec<Task>,
    /// The token of the next page; empty on the last one.
    pub next_page_token: String,
    /// The page size used.
    pub page_size: i64,
    /// How many tasks match the filters in all, on every page.
    pub total_size: i64,
}

/// A push config with its task and id (`Create…`, `Get…`, `List…`
/// results and `CreateTaskPushNotificationConfig` params). `Debug`
/// hides the token and credentials.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::TaskPushNotificationConfig)
)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The config's id within its task.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The task.
    #[serde(default)]
    pub task_id: String,
    /// The callback URL.
    #[serde(default)]
    pub url: String,
    /// Sent back so the receiver can check the notification is for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How the server authenticates to the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl std::fmt::Debug for TaskPushNotificationConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskPushNotificationConfig")
            .field("id", &self.id)
            .field("task_id", &self.task_id)
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("authentication", &self.authentication.is_some())
            .finish()
    }
}

/// Credentials for a push callback: one scheme (`Bearer`, …) and its
/// credential.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::AuthenticationInfo)
)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// The scheme.
    #[serde(default)]
    pub scheme: String,
    /// The credential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

impl TaskPushNotificationConfig {
    /// As the v0.3 form the push service stores.
    pub fn to_v03(&self) -> v03::TaskPushNotificationConfig {
        v03::TaskPushNotificationConfig {
            task_id: self.task_id.clone(),
            push_notification_config: v03::PushNotificationConfig {
                id: (!self.id.is_empty()).then(|| self.id.clone()),
                url: self.url.clone(),
                token: self.token.clone(),
                authentication: self.authentication.as_ref().map(|a| {
                    v03::PushNotificationAuthenticationInfo {
                        schemes: vec![a.scheme.clone()],
                        credentials: a.credentials.clone(),
                    }
                }),
                notify_as: None,
            },
        }
    }

    /// From the v0.3 form the push service answers with.
    pub fn from_v03(config: &v03::TaskPushNotificationConfig) -> TaskPushNotificationConfig {
        let inner = &config.push_notification_config;
        TaskPushNotificationConfig {
            id: inner.id.clone().unwrap_or_default(),
            task_id: config.task_id.clone(),
            url: inner.url.clone(),
            token: inner.token.clone(),
            authentication: inner.authentication.as_ref().map(|a| AuthenticationInfo {
                scheme: a.schemes.first().cloned().unwrap_or_default(),
                credentials: a.credentials.clone(),
            }),
        }
    }
}

/// `GetTaskPushNotificationConfig`, `DeleteTaskPushNotificationConfig`
/// and `ListTaskPushNotificationConfigs` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushConfigRequest {
    /// The task.
    #[serde(default)]
    pub task_id: String,
    /// The config (get, delete).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
}

/// `ListTaskPushNotificationConfigs` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = a2a::v1::ListTaskPushNotificationConfigsResponse)
)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// Every config of the task.
    pub configs: Vec<TaskPushNotificationConfig>,
    /// Empty: one page holds them all.
    pub next_page_token: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parts_have_no_kind_and_data_parts_say_json() {
        let data = v03::Part::data(json!({"approval_uuid": "u"}).as_object().cloned().unwrap());
        let text = v03::Part::text("hi");
        assert_eq!(
            serde_json::to_value(Part::from(&text)).unwrap(),
            json!({"text": "hi"})
        );
        assert_eq!(
            serde_json::to_value(Part::from(&data)).unwrap(),
            json!({"data": {"approval_uuid": "u"}, "mediaType": "application/json"})
        );
        let back: v03::Part = serde_json::from_value::<Part>(json!({"data": {"approved": true}}))
            .unwrap()
            .try_into()
            .unwrap();
        assert!(matches!(back, v03::Part::Data { .. }));
        let two: Part = serde_json::from_value(json!({"text": "a", "url": "http://x"})).unwrap();
        assert!(v03::Part::try_from(two).is_err());
        let scalar: Part = serde_json::from_value(json!({"data": 3})).unwrap();
        assert!(v03::Part::try_from(scalar).is_err());
    }

    #[test]
    fn enums_use_the_v1_names() {
        for (state, name) in [
            (v03::TaskState::InputRequired, "TASK_STATE_INPUT_REQUIRED"),
            (v03::TaskState::Completed, "TASK_STATE_COMPLETED"),
            (v03::TaskState::Canceled, "TASK_STATE_CANCELED"),
            (v03::TaskState::Unknown, "TASK_STATE_UNSPECIFIED"),
        ] {
            assert_eq!(
                serde_json::to_value(TaskState::from(state)).unwrap(),
                json!(name)
            );
        }
        assert_eq!(
            serde_json::to_value(Role::User).unwrap(),
            json!("ROLE_USER")
        );
        let message: Message = serde_json::from_value(
            json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}),
        )
        .unwrap();
        let v03: v03::A2aMessage = message.try_into().unwrap();
        assert_eq!(v03.role, v03::MessageRole::User);
        assert_eq!(v03.text(), "hi");
    }

    #[test]
    fn security_schemes_are_one_member_objects_and_carry_the_v03_form_beside() {
        let key = SecurityScheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
            description: None,
            location: "header".into(),
            name: "X-API-Key".into(),
        });
        assert_eq!(
            serde_json::to_value(&key).unwrap(),
            json!({"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}})
        );
        assert_eq!(
            Value::Object(key.both_forms()),
            json!({"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"},
                "type": "apiKey", "in": "header", "name": "X-API-Key"})
        );
        let bearer = SecurityScheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
            description: Some("a token".into()),
            scheme: "Bearer".into(),
            bearer_format: Some("JWT".into()),
        });
        assert_eq!(
            Value::Object(bearer.v03()),
            json!({"type": "http", "scheme": "Bearer", "bearerFormat": "JWT", "description": "a token"})
        );
        for scheme in [key, bearer] {
            let member = serde_json::to_value(&scheme).unwrap();
            let name = member.as_object().unwrap().keys().next().unwrap().clone();
            assert!(SecurityScheme::MEMBERS.contains(&name.as_str()), "{name}");
            assert_eq!(
                serde_json::from_value::<SecurityScheme>(member).unwrap(),
                scheme
            );
        }
    }

    #[test]
    fn stream_responses_are_one_of_objects_without_final() {
        let event = v03::SendResult::Status(v03::TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            kind: "status-update".into(),
            status: v03::TaskStatus {
                state: v03::TaskState::Working,
                message: None,
                timestamp: None,
            },
            is_final: true,
            metadata: None,
        });
        assert_eq!(
            serde_json::to_value(StreamResponse::from(&event)).unwrap(),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_WORKING"}}})
        );
    }
}
