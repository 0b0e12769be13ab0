//! One approval mail: its subject, a plain-text body and an HTML
//! alternative naming the tool, the arguments (truncated), who asked,
//! the rule and the expiry, and the two links. Everything shown comes
//! from a model or a requester, so the HTML escapes it and the subject
//! loses control characters.

pub use asg_http::html::escape as escape_html;
use asg_shared::PendingApproval;
use chrono::{DateTime, SecondsFormat, Utc};
use lettre::Message;
use lettre::message::{Mailbox, MultiPart};

/// Most characters of the arguments shown in a mail.
pub const MAX_ARGUMENT_CHARS: usize = 1_500;

/// Most characters of the tool name in the subject.
const MAX_SUBJECT_TOOL_CHARS: usize = 60;

/// What a mail says, before it is laid out.
pub struct MailContent<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// The approval.
    pub approval: &'a PendingApproval,
    /// The Approve link.
    pub approve_url: &'a str,
    /// The Reject link.
    pub reject_url: &'a str,
    /// When the links stop working.
    pub links_expire: DateTime<Utc>,
    /// A reminder (`approval.remind_after`): the approval still waits.
    pub reminder: bool,
}

/// A laid-out mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailBody {
    /// The subject line.
    pub subject: String,
    /// The text/plain part.
    pub text: String,
    /// The text/html part.
    pub html: String,
}

/// At most `max` characters of `text`, with a note when cut.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!(
            "{}… (truncated: {} characters in all)",
            &text[..cut],
            text.chars().count()
        ),
    }
}

/// The arguments as indented JSON, truncated.
pub fn arguments_shown(approval: &PendingApproval) -> String {
    let json = serde_json::to_string_pretty(&approval.tool_args).unwrap_or_default();
    truncate(&json, MAX_ARGUMENT_CHARS)
}

/// Who asked, as shown.
pub fn requester_shown(approval: &PendingApproval) -> String {
    match &approval.requested_by {
        Some(actor) => match &actor.name {
            Some(name) => format!("{name} ({})", actor.subject),
            None => actor.subject.clone(),
        },
        None => "unknown (authentication is off)".into(),
    }
}

/// A time as shown (UTC).
pub fn time_shown(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The facts a mail and the confirmation page list: (label, value).
pub fn facts(approval: &PendingApproval) -> Vec<(&'static str, String)> {
    let mut facts = vec![
        ("Tool", approval.tool_name.clone()),
        ("Requested by", requester_shown(approval)),
        ("Conversation", approval.conversation_id.to_string()),
    ];
    if let Some(agent) = &approval.remote_agent_name {
        facts.push(("Sub-agent", agent.clone()));
    }
    if let Some(rule) = &approval.rule {
        facts.push(("Rule", rule.clone()));
    }
    let expires = approval
        .expires_at
        .map(time_shown)
        .unwrap_or_else(|| "never".into());
    facts.push(("Expires", expires));
    facts
}

/// The subject: the tool, without control characters, shortened.
fn subject(content: &MailContent<'_>) -> String {
    let tool: String = content
        .approval
        .tool_name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let tool = truncate(&tool, MAX_SUBJECT_TOOL_CHARS);
    let what = if content.reminder {
        "Reminder: approval still waiting"
    } else {
        "Approval needed"
    };
    format!("[{}] {what}: {tool}", content.agent)
}

/// Lays out the mail.
pub fn body(content: &MailContent<'_>) -> MailBody {
    let approval = content.approval;
    let facts = facts(approval);
    let arguments = arguments_shown(approval);
    let until = time_shown(content.links_expire);
    let mut text = format!("{} asks for your approval.\n\n", content.agent);
    for (label, value) in &facts {
        text.push_str(&format!("{label}: {value}\n"));
    }
    text.push_str(&format!(
        "Arguments:\n{arguments}\n\nApprove: {}\nReject:  {}\n\n\
         Each link opens a confirmation page; nothing is decided until you press its \
         button. The links work until {until}, once.\n",
        content.approve_url, content.reject_url
    ));
    let rows: String = facts
        .iter()
        .map(|(label, value)| {
            format!(
                "<tr><th align=\"left\">{label}</th><td>{}</td></tr>\n",
                escape_html(value)
            )
        })
        .collect();
    let html = format!(
        "<!DOCTYPE html>\n<html><body>\n<p>{agent} asks for your approval.</p>\n\
         <table>\n{rows}</table>\n<p>Arguments:</p>\n<pre>{arguments}</pre>\n\
         <p><a href=\"{approve}\">Approve</a> &nbsp; <a href=\"{reject}\">Reject</a></p>\n\
         <p>Each link opens a confirmation page; nothing is decided until you press its \
         button. The links work until {until}, once.</p>\n</body></html>\n",
        agent = escape_html(content.agent),
        arguments = escape_html(&arguments),
        approve = escape_html(content.approve_url),
        reject = escape_html(content.reject_url),
    );
    MailBody {
        subject: subject(content),
        text,
        html,
    }
}

/// The message to one recipient.
pub fn message(from: &Mailbox, to: &str, body: MailBody) -> Result<Message, String> {
    let to: Mailbox = to.parse().map_err(|e| format!("recipient {to:?}: {e}"))?;
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(body.subject)
        .multipart(MultiPart::alternative_plain_html(body.text, body.html))
        .map_err(|e| format!("building the mail: {e}"))
}

#[cfg(test)]
mod tests;
