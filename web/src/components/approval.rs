//! The approval panel: what the agent wants to do, and Approve / Reject
//! (with an optional reason), Approve & always allow in this
//! conversation, and approving with edited arguments (a JSON editor).

use asg_shared::PendingApproval;
use leptos::html::Textarea;
use leptos::prelude::*;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::components::args::ArgsTable;
use crate::logic::auth::actor_label;
use crate::logic::choices::{Choice, can_edit, editor_text, parse_arguments};
use crate::logic::events::shows_approval;
use crate::state::AppState;

/// `#approval-panel`, while the selected conversation waits for a decision.
#[component]
pub fn ApprovalPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    // Only a different approval re-renders the panel (a typed reason stays).
    let pending = Memo::new(move |_| {
        state.conversation.with(|c| {
            c.as_ref()
                .filter(|c| shows_approval(c))
                .and_then(|c| c.pending_approval.clone())
        })
    });
    move || {
        pending
            .get()
            .map(|approval| view! { <Panel approval=approval /> })
    }
}

/// The panel for one pending approval; the typed reason lives as long as
/// the panel.
#[component]
fn Panel(approval: PendingApproval) -> impl IntoView {
    let state = expect_context::<AppState>();
    let reason = RwSignal::new(String::new());
    let uuid = approval.uuid;
    let editable = can_edit(&approval).then(|| approval.tool_args.clone());
    view! {
        <section id="approval-panel" class="approval" aria-labelledby="approval-title">
            {approval_head(approval.remote_agent_name.clone())}
            <p class="approval-description">{approval.description.clone()}</p>
            <div class="approval-body">
                {approval_facts(&approval)}
                <div class="approval-args">
                    <ArgsTable args=approval.tool_args.clone() open_json=true />
                </div>
            </div>
            <Show
                when=move || state.auth.with(|a| a.can_approve())
                fallback=|| {
                    view! {
                        <p class="approval-no-permission muted">
                            "Waiting for an approver: only users with the approver role can approve or reject this action."
                        </p>
                    }
                }
            >
                <ApprovalActions uuid=uuid reason=reason editable=editable.clone() />
            </Show>
        </section>
    }
}

/// The title, and the remote agent that asked when there is one.
fn approval_head(remote_agent: Option<String>) -> impl IntoView {
    view! {
        <div class="approval-head">
            <span class="approval-icon" aria-hidden="true">"!"</span>
            <h2 id="approval-title">"Approval required"</h2>
            {remote_agent
                .map(|agent| {
                    view! {
                        <span class="approval-remote chip">
                            "asked by remote agent "
                            <strong>{agent}</strong>
                        </span>
                    }
                })}
        </div>
    }
}

/// The tool, node, requester and approval id.
fn approval_facts(approval: &PendingApproval) -> impl IntoView + use<> {
    view! {
        <dl class="approval-facts">
            <dt>"Tool"</dt>
            <dd>
                <code class="approval-tool">{approval.tool_name.clone()}</code>
            </dd>
            {approval
                .node
                .clone()
                .map(|node| {
                    view! {
                        <dt>"Node"</dt>
                        <dd class="approval-node">{node}</dd>
                    }
                })}
            {approval
                .requested_by
                .as_ref()
                .map(|actor| {
                    view! {
                        <dt>"Requested by"</dt>
                        <dd class="approval-requested-by">{actor_label(actor)}</dd>
                    }
                })}
            <dt>"Approval"</dt>
            <dd>
                <code class="approval-uuid">{approval.uuid.to_string()}</code>
            </dd>
        </dl>
    }
}

/// The decision buttons, or the JSON editor in their place while the
/// arguments are edited (`editable` holds them when they may be).
#[component]
fn ApprovalActions(
    uuid: Uuid,
    reason: RwSignal<String>,
    editable: Option<Map<String, Value>>,
) -> impl IntoView {
    let editing = RwSignal::new(false);
    let offer_edit = editable.is_some();
    move || match editable.clone().filter(|_| editing.get()) {
        Some(args) => view! { <ArgsEditor uuid=uuid args=args editing=editing /> }.into_any(),
        None => view! {
            <DecisionButtons uuid=uuid reason=reason offer_edit=offer_edit editing=editing />
        }
        .into_any(),
    }
}

/// The optional reason, Reject, Edit arguments (when `offer_edit`),
/// Approve & always allow in this conversation, Approve.
#[component]
fn DecisionButtons(
    uuid: Uuid,
    reason: RwSignal<String>,
    offer_edit: bool,
    editing: RwSignal<bool>,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let deciding = move || state.busy.get() > 0;
    let approve = move |_| state.decide(uuid, Choice::Approve, None);
    let always = move |_| state.decide(uuid, Choice::ApproveAlways, None);
    let reject = move |_| {
        let text = reason.get_untracked();
        state.decide(uuid, Choice::Reject(Some(text)), None);
    };
    view! {
        <div class="approval-actions">
            <input
                id="reject-reason"
                type="text"
                placeholder="Reason for rejecting (optional)"
                aria-label="Reason for rejecting (optional)"
                prop:value=move || reason.get()
                on:input=move |ev| reason.set(event_target_value(&ev))
            />
            <button id="reject" type="button" class="btn danger" disabled=deciding on:click=reject>
                "Reject"
            </button>
            <span class="actions-break" aria-hidden="true"></span>
            <Show when=move || offer_edit>
                <button id="edit-args" type="button" class="btn" on:click=move |_| editing.set(true)>
                    "Edit arguments"
                </button>
            </Show>
            <button id="approve-always" type="button" class="btn" disabled=deciding on:click=always>
                "Approve & always allow in this conversation"
            </button>
            <button id="approve" type="button" class="btn primary" disabled=deciding on:click=approve>
                "Approve"
            </button>
        </div>
    }
}

/// The JSON editor: the arguments to run instead of the requested ones.
/// Text that is not a JSON object, and the agent's refusal (a 422: the
/// tool's schema, or editing not allowed), show beside its buttons; it
/// stays open.
#[component]
fn ArgsEditor(uuid: Uuid, args: Map<String, Value>, editing: RwSignal<bool>) -> impl IntoView {
    let state = expect_context::<AppState>();
    let initial = editor_text(&args);
    let rows = initial.lines().count().clamp(4, 14) + 1;
    let problem = RwSignal::new(None::<String>);
    let textarea = NodeRef::<Textarea>::new();
    let deciding = move || state.busy.get() > 0;
    request_animation_frame(move || {
        if let Some(element) = textarea.get_untracked() {
            let _ = element.focus();
        }
    });
    let submit = move |_| {
        let text = textarea
            .get_untracked()
            .map(|t| t.value())
            .unwrap_or_default();
        match parse_arguments(&text) {
            Ok(arguments) => {
                problem.set(None);
                state.decide(uuid, Choice::ApproveEdited(arguments), Some(problem));
            }
            Err(message) => problem.set(Some(message)),
        }
    };
    view! {
        <div id="args-editor" class="args-editor">
            <label for="args-json">"Arguments to run (JSON object)"</label>
            <textarea
                id="args-json"
                class="args-json"
                rows=rows.to_string()
                spellcheck="false"
                node_ref=textarea
                aria-invalid=move || problem.with(Option::is_some).to_string()
                aria-describedby="args-error"
                prop:value=initial
            ></textarea>
        </div>
        // Next to the buttons, so it shows however the panel is scrolled.
        <div class="approval-actions args-editor-actions">
            {move || {
                problem
                    .get()
                    .map(|p| view! { <p id="args-error" class="args-error" role="alert">{p}</p> })
            }}
            <button id="cancel-edit" type="button" class="btn" on:click=move |_| editing.set(false)>
                "Cancel"
            </button>
            <button id="approve-edited" type="button" class="btn primary" disabled=deciding on:click=submit>
                "Approve with these arguments"
            </button>
        </div>
    }
}
