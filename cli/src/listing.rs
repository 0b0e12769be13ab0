//! The one-shot commands: `asg approvals list|approve|reject` and
//! `asg conversations list|show`. Their output is the same lines at a
//! terminal and in a pipe, coloured only at a terminal.

use asg_shared::rest::{ApprovalRequest, ConversationResponse};

use crate::args::{ApprovalsCommand, ConversationsCommand};
use crate::client::{Client, parse_uuid};
use crate::error::Result;
use crate::format::{approval_line, conversation_list, conversation_show, decision_line};
use crate::style::Style;

/// `asg approvals …`.
pub async fn approvals(client: &Client, style: &Style, command: ApprovalsCommand) -> Result<()> {
    match command {
        ApprovalsCommand::List => {
            let approvals = client.approvals().await?;
            for approval in &approvals {
                println!("{}", approval_line(None, approval, style));
            }
            println!("{}", style.dim(&format!("{} pending", approvals.len())));
            Ok(())
        }
        ApprovalsCommand::Approve { uuid } => {
            let uuid = parse_uuid("approval", &uuid)?;
            let body = ApprovalRequest {
                approved: Some(true),
                ..Default::default()
            };
            decided(&client.decide(uuid, &body).await?, uuid, style);
            Ok(())
        }
        ApprovalsCommand::Reject { uuid, reason } => {
            let uuid = parse_uuid("approval", &uuid)?;
            let body = ApprovalRequest {
                approved: Some(false),
                reason: reason.filter(|r| !r.trim().is_empty()),
                ..Default::default()
            };
            decided(&client.decide(uuid, &body).await?, uuid, style);
            Ok(())
        }
    }
}

/// Prints the recorded decision and the agent's answer after it.
fn decided(response: &ConversationResponse, uuid: uuid::Uuid, style: &Style) {
    let decision = response
        .conversation
        .decisions
        .iter()
        .find(|d| d.approval_uuid == uuid);
    match decision {
        Some(decision) => println!("{}", decision_line(decision, style)),
        None => println!("decided {uuid}"),
    }
    if let Some(result) = &response.result
        && !result.response.is_empty()
    {
        println!("{} {}", style.bold("agent>"), style.agent(&result.response));
    }
}

/// `asg conversations …`.
pub async fn conversations(
    client: &Client,
    style: &Style,
    command: ConversationsCommand,
) -> Result<()> {
    match command {
        ConversationsCommand::List => {
            println!(
                "{}",
                conversation_list(&client.conversations().await?, style)
            );
        }
        ConversationsCommand::Show { id } => {
            let id = parse_uuid("conversation", &id)?;
            let response = client.conversation(id).await?;
            println!("{}", conversation_show(&response.conversation, style));
        }
    }
    Ok(())
}
