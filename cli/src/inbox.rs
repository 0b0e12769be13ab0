//! `asg inbox`: the operator inbox (`GET /events`) live. Each approval
//! gets a number when it appears, kept until it is resolved; at a
//! terminal a number then `a` approves it, `r` rejects it (with a typed
//! reason). Piped, it only prints one line per event.

use std::io::Write;

use asg_shared::PendingApproval;
use asg_shared::events::InboxEvent;
use asg_shared::rest::ApprovalRequest;
use uuid::Uuid;

use crate::client::Client;
use crate::error::Result;
use crate::format::{approval_line, decision_line};
use crate::keys::{InboxAction, InboxInput, Key};
use crate::style::Style;
use crate::terminal::{RawMode, read_key};

/// The approvals on screen, by number.
#[derive(Debug, Default)]
pub struct InboxList {
    entries: Vec<(usize, PendingApproval)>,
    next: usize,
}

impl InboxList {
    /// Applies an event; returns the lines to print.
    pub fn apply(&mut self, event: InboxEvent, style: &Style) -> Vec<String> {
        match event {
            InboxEvent::Pending { approvals } => {
                let known: Vec<(usize, PendingApproval)> = std::mem::take(&mut self.entries);
                let mut lines = vec![style.bold(&format!("{} pending", approvals.len()))];
                for approval in approvals {
                    let number = known
                        .iter()
                        .find(|(_, a)| a.uuid == approval.uuid)
                        .map(|(n, _)| *n);
                    let number = number.unwrap_or_else(|| self.number());
                    lines.push(self.line(number, &approval, style));
                    self.entries.push((number, approval));
                }
                lines
            }
            InboxEvent::ApprovalRequested { approval } => {
                if self.entries.iter().any(|(_, a)| a.uuid == approval.uuid) {
                    return vec![];
                }
                let number = self.number();
                let line = format!(
                    "{} {}",
                    style.warn("new"),
                    self.line(number, &approval, style)
                );
                self.entries.push((number, approval));
                vec![line]
            }
            InboxEvent::ApprovalReminder { approval } => {
                let number = self.number_of(approval.uuid);
                let line = match number {
                    Some(n) => self.line(n, &approval, style),
                    None => approval_line(None, &approval, style),
                };
                vec![format!("{} {line}", style.warn("reminder"))]
            }
            InboxEvent::ApprovalResolved { uuid, decision, .. } => {
                let number = self.number_of(uuid);
                self.entries.retain(|(_, a)| a.uuid != uuid);
                let label = number.map_or(uuid.to_string(), |n| format!("#{n} {uuid}"));
                let how = decision.map_or("interrupted".to_string(), |d| decision_line(&d, style));
                vec![format!("{} {label}: {how}", style.dim("resolved"))]
            }
            InboxEvent::Status {
                conversation_id,
                status,
            } => vec![style.dim(&format!(
                "conversation {conversation_id} is {}",
                status.as_str()
            ))],
        }
    }

    fn number(&mut self) -> usize {
        self.next += 1;
        self.next
    }

    fn line(&self, number: usize, approval: &PendingApproval, style: &Style) -> String {
        let line = approval_line(Some(number), approval, style);
        if approval.is_question() {
            format!(
                "{line} {}",
                style.dim("(a question: answer it in the chat)")
            )
        } else {
            line
        }
    }

    /// The number shown for `uuid`.
    pub fn number_of(&self, uuid: Uuid) -> Option<usize> {
        self.entries
            .iter()
            .find(|(_, a)| a.uuid == uuid)
            .map(|(n, _)| *n)
    }

    /// The approval shown as number `number`.
    pub fn get(&self, number: usize) -> Option<&PendingApproval> {
        self.entries
            .iter()
            .find(|(n, _)| *n == number)
            .map(|(_, a)| a)
    }
}

/// Runs the inbox until the stream ends or the person quits.
pub async fn run(client: &Client, style: Style) -> Result<()> {
    let mut stream = client.events("/events").await?;
    let mut list = InboxList::default();
    if !style.interactive {
        while let Some(data) = stream.next().await? {
            for line in event_lines(&mut list, &data, &style) {
                println!("{line}");
            }
        }
        return Ok(());
    }
    let _raw = RawMode::on()?;
    let mut keys = spawn_key_reader();
    let mut input = InboxInput::Idle;
    let mut screen = Screen;
    screen.prompt(&input);
    loop {
        tokio::select! {
            data = stream.next() => {
                let Some(data) = data? else { break };
                screen.lines(&event_lines(&mut list, &data, &style));
            }
            key = keys.recv() => {
                let Some(key) = key else { break };
                let (next, action) = input.press(key);
                input = next;
                if action == InboxAction::Quit {
                    break;
                }
                let lines = act(client, &list, action, &style).await;
                screen.lines(&lines);
            }
        }
        screen.prompt(&input);
    }
    screen.lines(&[]);
    Ok(())
}

/// The lines for one event's data (an unreadable event is named, not
/// fatal: a newer server may send types this client does not know).
fn event_lines(list: &mut InboxList, data: &str, style: &Style) -> Vec<String> {
    match serde_json::from_str::<InboxEvent>(data) {
        Ok(event) => list.apply(event, style),
        Err(_) => vec![style.dim(&format!("event: {data}"))],
    }
}

/// Carries out a decision typed in the inbox; the lines saying how it went.
async fn act(client: &Client, list: &InboxList, action: InboxAction, style: &Style) -> Vec<String> {
    let (number, body) = match action {
        InboxAction::Approve(n) => (
            n,
            ApprovalRequest {
                approved: Some(true),
                ..Default::default()
            },
        ),
        InboxAction::Reject(n, reason) => (
            n,
            ApprovalRequest {
                approved: Some(false),
                reason,
                ..Default::default()
            },
        ),
        InboxAction::Nothing | InboxAction::Quit => return vec![],
    };
    let Some(approval) = list.get(number) else {
        return vec![style.bad(&format!("no approval #{number} pending"))];
    };
    if approval.is_question() {
        return vec![style.bad(&format!("#{number} is a question: answer it in the chat"))];
    }
    match client.decide(approval.uuid, &body).await {
        Ok(response) => {
            let answer = response.result.map(|r| r.response).unwrap_or_default();
            vec![format!("#{number} decided. {}", style.agent(&answer))]
        }
        Err(error) => vec![style.bad(&format!("#{number}: {error}"))],
    }
}

/// Keys from a thread that blocks on the terminal (crossterm's reads are
/// blocking), handed to the async loop.
fn spawn_key_reader() -> tokio::sync::mpsc::UnboundedReceiver<Key> {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        loop {
            match read_key() {
                Ok(Some(key)) => {
                    if sender.send(key).is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(_) => return,
            }
        }
    });
    receiver
}

/// The terminal in raw mode: lines end in `\r\n`, the input line is
/// redrawn below them.
struct Screen;

impl Screen {
    fn lines(&mut self, lines: &[String]) {
        let mut out = std::io::stdout();
        let _ = write!(out, "\r\x1b[2K");
        for line in lines {
            let _ = write!(out, "{}\r\n", line.replace('\n', "\r\n"));
        }
        let _ = out.flush();
    }

    fn prompt(&mut self, input: &InboxInput) {
        let mut out = std::io::stdout();
        let _ = write!(out, "\r\x1b[2K> {}", input.prompt());
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asg_shared::fixtures;

    fn approval(tool: &str) -> PendingApproval {
        fixtures::pending_approval(tool)
    }

    #[test]
    fn numbers_stay_with_their_approvals() {
        let style = Style::plain();
        let (a, b, c) = (approval("one"), approval("two"), approval("three"));
        let mut list = InboxList::default();
        let lines = list.apply(
            InboxEvent::Pending {
                approvals: vec![a.clone(), b.clone()],
            },
            &style,
        );
        assert_eq!(lines[0], "2 pending");
        assert!(
            lines[1].starts_with("#1 ") && lines[2].starts_with("#2 "),
            "{lines:?}"
        );
        let lines = list.apply(
            InboxEvent::ApprovalRequested {
                approval: c.clone(),
            },
            &style,
        );
        assert!(lines[0].starts_with("new #3 "), "{lines:?}");
        let lines = list.apply(
            InboxEvent::ApprovalResolved {
                uuid: a.uuid,
                conversation_id: a.conversation_id,
                decision: None,
            },
            &style,
        );
        assert_eq!(lines, [format!("resolved #1 {}: interrupted", a.uuid)]);
        assert_eq!(list.get(2).map(|x| x.uuid), Some(b.uuid));
        assert!(list.get(1).is_none());
        // A fresh `pending` (after a lag) keeps known numbers.
        list.apply(
            InboxEvent::Pending {
                approvals: vec![c.clone(), b.clone()],
            },
            &style,
        );
        assert_eq!(
            (list.number_of(c.uuid), list.number_of(b.uuid)),
            (Some(3), Some(2))
        );
    }

    #[test]
    fn an_unknown_event_is_shown_not_fatal() {
        let mut list = InboxList::default();
        let lines = event_lines(&mut list, r#"{"type":"future"}"#, &Style::plain());
        assert_eq!(lines, [r#"event: {"type":"future"}"#]);
    }
}
