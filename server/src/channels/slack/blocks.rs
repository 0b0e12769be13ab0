//! Block Kit: the messages and modals we show in Slack, built as plain
//! JSON values. A pending approval's message shows the tool, its
//! arguments (long values collapsed, the whole capped under Slack's
//! 3,000-character section limit), who asked, the rule and the expiry,
//! with Approve / Reject / Edit buttons (a question: a button per choice,
//! or one opening a modal, and Decline); once decided, the same message
//! without buttons and with who decided and how.

use asg_core::lifecycle::{EXPIRY_ROLE, EXPIRY_SUBJECT};
use asg_shared::{ApprovalDecision, PendingApproval, Question, QuestionReply};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::payload::{ModalContext, action, modal};

/// A string argument longer than this is cut.
pub const MAX_VALUE_CHARS: usize = 200;
/// The arguments' text is cut to this (a section takes 3,000).
pub const MAX_ARGUMENTS_CHARS: usize = 2_500;
/// Longest arguments the edit modal can hold (Slack's input limit).
pub const MAX_EDIT_CHARS: usize = 3_000;
/// More choices than this are typed in a modal instead of buttons.
const MAX_CHOICE_BUTTONS: usize = 20;
/// A button's text, at most (Slack's limit is 75).
const MAX_BUTTON_CHARS: usize = 70;

/// A message: the notification's plain `text` and its `blocks`.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Shown in notifications and where blocks are not.
    pub text: String,
    /// Block Kit blocks.
    pub blocks: Value,
}

/// Where and how an approval is shown.
#[derive(Debug, Clone, Default)]
pub struct Presentation {
    /// A user group to mention (`S…`).
    pub mention: Option<String>,
    /// The web chat's link to the conversation.
    pub link: Option<String>,
}

/// The message of a pending approval or question, with its buttons.
pub fn request_message(approval: &PendingApproval, shown: &Presentation) -> Message {
    let mut blocks = Vec::new();
    let title = match &approval.question {
        Some(_) => format!("Question from {}", approval.tool_name),
        None => format!("Approval needed: {}", approval.tool_name),
    };
    blocks.push(header(&title));
    if let Some(group) = &shown.mention {
        blocks.push(section(&format!("<!subteam^{group}>")));
    }
    blocks.extend(summary_blocks(approval, shown));
    blocks.push(buttons(approval));
    let by = approval
        .requested_by
        .as_ref()
        .map(|a| {
            format!(
                " (requested by {})",
                a.name.as_deref().unwrap_or(&a.subject)
            )
        })
        .unwrap_or_default();
    Message {
        text: format!("{title}{by}"),
        blocks: Value::Array(blocks),
    }
}

/// The message once decided (or gone without a decision): no buttons.
pub fn decided_message(
    approval: Option<&PendingApproval>,
    decision: Option<&ApprovalDecision>,
    shown: &Presentation,
) -> Message {
    let outcome = outcome_text(decision);
    let mut blocks = Vec::new();
    if let Some(approval) = approval {
        let title = match &approval.question {
            Some(_) => format!("Question from {}", approval.tool_name),
            None => format!("Approval: {}", approval.tool_name),
        };
        blocks.push(header(&title));
        blocks.extend(summary_blocks(approval, shown));
    }
    blocks.push(section(&outcome));
    if let Some(edited) = decision.and_then(|d| d.edited_arguments.as_ref()) {
        blocks.push(section(&format!(
            "*Edited arguments*\n```{}```",
            escape(&collapse(edited))
        )));
    }
    Message {
        text: strip_marks(&outcome),
        blocks: Value::Array(blocks),
    }
}

/// A reminder, posted in the approval's thread.
pub fn reminder_text(approval: &PendingApproval, shown: &Presentation) -> String {
    let mention = shown
        .mention
        .as_ref()
        .map(|g| format!("<!subteam^{g}> "))
        .unwrap_or_default();
    let expiry = approval
        .expires_at
        .map(|at| format!("; it expires {}", date(at)))
        .unwrap_or_default();
    let what = match approval.question {
        Some(_) => "This question still waits for an answer",
        None => "This approval still waits for a decision",
    };
    format!("{mention}:bell: {what}{expiry}.")
}

/// What happened, in words.
fn outcome_text(decision: Option<&ApprovalDecision>) -> String {
    let Some(decision) = decision else {
        return ":grey_question: No longer waiting: the call was interrupted (see the conversation).".into();
    };
    let actor = &decision.decided_by;
    if actor.subject == EXPIRY_SUBJECT && actor.role.as_deref() == Some(EXPIRY_ROLE) {
        return format!(
            ":hourglass: Expired {}; not run.",
            date(decision.decided_at)
        );
    }
    let who = escape(actor.name.as_deref().unwrap_or(&actor.subject));
    let via = actor
        .via
        .as_deref()
        .map(|v| format!(" (via {v})"))
        .unwrap_or_default();
    let when = date(decision.decided_at);
    let reason = decision
        .reason
        .as_deref()
        .map(|r| format!(": {}", escape(r)))
        .unwrap_or_default();
    if decision.question {
        return match &decision.reply {
            Some(QuestionReply::Accept { answer }) => format!(
                ":speech_balloon: Answered by *{who}*{via} {when}: `{}`",
                escape(&cut(&answer_text(answer), MAX_VALUE_CHARS))
            ),
            Some(QuestionReply::Decline) => {
                format!(":no_entry_sign: Declined by *{who}*{via} {when}{reason}")
            }
            _ => format!(":no_entry_sign: Canceled by *{who}*{via} {when}{reason}"),
        };
    }
    match (decision.approved, decision.edited_arguments.is_some()) {
        (true, false) => format!(":white_check_mark: Approved by *{who}*{via} {when}{reason}"),
        (true, true) => {
            format!(":pencil2: Approved with edited arguments by *{who}*{via} {when}{reason}")
        }
        (false, _) => format!(":x: Rejected by *{who}*{via} {when}{reason}"),
    }
}

fn answer_text(answer: &Value) -> String {
    match answer {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Tool, requester, rule, expiry, the question or the arguments, a link.
fn summary_blocks(approval: &PendingApproval, shown: &Presentation) -> Vec<Value> {
    let mut fields = vec![field("Tool", &format!("`{}`", escape(&approval.tool_name)))];
    if let Some(actor) = &approval.requested_by {
        let name = actor.name.as_deref().unwrap_or(&actor.subject);
        fields.push(field("Requested by", &escape(name)));
    }
    if let Some(rule) = &approval.rule {
        fields.push(field("Rule", &escape(rule)));
    }
    if let Some(at) = approval.expires_at {
        fields.push(field("Expires", &date(at)));
    }
    let mut blocks = vec![json!({"type": "section", "fields": fields})];
    match &approval.question {
        Some(question) => blocks.push(section(&question_text(question))),
        None => {
            if !approval.description.is_empty() && approval.description != approval.tool_name {
                blocks.push(section(&escape(&cut(
                    &approval.description,
                    MAX_ARGUMENTS_CHARS,
                ))));
            }
            blocks.push(section(&format!(
                "*Arguments*\n```{}```",
                escape(&collapse(&approval.tool_args))
            )));
        }
    }
    let mut context = format!("approval `{}`", approval.uuid);
    if let Some(link) = &shown.link {
        context.push_str(&format!(" · <{link}|open the conversation>"));
    }
    blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": context}]}));
    blocks
}

fn question_text(question: &Question) -> String {
    let mut text = format!(
        "*Question*\n{}",
        escape(&cut(&question.text, MAX_ARGUMENTS_CHARS))
    );
    if let Some(url) = &question.url {
        text.push_str(&format!("\nOpen <{url}> yourself, then press *Done*."));
    }
    text
}

/// The buttons of a pending approval or question.
fn buttons(approval: &PendingApproval) -> Value {
    let uuid = approval.uuid.to_string();
    let elements = match &approval.question {
        Some(question) => question_buttons(question, &uuid),
        None => {
            let mut elements = vec![
                button("Approve", action::APPROVE, &uuid, Some("primary")),
                button("Reject", action::REJECT, &uuid, Some("danger")),
            ];
            if !approval.no_edit {
                elements.push(button("Edit", action::EDIT, &uuid, None));
            }
            elements
        }
    };
    json!({"type": "actions", "block_id": "asg_actions", "elements": elements})
}

fn question_buttons(question: &Question, uuid: &str) -> Vec<Value> {
    let choices: Vec<String> = match &question.url {
        Some(_) => vec!["done".to_string()],
        None => question.choices.clone(),
    };
    let as_buttons = !choices.is_empty()
        && choices.len() <= MAX_CHOICE_BUTTONS
        && choices.iter().all(|c| c.len() < 1_900);
    let mut elements: Vec<Value> = match as_buttons {
        true => choices
            .iter()
            .enumerate()
            .map(|(i, choice)| {
                // action_ids are unique within a block.
                let action_id = format!("{}_{i}", action::CHOOSE);
                button(choice, &action_id, &format!("{uuid}:{choice}"), None)
            })
            .collect(),
        false => vec![button("Answer…", action::ANSWER, uuid, Some("primary"))],
    };
    elements.push(button("Decline", action::DECLINE, uuid, Some("danger")));
    elements
}

/// The modal that edits an approval's arguments (`None`: too long to
/// edit in Slack).
pub fn edit_modal(approval: &PendingApproval, context: &ModalContext) -> Option<Value> {
    let arguments = serde_json::to_string_pretty(&approval.tool_args).ok()?;
    if arguments.chars().count() > MAX_EDIT_CHARS {
        return None;
    }
    let intro = format!(
        "Edit the arguments of `{}` (JSON). The edited call is judged like any edit: the tool's schema and the rules.",
        escape(&approval.tool_name)
    );
    Some(modal_view(
        modal::EDIT,
        "Edit and approve",
        "Approve",
        &intro,
        &arguments,
        context,
    ))
}

/// The modal that takes a question's typed answer.
pub fn answer_modal(question: &Question, context: &ModalContext) -> Value {
    let mut intro = escape(&cut(&question.text, MAX_ARGUMENTS_CHARS));
    if context.json {
        intro.push_str("\nAnswer with a JSON object (the form's fields).");
    }
    let initial = match (&question.schema, context.json) {
        (Some(schema), true) => skeleton(schema),
        _ => String::new(),
    };
    modal_view(modal::ANSWER, "Answer", "Answer", &intro, &initial, context)
}

/// `{"field": null, …}` for a flat object schema.
fn skeleton(schema: &Value) -> String {
    let fields: Map<String, Value> = schema["properties"]
        .as_object()
        .map(|p| p.keys().map(|k| (k.clone(), Value::Null)).collect())
        .unwrap_or_default();
    serde_json::to_string_pretty(&fields).unwrap_or_default()
}

fn modal_view(
    callback_id: &str,
    title: &str,
    submit: &str,
    intro: &str,
    initial: &str,
    context: &ModalContext,
) -> Value {
    let mut input =
        json!({"type": "plain_text_input", "action_id": modal::INPUT, "multiline": true});
    if !initial.is_empty() {
        input["initial_value"] = Value::String(initial.to_string());
    }
    json!({
        "type": "modal",
        "callback_id": callback_id,
        "private_metadata": serde_json::to_string(context).unwrap_or_default(),
        "title": plain(title),
        "submit": plain(submit),
        "close": plain("Cancel"),
        "blocks": [
            section(intro),
            {"type": "input", "block_id": modal::INPUT_BLOCK, "label": plain("Answer"), "element": input}
        ]
    })
}

/// Pretty JSON with long strings cut, capped at [`MAX_ARGUMENTS_CHARS`].
pub fn collapse(arguments: &Map<String, Value>) -> String {
    let shortened = Value::Object(
        arguments
            .iter()
            .map(|(k, v)| (k.clone(), shorten(v)))
            .collect(),
    );
    let text = serde_json::to_string_pretty(&shortened).unwrap_or_default();
    let total = text.chars().count();
    if total <= MAX_ARGUMENTS_CHARS {
        return text;
    }
    let kept: String = text.chars().take(MAX_ARGUMENTS_CHARS).collect();
    format!(
        "{kept}\n… ({} more characters; the full arguments are in the conversation)",
        total - MAX_ARGUMENTS_CHARS
    )
}

fn shorten(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(cut(text, MAX_VALUE_CHARS)),
        Value::Array(items) => Value::Array(items.iter().map(shorten).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), shorten(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` cut to `max` characters, saying how many were left out.
fn cut(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}… ({} more characters)", total - max)
}

/// Slack's mrkdwn escaping: `&`, `<`, `>`.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A date Slack shows in the reader's time zone (UTC as the fallback).
fn date(at: DateTime<Utc>) -> String {
    format!(
        "<!date^{}^{{date_short_pretty}} {{time}}|{}>",
        at.timestamp(),
        at.format("%Y-%m-%d %H:%M UTC")
    )
}

/// A notification text without emoji codes and bold marks.
fn strip_marks(text: &str) -> String {
    let without_emoji = match text.strip_prefix(':').and_then(|t| t.split_once(": ")) {
        Some((_, rest)) => rest.to_string(),
        None => text.to_string(),
    };
    without_emoji.replace('*', "")
}

fn header(text: &str) -> Value {
    json!({"type": "header", "text": plain(&cut(text, 140))})
}

fn section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": text}})
}

fn field(name: &str, value: &str) -> Value {
    json!({"type": "mrkdwn", "text": format!("*{name}*\n{value}")})
}

fn plain(text: &str) -> Value {
    json!({"type": "plain_text", "text": text})
}

fn button(text: &str, action_id: &str, value: &str, style: Option<&str>) -> Value {
    let mut button = json!({
        "type": "button",
        "text": plain(&cut(text, MAX_BUTTON_CHARS)),
        "action_id": action_id,
        "value": value,
    });
    if let Some(style) = style {
        button["style"] = Value::String(style.to_string());
    }
    button
}

#[cfg(test)]
mod tests;
