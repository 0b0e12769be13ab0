//! The prompts in place for one pending item: an approval (`[a]pprove`,
//! `[r]eject` with a reason, `[e]dit` in `$EDITOR`, `[d]etails`,
//! `[s]kip`) or a question (a numbered choice, a JSON form or free text;
//! empty declines). Each ends with the server's answer to the decision,
//! or None when the person left it pending.

use asg_shared::PendingApproval;
use asg_shared::Question;
use asg_shared::rest::{AnswerRequest, ApprovalRequest, ConversationResponse};

use crate::client::Client;
use crate::editor::edit_arguments;
use crate::error::Result;
use crate::format::{
    answer_value, approval_block, approval_details, pretty_arguments, question_block,
};
use crate::keys::{ApprovalKey, approval_key, approval_keys_hint};
use crate::style::Style;
use crate::terminal::Input;

/// Asks for a decision on `approval` and sends it.
pub async fn approval(
    client: &Client,
    style: &Style,
    input: &mut dyn Input,
    approval: &PendingApproval,
) -> Result<Option<ConversationResponse>> {
    println!("{}", approval_block(approval, style));
    let editable = !approval.no_edit;
    loop {
        let key = input.key(&style.bold(approval_keys_hint(editable)))?;
        let body = match approval_key(key, editable) {
            None => continue,
            Some(ApprovalKey::Skip) => {
                println!("{}", style.dim("left pending"));
                return Ok(None);
            }
            Some(ApprovalKey::Details) => {
                println!("{}", approval_details(approval));
                continue;
            }
            Some(ApprovalKey::Approve) => ApprovalRequest {
                approved: Some(true),
                ..Default::default()
            },
            Some(ApprovalKey::Reject) => {
                let reason = input.line("reason (Enter for none):")?.unwrap_or_default();
                ApprovalRequest {
                    approved: Some(false),
                    reason: Some(reason.trim().to_string()).filter(|r| !r.is_empty()),
                    ..Default::default()
                }
            }
            Some(ApprovalKey::Edit) => match edit_arguments(&approval.tool_args) {
                Ok(arguments) => {
                    println!("approving with\n{}", pretty_arguments(&arguments));
                    ApprovalRequest {
                        approved: Some(true),
                        arguments: Some(arguments),
                        ..Default::default()
                    }
                }
                Err(error) => {
                    println!("{}", style.bad(&error.to_string()));
                    continue;
                }
            },
        };
        return client.decide(approval.uuid, &body).await.map(Some);
    }
}

/// Asks `question` and sends the answer (or the decline).
pub async fn question(
    client: &Client,
    style: &Style,
    input: &mut dyn Input,
    item: &PendingApproval,
    question: &Question,
) -> Result<Option<ConversationResponse>> {
    println!("{}", question_block(question, style));
    loop {
        let Some(line) = input.line("answer (empty declines):")? else {
            return Ok(None);
        };
        let body = if line.trim().is_empty() {
            AnswerRequest {
                action: Some("decline".into()),
                ..Default::default()
            }
        } else {
            match answer_value(question, &line) {
                Ok(answer) => AnswerRequest {
                    answer: Some(answer),
                    ..Default::default()
                },
                Err(message) => {
                    println!("{}", style.bad(&message));
                    continue;
                }
            }
        };
        return client.answer(item.uuid, &body).await.map(Some);
    }
}

/// Prompts for whichever `item` is.
pub async fn item(
    client: &Client,
    style: &Style,
    input: &mut dyn Input,
    item: &PendingApproval,
) -> Result<Option<ConversationResponse>> {
    match &item.question {
        Some(q) => question(client, style, input, item, q).await,
        None => approval(client, style, input, item).await,
    }
}
