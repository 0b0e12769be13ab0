//! Pure mapping between the conversation model and A2A v0.3 objects.
//!
//! Outbound: a [`Conversation`] becomes a [`Task`] (task id = conversation
//! id). The state comes from the saved snapshot alone:
//! - `waiting_approval` → `input-required`, whose status message carries a
//!   readable text part and a data part with the approval (keys in
//!   [`approval_keys`]); an approval already being executed → `working`;
//! - `canceled` → `canceled`; `completed` → `completed`;
//! - `active`: nothing said yet → `submitted`; the last message is an
//!   answer → `completed` (with the answer as an artifact), or `failed` when
//!   that answer is an error report; `auth-required` instead when a
//!   sub-agent refused a call of that turn for want of a credential (a
//!   tool result since the last user message with `auth_required`: the
//!   client sends the message again with its `Authorization: Bearer`);
//!   otherwise a turn is under way → `working`.

use asg_shared::a2a::{
    A2aMessage, Artifact, MessageRole, Part, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent, approval_keys,
};
use asg_shared::events::ConversationEvent;
use asg_shared::{ApprovalState, Conversation, ConversationStatus, Message, PendingApproval, Role};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

/// The task's `contextId`: its client's, else its id.
pub fn context_of(conversation: &Conversation) -> String {
    conversation
        .a2a_context_id
        .clone()
        .unwrap_or_else(|| conversation.id.to_string())
}

/// Identifies the task in every object that refers to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    /// Task id (the conversation id).
    pub task_id: String,
    /// Context id (the client's, or the conversation id).
    pub context_id: String,
}

/// RFC 3339 with milliseconds and `Z`.
pub fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The A2A state of a conversation (see the module docs).
pub fn task_state(conversation: &Conversation) -> TaskState {
    match conversation.status {
        ConversationStatus::WaitingApproval => {
            let pending = conversation.pending();
            if pending.iter().any(|p| p.state == ApprovalState::Pending)
                && pending.iter().all(|p| p.state != ApprovalState::Executing)
            {
                TaskState::InputRequired
            } else {
                TaskState::Working
            }
        }
        ConversationStatus::Completed => TaskState::Completed,
        ConversationStatus::Canceled => TaskState::Canceled,
        ConversationStatus::Active => match last_spoken(conversation) {
            None => TaskState::Submitted,
            Some(m) if is_answer(m) && !auth_refusals(conversation).is_empty() => {
                TaskState::AuthRequired
            }
            Some(m) if is_answer(m) && m.is_error => TaskState::Failed,
            Some(m) if is_answer(m) => TaskState::Completed,
            Some(_) => TaskState::Working,
        },
    }
}

/// The conversation as a task; `history_length`: `None` → every message,
/// `Some(n)` → the last `n`.
pub fn to_task(
    conversation: &Conversation,
    context_id: &str,
    history_length: Option<usize>,
) -> Task {
    let at = TaskRef {
        task_id: conversation.id.to_string(),
        context_id: context_id.to_string(),
    };
    let state = task_state(conversation);
    let artifacts = match (state, conversation.last_answer()) {
        (TaskState::Completed, Some(answer)) if !answer.is_error => vec![answer_artifact(answer)],
        _ => Vec::new(),
    };
    let mut metadata = Map::new();
    metadata.insert(
        "conversation_status".into(),
        Value::from(conversation.status.as_str()),
    );
    metadata.insert(
        "session_id".into(),
        Value::from(conversation.session_id.as_str()),
    );
    Task {
        id: at.task_id.clone(),
        context_id: at.context_id.clone(),
        status: status(conversation, &at),
        artifacts,
        history: history(conversation, &at, history_length),
        metadata: Some(metadata),
        kind: "task".into(),
    }
}

/// The current status: state, explaining message, time of the last change.
pub fn status(conversation: &Conversation, at: &TaskRef) -> TaskStatus {
    let state = task_state(conversation);
    let message = match state {
        TaskState::InputRequired => approvals_message(conversation.pending(), at),
        TaskState::AuthRequired => auth_message(conversation, at),
        TaskState::Completed | TaskState::Failed | TaskState::Canceled => conversation
            .last_answer()
            .map(|m| agent_message(m.id.to_string(), at, &m.content)),
        _ => None,
    };
    TaskStatus {
        state,
        message,
        timestamp: Some(rfc3339(conversation.updated_at)),
    }
}

/// User messages and answers as A2A messages, the last `limit` of them.
pub fn history(conversation: &Conversation, at: &TaskRef, limit: Option<usize>) -> Vec<A2aMessage> {
    let spoken: Vec<&Message> = conversation
        .messages
        .iter()
        .map(|m| &**m)
        .filter(|m| m.role == Role::User || is_answer(m))
        .collect();
    let skip = limit.map_or(0, |n| spoken.len().saturating_sub(n));
    spoken
        .into_iter()
        .skip(skip)
        .map(|m| {
            let mut message = agent_message(m.id.to_string(), at, &m.content);
            if m.role == Role::User {
                message.role = MessageRole::User;
            }
            message
        })
        .collect()
}

/// The agent's message asking for an approval: a text part for a human
/// and a data part for a program.
pub fn approval_message(pending: &PendingApproval, at: &TaskRef) -> A2aMessage {
    if let Some(question) = &pending.question {
        let how = match (&question.url, question.choices.is_empty(), &question.schema) {
            (Some(url), _, _) => format!(
                "Open {url} yourself, then reply with a data part {{\"answer\": \"done\"}} (or {{\"action\": \"decline\"}})."
            ),
            (None, false, _) => format!("Reply with one of: {}.", question.choices.join(", ")),
            (None, true, Some(_)) => {
                "Reply with a data part {\"answer\": {…}} matching the question's schema.".into()
            }
            (None, true, None) => "Reply with the answer as text.".into(),
        };
        let text = format!("Question: {} {how}", question.text);
        let mut message = agent_message(pending.uuid.to_string(), at, &text);
        message.parts.push(Part::data(approval_data(pending)));
        return message;
    }
    let text = format!(
        "Approval required: {}. Reply \"approved\" or \"rejected\" to this task \
         (or send a data part {{\"approved\": true|false}}).",
        pending.description.trim_end_matches('.')
    );
    let mut message = agent_message(pending.uuid.to_string(), at, &text);
    message.parts.push(Part::data(approval_data(pending)));
    message
}

/// The input-required message of a task: one approval as
/// [`approval_message`]; several (parallel branches) as one data part
/// each, decided one at a time by a data part naming its `approval_uuid`.
pub fn approvals_message(pending: &[PendingApproval], at: &TaskRef) -> Option<A2aMessage> {
    let first = pending.first()?;
    if pending.len() == 1 {
        return Some(approval_message(first, at));
    }
    let listed: Vec<String> = pending
        .iter()
        .map(|p| {
            format!(
                "- {} (approval_uuid {})",
                p.description.trim_end_matches('.'),
                p.uuid
            )
        })
        .collect();
    let text = format!(
        "{} approvals required, each decided on its own:\n{}\nSend one message per \
         approval with a data part {{\"approved\": true|false, \"approval_uuid\": \"…\"}}.",
        pending.len(),
        listed.join("\n")
    );
    let mut message = agent_message(first.uuid.to_string(), at, &text);
    message
        .parts
        .extend(pending.iter().map(|p| Part::data(approval_data(p))));
    Some(message)
}

/// An approval as a data part's fields.
fn approval_data(pending: &PendingApproval) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert(
        approval_keys::APPROVAL_UUID.into(),
        Value::from(pending.uuid.to_string()),
    );
    data.insert(
        approval_keys::TOOL_NAME.into(),
        Value::from(pending.tool_name.as_str()),
    );
    data.insert(
        approval_keys::TOOL_ARGS.into(),
        Value::Object(pending.tool_args.clone()),
    );
    data.insert(
        approval_keys::DESCRIPTION.into(),
        Value::from(pending.description.as_str()),
    );
    if let Some(name) = &pending.remote_agent_name {
        data.insert(
            approval_keys::REMOTE_AGENT_NAME.into(),
            Value::from(name.as_str()),
        );
    }
    if let Some(task) = &pending.remote_task_id {
        data.insert(
            approval_keys::REMOTE_TASK_ID.into(),
            Value::from(task.as_str()),
        );
    }
    if let Some(question) = pending
        .question
        .as_ref()
        .and_then(|q| serde_json::to_value(q).ok())
    {
        data.insert(approval_keys::QUESTION.into(), question);
    }
    data
}

/// A one-text-part message from the agent.
pub fn agent_message(message_id: String, at: &TaskRef, text: &str) -> A2aMessage {
    A2aMessage {
        role: MessageRole::Agent,
        parts: vec![Part::text(text)],
        message_id,
        task_id: Some(at.task_id.clone()),
        context_id: Some(at.context_id.clone()),
        reference_task_ids: Vec::new(),
        metadata: None,
        kind: "message".into(),
    }
}

/// The answer as an artifact; its id is derived from the message id, so
/// it is the same in every view of the task.
pub fn answer_artifact(answer: &Message) -> Artifact {
    Artifact {
        artifact_id: format!("answer-{}", answer.id),
        name: Some("answer".into()),
        description: None,
        parts: vec![Part::text(answer.content.as_str())],
        metadata: None,
    }
}

/// A status-update event.
pub fn status_update(at: &TaskRef, status: TaskStatus, is_final: bool) -> TaskStatusUpdateEvent {
    TaskStatusUpdateEvent {
        task_id: at.task_id.clone(),
        context_id: at.context_id.clone(),
        kind: "status-update".into(),
        status,
        is_final,
        metadata: None,
    }
}

/// An artifact-update event carrying a whole artifact.
pub fn artifact_update(at: &TaskRef, artifact: Artifact) -> TaskArtifactUpdateEvent {
    TaskArtifactUpdateEvent {
        task_id: at.task_id.clone(),
        context_id: at.context_id.clone(),
        kind: "artifact-update".into(),
        artifact,
        append: None,
        last_chunk: Some(true),
    }
}

/// The `working` status a live engine event is worth, if any: the turn
/// started, a tool call started or finished.
pub fn progress(event: &ConversationEvent, at: &TaskRef) -> Option<TaskStatus> {
    let message = match event {
        ConversationEvent::TurnStarted => None,
        ConversationEvent::Message { message } => {
            let text = match (&message.tool_call, &message.tool_result) {
                (Some(call), _) => format!("Calling {}", call.name),
                (None, Some(result)) if result.is_error => format!("{} failed", result.name),
                (None, Some(result)) => format!("{} finished", result.name),
                (None, None) => return None,
            };
            Some(agent_message(message.id.to_string(), at, &text))
        }
        _ => return None,
    };
    Some(TaskStatus {
        state: TaskState::Working,
        message,
        timestamp: Some(rfc3339(Utc::now())),
    })
}

/// The tool results of the last turn (since the last user message) that
/// a sub-agent refused for want of a credential, oldest first.
fn auth_refusals(conversation: &Conversation) -> Vec<&Message> {
    let mut refusals: Vec<&Message> = conversation
        .messages
        .iter()
        .map(|m| &**m)
        .rev()
        .take_while(|m| m.role != Role::User)
        .filter(|m| m.tool_result.as_ref().is_some_and(|r| r.auth_required))
        .collect();
    refusals.reverse();
    refusals
}

/// The `auth-required` status message: what each sub-agent that wants a
/// credential said (it names the sub-agent, never a token).
fn auth_message(conversation: &Conversation, at: &TaskRef) -> Option<A2aMessage> {
    let refusals = auth_refusals(conversation);
    let first = refusals.first()?;
    let text: Vec<&str> = refusals.iter().map(|m| m.content.as_str()).collect();
    Some(agent_message(first.id.to_string(), at, &text.join("\n")))
}

fn is_answer(message: &Message) -> bool {
    message.role == Role::Assistant && message.tool_call.is_none()
}

fn last_spoken(conversation: &Conversation) -> Option<&Message> {
    conversation
        .messages
        .iter()
        .rev()
        .find(|m| m.role != Role::System)
        .map(|m| &**m)
}

#[cfg(test)]
mod tests {
    use asg_shared::{ToolCall, fixtures};
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    fn message(role: Role, content: &str) -> Message {
        Message {
            created_at: Utc::now(),
            ..fixtures::message(role, content)
        }
    }

    fn conversation(messages: Vec<Message>) -> Conversation {
        let now = Utc::now();
        Conversation {
            messages: [vec![message(Role::System, "prompt")], messages]
                .concat()
                .into_iter()
                .map(Into::into)
                .collect(),
            created_at: now,
            updated_at: now,
            ..fixtures::conversation()
        }
    }

    fn pending(conversation_id: Uuid) -> PendingApproval {
        PendingApproval {
            conversation_id,
            tool_args: json!({"name": "a", "value": 1})
                .as_object()
                .cloned()
                .unwrap(),
            description: "resources_add with arguments {\"name\":\"a\"}".into(),
            created_at: Utc::now(),
            call_id: "c1".into(),
            remote_task_id: Some("remote-1".into()),
            remote_agent_name: Some("agent-b".into()),
            remote_approval_uuid: Some("u-remote".into()),
            remote_context_id: None,
            ..fixtures::pending_approval("resources_add")
        }
    }

    #[test]
    fn answered_conversation_is_completed_with_a_stable_artifact() {
        let c = conversation(vec![
            message(Role::User, "hi"),
            message(Role::Assistant, "hello"),
        ]);
        let task = to_task(&c, "ctx-1", None);
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(task.id, c.id.to_string());
        assert_eq!(task.context_id, "ctx-1");
        assert_eq!(task.artifacts_text(), "hello");
        assert_eq!(
            task.artifacts[0].artifact_id,
            format!("answer-{}", c.messages[2].id)
        );
        assert_eq!(to_task(&c, "ctx-1", None).artifacts, task.artifacts);
        let roles: Vec<_> = task.history.iter().map(|m| m.role).collect();
        assert_eq!(roles, [MessageRole::User, MessageRole::Agent]);
        assert_eq!(task.history[0].message_id, c.messages[1].id.to_string());
        assert_eq!(task.history[1].task_id.as_deref(), Some(task.id.as_str()));
        let timestamp = task.status.timestamp.unwrap();
        assert!(
            DateTime::parse_from_rfc3339(&timestamp).is_ok(),
            "{timestamp}"
        );
    }

    #[test]
    fn states_follow_the_conversation() {
        assert_eq!(task_state(&conversation(vec![])), TaskState::Submitted);
        let working = conversation(vec![message(Role::User, "hi")]);
        assert_eq!(task_state(&working), TaskState::Working);
        let mut call = message(Role::Assistant, "");
        call.tool_call = Some(Box::new(ToolCall {
            id: "c1".into(),
            name: "resources_list".into(),
            arguments: Map::new(),
            needs_approval: false,
            approval_uuid: None,
            provider_signature: None,
        }));
        let calling = conversation(vec![message(Role::User, "hi"), call]);
        assert_eq!(task_state(&calling), TaskState::Working);
        let mut error = message(Role::Assistant, "Error: model down");
        error.is_error = true;
        let failed = conversation(vec![message(Role::User, "hi"), error]);
        let task = to_task(&failed, "c", None);
        assert_eq!(task.status.state, TaskState::Failed);
        assert!(task.artifacts.is_empty());
        let reason = task.status.message.unwrap().text();
        assert_eq!(reason, "Error: model down");
        let mut canceled = conversation(vec![message(Role::Assistant, "Canceled: x")]);
        canceled.status = ConversationStatus::Canceled;
        assert_eq!(
            to_task(&canceled, "c", None).status.state,
            TaskState::Canceled
        );
    }

    #[test]
    fn waiting_approval_is_input_required_with_a_data_part() {
        let mut c = conversation(vec![message(Role::User, "add a")]);
        let p = pending(c.id);
        c.status = ConversationStatus::WaitingApproval;
        c.pending_approval = Some(p.clone());
        let task = to_task(&c, "ctx", None);
        assert_eq!(task.status.state, TaskState::InputRequired);
        let message = task.status.message.unwrap();
        assert_eq!(message.role, MessageRole::Agent);
        assert!(
            message.text().contains("Approval required"),
            "{}",
            message.text()
        );
        let Some(Part::Data { data, .. }) = message.parts.get(1) else {
            panic!("no data part: {message:?}");
        };
        assert_eq!(data["approval_uuid"], p.uuid.to_string());
        assert_eq!(data["tool_name"], "resources_add");
        assert_eq!(data["tool_args"], json!({"name": "a", "value": 1}));
        assert_eq!(data["description"], p.description);
        assert_eq!(data["remote_agent_name"], "agent-b");
        assert_eq!(data["remote_task_id"], "remote-1");

        c.pending_approval.as_mut().unwrap().state = ApprovalState::Executing;
        assert_eq!(task_state(&c), TaskState::Working);
    }

    #[test]
    fn a_sub_agent_wanting_a_credential_makes_the_answered_turn_auth_required() {
        let refusal = "sub-agent \"b\" needs a credential (HTTP 401)";
        let mut result = message(Role::Tool, refusal);
        result.tool_result = Some(Box::new(asg_shared::ToolResult {
            call_id: "c1".into(),
            name: "b".into(),
            is_error: true,
            auth_required: true,
        }));
        let c = conversation(vec![
            message(Role::User, "ask b"),
            result,
            message(Role::Assistant, "b wants a credential"),
        ]);
        let task = to_task(&c, "ctx", None);
        assert_eq!(task.status.state, TaskState::AuthRequired);
        assert!(task.artifacts.is_empty());
        assert_eq!(task.status.message.unwrap().text(), refusal);
        // The next turn, sent with a credential, is answered normally.
        let mut again = c.clone();
        again
            .messages
            .push(message(Role::User, "ask b again").into());
        assert_eq!(task_state(&again), TaskState::Working);
        again
            .messages
            .push(message(Role::Assistant, "b says hi").into());
        assert_eq!(task_state(&again), TaskState::Completed);
        // A pipeline whose a2a step failed on it too.
        let mut failed = c;
        std::sync::Arc::make_mut(failed.messages.last_mut().unwrap()).is_error = true;
        assert_eq!(task_state(&failed), TaskState::AuthRequired);
    }

    #[test]
    fn history_length_keeps_the_last_messages() {
        let c = conversation(vec![
            message(Role::User, "1"),
            message(Role::Assistant, "2"),
            message(Role::User, "3"),
            message(Role::Assistant, "4"),
        ]);
        let at = TaskRef {
            task_id: "t".into(),
            context_id: "c".into(),
        };
        assert_eq!(history(&c, &at, None).len(), 4);
        assert!(history(&c, &at, Some(0)).is_empty());
        let last: Vec<String> = history(&c, &at, Some(3))
            .iter()
            .map(A2aMessage::text)
            .collect();
        assert_eq!(last, ["2", "3", "4"]);
        assert_eq!(history(&c, &at, Some(99)).len(), 4);
    }
}
