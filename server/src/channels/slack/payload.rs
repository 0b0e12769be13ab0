//! Slack's interactivity payloads, read into what we act on: a click on
//! one of our buttons ([`Click`]) or a submitted modal of ours
//! ([`Submission`]). The body is a form whose `payload` field is JSON;
//! anything else Slack may send (other buttons, closed modals) is
//! [`Interaction::Ignored`].

use serde::Deserialize;
use uuid::Uuid;

/// `action_id`s of our buttons.
pub mod action {
    /// Approve the call as requested.
    pub const APPROVE: &str = "asg_approve";
    /// Reject it.
    pub const REJECT: &str = "asg_reject";
    /// Open the modal to edit the arguments.
    pub const EDIT: &str = "asg_edit";
    /// Answer a question with this choice (`value`: `<uuid>:<choice>`;
    /// the buttons' ids are `asg_choose_<n>`, unique in their block).
    pub const CHOOSE: &str = "asg_choose";
    /// Open the modal to type a question's answer.
    pub const ANSWER: &str = "asg_answer";
    /// Decline to answer a question.
    pub const DECLINE: &str = "asg_decline";
}

/// `callback_id`s of our modals (their `private_metadata` is a
/// [`ModalContext`] as JSON).
pub mod modal {
    /// Edited arguments.
    pub const EDIT: &str = "asg_edit";
    /// A question's typed answer.
    pub const ANSWER: &str = "asg_answer";
    /// The `block_id` of the one input block.
    pub const INPUT_BLOCK: &str = "asg_input";
    /// The `action_id` of its text input.
    pub const INPUT: &str = "asg_value";
}

/// What a modal remembers about what it was opened for.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct ModalContext {
    /// The approval (or question).
    pub approval: Uuid,
    /// The channel the approval's message is in (for refusals).
    pub channel: String,
    /// A question's answer is JSON (form mode), not text.
    #[serde(default)]
    pub json: bool,
}

/// What was clicked.
#[derive(Debug, Clone, PartialEq)]
pub enum Button {
    /// Approve as requested.
    Approve,
    /// Reject.
    Reject,
    /// Edit the arguments (opens a modal).
    Edit,
    /// Answer a question with one of its choices.
    Choose(String),
    /// Type a question's answer (opens a modal).
    Answer,
    /// Decline a question.
    Decline,
}

/// A click on one of our buttons.
#[derive(Debug, Clone, PartialEq)]
pub struct Click {
    /// The Slack user id.
    pub user: String,
    /// Which button.
    pub button: Button,
    /// The approval it is for.
    pub approval: Uuid,
    /// Where the message is (for ephemeral refusals).
    pub channel: Option<String>,
    /// Opens a modal (valid for 3 seconds).
    pub trigger_id: Option<String>,
}

/// A submitted modal of ours.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// The Slack user id.
    pub user: String,
    /// [`modal::EDIT`] or [`modal::ANSWER`].
    pub kind: &'static str,
    /// What the modal was opened for.
    pub context: ModalContext,
    /// The text typed.
    pub text: String,
}

/// One interactivity request.
#[derive(Debug, Clone, PartialEq)]
pub enum Interaction {
    /// A button of ours.
    Click(Click),
    /// A modal of ours.
    Submission(Submission),
    /// Anything else.
    Ignored,
}

/// Why a body is not an interactivity payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a Slack interactivity payload: {0}")]
pub struct PayloadError(String);

#[derive(Deserialize)]
struct Form {
    payload: String,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire {
    BlockActions {
        user: User,
        #[serde(default)]
        trigger_id: Option<String>,
        #[serde(default)]
        channel: Option<Channel>,
        #[serde(default)]
        container: Option<Container>,
        #[serde(default)]
        actions: Vec<WireAction>,
    },
    ViewSubmission {
        user: User,
        view: View,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct User {
    id: String,
}

#[derive(Deserialize)]
struct Channel {
    id: String,
}

#[derive(Deserialize)]
struct Container {
    #[serde(default)]
    channel_id: Option<String>,
}

#[derive(Deserialize)]
struct WireAction {
    action_id: String,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize)]
struct View {
    #[serde(default)]
    callback_id: String,
    #[serde(default)]
    private_metadata: String,
    #[serde(default)]
    state: serde_json::Value,
}

/// Reads a form body (`payload=<JSON>`).
pub fn parse(body: &[u8]) -> Result<Interaction, PayloadError> {
    let form: Form =
        serde_urlencoded::from_bytes(body).map_err(|e| PayloadError(format!("form: {e}")))?;
    let wire: Wire =
        serde_json::from_str(&form.payload).map_err(|e| PayloadError(format!("payload: {e}")))?;
    Ok(match wire {
        Wire::BlockActions {
            user,
            trigger_id,
            channel,
            container,
            actions,
        } => {
            let channel = channel
                .map(|c| c.id)
                .or_else(|| container.and_then(|c| c.channel_id));
            // Our messages carry one actions block; Slack sends the one
            // button clicked.
            match actions.first().and_then(click_of) {
                Some((button, approval)) => Interaction::Click(Click {
                    user: user.id,
                    button,
                    approval,
                    channel,
                    trigger_id,
                }),
                None => Interaction::Ignored,
            }
        }
        Wire::ViewSubmission { user, view } => submission_of(user, view),
        Wire::Other => Interaction::Ignored,
    })
}

/// Our button and its approval, or `None` for someone else's.
fn click_of(wire: &WireAction) -> Option<(Button, Uuid)> {
    let value = wire.value.as_deref()?;
    if wire.action_id.starts_with(action::CHOOSE) {
        let (uuid, choice) = value.split_once(':')?;
        return Some((
            Button::Choose(choice.to_string()),
            Uuid::parse_str(uuid).ok()?,
        ));
    }
    let button = match wire.action_id.as_str() {
        action::APPROVE => Button::Approve,
        action::REJECT => Button::Reject,
        action::EDIT => Button::Edit,
        action::ANSWER => Button::Answer,
        action::DECLINE => Button::Decline,
        _ => return None,
    };
    Some((button, Uuid::parse_str(value).ok()?))
}

fn submission_of(user: User, view: View) -> Interaction {
    let kind = match view.callback_id.as_str() {
        modal::EDIT => modal::EDIT,
        modal::ANSWER => modal::ANSWER,
        _ => return Interaction::Ignored,
    };
    let Ok(context) = serde_json::from_str::<ModalContext>(&view.private_metadata) else {
        return Interaction::Ignored;
    };
    let text = view.state["values"][modal::INPUT_BLOCK][modal::INPUT]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    Interaction::Submission(Submission {
        user: user.id,
        kind,
        context,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const UUID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    fn form(payload: serde_json::Value) -> Vec<u8> {
        serde_urlencoded::to_string([("payload", payload.to_string())])
            .unwrap()
            .into_bytes()
    }

    fn click(action_id: &str, value: &str) -> Vec<u8> {
        form(json!({
            "type": "block_actions",
            "user": {"id": "U1", "username": "ann", "team_id": "T1"},
            "trigger_id": "13345224609.738474920.8088930838d88f008e0",
            "response_url": "https://hooks.slack.com/actions/T1/1/x",
            "container": {"type": "message", "channel_id": "C9", "message_ts": "1.2"},
            "channel": {"id": "C1", "name": "ops"},
            "actions": [{"action_id": action_id, "block_id": "b", "type": "button", "value": value, "action_ts": "1.3"}]
        }))
    }

    #[test]
    fn our_buttons_are_read_with_user_approval_and_channel() {
        let uuid = Uuid::parse_str(UUID).unwrap();
        for (action_id, button) in [
            (action::APPROVE, Button::Approve),
            (action::REJECT, Button::Reject),
            (action::EDIT, Button::Edit),
            (action::ANSWER, Button::Answer),
            (action::DECLINE, Button::Decline),
        ] {
            let Interaction::Click(got) = parse(&click(action_id, UUID)).unwrap() else {
                panic!("{action_id}: not a click");
            };
            assert_eq!(got.button, button);
            assert_eq!((got.user.as_str(), got.approval), ("U1", uuid));
            assert_eq!(got.channel.as_deref(), Some("C1"));
            assert!(got.trigger_id.is_some());
        }
        let Interaction::Click(chosen) =
            parse(&click("asg_choose_3", &format!("{UUID}:blue: dark"))).unwrap()
        else {
            panic!("not a click");
        };
        assert_eq!(chosen.button, Button::Choose("blue: dark".into()));
    }

    #[test]
    fn other_buttons_and_bad_values_are_ignored() {
        assert_eq!(
            parse(&click("someone_else", UUID)),
            Ok(Interaction::Ignored)
        );
        assert_eq!(
            parse(&click(action::APPROVE, "../x")),
            Ok(Interaction::Ignored)
        );
        assert_eq!(
            parse(&click(action::CHOOSE, UUID)),
            Ok(Interaction::Ignored)
        );
        let closed = form(json!({"type": "view_closed", "user": {"id": "U1"}}));
        assert_eq!(parse(&closed), Ok(Interaction::Ignored));
    }

    #[test]
    fn a_submitted_modal_gives_its_text_and_context() {
        let context = ModalContext {
            approval: Uuid::parse_str(UUID).unwrap(),
            channel: "C1".into(),
            json: false,
        };
        let body = form(json!({
            "type": "view_submission",
            "user": {"id": "U2"},
            "view": {
                "id": "V1",
                "callback_id": modal::EDIT,
                "private_metadata": serde_json::to_string(&context).unwrap(),
                "state": {"values": {modal::INPUT_BLOCK: {modal::INPUT: {"type": "plain_text_input", "value": "{\"value\": 2}"}}}}
            }
        }));
        let Interaction::Submission(got) = parse(&body).unwrap() else {
            panic!("not a submission");
        };
        assert_eq!((got.user.as_str(), got.kind), ("U2", modal::EDIT));
        assert_eq!(got.context, context);
        assert_eq!(got.text, "{\"value\": 2}");
    }

    #[test]
    fn a_body_without_a_json_payload_is_an_error() {
        assert!(parse(b"token=x").is_err());
        assert!(parse(b"payload=not-json").is_err());
        assert!(parse(b"payload=%7B%22type%22%3A%22block_actions%22%7D").is_err());
    }
}
