//! The message history: user and assistant bubbles, error reports,
//! collapsed system prompts, and tool calls paired with their results.

use asg_shared::{Message, Role, ToolCall};
use leptos::html::Div;
use leptos::prelude::*;

use crate::components::args::{ArgsTable, JsonBlock, ShownValue};
use crate::components::markdown::Markdown;
use crate::components::rows::{Row, keyed_rows};
use crate::components::shown::shown_while;
use crate::logic::auth::{decision_for, decision_label, needs_sign_in};
use crate::logic::choices::{ArgChange, DecisionNotes, decision_notes};
use crate::logic::json::{Shown, show_text, split_trailing_json};
use crate::logic::labels::clock;
use crate::logic::timeline::{
    TimelineItem, ToolExchange, ToolState, build_timeline, is_collapsible, message_classes,
    role_name, shows_nodes,
};
use crate::state::AppState;

/// How close to the bottom (px) still counts as "at the bottom".
const STICK_DISTANCE: i32 = 80;

/// `#messages`: the scrolling history of the selected conversation, or a
/// welcome screen with suggestions when there is none.
#[component]
pub fn MessageList() -> impl IntoView {
    let state = expect_context::<AppState>();
    let timeline = Memo::new(move |_| {
        state.conversation.with(|c| {
            c.as_ref()
                .map(|c| build_timeline(&c.messages))
                .unwrap_or_default()
        })
    });
    let show_nodes = Memo::new(move |_| {
        state
            .conversation
            .with(|c| c.as_ref().is_some_and(|c| shows_nodes(&c.messages)))
    });
    let list = NodeRef::<Div>::new();
    let stick = StoredValue::new(true);

    // Follow new messages while the reader is at the bottom.
    Effect::new(move |_| {
        timeline.track();
        state.selected.track();
        let _ = state.working();
        if stick.get_value() {
            request_animation_frame(move || {
                if let Some(element) = list.get_untracked() {
                    element.set_scroll_top(element.scroll_height());
                }
            });
        }
    });
    Effect::new(move |_| {
        state.selected.track();
        stick.set_value(true);
    });
    let on_scroll = move |_| {
        if let Some(element) = list.get_untracked() {
            let distance = element.scroll_height() - element.scroll_top() - element.client_height();
            stick.set_value(distance < STICK_DISTANCE);
        }
    };
    let empty = move || timeline.with(Vec::is_empty) && state.selected.get().is_none();

    view! {
        <div
            id="messages"
            class="messages"
            class=("hide-nodes", move || !show_nodes.get())
            node_ref=list
            on:scroll=on_scroll
            aria-live="polite"
            aria-label="Messages"
        >
            {shown_while(Box::new(empty), Box::new(|| view! { <Welcome /> }.into_any()))}
            {keyed_rows(Box::new(move || timeline.get().into_iter().map(timeline_row).collect()))}
        </div>
    }
}

/// One row of the history: a message's bubble or a tool call's card.
fn timeline_row(item: TimelineItem) -> Row {
    Row::new(item.key(), move || match item {
        TimelineItem::Text(message) => view! { <TextMessage message=*message /> }.into_any(),
        TimelineItem::Tool(exchange) => view! { <ToolCard exchange=*exchange /> }.into_any(),
    })
}

/// The empty screen: what the agent can do and prompts to start with.
#[component]
fn Welcome() -> impl IntoView {
    let state = expect_context::<AppState>();
    let suggest = move |text: &'static str| {
        view! {
            <button
                type="button"
                class="suggestion"
                on:click=move |_| {
                    state.draft.set(text.to_string());
                    state.focus_composer();
                }
            >
                {text}
            </button>
        }
    };
    view! {
        <div class="welcome">
            <h1>"Start a conversation"</h1>
            <p class="muted">
                "The agent runs read-only tools at once and stops before destructive ones until you approve."
            </p>
            <div class="suggestions">
                {suggest("list resources")} {suggest("add resource web-1 with value 42")}
            </div>
            {shown_while(
                Box::new(move || !state.tools.with(Vec::is_empty)),
                Box::new(move || {
                    view! {
                        <p class="tools-line muted">
                            "Tools: "
                            {move || {
                                state
                                    .tools
                                    .with(|tools| {
                                        tools
                                            .iter()
                                            .map(|t| {
                                                if t.destructive_hint {
                                                    format!("{} (asks first)", t.name)
                                                } else {
                                                    t.name.clone()
                                                }
                                            })
                                            .collect::<Vec<_>>()
                                            .join(", ")
                                    })
                            }}
                        </p>
                    }
                    .into_any()
                }),
            )}
        </div>
    }
}

fn local_time(message: &Message) -> String {
    clock(
        message.created_at,
        js_sys::Date::new_0().get_timezone_offset() as i32,
    )
}

/// A user, assistant or system message, or an error report.
#[component]
fn TextMessage(message: Message) -> impl IntoView {
    let classes = message_classes(&message);
    let role = role_name(message.role);
    let node = message.node.clone();
    let time = local_time(&message);
    if is_collapsible(&message) {
        let label = match &node {
            Some(node) => format!("System prompt · {node}"),
            None => "System prompt".to_string(),
        };
        return view! {
            <details class=classes data-role=role data-id=message.id.to_string()>
                <summary>{label}</summary>
                <pre class="content">{message.content}</pre>
            </details>
        }
        .into_any();
    }
    let author = match (message.role, message.is_error) {
        (_, true) => "Error",
        (Role::User, _) => "You",
        (Role::Assistant, _) => "Agent",
        (Role::Tool, _) => "Tool",
        (Role::System, _) => "System",
    };
    view! {
        <div class=classes data-role=role data-id=message.id.to_string()>
            <div class="meta">
                <span class="author">{author}</span>
                {node.map(|node| view! { <span class="chip node">{node}</span> })}
                <span class="time">{time}</span>
            </div>
            <MessageBody role=message.role is_error=message.is_error content=message.content />
        </div>
    }
    .into_any()
}

/// A message's text. An agent's answer is Markdown, rendered to sanitized
/// HTML by the server ([`Markdown`]: no markup from the text gets through), or
/// JSON when the whole answer is JSON; everything else is plain text.
#[component]
fn MessageBody(role: Role, is_error: bool, content: String) -> impl IntoView {
    if role != Role::Assistant || is_error {
        return view! { <div class="content">{content}</div> }.into_any();
    }
    match show_text(&content) {
        Shown::Text(text) => match split_trailing_json(&text) {
            // Prose, then JSON: the JSON as a block, not a flattened line.
            Some((prose, json)) => view! {
                <Markdown text=prose class="content markdown" />
                <div class="content answer-json">
                    <ShownValue shown=json multiline=false open=true />
                </div>
            }
            .into_any(),
            None => view! { <Markdown text=text class="content markdown" /> }.into_any(),
        },
        Shown::Inline(json) => view! {
            <div class="content">
                <code class="json-inline">{json}</code>
            </div>
        }
        .into_any(),
        Shown::Collapsed { summary, pretty } => view! {
            <div class="content">
                <JsonBlock summary=summary pretty=pretty open=false />
            </div>
        }
        .into_any(),
    }
}

/// A tool's output: JSON inline or collapsed, other text as is.
#[component]
fn ToolOutput(content: String) -> impl IntoView {
    match show_text(&content) {
        Shown::Text(text) => view! { <pre>{text}</pre> }.into_any(),
        shown => view! { <ShownValue shown=shown multiline=false open=false /> }.into_any(),
    }
}

/// A tool call with its arguments and, once it has one, its result.
#[component]
fn ToolCard(exchange: ToolExchange) -> impl IntoView {
    let state = expect_context::<AppState>();
    let is_error = exchange.is_error();
    let result_label = result_label(&exchange);
    let name = exchange.name().to_string();
    let node = exchange.node().map(str::to_string);
    let note = exchange.note().map(str::to_string);
    let needs_approval = exchange.needs_approval();
    let args = exchange.call().map(|c| c.arguments.clone());
    let result = exchange.result.clone();
    let call_id = exchange.call_id().to_string();
    let decided = decided(state, exchange.call().cloned());
    let wants_sign_in = result
        .as_ref()
        .is_some_and(|r| is_error && needs_sign_in(&r.content));
    let tool_state = tool_state(state, exchange);
    view! {
        <div class="message tool" class:error=is_error data-role="tool" data-call-id=call_id>
            <div class="tool-call">
                <ToolHead name=name node=node needs_approval=needs_approval tool_state=tool_state />
                {note.map(|note| view! { <p class="tool-note">{note}</p> })}
                {args
                    .map(|args| {
                        view! {
                            <div class="tool-args">
                                <ArgsTable args=args />
                            </div>
                        }
                    })}
                {move || decided.get().map(decided_by)}
                {result
                    .map(|result| {
                        view! {
                            <ToolResultBox
                                label=result_label
                                content=result.content
                                is_error=is_error
                                wants_sign_in=wants_sign_in
                            />
                        }
                    })}
            </div>
        </div>
    }
}

/// The label over a tool's result.
fn result_label(exchange: &ToolExchange) -> &'static str {
    if exchange.is_rejected() {
        "Not run"
    } else if exchange.is_error() {
        "Error"
    } else {
        "Result"
    }
}

/// A decided approval as its tool card shows it.
#[derive(Debug, Clone, PartialEq)]
struct Decided {
    approved: bool,
    label: String,
    notes: DecisionNotes,
}

/// Whether the call's approval was decided: approved?, the line that says
/// by whom, and whether the arguments were edited or the tool remembered.
fn decided(state: AppState, call: Option<ToolCall>) -> Memo<Option<Decided>> {
    Memo::new(move |_| {
        let call = call.as_ref()?;
        let approval = call.approval_uuid?;
        state.conversation.with(|c| {
            c.as_ref()
                .and_then(|c| decision_for(&c.decisions, approval))
                .map(|d| Decided {
                    approved: d.approved,
                    label: decision_label(d),
                    notes: decision_notes(d, Some(&call.arguments)),
                })
        })
    })
}

/// Where the call stands, following the conversation and the turn.
fn tool_state(state: AppState, exchange: ToolExchange) -> Memo<ToolState> {
    Memo::new(move |_| {
        let working = state.working();
        state
            .conversation
            .with(|c| exchange.state(c.as_ref().map_or(&[], |c| c.pending()), working))
    })
}

/// The tool's name, node, approval chip and state chip.
#[component]
fn ToolHead(
    name: String,
    node: Option<String>,
    needs_approval: bool,
    tool_state: Memo<ToolState>,
) -> impl IntoView {
    view! {
        <div class="tool-head">
            <span class="tool-icon" aria-hidden="true"></span>
            <span class="tool-name">{name}</span>
            {node.map(|node| view! { <span class="chip node">{node}</span> })}
            {needs_approval
                .then(|| view! { <span class="chip tool-approval">"needed approval"</span> })}
            <span class=move || {
                format!("chip tool-state {}", tool_state.get().class())
            }>{move || tool_state.get().label()}</span>
        </div>
    }
}

/// Who decided the call's approval, and how: edited arguments (and the
/// ones that ran), remembered for the conversation.
fn decided_by(decided: Decided) -> impl IntoView {
    let Decided {
        approved,
        label,
        notes,
    } = decided;
    view! {
        <p class="tool-decided-by" class:approved=approved class:rejected=!approved>
            {label}
            {notes
                .edited
                .map(|note| view! { <span class="chip tool-edited">{note}</span> })}
            {notes
                .remembered
                .map(|note| view! { <span class="chip tool-remembered">{note}</span> })}
        </p>
        {notes
            .edited_arguments
            .map(|shown| {
                view! {
                    <div class="tool-edited-args">
                        <span class="muted">"Ran with: "</span>
                        <ShownValue shown=shown multiline=false open=false />
                    </div>
                }
            })}
        {(!notes.changes.is_empty()).then(|| args_diff(notes.changes))}
    }
}

/// `.tool-edited-args` as a diff: each argument the approver changed,
/// as requested (struck) and as it ran.
fn args_diff(changes: Vec<ArgChange>) -> impl IntoView {
    view! {
        <table class="tool-edited-args args-diff">
            {changes
                .into_iter()
                .map(|change| {
                    view! {
                        <tr>
                            <th>{change.name}</th>
                            <td><del>{change.before.unwrap_or_else(|| "—".into())}</del></td>
                            <td><ins>{change.after.unwrap_or_else(|| "—".into())}</ins></td>
                        </tr>
                    }
                })
                .collect_view()}
        </table>
    }
}

/// A tool's result, with the offer to sign in when the tool server asked
/// for it.
#[component]
fn ToolResultBox(
    label: &'static str,
    content: String,
    is_error: bool,
    wants_sign_in: bool,
) -> impl IntoView {
    view! {
        <div class="tool-result" class:error=is_error>
            <div class="tool-result-label">{label}</div>
            <ToolOutput content=content />
            {wants_sign_in.then(|| view! { <SignInRetry /> })}
        </div>
    }
}

/// "The tool server needs you to sign in", with a button to sign in and
/// send the last message again when login is configured.
#[component]
fn SignInRetry() -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
        <div class="tool-sign-in">
            <span>"The tool server needs you to sign in."</span>
            {shown_while(
                Box::new(move || state.auth.with(|a| a.login_configured())),
                Box::new(move || {
                    view! {
                        <button
                            type="button"
                            class="btn small primary sign-in-retry"
                            on:click=move |_| resend_after_sign_in(state)
                        >
                            "Sign in and send again"
                        </button>
                    }
                    .into_any()
                }),
            )}
        </div>
    }
}

/// Signs in, then sends the conversation's last user message again.
fn resend_after_sign_in(state: AppState) {
    let last = state.conversation.with_untracked(|c| {
        c.as_ref().and_then(|c| {
            let text = c
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.content.clone())?;
            Some((c.id, text))
        })
    });
    if let Some((id, text)) = last {
        state.sign_in_and_resend(id, text);
    }
}
