//! Conversation messages -> the history sent to a model.

use std::borrow::Borrow;

use asg_shared::{Message, Role};

use crate::llm::{LlmMessage, LlmToolCall};

/// Converts stored messages to model history. System messages are left
/// out (the prompt travels separately), error reports about the model
/// itself are left out, consecutive tool requests become one assistant
/// message, and tool results keep their error flag.
pub fn to_llm_messages(messages: &[impl Borrow<Message>]) -> Vec<LlmMessage> {
    let mut history: Vec<LlmMessage> = Vec::with_capacity(messages.len());
    for message in messages {
        let message: &Message = message.borrow();
        match message.role {
            Role::System => {}
            Role::User => history.push(LlmMessage::User {
                text: message.content.clone(),
            }),
            Role::Assistant if message.is_error => {}
            Role::Assistant => match &message.tool_call {
                Some(call) => {
                    let call = LlmToolCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                        signature: call.provider_signature.clone(),
                    };
                    match history.last_mut() {
                        Some(LlmMessage::Assistant { tool_calls, .. })
                            if !tool_calls.is_empty() =>
                        {
                            tool_calls.push(call);
                        }
                        _ => history.push(LlmMessage::Assistant {
                            text: Some(message.content.clone()).filter(|t| !t.is_empty()),
                            tool_calls: vec![call],
                        }),
                    }
                }
                None => history.push(LlmMessage::Assistant {
                    text: Some(message.content.clone()),
                    tool_calls: Vec::new(),
                }),
            },
            Role::Tool => {
                if let Some(result) = &message.tool_result {
                    history.push(LlmMessage::Tool {
                        call_id: result.call_id.clone(),
                        name: result.name.clone(),
                        content: message.content.clone(),
                        is_error: result.is_error,
                    });
                }
            }
        }
    }
    history
}

/// How much history one model call may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryBudget {
    /// Most messages; `None`: no count limit.
    pub max_messages: Option<usize>,
    /// Estimated tokens (about 4 bytes a token).
    pub max_tokens: usize,
}

impl Default for HistoryBudget {
    fn default() -> Self {
        HistoryBudget {
            max_messages: None,
            max_tokens: 100_000,
        }
    }
}

/// What an elided tool result says instead.
pub const ELIDED: &str = "[older tool result elided to fit the history budget]";

/// Fits `history` to `budget`, so a long conversation keeps working
/// instead of failing for good at the model's context limit. Older tool
/// results are elided first; then the oldest exchanges are left out whole
/// (a tool result never loses its call). The last user message and
/// everything after it (the pending call and its results) are always
/// kept; the system prompt travels separately and is never cut.
pub fn fit(mut history: Vec<LlmMessage>, budget: &HistoryBudget) -> Vec<LlmMessage> {
    let protected = history
        .iter()
        .rposition(|m| matches!(m, LlmMessage::User { .. }))
        .unwrap_or(0);
    let over = |h: &[LlmMessage]| {
        estimate_tokens(h) > budget.max_tokens || budget.max_messages.is_some_and(|n| h.len() > n)
    };
    let mut i = 0;
    while over(&history) && i < protected {
        if let LlmMessage::Tool { content, .. } = &mut history[i]
            && content.len() > ELIDED.len()
        {
            *content = ELIDED.to_string();
        }
        i += 1;
    }
    let mut start = 0;
    let protected_start = protected;
    while over(&history[start..]) && start < protected_start {
        start = next_exchange(&history, start).min(protected_start);
    }
    if start > 0 {
        tracing::info!(
            left_out = start,
            kept = history.len() - start,
            "history over budget: older messages left out of the model call"
        );
    }
    history.split_off(start)
}

/// Index of the next message that can start a history: a user message
/// after `from`.
fn next_exchange(history: &[LlmMessage], from: usize) -> usize {
    history
        .iter()
        .enumerate()
        .skip(from + 1)
        .find(|(_, m)| matches!(m, LlmMessage::User { .. }))
        .map_or(history.len(), |(i, _)| i)
}

/// A rough token count: bytes / 4 of every text, argument and result.
pub fn estimate_tokens(history: &[LlmMessage]) -> usize {
    let bytes: usize = history
        .iter()
        .map(|m| match m {
            LlmMessage::User { text } => text.len(),
            LlmMessage::Assistant { text, tool_calls } => {
                text.as_ref().map_or(0, String::len)
                    + tool_calls
                        .iter()
                        .map(|c| {
                            c.name.len()
                                + serde_json::Value::Object(c.arguments.clone())
                                    .to_string()
                                    .len()
                        })
                        .sum::<usize>()
            }
            LlmMessage::Tool { content, .. } => content.len(),
        })
        .sum();
    bytes.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> LlmMessage {
        LlmMessage::User { text: text.into() }
    }
    fn call(id: &str) -> LlmMessage {
        LlmMessage::Assistant {
            text: None,
            tool_calls: vec![LlmToolCall {
                id: id.into(),
                name: "resources_list".into(),
                arguments: serde_json::Map::new(),
                signature: None,
            }],
        }
    }
    fn result(id: &str, size: usize) -> LlmMessage {
        LlmMessage::Tool {
            call_id: id.into(),
            name: "resources_list".into(),
            content: "x".repeat(size),
            is_error: false,
        }
    }
    fn answer(text: &str) -> LlmMessage {
        LlmMessage::Assistant {
            text: Some(text.into()),
            tool_calls: vec![],
        }
    }
    fn budget(max_messages: Option<usize>, max_tokens: usize) -> HistoryBudget {
        HistoryBudget {
            max_messages,
            max_tokens,
        }
    }

    #[test]
    fn history_within_budget_is_untouched() {
        let history = vec![user("a"), call("1"), result("1", 40), answer("done")];
        assert_eq!(fit(history.clone(), &budget(None, 1000)), history);
    }

    #[test]
    fn older_tool_results_are_elided_first() {
        let history = vec![
            user("list"),
            call("1"),
            result("1", 4000),
            answer("many"),
            user("list again"),
            call("2"),
            result("2", 400),
        ];
        let fitted = fit(history.clone(), &budget(None, 200));
        assert_eq!(fitted.len(), history.len(), "nothing left out");
        assert!(matches!(&fitted[2], LlmMessage::Tool { content, .. } if content == ELIDED));
        // The pending step's result is kept whole.
        assert_eq!(fitted[6], history[6]);
    }

    #[test]
    fn oldest_exchanges_go_next_and_results_keep_their_calls() {
        let mut history = Vec::new();
        for i in 0..50 {
            history.push(user(&format!("message {i} {}", "y".repeat(200))));
            history.push(call(&i.to_string()));
            history.push(result(&i.to_string(), 10));
            history.push(answer("ok"));
        }
        history.push(user("the last one"));
        history.push(call("last"));
        let fitted = fit(history.clone(), &budget(Some(20), 100_000));
        assert!(fitted.len() <= 20, "{}", fitted.len());
        assert!(matches!(fitted[0], LlmMessage::User { .. }));
        assert_eq!(fitted.last(), history.last());
        assert_eq!(fitted[fitted.len() - 2], user("the last one"));
        // Every tool result still follows its call.
        for (i, m) in fitted.iter().enumerate() {
            if let LlmMessage::Tool { call_id, .. } = m {
                assert!(fitted[..i].iter().any(|p| matches!(p,
                    LlmMessage::Assistant { tool_calls, .. } if tool_calls.iter().any(|c| &c.id == call_id))));
            }
        }
    }

    #[test]
    fn the_last_user_message_and_pending_call_survive_any_budget() {
        let history = vec![
            user("old"),
            answer("a"),
            user(&"z".repeat(10_000)),
            call("p"),
        ];
        let fitted = fit(history.clone(), &budget(Some(1), 10));
        assert_eq!(fitted, history[2..].to_vec());
    }
}
