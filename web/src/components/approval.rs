//! The approval panel: what the agent wants to do, and Approve / Reject
//! (with an optional reason).

use asg_shared::PendingApproval;
use leptos::prelude::*;
use uuid::Uuid;

use crate::components::args::ArgsTable;
use crate::logic::auth::actor_label;
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
                <ApprovalActions uuid=uuid reason=reason />
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

/// The optional reason, Reject and Approve.
#[component]
fn ApprovalActions(uuid: Uuid, reason: RwSignal<String>) -> impl IntoView {
    let state = expect_context::<AppState>();
    let deciding = move || state.busy.get() > 0;
    let approve = move |_| state.decide(uuid, true, None);
    let reject = move |_| {
        let text = reason.get_untracked();
        state.decide(uuid, false, Some(text).filter(|t| !t.trim().is_empty()));
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
            <button id="approve" type="button" class="btn primary" disabled=deciding on:click=approve>
                "Approve"
            </button>
        </div>
    }
}
