//! The conversation model: what is stored on disk and shown by the API.
//!
//! A conversation is an ordered list of [`Message`]s plus, while the agent is
//! stopped before a destructive action, one [`PendingApproval`]. The server
//! persists exactly this structure as one JSON file per conversation.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::pipeline::PipelineStateField;

/// Where a conversation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ConversationStatus {
    /// Ready for the next user message.
    Active,
    /// Stopped before a destructive action until a human decides.
    WaitingApproval,
    /// Closed; no further messages are accepted.
    Completed,
    /// Closed by a cancellation while waiting for approval (the pending
    /// call was not run); no further messages are accepted.
    Canceled,
}

impl ConversationStatus {
    /// The snake_case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ConversationStatus::Active => "active",
            ConversationStatus::WaitingApproval => "waiting_approval",
            ConversationStatus::Completed => "completed",
            ConversationStatus::Canceled => "canceled",
        }
    }

    /// The status named `name` on the wire.
    pub fn parse(name: &str) -> Option<ConversationStatus> {
        [
            ConversationStatus::Active,
            ConversationStatus::WaitingApproval,
            ConversationStatus::Completed,
            ConversationStatus::Canceled,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The configured system prompt (first message of every conversation).
    System,
    /// A human or a calling agent.
    User,
    /// The model's text or its request to call a tool.
    Assistant,
    /// The outcome of a tool call (result, error or refusal).
    Tool,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolCall {
    /// Identifier linking the call to its result.
    pub id: String,
    /// Tool (or sub-agent) name.
    pub name: String,
    /// Arguments exactly as the model produced them.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub arguments: Map<String, Value>,
    /// True when the call needed a human approval before running.
    #[serde(default)]
    pub needs_approval: bool,
    /// The approval that gates the call, when it needed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_uuid: Option<Uuid>,
    /// Opaque provider data that must be sent back with the call
    /// (Gemini's `thoughtSignature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_signature: Option<String>,
}

/// The outcome of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolResult {
    /// The [`ToolCall::id`] this result answers.
    pub call_id: String,
    /// Tool name, repeated for readability.
    pub name: String,
    /// True when the tool failed, was rejected or was interrupted.
    #[serde(default)]
    pub is_error: bool,
    /// True when a sub-agent refused the call for want of a credential
    /// (HTTP 401, or its task in `auth-required`): the A2A task answering
    /// this turn is `auth-required`, so the client can send it again with
    /// its `Authorization: Bearer`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auth_required: bool,
}

/// One entry of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Message {
    /// Unique message id.
    pub id: Uuid,
    /// Author.
    pub role: Role,
    /// Text: the prompt, the user's words, the answer or the tool output.
    pub content: String,
    /// Set on assistant messages that request a tool call. Boxed, as
    /// `tool_result`: most messages have neither, and inline the two made
    /// every message 256 bytes instead of 96 (a conversation is copied
    /// whole at each save of a turn, and a thousand of them held at once
    /// under load). The JSON is the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<Box<ToolCall>>,
    /// Set on tool messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_result: Option<Box<ToolResult>>,
    /// The agent-tree node that produced the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// True for error reports (LLM failure, tool server crash, ...).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// When the message was recorded.
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: DateTime<Utc>,
}

/// Progress of a pending approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Waiting for a human decision.
    #[default]
    Pending,
    /// Approved; the call may have started. Recorded durably before the
    /// call runs so a crash never leads to a silent second execution.
    Executing,
}

/// Who did something (raised or decided an approval), as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Actor {
    /// The principal: the token's `sub`, or an API key's name.
    pub subject: String,
    /// Display name, when the token has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The role that allowed the action (`approver`, `admin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Where it came from: `rest`, `a2a`, `web`, `slack` or `email`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// A decided approval, as recorded on its conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalDecision {
    /// The approval.
    pub approval_uuid: Uuid,
    /// Its tool.
    pub tool_name: String,
    /// Approved (true) or rejected/canceled (false).
    pub approved: bool,
    /// Who decided.
    pub decided_by: Actor,
    /// When.
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub decided_at: DateTime<Utc>,
    /// The reason given, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The arguments the approver ran instead of the requested ones (the
    /// requested ones stay in the approval and the call message).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_arguments: Option<Map<String, Value>>,
    /// The grant this approval also gave, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remembered: Option<GrantScope>,
    /// True when the pending item was a [`Question`] (then `approved`
    /// means answered, declined or canceled, and `reply` says which).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub question: bool,
    /// A question's reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<QuestionReply>,
}

/// A question for a human: the model's `ask_human`, or an MCP server's
/// elicitation during a tool call. It waits as a [`PendingApproval`]
/// whose `question` is set; its answer becomes the call's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Question {
    /// What is asked.
    pub text: String,
    /// The answer must be one of these, when given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// Form mode: the answer is an object matching this flat JSON schema
    /// (string, number, integer, boolean, enum properties).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// URL mode (an MCP server's): the person opens this URL themselves
    /// (the agent never fetches it) and answers `"done"` or declines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The MCP server that asked (absent: the model asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Roles or groups allowed to answer (`questions.answerers`); empty:
    /// the conversation's owner.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answerers: Vec<String>,
    /// Asked during an approved call: answered by whoever may decide
    /// that approval (the approver rules apply).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approvers_answer: bool,
    /// The principal whose turn asked may not answer
    /// (`questions.separate_answerer`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub separate: bool,
}

/// How a question was answered. On the wire `{"action": "accept",
/// "answer": …}`, `{"action": "decline"}` or `{"action": "cancel"}`
/// (read through a plain struct: serde's tagged-enum reader would double
/// the chat's bundle code for it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(from = "ReplyWire", into = "ReplyWire")]
pub enum QuestionReply {
    /// Answered: a string, or an object matching the question's schema.
    Accept {
        /// The answer.
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        answer: Value,
    },
    /// The person declined to answer.
    Decline,
    /// The person dismissed the question without deciding.
    Cancel,
}

/// [`QuestionReply`] as it is written.
#[derive(Clone, Serialize, Deserialize)]
struct ReplyWire {
    action: ReplyAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<Value>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ReplyAction {
    Accept,
    Decline,
    Cancel,
}

impl From<ReplyWire> for QuestionReply {
    fn from(wire: ReplyWire) -> QuestionReply {
        match wire.action {
            ReplyAction::Accept => QuestionReply::Accept {
                answer: wire.answer.unwrap_or(Value::Null),
            },
            ReplyAction::Decline => QuestionReply::Decline,
            ReplyAction::Cancel => QuestionReply::Cancel,
        }
    }
}

impl From<QuestionReply> for ReplyWire {
    fn from(reply: QuestionReply) -> ReplyWire {
        let (action, answer) = match reply {
            QuestionReply::Accept { answer } => (ReplyAction::Accept, Some(answer)),
            QuestionReply::Decline => (ReplyAction::Decline, None),
            QuestionReply::Cancel => (ReplyAction::Cancel, None),
        };
        ReplyWire { action, answer }
    }
}

impl QuestionReply {
    /// `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            QuestionReply::Accept { .. } => "accept",
            QuestionReply::Decline => "decline",
            QuestionReply::Cancel => "cancel",
        }
    }
}

/// How far a remembered approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum GrantScope {
    /// Every later call of the tool in this conversation.
    Conversation,
    /// Later calls of the tool with equal arguments.
    SameArguments,
}

/// A remembered approval: later calls it covers run without asking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Grant {
    /// The tool (or sub-agent).
    pub tool: String,
    /// How far it reaches.
    pub scope: GrantScope,
    /// `same_arguments`: the arguments a call must carry.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// The approval that gave it.
    pub approval_uuid: Uuid,
    /// Who gave it.
    pub granted_by: Actor,
    /// When.
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub granted_at: DateTime<Utc>,
    /// The rule that raised the approval (`approval.rules[N] (ask
    /// tool)`), or none for the tool's own gate: the grant covers only
    /// later calls that the same rule (or the gate) would ask for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

impl Grant {
    /// Whether a call of `tool` with `arguments` is covered.
    pub fn covers(&self, tool: &str, arguments: &Map<String, Value>) -> bool {
        self.tool == tool
            && match self.scope {
                GrantScope::Conversation => true,
                GrantScope::SameArguments => self.arguments.as_ref() == Some(arguments),
            }
    }
}

/// A destructive call stopped for a human decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PendingApproval {
    /// Approval identifier, used in `POST /approvals/{uuid}`.
    pub uuid: Uuid,
    /// The conversation that is waiting.
    pub conversation_id: Uuid,
    /// Tool (or sub-agent) to call once approved.
    pub tool_name: String,
    /// The exact arguments that will be used.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub tool_args: Map<String, Value>,
    /// Human-readable description of the action.
    pub description: String,
    /// When the approval was requested.
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: DateTime<Utc>,
    /// The [`ToolCall::id`] being gated.
    pub call_id: String,
    /// The agent-tree node that asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Whether a decision is still awaited.
    #[serde(default)]
    pub state: ApprovalState,
    /// Task id at the sub-agent, for a proxy approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task_id: Option<String>,
    /// Sub-agent name, for a proxy approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_agent_name: Option<String>,
    /// The sub-agent's own approval uuid, for a proxy approval: the
    /// forwarded decision names it, so the sub-agent applies it to that
    /// approval only, never to whatever else is pending there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_approval_uuid: Option<String>,
    /// The sub-agent task's context id, for a proxy approval: sent with
    /// the forwarded decision (some servers require it on a
    /// continuation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_context_id: Option<String>,
    /// The principal of the turn that raised it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<Actor>,
    /// Roles or groups allowed to decide (an `approval.rules` entry's
    /// `approvers`); empty: any approver.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
    /// The rule that asked for this approval (`approval.rules[N] (ask
    /// tool)`), when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The arguments may not be edited before approving (the rule's
    /// `edit: false`, or a proxy approval: edit on the sub-agent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_edit: bool,
    /// Fingerprint (`sha256:`) of the configuration the paused run
    /// depends on (its tree, prompts, the tool and its schema), recorded
    /// when it paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// In listings: the configuration changed since the approval was
    /// requested (a decision then follows `approval.on_config_change`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub config_changed: bool,
    /// When it is rejected as expired if still undecided
    /// (`approval.expires_after`, or its rule's), fixed when it was
    /// raised: a configuration change or a restart does not move it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::timestamp::deserialize_option"
    )]
    pub expires_at: Option<DateTime<Utc>>,
    /// When one reminder is sent if still undecided
    /// (`approval.remind_after`), fixed when it was raised.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::timestamp::deserialize_option"
    )]
    pub remind_at: Option<DateTime<Utc>>,
    /// True once the reminder was sent (it is sent once, restarts
    /// included).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reminded: bool,
    /// Set when this pending item is a question for a human, not an
    /// approval: it is answered (`POST /questions/{uuid}`), not decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<Box<Question>>,
}

impl PendingApproval {
    /// Whether it is a question (answered), not an approval (decided).
    pub fn is_question(&self) -> bool {
        self.question.is_some()
    }
}

/// A conversation with its full trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Conversation {
    /// Conversation id (also the A2A task id).
    pub id: Uuid,
    /// 8-hex-char session id for cross-agent tracing.
    pub session_id: String,
    /// Current status.
    pub status: ConversationStatus,
    /// Every message, in order. Shared (`Arc`): a turn's working copy
    /// and the snapshot each save publishes hold the same messages, so a
    /// save copies pointers, not the history (whose length a save's cost
    /// would otherwise grow with). Add with `push(msg.into())`; change one
    /// with `Arc::make_mut`. The JSON is the same as a plain list's.
    /// (`Message` is `Eq`, so comparing two versions skips the messages
    /// they share by pointer.)
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Message>))]
    pub messages: Vec<Arc<Message>>,
    /// The approval being waited for, if any; the first of
    /// `pending_approvals` (kept for clients that know only one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_approval: Option<PendingApproval>,
    /// Every approval being waited for (several when `parallel` branches
    /// each stopped), each decided on its own. Change it with
    /// [`Conversation::set_pending`] and friends, which keep
    /// `pending_approval` its first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_approvals: Vec<PendingApproval>,
    /// Pause state of an agent-tree run, if any ([`PipelineState`]; in
    /// the browser chat, only what it shows of it: [`PausedRun`]).
    ///
    /// [`PipelineState`]: crate::pipeline::PipelineState
    /// [`PausedRun`]: crate::pipeline::PausedRun
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_state: Option<PipelineStateField>,
    /// True while a turn runs (saved with its first step, cleared with its
    /// last). Found set at startup, the turn was interrupted by a crash
    /// or a shutdown, and is recorded so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub turn_in_progress: bool,
    /// The principal that created it (with `auth:` configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Every decided approval, oldest first: who decided, when, why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<ApprovalDecision>,
    /// Remembered approvals (`"remember"` on an approval); revoked with
    /// `DELETE /conversations/{id}/grants/{tool}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<Grant>,
    /// The A2A `contextId` its client gave (as an A2A task), reported on
    /// every replica and after a restart; absent: the task's context is
    /// its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a2a_context_id: Option<String>,
    /// Creation time.
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: DateTime<Utc>,
    /// Last change.
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub updated_at: DateTime<Utc>,
}

impl Conversation {
    /// Every approval being waited for, in the order raised (a file
    /// written before the list existed has only `pending_approval`).
    pub fn pending(&self) -> &[PendingApproval] {
        if self.pending_approvals.is_empty() {
            self.pending_approval.as_slice()
        } else {
            &self.pending_approvals
        }
    }

    /// Whether the conversation has or had an approval: one pending, a
    /// decision, or a call that needed one (approvers may read it).
    pub fn had_approval(&self) -> bool {
        !self.pending().is_empty()
            || !self.decisions.is_empty()
            || self
                .messages
                .iter()
                .any(|m| m.tool_call.as_ref().is_some_and(|c| c.needs_approval))
    }

    /// Every approval uuid the conversation has or had: the waited-for
    /// ones and those of its recorded tool calls.
    pub fn approval_uuids(&self) -> impl Iterator<Item = Uuid> + '_ {
        self.pending().iter().map(|p| p.uuid).chain(
            self.messages
                .iter()
                .filter_map(|m| m.tool_call.as_ref().and_then(|c| c.approval_uuid)),
        )
    }

    /// The last decision on approval `uuid`.
    pub fn decision_for(&self, uuid: Uuid) -> Option<&ApprovalDecision> {
        self.decisions
            .iter()
            .rev()
            .find(|d| d.approval_uuid == uuid)
    }

    /// The waited-for approval `uuid`.
    pub fn pending_by_uuid(&self, uuid: Uuid) -> Option<&PendingApproval> {
        self.pending().iter().find(|p| p.uuid == uuid)
    }

    /// Replaces every waited-for approval.
    pub fn set_pending(&mut self, list: Vec<PendingApproval>) {
        self.pending_approval = list.first().cloned();
        self.pending_approvals = list;
    }

    /// Removes the waited-for approval `uuid` and returns it.
    pub fn take_pending(&mut self, uuid: Uuid) -> Option<PendingApproval> {
        let mut list = self.pending().to_vec();
        let at = list.iter().position(|p| p.uuid == uuid)?;
        let taken = list.remove(at);
        self.set_pending(list);
        Some(taken)
    }

    /// Puts `with` in the place of the waited-for approval `uuid` (false
    /// when there is none).
    pub fn replace_pending(&mut self, uuid: Uuid, with: PendingApproval) -> bool {
        let mut list = self.pending().to_vec();
        let Some(slot) = list.iter_mut().find(|p| p.uuid == uuid) else {
            return false;
        };
        *slot = with;
        self.set_pending(list);
        true
    }

    /// The text of the last assistant message that is not a tool request.
    pub fn last_answer(&self) -> Option<&Message> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.tool_call.is_none())
            .map(|m| &**m)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::QuestionReply;

    #[test]
    fn a_reply_is_written_with_its_action() {
        let cases = [
            (
                QuestionReply::Accept {
                    answer: json!({"n": 1}),
                },
                json!({"action": "accept", "answer": {"n": 1}}),
            ),
            (QuestionReply::Decline, json!({"action": "decline"})),
            (QuestionReply::Cancel, json!({"action": "cancel"})),
        ];
        for (reply, wire) in cases {
            assert_eq!(serde_json::to_value(&reply).unwrap(), wire);
            assert_eq!(
                serde_json::from_value::<QuestionReply>(wire).unwrap(),
                reply
            );
        }
        assert!(serde_json::from_value::<QuestionReply>(json!({"action": "maybe"})).is_err());
    }

    /// A message is copied whole at every save of a turn; its optional
    /// call and result live on the heap, so one without them stays small.
    /// The JSON of one with both is unchanged by the boxing.
    #[test]
    fn a_message_is_small_and_its_call_and_result_keep_their_json() {
        assert!(
            std::mem::size_of::<super::Message>() <= 96,
            "a message takes {} bytes",
            std::mem::size_of::<super::Message>()
        );
        let wire = json!({
            "id": "6f0b5c1e-8c1a-4d0e-9a3b-2b7e1c9d4f10",
            "role": "tool",
            "content": "done",
            "tool_call": {
                "id": "c1", "name": "resources_add", "arguments": {"name": "a"},
                "needs_approval": true
            },
            "tool_result": {"call_id": "c1", "name": "resources_add", "is_error": false},
            "created_at": "2026-11-29T10:00:00Z"
        });
        let message: super::Message = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(message.tool_call.as_ref().unwrap().name, "resources_add");
        assert_eq!(message.tool_result.as_ref().unwrap().call_id, "c1");
        assert_eq!(serde_json::to_value(&message).unwrap(), wire);
    }
}
