//! A person's click or modal in Slack, turned into the engine's decision
//! (`Decide`, `Answer`) as the principal the Slack user is mapped to.
//! Slack wants an answer within three seconds, so the request is answered
//! at once and the decision runs beside it; a refusal (unmapped user,
//! four-eyes, not among the rule's approvers, an edit the schema or the
//! rules refuse, already decided) comes back as a message only that user
//! sees, and nothing changes. The message itself is updated from the
//! inbox like for any other door's decision.

use std::collections::BTreeMap;

use asg_core::principal::Principal;
use asg_shared::QuestionReply;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::Slack;
use super::blocks;
use super::outbox::Job;
use super::payload::{
    self, Button, Click, Interaction, ModalContext, PayloadError, Submission, modal,
};
use super::web_api::CallError;
use crate::context::{RequestContext, new_session_id};
use crate::engine::{Choice, EngineError};

/// What the request is answered with.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// 200 with an empty body (Slack's acknowledgement).
    Ack,
    /// 200 with this JSON (a modal's `response_action`).
    Json(Value),
}

/// Who clicked, and where to tell them.
struct Person {
    user: String,
    channel: String,
}

impl Slack {
    /// Acts on a verified interactivity request: answers at once, decides
    /// beside it.
    pub fn interact(&self, body: &[u8]) -> Result<Reply, PayloadError> {
        match payload::parse(body)? {
            Interaction::Click(click) => {
                let slack = self.clone();
                self.inner
                    .tasks
                    .spawn(async move { slack.on_click(click).await });
                Ok(Reply::Ack)
            }
            Interaction::Submission(submission) => Ok(self.on_submission(submission)),
            Interaction::Ignored => Ok(Reply::Ack),
        }
    }

    async fn on_click(self, click: Click) {
        let person = Person {
            channel: self.channel_of(click.approval, click.channel.as_deref()),
            user: click.user.clone(),
        };
        let Some(principal) = self.principal_or_tell(&person).await else {
            return;
        };
        let uuid = click.approval;
        let result = match click.button {
            Button::Approve => self.decide(uuid, principal, true, None).await,
            Button::Reject => self.decide(uuid, principal, false, None).await,
            Button::Choose(choice) => {
                let reply = QuestionReply::Accept {
                    answer: Value::String(choice),
                };
                self.answer(uuid, principal, reply).await
            }
            Button::Decline => self.answer(uuid, principal, QuestionReply::Decline).await,
            Button::Edit | Button::Answer => {
                self.open_modal(&click, &person).await;
                Ok(())
            }
        };
        if let Err(error) = result {
            self.tell(&person, refusal_text(&error));
        }
    }

    /// A modal's text checked now (an error is shown in the modal), the
    /// decision made beside the answer.
    fn on_submission(&self, submission: Submission) -> Reply {
        let context = submission.context.clone();
        let person = Person {
            user: submission.user.clone(),
            channel: context.channel.clone(),
        };
        let slack = self.clone();
        if submission.kind == modal::EDIT {
            let arguments = match parse_arguments(&submission.text) {
                Ok(arguments) => arguments,
                Err(problem) => return input_error(&problem),
            };
            self.inner.tasks.spawn(async move {
                let Some(principal) = slack.principal_or_tell(&person).await else {
                    return;
                };
                if let Err(error) = slack
                    .decide(context.approval, principal, true, Some(arguments))
                    .await
                {
                    slack.tell(&person, refusal_text(&error));
                }
            });
            return Reply::Ack;
        }
        let answer = match parse_answer(&submission.text, context.json) {
            Ok(answer) => answer,
            Err(problem) => return input_error(&problem),
        };
        self.inner.tasks.spawn(async move {
            let Some(principal) = slack.principal_or_tell(&person).await else {
                return;
            };
            let reply = QuestionReply::Accept { answer };
            if let Err(error) = slack.answer(context.approval, principal, reply).await {
                slack.tell(&person, refusal_text(&error));
            }
        });
        Reply::Ack
    }

    async fn open_modal(&self, click: &Click, person: &Person) {
        let Some(shown) = self.shown_messages().get(click.approval) else {
            return self.tell(
                person,
                "not found: this approval is no longer waiting here".into(),
            );
        };
        let approval = &shown.approval;
        let mut context = ModalContext {
            approval: click.approval,
            channel: person.channel.clone(),
            json: false,
        };
        let view = match (&click.button, &approval.question) {
            (Button::Answer, Some(question)) => {
                context.json = question.schema.is_some();
                blocks::answer_modal(question, &context)
            }
            (_, None) => match blocks::edit_modal(approval, &context) {
                Some(view) => view,
                None => {
                    return self.tell(
                        person,
                        "the arguments are too long to edit in Slack; edit them in the chat".into(),
                    );
                }
            },
            _ => return,
        };
        let Some(trigger) = &click.trigger_id else {
            return;
        };
        let body = json!({"trigger_id": trigger, "view": view});
        if let Err(error) = self.inner.api.call("views.open", &body).await {
            tracing::warn!(reason = %error, "Slack modal not opened");
            self.tell(person, format!("the form could not be opened: {error}"));
        }
    }

    async fn decide(
        &self,
        uuid: Uuid,
        principal: Principal,
        approve: bool,
        arguments: Option<Map<String, Value>>,
    ) -> Result<(), EngineError> {
        let choice = Choice {
            arguments,
            remember: None,
        };
        let ctx = context(principal);
        self.inner
            .engine
            .resolve_approval_with(uuid, &ctx, approve, None, choice)
            .await
            .map(|_| ())
    }

    async fn answer(
        &self,
        uuid: Uuid,
        principal: Principal,
        reply: QuestionReply,
    ) -> Result<(), EngineError> {
        let ctx = context(principal);
        self.inner
            .engine
            .answer_question(uuid, &ctx, reply)
            .await
            .map(|_| ())
    }

    /// The user's principal, or `None` after telling them they are not
    /// mapped.
    async fn principal_or_tell(&self, person: &Person) -> Option<Principal> {
        match self.principal_of(&person.user).await {
            Ok(principal) => Some(principal),
            Err(why) => {
                self.tell(person, why);
                None
            }
        }
    }

    /// `user_map` by Slack user id, else by the email `users.info` gives.
    async fn principal_of(&self, user: &str) -> Result<Principal, String> {
        let map = &self.inner.config.user_map;
        let subject = match map.get(user) {
            Some(subject) => subject.clone(),
            None => {
                let email = self.email_of(user).await?;
                subject_by_email(map, email.as_deref()).ok_or_else(|| NOT_MAPPED.to_string())?
            }
        };
        self.inner
            .directory
            .principal(&subject)
            .ok_or_else(|| NOT_MAPPED.to_string())
    }

    async fn email_of(&self, user: &str) -> Result<Option<String>, String> {
        match self
            .inner
            .api
            .call_form("users.info", &[("user", user)])
            .await
        {
            Ok(info) => Ok(info["user"]["profile"]["email"]
                .as_str()
                .map(str::to_string)),
            Err(CallError::Refused(why)) => {
                tracing::info!(reason = %why, "Slack user not looked up");
                Err(NOT_MAPPED.to_string())
            }
            Err(error) => Err(format!(
                "not decided: your Slack account could not be looked up now ({error}); try again"
            )),
        }
    }

    /// A message only `person` sees, in the approval's channel.
    fn tell(&self, person: &Person, text: String) {
        self.inner.outbox.push(Job::Ephemeral {
            channel: person.channel.clone(),
            user: person.user.clone(),
            text,
        });
    }

    /// Where the approval's message is: the payload's channel, else the
    /// one it was posted to, else the configured one.
    fn channel_of(&self, approval: Uuid, given: Option<&str>) -> String {
        if let Some(channel) = given {
            return channel.to_string();
        }
        match self.shown_messages().get(approval) {
            Some(shown) => shown.channel,
            None => self.inner.config.channel.clone(),
        }
    }
}

/// What an unmapped user is told.
const NOT_MAPPED: &str = "not allowed: your Slack account is not mapped to anyone who may decide here (channels.slack.user_map)";

/// The `user_map` entry of an email (case does not matter).
fn subject_by_email(map: &BTreeMap<String, String>, email: Option<&str>) -> Option<String> {
    let email = email?.trim();
    map.iter()
        .find(|(key, _)| key.contains('@') && key.eq_ignore_ascii_case(email))
        .map(|(_, subject)| subject.clone())
}

fn context(principal: Principal) -> RequestContext {
    RequestContext {
        session_id: new_session_id(),
        principal: Some(principal),
        via: "slack",
        ..Default::default()
    }
}

/// Edited arguments: a JSON object.
fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(arguments)) => Ok(arguments),
        Ok(_) => Err("the arguments must be a JSON object ({…})".into()),
        Err(error) => Err(format!("not valid JSON: {error}")),
    }
}

/// A typed answer: text, or a JSON object for a form question.
fn parse_answer(text: &str, json: bool) -> Result<Value, String> {
    if !json {
        return match text.trim().is_empty() {
            true => Err("the answer is empty".into()),
            false => Ok(Value::String(text.to_string())),
        };
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => Ok(Value::Object(fields)),
        Ok(_) => Err("the answer must be a JSON object ({…})".into()),
        Err(error) => Err(format!("not valid JSON: {error}")),
    }
}

/// Slack shows `problem` under the modal's input.
fn input_error(problem: &str) -> Reply {
    Reply::Json(json!({"response_action": "errors", "errors": {modal::INPUT_BLOCK: problem}}))
}

/// What the person is told when the engine says no.
fn refusal_text(error: &EngineError) -> String {
    match error {
        EngineError::Forbidden(why) => format!("not allowed: {why}"),
        EngineError::AlreadyResolved { .. } => format!("already decided: {error}"),
        EngineError::ApprovalNotFound(_)
        | EngineError::QuestionNotFound(_)
        | EngineError::ConversationNotFound(_) => format!("not found: {error}"),
        EngineError::InvalidInput(why) => format!("not accepted: {why}"),
        EngineError::Llm { .. } | EngineError::SubAgent { .. } => {
            format!("decided, but the run then failed: {error}")
        }
        EngineError::Store(_) | EngineError::Audit(_) => {
            "not recorded: the conversation store is unavailable; try again later".into()
        }
        EngineError::Internal(_) => "failed unexpectedly; the agent's log says more".into(),
        other => format!("not decided: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_mapped_by_email_ignoring_case_and_only_by_email_entries() {
        let map: BTreeMap<String, String> = [
            ("U0BOB".to_string(), "key:bob".to_string()),
            ("Ann@Example.com".to_string(), "key:ann".to_string()),
        ]
        .into();
        assert_eq!(
            subject_by_email(&map, Some("ann@example.com")),
            Some("key:ann".into())
        );
        assert_eq!(subject_by_email(&map, Some("eve@example.com")), None);
        assert_eq!(
            subject_by_email(&map, Some("U0BOB")),
            None,
            "an id is not an email"
        );
        assert_eq!(subject_by_email(&map, None), None);
    }

    #[test]
    fn edited_arguments_must_be_a_json_object() {
        let ok = parse_arguments("{\"name\": \"a\", \"value\": 2}").unwrap();
        assert_eq!(ok["value"], 2);
        assert!(parse_arguments("[1]").unwrap_err().contains("JSON object"));
        assert!(
            parse_arguments("{oops")
                .unwrap_err()
                .starts_with("not valid JSON")
        );
    }

    #[test]
    fn answers_are_text_or_a_json_object_for_forms() {
        assert_eq!(parse_answer("blue", false), Ok(json!("blue")));
        assert_eq!(
            parse_answer("{\"value\": 3}", true),
            Ok(json!({"value": 3}))
        );
        assert!(parse_answer(" ", false).is_err());
        assert!(parse_answer("3", true).is_err());
    }

    #[test]
    fn an_input_error_names_the_input_block() {
        let Reply::Json(body) = input_error("not valid JSON") else {
            panic!("not JSON");
        };
        assert_eq!(
            body,
            json!({"response_action": "errors", "errors": {"asg_input": "not valid JSON"}})
        );
    }

    #[test]
    fn refusals_say_why() {
        let forbidden = EngineError::Forbidden("approver must differ from requester".into());
        assert_eq!(
            refusal_text(&forbidden),
            "not allowed: approver must differ from requester"
        );
        let invalid = EngineError::InvalidInput("arguments.value: not an integer".into());
        assert!(refusal_text(&invalid).starts_with("not accepted: arguments.value"));
        let internal = EngineError::Internal("secret detail".into());
        assert!(!refusal_text(&internal).contains("secret detail"));
    }
}
