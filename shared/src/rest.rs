//! REST request and response bodies of the agent server.
//!
//! The shapes follow the reference implementation so its clients keep
//! working: create / send / approve answer [`ConversationResponse`], list
//! answers [`ConversationList`], errors answer [`ErrorBody`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::conversation::{Conversation, ConversationStatus, PendingApproval};

/// `GET /health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Health {
    /// Always `"ok"` when the server answers.
    pub status: String,
    /// What an operator should know about; absent when there is nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<HealthDetails>,
}

/// `GET /health` details.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HealthDetails {
    /// Conversation files that could not be loaded at startup and were
    /// moved to `data_dir/quarantine/` (see the server log for each).
    pub quarantined_files: usize,
    /// Every configured MCP server and where it stands (absent when none
    /// is configured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerHealth>,
    /// The conversation store: `ok`, or `unavailable` (the database
    /// cannot be reached; `/health` then answers 503).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub store: String,
}

/// One MCP server in `GET /health` details.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct McpServerHealth {
    /// Its configured name.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// `ready`; `unavailable` (not reached yet, retried in the background:
    /// its tools are missing meanwhile); `refused` (its tools clash with
    /// other names); `starting`. The agent's log says why.
    pub status: String,
    /// How many tools it offers.
    pub tools: usize,
}

/// `POST /conversations` body (the body itself is optional).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateConversationRequest {
    /// Optional first user message, processed at once.
    #[serde(default)]
    pub message: Option<String>,
}

/// `POST /conversations/{id}/messages` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SendMessageRequest {
    /// The user's message.
    pub message: String,
}

/// `POST /approvals/{uuid}` body. Exactly one of `approved`, `action` or
/// `answer` carries the decision.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    /// `true` approves, `false` rejects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// `"approve"` or `"reject"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// `"yes"` or `"no"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Optional reason, recorded in the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Approve with these arguments instead of the requested ones
    /// (checked against the tool's input schema first).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
    /// Also approve later calls: `"conversation"` (every call of the tool
    /// in this conversation) or `"same_arguments"` (only with equal
    /// arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remember: Option<crate::conversation::GrantScope>,
}

impl ApprovalRequest {
    /// The decision carried by the body: `Ok(true)` to approve, `Ok(false)`
    /// to reject, `Err` with a message naming the problem otherwise.
    pub fn decision(&self) -> Result<bool, String> {
        let mut decisions = Vec::new();
        if let Some(approved) = self.approved {
            decisions.push(approved);
        }
        if let Some(action) = &self.action {
            match action.trim().to_ascii_lowercase().as_str() {
                "approve" | "approved" => decisions.push(true),
                "reject" | "rejected" | "deny" => decisions.push(false),
                other => {
                    return Err(format!(
                        "action must be \"approve\" or \"reject\", got {other:?}"
                    ));
                }
            }
        }
        if let Some(answer) = &self.answer {
            match answer.trim().to_ascii_lowercase().as_str() {
                "yes" | "y" | "approve" | "approved" => decisions.push(true),
                "no" | "n" | "reject" | "rejected" => decisions.push(false),
                other => return Err(format!("answer must be \"yes\" or \"no\", got {other:?}")),
            }
        }
        match decisions.as_slice() {
            [] => Err("body must carry a decision: {\"approved\": true|false}, \
                 {\"action\": \"approve\"|\"reject\"} or {\"answer\": \"yes\"|\"no\"}"
                .to_string()),
            [first, rest @ ..] if rest.iter().all(|d| d == first) => {
                self.check_extras(*first)?;
                Ok(*first)
            }
            _ => Err("the body carries contradictory decisions".to_string()),
        }
    }

    /// `arguments` and `remember` only go with an approval.
    fn check_extras(&self, approve: bool) -> Result<(), String> {
        match (approve, &self.arguments, &self.remember) {
            (false, Some(_), _) => Err("`arguments` only go with an approval".into()),
            (false, _, Some(_)) => Err("`remember` only goes with an approval".into()),
            _ => Ok(()),
        }
    }
}

/// What one turn (create with message, send, approve) produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnResult {
    /// The agent's answer text (or a description of the pending action).
    pub response: String,
    /// True when the conversation now waits for an approval.
    pub waiting_approval: bool,
    /// The pending approval, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<PendingApproval>,
    /// The pending question, when the conversation waits for an answer
    /// (`POST /questions/{uuid}`) instead of a decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<PendingApproval>,
}

/// `POST /questions/{uuid}` body: exactly one of `answer` (a string, or
/// an object matching the question's schema) and `action` (`"decline"`
/// or `"cancel"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The answer.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<serde_json::Value>,
    /// `"decline"` or `"cancel"` instead of an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

impl AnswerRequest {
    /// The reply the body carries, or a message naming the problem.
    pub fn reply(self) -> Result<crate::QuestionReply, String> {
        use crate::QuestionReply;
        let action = self.action.as_deref().map(str::trim);
        match (self.answer, action) {
            (Some(serde_json::Value::Null), None) | (None, None) => Err(
                "body must carry {\"answer\": <string or object>} or {\"action\": \"decline\"|\"cancel\"}"
                    .into(),
            ),
            (Some(answer), None | Some("accept")) => Ok(QuestionReply::Accept { answer }),
            (None, Some("decline")) => Ok(QuestionReply::Decline),
            (None, Some("cancel")) => Ok(QuestionReply::Cancel),
            (Some(_), Some(_)) => Err("give `answer` or `action`, not both".into()),
            (None, Some(other)) => Err(format!(
                "action must be \"decline\" or \"cancel\" (or give an `answer`), got {other:?}"
            )),
        }
    }
}

/// `GET /questions`: one page of pending questions, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QuestionList {
    /// The questions (each a pending item with `question` set).
    pub questions: Vec<PendingApproval>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Answer of create / send / approve / get.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConversationResponse {
    /// The conversation after the operation.
    pub conversation: Conversation,
    /// What the operation produced; absent for a plain get or an empty create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TurnResult>,
}

/// One line of `GET /conversations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConversationSummary {
    /// Conversation id.
    pub id: Uuid,
    /// Session id.
    pub session_id: String,
    /// Current status.
    pub status: ConversationStatus,
    /// Number of messages.
    pub message_count: usize,
    /// First user message, shortened, to name the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The pending approval, if any (the first of `pending_approvals`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_approval: Option<PendingApproval>,
    /// Every pending approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_approvals: Vec<PendingApproval>,
    /// Creation time.
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: DateTime<Utc>,
    /// Last change.
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub updated_at: DateTime<Utc>,
}

/// Counts by status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatusSummary {
    /// All conversations.
    pub total: usize,
    /// Conversations ready for a message.
    pub active: usize,
    /// Conversations waiting for an approval.
    pub waiting_approval: usize,
    /// Closed conversations.
    pub completed: usize,
    /// Conversations canceled while waiting for approval.
    #[serde(default)]
    pub canceled: usize,
}

impl StatusSummary {
    /// Counts one conversation of `status`.
    pub fn count(&mut self, status: ConversationStatus) {
        self.add(status, 1);
    }

    /// Counts `n` conversations of `status`.
    pub fn add(&mut self, status: ConversationStatus, n: usize) {
        self.total += n;
        match status {
            ConversationStatus::Active => self.active += n,
            ConversationStatus::WaitingApproval => self.waiting_approval += n,
            ConversationStatus::Completed => self.completed += n,
            ConversationStatus::Canceled => self.canceled += n,
        }
    }
}

/// `GET /conversations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConversationList {
    /// Newest first (one page: `?limit=`, default 50, at most 500).
    pub conversations: Vec<ConversationSummary>,
    /// Counts by status, over every conversation the caller may read
    /// (whatever the page and the `?status=` filter).
    pub summary: StatusSummary,
    /// The next page's `?cursor=`; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `GET /approvals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalList {
    /// Pending approvals across all conversations, oldest first (one
    /// page: `?limit=`, default 50, at most 500).
    pub approvals: Vec<PendingApproval>,
    /// The next page's `?cursor=`; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One tool the agent can call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolInfo {
    /// Tool name as the model sees it.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub input_schema: Value,
    /// True when a call needs a human approval.
    #[serde(rename = "destructiveHint")]
    pub destructive_hint: bool,
    /// True when the tool only reads.
    #[serde(rename = "readOnlyHint", default)]
    pub read_only_hint: bool,
    /// Where the tool comes from: `mcp` or `a2a`.
    pub source: String,
    /// The MCP server or sub-agent that provides it.
    pub server: String,
}

/// `POST /markdown`: Markdown texts (agent answers, questions) to render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MarkdownRequest {
    /// The texts, at most 200.
    pub texts: Vec<String>,
}

/// The answer to `POST /markdown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MarkdownResponse {
    /// One HTML fragment per text, in the same order: safe to insert into
    /// a page (no markup from the text itself; links only to `http:`,
    /// `https:` and `mailto:`; images become links).
    pub html: Vec<String>,
}

/// `GET /tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolList {
    /// Every tool.
    pub tools: Vec<ToolInfo>,
}

/// Error answer of every REST route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// Error details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `not_found`, `waiting_approval`.
    pub code: String,
    /// Human-readable message naming the problem.
    pub message: String,
    /// The pending approval, for conflicts caused by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<PendingApproval>,
    /// The conversation's current state, for conflicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Box<Conversation>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    fn approval(n: u128) -> PendingApproval {
        PendingApproval {
            uuid: Uuid::from_u128(n),
            tool_name: format!("tool_{n}"),
            description: String::new(),
            created_at: DateTime::default(),
            call_id: format!("call_{n}"),
            ..fixtures::pending_approval("")
        }
    }

    fn conversation() -> Conversation {
        Conversation {
            id: Uuid::nil(),
            status: ConversationStatus::WaitingApproval,
            created_at: DateTime::default(),
            updated_at: DateTime::default(),
            ..fixtures::conversation()
        }
    }

    fn uuids(conversation: &Conversation) -> Vec<u128> {
        conversation
            .pending()
            .iter()
            .map(|p| p.uuid.as_u128())
            .collect()
    }

    #[test]
    fn the_single_field_is_always_the_first_of_the_list() {
        let mut c = conversation();
        c.set_pending(vec![approval(1), approval(2), approval(3)]);
        assert_eq!(uuids(&c), [1, 2, 3]);
        assert_eq!(c.pending_approval.as_ref().unwrap().uuid.as_u128(), 1);
        assert_eq!(
            c.take_pending(Uuid::from_u128(1)).unwrap().call_id,
            "call_1"
        );
        assert_eq!(c.pending_approval.as_ref().unwrap().uuid.as_u128(), 2);
        assert!(c.take_pending(Uuid::from_u128(1)).is_none());
        assert!(c.replace_pending(Uuid::from_u128(2), approval(9)));
        assert_eq!(uuids(&c), [9, 3]);
        assert_eq!(c.pending_approval.as_ref().unwrap().uuid.as_u128(), 9);
        assert!(!c.replace_pending(Uuid::from_u128(2), approval(8)));
        assert!(c.pending_by_uuid(Uuid::from_u128(3)).is_some());
        c.take_pending(Uuid::from_u128(9));
        c.take_pending(Uuid::from_u128(3));
        assert!(c.pending().is_empty() && c.pending_approval.is_none());
    }

    #[test]
    fn a_file_with_only_the_single_field_reads_as_a_list_of_one() {
        let mut c = conversation();
        c.pending_approval = Some(approval(4));
        let json = serde_json::to_value(&c).unwrap();
        assert!(json.get("pending_approvals").is_none());
        let back: Conversation = serde_json::from_value(json).unwrap();
        assert_eq!(uuids(&back), [4]);
        let mut both = back.clone();
        both.set_pending(vec![approval(4), approval(5)]);
        let json = serde_json::to_value(&both).unwrap();
        assert_eq!(json["pending_approvals"].as_array().unwrap().len(), 2);
        assert_eq!(
            json["pending_approval"]["uuid"],
            json["pending_approvals"][0]["uuid"]
        );
    }

    fn parse(json: &str) -> Result<bool, String> {
        serde_json::from_str::<ApprovalRequest>(json)
            .map_err(|e| e.to_string())?
            .decision()
    }

    #[test]
    fn every_approval_format_is_understood() {
        assert_eq!(parse(r#"{"approved": true}"#), Ok(true));
        assert_eq!(parse(r#"{"approved": false}"#), Ok(false));
        assert_eq!(parse(r#"{"action": "approve"}"#), Ok(true));
        assert_eq!(parse(r#"{"action": "reject"}"#), Ok(false));
        assert_eq!(parse(r#"{"answer": "yes"}"#), Ok(true));
        assert_eq!(parse(r#"{"answer": "No"}"#), Ok(false));
    }

    #[test]
    fn missing_unknown_or_contradictory_decisions_are_errors() {
        assert!(parse("{}").unwrap_err().contains("decision"));
        assert!(
            parse(r#"{"action": "maybe"}"#)
                .unwrap_err()
                .contains("maybe")
        );
        assert!(parse(r#"{"approved": true, "answer": "no"}"#).is_err());
        assert!(parse(r#"{"approve": true}"#).is_err());
    }
}

/// `GET /me`: who the agent takes the caller for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Me {
    /// The principal: the token's `sub`, an API key's name, or
    /// `anonymous` when the agent requires no credentials.
    pub subject: String,
    /// Display name, when the token has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Roles beyond chatting: `approver`, `admin`.
    pub roles: Vec<String>,
    /// False when the agent requires no credentials (no `auth:`).
    pub authenticated: bool,
    /// From the web server's `GET /auth/me`: whether it signs people in
    /// (false: it has no login, and the chat works as the agent allows).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub login: bool,
}
