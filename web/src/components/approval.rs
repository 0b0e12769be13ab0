//! The approval panel: one card per approval the conversation waits for
//! (several when `parallel` branches each stopped), each with the call
//! (its tool and its arguments, once) and its own Approve / Reject (with
//! an optional reason); Approve & always allow in this conversation (or
//! with these same arguments) and approving with edited arguments (a
//! JSON editor) are one click away under "More…". A question is a
//! [`QuestionCard`] in the same panel.

use asg_shared::PendingApproval;
use chrono::{DateTime, Utc};
use leptos::html::Textarea;
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::api;
use crate::components::args::ArgsTable;
use crate::components::question::QuestionCard;
use crate::components::rows::{Row, keyed_rows};
use crate::components::shown::shown_while;
use crate::logic::approvals::{approval_cards, card_element_id, cards_summary, stopped_for};
use crate::logic::auth::actor_label;
use crate::logic::choices::{Choice, can_edit, can_remember, editor_text, parse_arguments};
use crate::logic::expiry::{expiry, next_tick};
use crate::logic::labels::clock;
use crate::state::AppState;

/// `#approval-panel`, while the selected conversation waits for decisions:
/// a card per approval (`.approval-card`), with a line over them when the
/// run waits for more than one.
#[component]
pub fn ApprovalPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    // Keyed by uuid: a card stays (with its typed reason) while others come
    // and go.
    let cards = Memo::new(move |_| {
        state
            .conversation
            .with(|c| c.as_ref().map(approval_cards).unwrap_or_default())
    });
    let summary = Memo::new(move |_| {
        let pending = cards.with(Vec::len);
        state.conversation.with(|c| {
            c.as_ref()
                .and_then(|c| cards_summary(pending, stopped_for(c, pending)))
        })
    });
    let first = Memo::new(move |_| cards.with(|c| c.first().map(|a| a.uuid)));
    view! {
        {shown_while(
            Box::new(move || !cards.with(Vec::is_empty)),
            Box::new(move || {
                view! {
                    <div
                        id="approval-panel"
                        class="approvals"
                        role="region"
                        aria-label="Approvals"
                    >
                        {move || {
                            summary
                                .get()
                                .map(|text| {
                                    view! {
                                        <p
                                            id="approvals-summary"
                                            class="approvals-summary"
                                            role="status"
                                        >
                                            {text}
                                        </p>
                                    }
                                })
                        }}
                        {keyed_rows(
                            Box::new(move || {
                                cards
                                    .get()
                                    .into_iter()
                                    .map(|approval| {
                                        Row::new(approval.uuid.to_string(), move || card(approval, first))
                                    })
                                    .collect()
                            }),
                        )}
                    </div>
                }
                .into_any()
            }),
        )}
    }
}

/// The card of one approval, or of one question.
fn card(approval: PendingApproval, first: Memo<Option<Uuid>>) -> AnyView {
    let uuid = approval.uuid;
    let first = Signal::derive(move || first.get() == Some(uuid));
    match approval.question.clone() {
        Some(question) => view! { <QuestionCard pending=approval question=*question /> }.into_any(),
        None => view! { <Card approval=approval first=first /> }.into_any(),
    }
}

/// The ids of one card's elements: plain on the first card, suffixed with
/// the approval's uuid on the others ([`card_element_id`]).
#[derive(Clone, Copy)]
struct CardIds {
    uuid: Uuid,
    first: Signal<bool>,
}

impl CardIds {
    fn id(self, base: &'static str) -> impl Fn() -> String + Copy + Send + Sync + 'static {
        move || card_element_id(base, self.first.get(), self.uuid)
    }
}

/// The card for one pending approval; the typed reason lives as long as
/// the card.
#[component]
fn Card(approval: PendingApproval, first: Signal<bool>) -> impl IntoView {
    let state = expect_context::<AppState>();
    let reason = RwSignal::new(String::new());
    let ids = CardIds {
        uuid: approval.uuid,
        first,
    };
    let editable = can_edit(&approval).then(|| approval.tool_args.clone());
    let remember = can_remember(&approval);
    view! {
        <section
            class="approval approval-card"
            data-approval=approval.uuid.to_string()
            data-node=approval.node.clone().unwrap_or_default()
            aria-labelledby=ids.id("approval-title")
        >
            {approval_head(ids, &approval)}
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
                <ApprovalActions ids=ids reason=reason editable=editable.clone() remember=remember />
            </Show>
        </section>
    }
}

/// The title, the node that asked (to tell several cards apart), the
/// remote agent that asked when there is one, and the countdown when
/// the approval expires.
fn approval_head(ids: CardIds, approval: &PendingApproval) -> impl IntoView + use<> {
    let node = approval.node.clone();
    let remote_agent = approval.remote_agent_name.clone();
    let expires_at = approval.expires_at;
    view! {
        <div class="approval-head">
            <span class="approval-icon" aria-hidden="true">"!"</span>
            <h2 id=ids.id("approval-title")>"Approval required"</h2>
            {node.map(|node| view! { <span class="chip node approval-head-node">{node}</span> })}
            {remote_agent
                .map(|agent| {
                    view! {
                        <span class="approval-remote chip">
                            "asked by remote agent "
                            <strong>{agent}</strong>
                        </span>
                    }
                })}
            {expires_at.map(|expires_at| view! { <ExpiryChip expires_at=expires_at /> })}
        </div>
    }
}

/// `.approval-expiry` (a chip): "expires in 23 h 59 min", counting down (each
/// minute, each second in the last two), then "expired".
#[component]
fn ExpiryChip(expires_at: DateTime<Utc>) -> impl IntoView {
    let now = RwSignal::new(browser_now());
    spawn_local(async move {
        while let Some(wait) = now
            .try_get_untracked()
            .and_then(|t| next_tick(expires_at, t))
        {
            api::sleep(wait).await;
            // The card is gone: stop.
            if now.try_set(browser_now()).is_some() {
                break;
            }
        }
    });
    let shown = Memo::new(move |_| expiry(expires_at, now.get()));
    let offset = js_sys::Date::new_0().get_timezone_offset() as i32;
    let title = format!(
        "Rejected as expired at {} if still undecided",
        clock(expires_at, offset)
    );
    view! {
        <span
            class="chip approval-expiry"
            class:urgent=move || shown.with(|e| e.urgent)
            class:expired=move || shown.with(|e| e.expired)
            data-expires-at=expires_at.to_rfc3339()
            title=title
        >
            {move || shown.with(|e| e.text.clone())}
        </span>
    }
}

/// The browser's clock.
fn browser_now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(js_sys::Date::now() as i64).unwrap_or_default()
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
    ids: CardIds,
    reason: RwSignal<String>,
    editable: Option<Map<String, Value>>,
    remember: bool,
) -> impl IntoView {
    let editing = RwSignal::new(false);
    let offer_edit = editable.is_some();
    move || match editable.clone().filter(|_| editing.get()) {
        Some(args) => view! { <ArgsEditor ids=ids args=args editing=editing /> }.into_any(),
        None => view! {
            <DecisionButtons
                ids=ids
                reason=reason
                offer_edit=offer_edit
                remember=remember
                editing=editing
            />
        }
        .into_any(),
    }
}

/// The optional reason, Reject, Approve, and under "More…" Edit
/// arguments (when `offer_edit`) and the ways to approve and remember
/// (when `remember`). Every button also carries `data-action`, to tell
/// the cards' buttons apart.
#[component]
fn DecisionButtons(
    ids: CardIds,
    reason: RwSignal<String>,
    offer_edit: bool,
    remember: bool,
    editing: RwSignal<bool>,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let uuid = ids.uuid;
    let deciding = move || state.busy.get() > 0;
    let approve = move |_| state.decide(uuid, Choice::Approve, None);
    let reject = move |_| {
        let text = reason.get_untracked();
        state.decide(uuid, Choice::Reject(Some(text)), None);
    };
    view! {
        <div class="approval-actions">
            <input
                id=ids.id("reject-reason")
                class="reject-reason"
                type="text"
                placeholder="Reason for rejecting (optional)"
                aria-label="Reason for rejecting (optional)"
                prop:value=move || reason.get()
                on:input=move |ev| reason.set(event_target_value(&ev))
            />
            <button
                id=ids.id("reject")
                data-action="reject"
                type="button"
                class="btn danger"
                disabled=deciding
                on:click=reject
            >
                "Reject"
            </button>
            {(offer_edit || remember).then(|| more_actions(ids, offer_edit, remember, editing))}
            <button
                id=ids.id("approve")
                data-action="approve"
                type="button"
                class="btn primary"
                disabled=deciding
                on:click=approve
            >
                "Approve"
            </button>
        </div>
    }
}

/// "More…": Edit arguments (when `offer_edit`) and the ways to approve
/// and remember (when `remember`).
fn more_actions(
    ids: CardIds,
    offer_edit: bool,
    remember: bool,
    editing: RwSignal<bool>,
) -> impl IntoView + use<> {
    view! {
        <details class="approval-more">
            <summary id=ids.id("more") data-action="more" class="btn">
                "More…"
            </summary>
            <div class="approval-more-actions">
                {offer_edit
                    .then(|| {
                        view! {
                            <button
                                id=ids.id("edit-args")
                                data-action="edit-args"
                                type="button"
                                class="btn"
                                on:click=move |_| editing.set(true)
                            >
                                "Edit arguments"
                            </button>
                        }
                    })}
                {remember.then(|| view! { <RememberButtons ids=ids /> })}
            </div>
        </details>
    }
}

/// Approve & always allow the tool in this conversation, or only with
/// these same arguments.
#[component]
fn RememberButtons(ids: CardIds) -> impl IntoView {
    let state = expect_context::<AppState>();
    let uuid = ids.uuid;
    let deciding = move || state.busy.get() > 0;
    let always = move |_| state.decide(uuid, Choice::ApproveAlways, None);
    let same = move |_| state.decide(uuid, Choice::ApproveSameArguments, None);
    view! {
        <button
            id=ids.id("approve-same-args")
            data-action="approve-same-args"
            type="button"
            class="btn"
            disabled=deciding
            on:click=same
        >
            "Approve & allow these same arguments"
        </button>
        <button
            id=ids.id("approve-always")
            data-action="approve-always"
            type="button"
            class="btn"
            disabled=deciding
            on:click=always
        >
            "Approve & always allow in this conversation"
        </button>
    }
}

/// The JSON editor: the arguments to run instead of the requested ones.
/// Text that is not a JSON object, and the agent's refusal (a 422: the
/// tool's schema, or editing not allowed), show beside its buttons; it
/// stays open.
#[component]
fn ArgsEditor(ids: CardIds, args: Map<String, Value>, editing: RwSignal<bool>) -> impl IntoView {
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
                state.decide(ids.uuid, Choice::ApproveEdited(arguments), Some(problem));
            }
            Err(message) => problem.set(Some(message)),
        }
    };
    view! {
        <div id=ids.id("args-editor") class="args-editor">
            <label for=ids.id("args-json")>"Arguments to run (JSON object)"</label>
            <textarea
                id=ids.id("args-json")
                class="args-json"
                rows=rows.to_string()
                spellcheck="false"
                node_ref=textarea
                aria-invalid=move || problem.with(Option::is_some).to_string()
                aria-describedby=ids.id("args-error")
                prop:value=initial
            ></textarea>
        </div>
        <EditorButtons
            ids=ids
            problem=problem
            editing=editing
            deciding=Signal::derive(deciding)
            submit=submit
        />
    }
}

/// The editor's problem line, Cancel and "Approve with these arguments";
/// next to each other, so they show however the card is scrolled.
#[component]
fn EditorButtons(
    ids: CardIds,
    problem: RwSignal<Option<String>>,
    editing: RwSignal<bool>,
    deciding: Signal<bool>,
    submit: impl Fn(leptos::ev::MouseEvent) + 'static,
) -> impl IntoView {
    view! {
        <div class="approval-actions args-editor-actions">
            {move || {
                problem
                    .get()
                    .map(|p| {
                        view! {
                            <p id=ids.id("args-error") class="args-error" role="alert">
                                {p}
                            </p>
                        }
                    })
            }}
            <button
                id=ids.id("cancel-edit")
                data-action="cancel-edit"
                type="button"
                class="btn"
                on:click=move |_| editing.set(false)
            >
                "Cancel"
            </button>
            <button
                id=ids.id("approve-edited")
                data-action="approve-edited"
                type="button"
                class="btn primary"
                disabled=deciding
                on:click=submit
            >
                "Approve with these arguments"
            </button>
        </div>
    }
}
