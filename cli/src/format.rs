//! How things read on the terminal: approvals, questions, conversations,
//! decisions. Pure functions of the wire types and a [`Style`], so the
//! tests pin the text and check that plain output has no escape bytes.

use asg_shared::rest::{ConversationList, ConversationSummary};
use asg_shared::{ApprovalDecision, Conversation, Message, PendingApproval, Question, Role};
use serde_json::{Map, Value};

use crate::style::Style;

/// Arguments as indented JSON (the approval prompt shows them whole).
pub fn pretty_arguments(arguments: &Map<String, Value>) -> String {
    serde_json::to_string_pretty(arguments).unwrap_or_else(|_| "{}".into())
}

/// Arguments on one line (lists).
pub fn compact_arguments(arguments: &Map<String, Value>) -> String {
    serde_json::to_string(arguments).unwrap_or_else(|_| "{}".into())
}

/// The approval prompt's head: the tool and its arguments.
pub fn approval_block(approval: &PendingApproval, style: &Style) -> String {
    let mut text = format!(
        "{} {}\n",
        style.warn("Approval needed:"),
        style.bold(&approval.tool_name)
    );
    if !approval.description.is_empty() {
        text.push_str(&format!("{}\n", style.dim(&approval.description)));
    }
    text.push_str(&pretty_arguments(&approval.tool_args));
    text
}

/// Everything about an approval: rule, requester, expiry and the rest, as
/// the server sent it.
pub fn approval_details(approval: &PendingApproval) -> String {
    serde_json::to_string_pretty(approval).unwrap_or_else(|_| "{}".into())
}

/// One line of `asg approvals list` and the inbox: `[#N] uuid tool args
/// (conversation …)`.
pub fn approval_line(number: Option<usize>, approval: &PendingApproval, style: &Style) -> String {
    let number = number.map(|n| format!("#{n} ")).unwrap_or_default();
    let requester = approval
        .requested_by
        .as_ref()
        .map(|a| format!(" by {}", a.subject))
        .unwrap_or_default();
    format!(
        "{}{} {} {} {}",
        style.bold(&number),
        approval.uuid,
        style.bold(&approval.tool_name),
        compact_arguments(&approval.tool_args),
        style.dim(&format!(
            "(conversation {}{requester})",
            approval.conversation_id
        ))
    )
}

/// A question, with its choices numbered from 1.
pub fn question_block(question: &Question, style: &Style) -> String {
    let mut text = format!("{} {}", style.warn("Question:"), question.text);
    for (i, choice) in question.choices.iter().enumerate() {
        text.push_str(&format!("\n  {}. {choice}", i + 1));
    }
    if let Some(url) = &question.url {
        text.push_str(&format!("\n  open {url} yourself, then answer \"done\""));
    }
    text
}

/// The answer a person typed: a number picks a choice; a form question
/// (with a schema) takes a JSON object; anything else is the text.
pub fn answer_value(question: &Question, input: &str) -> Result<Value, String> {
    let input = input.trim();
    if !question.choices.is_empty() {
        if let Ok(n) = input.parse::<usize>() {
            return question
                .choices
                .get(n.wrapping_sub(1))
                .map(|c| Value::String(c.clone()))
                .ok_or_else(|| format!("pick 1 to {}", question.choices.len()));
        }
        return Ok(Value::String(input.to_string()));
    }
    if question.schema.is_some() {
        return match serde_json::from_str::<Value>(input) {
            Ok(value @ Value::Object(_)) => Ok(value),
            _ => Err("this question takes a JSON object, e.g. {\"value\": 3}".into()),
        };
    }
    Ok(Value::String(input.to_string()))
}

/// A decision as recorded: approved/rejected, by whom, why.
pub fn decision_line(decision: &ApprovalDecision, style: &Style) -> String {
    let verdict = if decision.approved {
        style.good("approved")
    } else {
        style.bad("rejected")
    };
    let reason = decision
        .reason
        .as_ref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    format!(
        "{} {verdict} by {}{reason}",
        decision.tool_name, decision.decided_by.subject
    )
}

/// One line of `asg conversations list`.
pub fn conversation_line(summary: &ConversationSummary, style: &Style) -> String {
    let title = summary.title.as_deref().unwrap_or("(no message)");
    let status = summary.status.as_str();
    let status = match summary.status {
        asg_shared::ConversationStatus::WaitingApproval => style.warn(status),
        _ => style.dim(status),
    };
    format!(
        "{} {status} {} messages  {title}",
        summary.id, summary.message_count
    )
}

/// `asg conversations list`: the lines, then the counts.
pub fn conversation_list(list: &ConversationList, style: &Style) -> String {
    let mut text: String = list
        .conversations
        .iter()
        .map(|c| conversation_line(c, style) + "\n")
        .collect();
    let s = &list.summary;
    text.push_str(&style.dim(&format!(
        "{} conversations: {} active, {} waiting for approval, {} completed, {} canceled",
        s.total, s.active, s.waiting_approval, s.completed, s.canceled
    )));
    text
}

/// One message of a conversation (system prompts are left out).
pub fn message_line(message: &Message, style: &Style) -> Option<String> {
    match message.role {
        Role::System => None,
        Role::User => Some(format!("{} {}", style.bold("you>"), message.content)),
        Role::Assistant => match &message.tool_call {
            Some(call) => Some(style.dim(&format!(
                "  calls {} {}",
                call.name,
                compact_arguments(&call.arguments)
            ))),
            None => Some(format!(
                "{} {}",
                style.bold("agent>"),
                style.agent(&message.content)
            )),
        },
        Role::Tool => {
            let failed = message.tool_result.as_ref().is_some_and(|r| r.is_error);
            let text = format!("  result: {}", message.content);
            Some(if failed {
                style.bad(&text)
            } else {
                style.dim(&text)
            })
        }
    }
}

/// `asg conversations show`: the head, every message, the decisions and
/// what is pending.
pub fn conversation_show(conversation: &Conversation, style: &Style) -> String {
    let mut lines = vec![format!(
        "{} {}",
        style.bold(&conversation.id.to_string()),
        conversation.status.as_str()
    )];
    lines.extend(
        conversation
            .messages
            .iter()
            .filter_map(|m| message_line(m, style)),
    );
    for decision in &conversation.decisions {
        lines.push(format!("decision: {}", decision_line(decision, style)));
    }
    for approval in conversation.pending() {
        lines.push(format!("pending: {}", approval_line(None, approval, style)));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use asg_shared::fixtures;

    fn approval() -> PendingApproval {
        let mut approval = fixtures::pending_approval("resources_add");
        approval.tool_args = serde_json::json!({"name": "web-1", "value": 3})
            .as_object()
            .cloned()
            .unwrap_or_default();
        approval
    }

    #[test]
    fn the_prompt_shows_the_tool_and_pretty_arguments() {
        let text = approval_block(&approval(), &Style::plain());
        assert!(
            text.starts_with("Approval needed: resources_add\n"),
            "{text}"
        );
        assert!(
            text.contains("{\n  \"name\": \"web-1\",\n  \"value\": 3\n}"),
            "{text}"
        );
    }

    #[test]
    fn plain_lines_have_no_escapes_and_coloured_ones_do() {
        let a = approval();
        let plain = approval_line(Some(2), &a, &Style::plain());
        assert!(plain.starts_with("#2 "), "{plain}");
        assert!(
            plain.contains(r#"resources_add {"name":"web-1","value":3}"#),
            "{plain}"
        );
        assert!(!plain.contains('\x1b'));
        let coloured = Style::decide(None, true, true);
        assert!(approval_line(Some(2), &a, &coloured).contains('\x1b'));
    }

    #[test]
    fn choices_are_numbered_and_picked_by_number() {
        let question = Question {
            text: "Which environment?".into(),
            choices: vec!["staging".into(), "production".into()],
            ..serde_json::from_value(serde_json::json!({"text": ""})).expect("question")
        };
        let text = question_block(&question, &Style::plain());
        assert!(text.ends_with("1. staging\n  2. production"), "{text}");
        assert_eq!(answer_value(&question, "2"), Ok("production".into()));
        assert_eq!(answer_value(&question, "staging"), Ok("staging".into()));
        assert!(answer_value(&question, "3").is_err());
        assert!(answer_value(&question, "0").is_err());
    }

    #[test]
    fn a_form_question_takes_a_json_object() {
        let question: Question = serde_json::from_value(serde_json::json!({
            "text": "Which value?", "schema": {"type": "object"}
        }))
        .expect("question");
        assert_eq!(
            answer_value(&question, r#"{"value": 3}"#),
            Ok(serde_json::json!({"value": 3}))
        );
        assert!(answer_value(&question, "3").is_err());
    }
}
