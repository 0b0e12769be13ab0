//! What a v1.0 peer answers, read as the v0.3 task model our client
//! works with (the delegation outcome is read from a v0.3 [`Task`]).
//!
//! The server side converts a client's v1.0 message strictly (a data part
//! must be a JSON object, a message names its role): a bad request is
//! refused. A peer's answer is read leniently instead, so one odd part
//! does not hide the rest: a part that is not exactly one of text, file
//! or object data is kept as the text of its JSON, a scalar data part as
//! `{"value": …}`, an unnamed role as the agent's.

use serde_json::{Map, Value};

use super::v1;
use super::{A2aMessage, Artifact, FileContent, MessageRole, Part, Task, TaskState, TaskStatus};

impl From<v1::TaskState> for TaskState {
    fn from(state: v1::TaskState) -> TaskState {
        match state {
            v1::TaskState::Submitted => TaskState::Submitted,
            v1::TaskState::Working => TaskState::Working,
            v1::TaskState::InputRequired => TaskState::InputRequired,
            v1::TaskState::Completed => TaskState::Completed,
            v1::TaskState::Canceled => TaskState::Canceled,
            v1::TaskState::Failed => TaskState::Failed,
            v1::TaskState::Rejected => TaskState::Rejected,
            v1::TaskState::AuthRequired => TaskState::AuthRequired,
            v1::TaskState::Unspecified => TaskState::Unknown,
        }
    }
}

/// A peer's part, leniently (see the module docs).
pub fn part(part: v1::Part) -> Part {
    let metadata = part.metadata.clone();
    let shown = serde_json::to_string(&part).unwrap_or_default();
    match part {
        v1::Part {
            text: Some(text),
            raw: None,
            url: None,
            data: None,
            ..
        } => Part::Text { text, metadata },
        v1::Part {
            text: None,
            raw: None,
            url: None,
            data: Some(data),
            ..
        } => Part::Data {
            data: match data {
                Value::Object(object) => object,
                scalar => Map::from_iter([("value".to_string(), scalar)]),
            },
            metadata,
        },
        v1::Part {
            text: None,
            data: None,
            raw,
            url,
            filename,
            media_type,
            ..
        } if raw.is_some() != url.is_some() => Part::File {
            file: FileContent {
                bytes: raw,
                uri: url,
                mime_type: media_type,
                name: filename,
            },
            metadata,
        },
        _ => Part::Text {
            text: shown,
            metadata,
        },
    }
}

/// A peer's message, leniently.
pub fn message(message: v1::Message) -> A2aMessage {
    A2aMessage {
        role: match message.role {
            v1::Role::User => MessageRole::User,
            v1::Role::Agent | v1::Role::Unspecified => MessageRole::Agent,
        },
        parts: message.parts.into_iter().map(part).collect(),
        message_id: message.message_id,
        task_id: message.task_id.filter(|t| !t.is_empty()),
        context_id: message.context_id.filter(|c| !c.is_empty()),
        reference_task_ids: message.reference_task_ids,
        metadata: message.metadata,
        kind: "message".into(),
    }
}

/// A peer's task, leniently.
pub fn task(task: v1::Task) -> Task {
    Task {
        id: task.id,
        context_id: task.context_id,
        status: TaskStatus {
            state: task.status.state.into(),
            message: task.status.message.map(message),
            timestamp: task.status.timestamp,
        },
        artifacts: task
            .artifacts
            .into_iter()
            .map(|artifact| Artifact {
                artifact_id: artifact.artifact_id,
                name: artifact.name,
                description: artifact.description,
                parts: artifact.parts.into_iter().map(part).collect(),
                metadata: artifact.metadata,
            })
            .collect(),
        history: task.history.into_iter().map(message).collect(),
        metadata: task.metadata,
        kind: "task".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_v1_input_required_task_reads_as_the_v03_one() {
        let v1: v1::Task = serde_json::from_value(json!({
            "id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {
                "messageId": "m", "role": "ROLE_AGENT", "parts": [
                    {"text": "Approve?"},
                    {"data": {"approval_uuid": "u", "tool_name": "delete_file"}, "mediaType": "application/json"}
                ]}}
        }))
        .unwrap();
        let task = task(v1);
        assert_eq!(task.status.state, TaskState::InputRequired);
        let message = task.status.message.unwrap();
        assert_eq!(message.role, MessageRole::Agent);
        assert_eq!(message.text(), "Approve?");
        assert!(
            matches!(&message.parts[1], Part::Data { data, .. } if data["approval_uuid"] == "u")
        );
    }

    #[test]
    fn odd_parts_are_kept_readable() {
        let scalar: v1::Part = serde_json::from_value(json!({"data": 3})).unwrap();
        assert!(matches!(part(scalar), Part::Data { data, .. } if data["value"] == 3));
        let two: v1::Part =
            serde_json::from_value(json!({"text": "a", "url": "http://x"})).unwrap();
        assert!(matches!(part(two), Part::Text { text, .. } if text.contains("http://x")));
        let file: v1::Part =
            serde_json::from_value(json!({"url": "http://x/f", "filename": "f"})).unwrap();
        assert!(matches!(part(file), Part::File { file, .. } if file.name.as_deref() == Some("f")));
        let unnamed: v1::Message =
            serde_json::from_value(json!({"role": "ROLE_UNSPECIFIED", "parts": []})).unwrap();
        assert_eq!(message(unnamed).role, MessageRole::Agent);
    }
}
