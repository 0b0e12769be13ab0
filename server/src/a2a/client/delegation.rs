//! What a delegation produced, read from the sub-agent's task whatever
//! protocol version carried it, and the decision forwarded back to it.

use asg_shared::a2a::{Part, Task, TaskState, approval_keys, parts_text};
use serde_json::{Map, Value};

/// A sub-agent's request for approval, read from an `input-required` task.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteApproval {
    /// The sub-agent's task id (continue it to decide).
    pub task_id: String,
    /// The task's context id (sent back with the decision).
    pub context_id: Option<String>,
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

/// The sub-agent task a message continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Continuation<'a> {
    /// Its id.
    pub task_id: &'a str,
    /// Its context id, when known.
    pub context_id: Option<&'a str>,
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
    /// The sub-agent's task waits for a credential (`auth-required`);
    /// its status text.
    AuthRequired(String),
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
    pub(super) fn data(&self) -> Map<String, Value> {
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
                context_id: Some(task.context_id.clone()).filter(|c| !c.is_empty()),
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
        TaskState::AuthRequired => Delegation::AuthRequired(status_text),
        state => Delegation::Failed(if status_text.is_empty() {
            format!("the sub-agent's task ended in state {state:?}")
        } else {
            status_text
        }),
    }
}
