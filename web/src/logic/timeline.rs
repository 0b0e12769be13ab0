//! The message history as the chat shows it: text messages, and tool calls
//! paired with their results (the assistant message carrying a `tool_call`
//! and the tool message whose `tool_result.call_id` matches become one
//! item).

use std::borrow::Borrow;

use asg_shared::{ApprovalState, Message, PendingApproval, Role, ToolCall};

/// One entry of the chat.
#[derive(Debug, Clone, PartialEq)]
pub enum TimelineItem {
    /// A user, assistant or system message, or an error report.
    Text(Box<Message>),
    /// A tool call with its result, when it has one.
    Tool(Box<ToolExchange>),
}

/// A tool call and its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolExchange {
    /// The assistant message that requested the call (absent when only a
    /// result was recorded).
    pub call_message: Option<Message>,
    /// The tool message with the result.
    pub result: Option<Message>,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    /// Stopped until a human approves or rejects it.
    AwaitingApproval,
    /// Stopped until a human answers its question (`ask_human`).
    AwaitingAnswer,
    /// Running (the agent is still working on the turn).
    Running,
    /// No result was recorded and nothing is running.
    NoResult,
    /// Finished without error.
    Succeeded,
    /// A human rejected it; it did not run.
    Rejected,
    /// Failed or interrupted.
    Failed,
}

impl ToolState {
    /// Short label for the badge.
    pub fn label(self) -> &'static str {
        match self {
            ToolState::AwaitingApproval => "awaiting approval",
            ToolState::AwaitingAnswer => "awaiting an answer",
            ToolState::Running => "running",
            ToolState::NoResult => "no result",
            ToolState::Succeeded => "done",
            ToolState::Rejected => "rejected",
            ToolState::Failed => "failed",
        }
    }

    /// CSS class for the badge.
    pub fn class(self) -> &'static str {
        match self {
            ToolState::AwaitingApproval | ToolState::AwaitingAnswer => "awaiting",
            ToolState::Running => "running",
            ToolState::NoResult => "no-result",
            ToolState::Succeeded => "done",
            ToolState::Rejected => "rejected",
            ToolState::Failed => "failed",
        }
    }
}

impl ToolExchange {
    /// The requested call.
    pub fn call(&self) -> Option<&ToolCall> {
        self.call_message.as_ref()?.tool_call.as_deref()
    }

    /// The call id linking call and result.
    pub fn call_id(&self) -> &str {
        if let Some(call) = self.call() {
            return &call.id;
        }
        self.result
            .as_ref()
            .and_then(|m| m.tool_result.as_ref())
            .map_or("", |r| r.call_id.as_str())
    }

    /// The tool (or sub-agent) name.
    pub fn name(&self) -> &str {
        if let Some(call) = self.call() {
            return &call.name;
        }
        self.result
            .as_ref()
            .and_then(|m| m.tool_result.as_ref())
            .map_or("tool", |r| r.name.as_str())
    }

    /// True when the call needed a human approval.
    pub fn needs_approval(&self) -> bool {
        self.call().is_some_and(|c| c.needs_approval)
    }

    /// The pipeline node that made the call.
    pub fn node(&self) -> Option<&str> {
        self.call_message
            .as_ref()
            .and_then(|m| m.node.as_deref())
            .or_else(|| self.result.as_ref().and_then(|m| m.node.as_deref()))
    }

    /// Text the model wrote alongside the call, if any.
    pub fn note(&self) -> Option<&str> {
        self.call_message
            .as_ref()
            .map(|m| m.content.trim())
            .filter(|text| !text.is_empty())
    }

    /// True when the result is an error (failure, rejection, interruption).
    pub fn is_error(&self) -> bool {
        self.result
            .as_ref()
            .is_some_and(|m| m.is_error || m.tool_result.as_ref().is_some_and(|r| r.is_error))
    }

    /// True when a human rejected the call (the server records the
    /// refusal as an error result starting with "Rejected by the user").
    pub fn is_rejected(&self) -> bool {
        self.needs_approval()
            && self.is_error()
            && self
                .result
                .as_ref()
                .is_some_and(|m| m.content.trim_start().starts_with("Rejected by the user"))
    }

    /// Where the call stands, given the approvals the conversation waits
    /// for and whether the agent is still working (an approved call that
    /// runs is no longer awaiting approval).
    pub fn state(&self, pending: &[PendingApproval], working: bool) -> ToolState {
        let awaits = pending
            .iter()
            .find(|p| p.call_id == self.call_id() && p.state == ApprovalState::Pending);
        match &self.result {
            Some(_) if self.is_rejected() => ToolState::Rejected,
            Some(_) if self.is_error() => ToolState::Failed,
            Some(_) => ToolState::Succeeded,
            None if awaits.is_some_and(PendingApproval::is_question) => ToolState::AwaitingAnswer,
            None if awaits.is_some() => ToolState::AwaitingApproval,
            None if working => ToolState::Running,
            None => ToolState::NoResult,
        }
    }
}

impl TimelineItem {
    /// A key that changes whenever the item's content changes (a result
    /// joining its call), for keyed list rendering.
    pub fn key(&self) -> String {
        match self {
            TimelineItem::Text(m) => m.id.to_string(),
            TimelineItem::Tool(t) => {
                let part = |m: &Option<Message>| m.as_ref().map(|m| m.id.to_string());
                format!(
                    "{}+{}",
                    part(&t.call_message).unwrap_or_default(),
                    part(&t.result).unwrap_or_default()
                )
            }
        }
    }
}

/// Builds the chat entries from a conversation's messages. A tool message
/// joins the latest earlier call with the same id that has no result yet
/// (ids may repeat across turns); a result without a call stands alone.
pub fn build_timeline(messages: &[impl Borrow<Message>]) -> Vec<TimelineItem> {
    let mut items: Vec<TimelineItem> = Vec::with_capacity(messages.len());
    for message in messages {
        let message: &Message = message.borrow();
        if message.tool_call.is_some() {
            items.push(TimelineItem::Tool(Box::new(ToolExchange {
                call_message: Some(message.clone()),
                result: None,
            })));
            continue;
        }
        if let Some(result) = &message.tool_result {
            let open_call = items.iter_mut().rev().find_map(|item| match item {
                TimelineItem::Tool(t)
                    if t.result.is_none() && t.call().is_some_and(|c| c.id == result.call_id) =>
                {
                    Some(t)
                }
                _ => None,
            });
            match open_call {
                Some(exchange) => exchange.result = Some(message.clone()),
                None => items.push(TimelineItem::Tool(Box::new(ToolExchange {
                    call_message: None,
                    result: Some(message.clone()),
                }))),
            }
            continue;
        }
        items.push(TimelineItem::Text(Box::new(message.clone())));
    }
    items
}

/// True when node names are worth showing: the messages come from more
/// than one agent-tree node (a pipeline). A simple agent is one node, whose
/// name on every message would only be noise.
pub fn shows_nodes(messages: &[impl Borrow<Message>]) -> bool {
    let mut nodes = messages.iter().filter_map(|m| m.borrow().node.as_deref());
    match nodes.next() {
        Some(first) => nodes.any(|n| n != first),
        None => false,
    }
}

/// The role's wire name, for `data-role` and CSS classes.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// The CSS classes of a text message: `message`, its role, `error` for
/// error reports, `node-system` for a pipeline node's system prompt.
pub fn message_classes(message: &Message) -> String {
    let mut classes = format!("message {}", role_name(message.role));
    if message.is_error {
        classes.push_str(" error");
    }
    if is_node_prompt(message) {
        classes.push_str(" node-system");
    }
    classes
}

/// True for system messages (the configured prompt, a pipeline node's
/// resolved prompt), shown collapsed.
pub fn is_collapsible(message: &Message) -> bool {
    message.role == Role::System && !message.is_error
}

/// True for a pipeline node's resolved system prompt.
pub fn is_node_prompt(message: &Message) -> bool {
    message.role == Role::System && message.node.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fixtures::{approval, call, message, result};
    use serde_json::json;

    fn tools(items: &[TimelineItem]) -> Vec<&ToolExchange> {
        items
            .iter()
            .filter_map(|i| match i {
                TimelineItem::Tool(t) => Some(t.as_ref()),
                TimelineItem::Text(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_call_and_its_result_become_one_item_in_order() {
        let messages = vec![
            message(1, Role::System, "prompt"),
            message(2, Role::User, "list resources"),
            call(3, "c1", "resources_list", json!({}), false),
            result(4, "c1", "resources_list", "[]", false),
            message(5, Role::Assistant, "No resources."),
        ];
        let items = build_timeline(&messages);
        assert_eq!(items.len(), 4);
        let TimelineItem::Tool(exchange) = &items[2] else {
            panic!("expected a tool item: {items:?}");
        };
        assert_eq!(exchange.name(), "resources_list");
        assert_eq!(exchange.result.as_ref().unwrap().content, "[]");
        assert_eq!(exchange.state(&[], false), ToolState::Succeeded);
        assert!(matches!(&items[3], TimelineItem::Text(m) if m.content == "No resources."));
    }

    #[test]
    fn interleaved_parallel_calls_pair_by_call_id() {
        let messages = vec![
            call(1, "a", "tool_a", json!({"x": 1}), false),
            call(2, "b", "tool_b", json!({}), false),
            result(3, "b", "tool_b", "B", false),
            result(4, "a", "tool_a", "A", true),
        ];
        let items = build_timeline(&messages);
        let exchanges = tools(&items);
        assert_eq!(exchanges.len(), 2);
        assert_eq!(exchanges[0].call_id(), "a");
        assert_eq!(exchanges[0].result.as_ref().unwrap().content, "A");
        assert!(exchanges[0].is_error());
        assert_eq!(exchanges[0].state(&[], true), ToolState::Failed);
        assert_eq!(exchanges[1].result.as_ref().unwrap().content, "B");
    }

    #[test]
    fn repeated_call_ids_pair_with_the_latest_open_call() {
        let messages = vec![
            call(1, "call_1", "resources_list", json!({}), false),
            result(2, "call_1", "resources_list", "first", false),
            call(3, "call_1", "resources_list", json!({}), false),
            result(4, "call_1", "resources_list", "second", false),
        ];
        let items = build_timeline(&messages);
        let exchanges = tools(&items);
        assert_eq!(exchanges.len(), 2);
        assert_eq!(exchanges[0].result.as_ref().unwrap().content, "first");
        assert_eq!(exchanges[1].result.as_ref().unwrap().content, "second");
    }

    #[test]
    fn a_result_without_its_call_stands_alone() {
        let items = build_timeline(&[result(1, "gone", "resources_add", "interrupted", true)]);
        let exchanges = tools(&items);
        assert_eq!(exchanges.len(), 1);
        assert_eq!(exchanges[0].name(), "resources_add");
        assert_eq!(exchanges[0].call_id(), "gone");
        assert!(exchanges[0].call().is_none());
    }

    #[test]
    fn an_open_call_is_awaiting_approval_running_or_without_result() {
        let items = build_timeline(&[call(
            1,
            "c9",
            "resources_add",
            json!({"name": "web-1"}),
            true,
        )]);
        let exchange = tools(&items)[0];
        assert!(exchange.needs_approval());
        let pending = approval(50, "c9");
        assert_eq!(
            exchange.state(&[approval(51, "other"), pending.clone()], true),
            ToolState::AwaitingApproval
        );
        assert_eq!(
            exchange.state(&[approval(51, "other")], true),
            ToolState::Running
        );
        assert_eq!(exchange.state(&[], false), ToolState::NoResult);
        let mut asked = pending.clone();
        asked.question = Some(Box::new(
            serde_json::from_value(json!({"text": "Which?"})).unwrap(),
        ));
        let waiting = exchange.state(&[asked], true);
        assert_eq!(waiting, ToolState::AwaitingAnswer);
        assert_eq!(waiting.label(), "awaiting an answer");
        let mut approved = pending;
        approved.state = ApprovalState::Executing;
        assert_eq!(exchange.state(&[approved], true), ToolState::Running);
    }

    #[test]
    fn rejections_are_told_apart_from_failures() {
        let rejected = build_timeline(&[
            call(1, "c", "resources_add", json!({}), true),
            result(
                2,
                "c",
                "resources_add",
                "Rejected by the user: no. The call was not run.",
                true,
            ),
        ]);
        assert_eq!(tools(&rejected)[0].state(&[], false), ToolState::Rejected);
        let failed = build_timeline(&[
            call(1, "c", "resources_add", json!({}), true),
            result(2, "c", "resources_add", "database locked", true),
        ]);
        assert_eq!(tools(&failed)[0].state(&[], false), ToolState::Failed);
        // Without an approval gate the same text is a plain failure.
        let unapproved = build_timeline(&[
            call(1, "c", "t", json!({}), false),
            result(2, "c", "t", "Rejected by the user", true),
        ]);
        assert_eq!(tools(&unapproved)[0].state(&[], false), ToolState::Failed);
    }

    #[test]
    fn node_names_show_only_for_pipelines() {
        let mut a = message(1, Role::Assistant, "x");
        a.node = Some("resource-manager".into());
        let mut b = message(2, Role::Assistant, "y");
        b.node = Some("resource-manager".into());
        assert!(!shows_nodes(&[a.clone(), b.clone()]));
        b.node = Some("executor".into());
        assert!(shows_nodes(&[a.clone(), b]));
        assert!(!shows_nodes(&[message(3, Role::User, "hi")]));
    }

    #[test]
    fn keys_change_when_a_result_joins_its_call() {
        let open = build_timeline(&[call(1, "c", "t", json!({}), false)]);
        let done = build_timeline(&[
            call(1, "c", "t", json!({}), false),
            result(2, "c", "t", "ok", false),
        ]);
        assert_ne!(open[0].key(), done[0].key());
        assert!(done[0].key().starts_with(&open[0].key()));
    }

    #[test]
    fn node_names_and_notes_come_from_the_call() {
        let mut with_node = call(1, "c", "t", json!({}), false);
        with_node.node = Some("executor".into());
        with_node.content = "  Let me check.  ".into();
        let items = build_timeline(&[with_node]);
        let exchange = tools(&items)[0];
        assert_eq!(exchange.node(), Some("executor"));
        assert_eq!(exchange.note(), Some("Let me check."));
    }

    #[test]
    fn message_classes_name_the_role_errors_and_node_prompts() {
        let mut failure = message(1, Role::Assistant, "model failed");
        failure.is_error = true;
        assert_eq!(message_classes(&failure), "message assistant error");
        let mut node_prompt = message(2, Role::System, "Plan for: x");
        node_prompt.node = Some("analyzer".into());
        assert_eq!(message_classes(&node_prompt), "message system node-system");
        assert!(is_collapsible(&node_prompt));
        assert_eq!(
            message_classes(&message(3, Role::User, "hi")),
            "message user"
        );
        assert!(!is_collapsible(&message(4, Role::User, "hi")));
    }
}
