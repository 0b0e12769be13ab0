//! Conversation messages -> the history sent to a model.

use asg_shared::{Message, Role};

use crate::llm::{LlmMessage, LlmToolCall};

/// Converts stored messages to model history. System messages are left
/// out (the prompt travels separately), error reports about the model
/// itself are left out, consecutive tool requests become one assistant
/// message, and tool results keep their error flag.
pub fn to_llm_messages(messages: &[Message]) -> Vec<LlmMessage> {
    let mut history: Vec<LlmMessage> = Vec::with_capacity(messages.len());
    for message in messages {
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
