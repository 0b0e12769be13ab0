//! `asg chat`: each line typed is a message. While a turn runs (a message,
//! or the run going on after a decision) the conversation's event stream
//! (`GET /conversations/{id}/events`) prints its messages as they are
//! saved — tool calls, results, the answer; what the stream missed is
//! printed from the turn's answer. A turn that stops for an approval or
//! a question is prompted in place until nothing waits or the person
//! skips.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

use asg_shared::events::ConversationEvent;
use asg_shared::rest::ConversationResponse;
use asg_shared::{ApprovalState, Message, PendingApproval, Role};
use uuid::Uuid;

use crate::client::{Client, EventStream, parse_uuid};
use crate::decide;
use crate::dirs::{history_file, process_env};
use crate::error::Result;
use crate::format::message_line;
use crate::style::Style;
use crate::terminal::{Input, PlainInput, TerminalInput};

/// Ids of the messages already on the screen (or typed), shared with the
/// task that prints the live stream: each message is printed once.
type Shown = Arc<Mutex<HashSet<Uuid>>>;

/// One chat session.
struct Chat<'a> {
    client: &'a Client,
    style: Style,
    conversation: Option<Uuid>,
    shown: Shown,
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
        shown: Shown::default(),
    };
    if let Some(id) = conversation {
        let response = client.conversation(id).await?;
        let messages = &response.conversation.messages;
        mark_shown(&chat.shown, messages);
        let count = messages.len();
        println!(
            "{}",
            style.dim(&format!("conversation {id}, {count} messages"))
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
    /// Sends a message; the first creates the conversation (empty, so its
    /// stream is open before the turn starts).
    async fn send(&mut self, line: &str) -> Result<ConversationResponse> {
        let id = match self.conversation {
            Some(id) => id,
            None => {
                let created = self.client.create_conversation(None).await?;
                let id = created.conversation.id;
                mark_shown(&self.shown, &created.conversation.messages);
                println!("{}", self.style.dim(&format!("conversation {id}")));
                self.conversation = Some(id);
                id
            }
        };
        self.live(id, self.client.send_message(id, line)).await
    }

    /// Runs `call` while the conversation's events print live.
    async fn live<T>(&self, id: Uuid, call: impl Future<Output = Result<T>>) -> Result<T> {
        let path = format!("/conversations/{id}/events");
        // Without a stream the answer is printed afterwards, all the same.
        let printer = match self.client.events(&path).await {
            Ok(stream) => Some(tokio::spawn(print_live(
                stream,
                self.shown.clone(),
                self.style,
            ))),
            Err(_) => None,
        };
        let result = call.await;
        if let Some(printer) = printer {
            printer.abort();
        }
        result
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
            let id = response.conversation.id;
            let decided = decide::item(self.client, &self.style, input, &item);
            match self.live(id, decided).await {
                Ok(Some(next)) => response = next,
                Ok(None) => return Ok(()),
                Err(error) => {
                    eprintln!("{}", self.style.bad(&format!("error: {error}")));
                    return Ok(());
                }
            }
        }
    }

    /// Prints the turn's messages the live stream did not (the person's
    /// own are on the screen already), or the turn's answer.
    fn show(&mut self, response: &ConversationResponse) {
        for message in &response.conversation.messages {
            print_once(&self.shown, message, &self.style);
        }
        let answered = response
            .conversation
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Assistant && m.tool_call.is_none());
        if let Some(result) = &response.result
            && !answered
            && !result.waiting_approval
            && result.question.is_none()
            && !result.response.is_empty()
        {
            let style = &self.style;
            println!("{} {}", style.bold("agent>"), style.agent(&result.response));
        }
    }
}

/// Prints the conversation's `message` events until the stream ends or
/// the task is aborted (the turn answered).
async fn print_live(mut stream: EventStream, shown: Shown, style: Style) {
    while let Ok(Some(data)) = stream.next().await {
        match serde_json::from_str::<ConversationEvent>(&data) {
            Ok(ConversationEvent::Snapshot { conversation }) => {
                mark_shown(&shown, &conversation.messages);
            }
            Ok(ConversationEvent::Message { message }) => print_once(&shown, &message, &style),
            _ => {}
        }
    }
}

/// Prints `message` unless it was shown; the person's own are only marked.
fn print_once(shown: &Shown, message: &Message, style: &Style) {
    if first_time(shown, message.id)
        && message.role != Role::User
        && let Some(line) = message_line(message, style)
    {
        println!("{line}");
    }
}

/// Whether `id` is new to the screen (and from now on it is not).
fn first_time(shown: &Shown, id: Uuid) -> bool {
    shown.lock().map(|mut set| set.insert(id)).unwrap_or(false)
}

fn mark_shown(shown: &Shown, messages: &[impl Borrow<Message>]) {
    if let Ok(mut set) = shown.lock() {
        set.extend(messages.iter().map(|m| m.borrow().id));
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
    fn a_message_is_shown_once_whoever_sees_it_first() {
        let shown = Shown::default();
        let (old, new) = (fixtures::uuid(), fixtures::uuid());
        let mut message = fixtures::message(Role::User, "old");
        message.id = old;
        mark_shown(&shown, &[message]);
        assert!(!first_time(&shown, old), "marked from the snapshot");
        assert!(first_time(&shown, new), "the live stream prints it");
        assert!(!first_time(&shown, new), "the turn's answer does not again");
    }

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
