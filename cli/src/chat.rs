//! `asg chat`: each line typed is a message (the first creates the
//! conversation); the agent's new messages are printed after each turn,
//! and a turn that stops for an approval or a question is prompted in
//! place until nothing waits or the person skips.

use asg_shared::rest::ConversationResponse;
use asg_shared::{ApprovalState, PendingApproval, Role};
use uuid::Uuid;

use crate::client::{Client, parse_uuid};
use crate::decide;
use crate::dirs::{history_file, process_env};
use crate::error::Result;
use crate::format::message_line;
use crate::style::Style;
use crate::terminal::{Input, PlainInput, TerminalInput};

/// One chat session.
struct Chat<'a> {
    client: &'a Client,
    style: Style,
    conversation: Option<Uuid>,
    /// Messages already shown (or typed).
    seen: usize,
}

/// Runs the session until Ctrl-D / end of input.
pub async fn run(client: &Client, style: Style, conversation: Option<String>) -> Result<()> {
    let conversation = conversation
        .map(|id| parse_uuid("conversation", &id))
        .transpose()?;
    let mut input: Box<dyn Input> = if style.interactive {
        Box::new(TerminalInput::new(history_file(process_env)))
    } else {
        Box::new(PlainInput::new(std::io::stdin().lock()))
    };
    let mut chat = Chat {
        client,
        style,
        conversation,
        seen: 0,
    };
    if let Some(id) = conversation {
        let response = client.conversation(id).await?;
        chat.seen = response.conversation.messages.len();
        println!(
            "{}",
            style.dim(&format!("conversation {id}, {} messages", chat.seen))
        );
        chat.settle(input.as_mut(), response).await?;
    } else if style.interactive {
        println!("{}", style.dim("type a message; Ctrl-D leaves"));
    }
    while let Some(line) = input.line("you>")? {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match chat.send(line).await {
            Ok(response) => chat.settle(input.as_mut(), response).await?,
            Err(error) => eprintln!("{}", style.bad(&format!("error: {error}"))),
        }
    }
    Ok(())
}

impl Chat<'_> {
    async fn send(&mut self, line: &str) -> Result<ConversationResponse> {
        let response = match self.conversation {
            Some(id) => self.client.send_message(id, line).await?,
            None => self.client.create_conversation(line).await?,
        };
        if self.conversation.is_none() {
            self.conversation = Some(response.conversation.id);
            println!(
                "{}",
                self.style
                    .dim(&format!("conversation {}", response.conversation.id))
            );
        }
        Ok(response)
    }

    /// Shows what the turn produced, then prompts for whatever waits,
    /// again after each decision, until nothing does (or it is skipped).
    async fn settle(
        &mut self,
        input: &mut dyn Input,
        mut response: ConversationResponse,
    ) -> Result<()> {
        loop {
            self.show(&response);
            let Some(item) = next_pending(&response) else {
                return Ok(());
            };
            match decide::item(self.client, &self.style, input, &item).await {
                Ok(Some(next)) => response = next,
                Ok(None) => return Ok(()),
                Err(error) => {
                    eprintln!("{}", self.style.bad(&format!("error: {error}")));
                    return Ok(());
                }
            }
        }
    }

    /// Prints the messages added since the last look (not the user's own,
    /// which are on the screen already), or the turn's answer.
    fn show(&mut self, response: &ConversationResponse) {
        let messages = &response.conversation.messages;
        let new = messages.get(self.seen..).unwrap_or_default();
        let mut answered = false;
        for message in new.iter().filter(|m| m.role != Role::User) {
            answered |= message.role == Role::Assistant && message.tool_call.is_none();
            if let Some(line) = message_line(message, &self.style) {
                println!("{line}");
            }
        }
        self.seen = messages.len();
        if let Some(result) = &response.result
            && !answered
            && !result.waiting_approval
            && result.question.is_none()
            && !result.response.is_empty()
        {
            println!(
                "{} {}",
                self.style.bold("agent>"),
                self.style.agent(&result.response)
            );
        }
    }
}

/// What waits now: the turn's approval or question, else the first
/// pending item of the conversation.
fn next_pending(response: &ConversationResponse) -> Option<PendingApproval> {
    let from_result = response
        .result
        .as_ref()
        .and_then(|r| r.approval.clone().or_else(|| r.question.clone()));
    from_result.or_else(|| {
        response
            .conversation
            .pending()
            .iter()
            .find(|p| p.state == ApprovalState::Pending)
            .cloned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use asg_shared::fixtures;
    use asg_shared::rest::TurnResult;

    #[test]
    fn the_turns_approval_comes_first_then_the_conversations() {
        let mut conversation = fixtures::conversation();
        let waiting = fixtures::pending_approval("resources_add");
        conversation.set_pending(vec![waiting.clone()]);
        let mut response = ConversationResponse {
            conversation,
            result: None,
        };
        assert_eq!(next_pending(&response).map(|p| p.uuid), Some(waiting.uuid));
        let other = fixtures::pending_approval("resources_remove");
        response.result = Some(TurnResult {
            response: String::new(),
            waiting_approval: true,
            approval: Some(other.clone()),
            question: None,
        });
        assert_eq!(next_pending(&response).map(|p| p.uuid), Some(other.uuid));
        response.result = None;
        response.conversation.set_pending(vec![]);
        assert!(next_pending(&response).is_none());
    }
}
