//! The sidebar: "New conversation", the pending-approval count and the
//! conversation list with status badges and pending markers (kept live by
//! the operator inbox). The list comes in pages: the next one is appended
//! when it is scrolled near its end, or with "Load more".

use asg_shared::rest::ConversationSummary;
use leptos::prelude::*;

use crate::api::LiveStatus;
use crate::components::rows::{Row, keyed_rows};
use crate::components::shown::shown_while;
use crate::logic::auth::{AuthState, display_name, roles_label};
use crate::logic::inbox::{pending_count, pending_marker};
use crate::logic::labels::{clock, conversation_title, count, status_label, summary_key};
use crate::logic::pages::{LOAD_MARGIN_PX, Paging, Scroll, near_end};
use crate::state::AppState;

/// The sidebar (a strip above the chat on narrow screens).
#[component]
pub fn Sidebar() -> impl IntoView {
    let state = expect_context::<AppState>();
    let pending = move || state.approvals.with(Vec::len);
    let inbox = move || match state.inbox_live.get() {
        Some(LiveStatus::Live) => "live",
        Some(LiveStatus::Connecting) => "connecting",
        Some(LiveStatus::Reconnecting) | None => "offline",
    };
    let open_oldest_pending = move |_| {
        let first = state
            .approvals
            .with_untracked(|a| a.first().map(|a| a.conversation_id));
        if let Some(id) = first {
            state.select(Some(id), true);
        }
    };
    view! {
        <aside class="sidebar" aria-label="Conversations">
            <div class="sidebar-head">
                <div class="brand">
                    <span class="brand-mark" aria-hidden="true"></span>
                    <span>"Stop & Go"</span>
                </div>
                <button
                    id="new-conversation"
                    class="btn primary"
                    type="button"
                    on:click=move |_| state.new_conversation()
                >
                    <span aria-hidden="true">"+"</span>
                    " New conversation"
                </button>
            </div>
            <UserBox />
            <button
                class="pending"
                type="button"
                class=("has-pending", move || pending() > 0)
                disabled=move || pending() == 0
                data-inbox=inbox
                title="Open the oldest conversation waiting for approval"
                on:click=open_oldest_pending
            >
                <span id="pending-count" class="pending-count">{pending}</span>
                <span>
                    {move || if pending() == 1 { "pending approval" } else { "pending approvals" }}
                </span>
            </button>
            <ConversationList />
        </aside>
    }
}

/// `#conversation-list`: the pages loaded so far, and "Load more" while
/// more exist. Scrolling near the end loads the next page, and so does a
/// list that does not fill its space (checked after every change).
#[component]
fn ConversationList() -> impl IntoView {
    let state = expect_context::<AppState>();
    let list = NodeRef::<leptos::html::Ul>::new();
    let check_end = move || {
        let Some(element) = list.get_untracked() else {
            return;
        };
        let scroll = Scroll {
            top: element.scroll_top(),
            left: element.scroll_left(),
            client_height: element.client_height(),
            client_width: element.client_width(),
            scroll_height: element.scroll_height(),
            scroll_width: element.scroll_width(),
        };
        if near_end(&scroll, LOAD_MARGIN_PX) {
            state.load_more();
        }
    };
    // Not on paging changes: a failed fetch is retried by scrolling or
    // the button, never in a loop.
    Effect::new(move |_| {
        state.conversations.with(Vec::len);
        request_animation_frame(check_end);
    });
    let loading = move || state.paging.with(|p| p.loading);
    view! {
        <ul
            id="conversation-list"
            class="conversation-list"
            node_ref=list
            aria-busy=move || loading().to_string()
            on:scroll=move |_| check_end()
        >
            {keyed_rows(
                Box::new(move || {
                    state
                        .conversations
                        .get()
                        .into_iter()
                        .map(|summary| {
                            Row::new(
                                summary_key(&summary),
                                move || view! { <Item summary=summary /> }.into_any(),
                            )
                        })
                        .collect()
                }),
            )}
            {shown_while(
                Box::new(move || state.conversations.with(Vec::is_empty)),
                Box::new(move || {
                    view! {
                        <li class="list-empty">"No conversations yet."</li>
                    }
                    .into_any()
                }),
            )}
            {shown_while(
                Box::new(move || state.paging.with(Paging::has_more)),
                Box::new(move || {
                    view! {
                        <li class="list-more">
                            <button
                                id="load-more"
                                type="button"
                                class="btn small"
                                disabled=loading
                                on:click=move |_| state.load_more()
                            >
                                {move || if loading() { "Loading…" } else { "Load more" }}
                            </button>
                        </li>
                    }
                    .into_any()
                }),
            )}
        </ul>
    }
}

/// `#user`: who is signed in (name, roles) with Sign out, or Sign in when
/// the web server has a login and nobody is signed in.
#[component]
fn UserBox() -> impl IntoView {
    let state = expect_context::<AppState>();
    move || match state.auth.get() {
        AuthState::SignedIn(me) => {
            let name = display_name(&me);
            let roles = roles_label(&me);
            view! {
                <div id="user" class="user" data-subject=me.subject.clone()>
                    // Upper-cased by the stylesheet: the browser knows Unicode's
                    // case tables, which would cost the bundle 12 KB.
                    <span class="user-avatar" aria-hidden="true">
                        {name.chars().next().map(String::from).unwrap_or_default()}
                    </span>
                    <span class="user-text">
                        <span class="user-name" title=me.subject.clone()>{name}</span>
                        <span class="user-roles muted">{roles}</span>
                    </span>
                    <button
                        id="sign-out"
                        type="button"
                        class="btn small ghost"
                        on:click=move |_| state.sign_out()
                    >
                        "Sign out"
                    </button>
                </div>
            }
            .into_any()
        }
        AuthState::SignedOut => view! {
            <div id="user" class="user signed-out">
                <span class="muted">"Not signed in"</span>
                <button
                    id="sign-in"
                    type="button"
                    class="btn small primary"
                    on:click=move |_| state.sign_in()
                >
                    "Sign in"
                </button>
            </div>
        }
        .into_any(),
        AuthState::NoLogin { me: Some(me) } if me.authenticated => view! {
            <div id="user" class="user">
                <span class="user-text">
                    <span class="user-name">{display_name(&me)}</span>
                    <span class="user-roles muted">{roles_label(&me)}</span>
                </span>
            </div>
        }
        .into_any(),
        _ => ().into_any(),
    }
}

/// One conversation in the list.
#[component]
fn Item(summary: ConversationSummary) -> impl IntoView {
    let state = expect_context::<AppState>();
    let id = summary.id;
    let title = conversation_title(&summary);
    let status = summary.status;
    let offset = js_sys::Date::new_0().get_timezone_offset() as i32;
    let time = clock(summary.updated_at, offset);
    let messages = count(summary.message_count, "message", "messages");
    let selected = move || state.selected.get() == Some(id);
    let waiting = move || state.approvals.with(|a| pending_count(a, id));
    let pending = move || waiting() > 0;
    view! {
        <li
            class="conversation-item"
            class:selected=selected
            class:pending=pending
            data-id=id.to_string()
            data-status=status.as_str()
            data-pending=move || pending().to_string()
            data-pending-count=move || waiting().to_string()
            on:click=move |_| state.select(Some(id), true)
        >
            <button
                type="button"
                class="conversation-link"
                aria-current=move || selected().then_some("true")
                title=title.clone()
            >
                <span class="conversation-title">
                    {shown_while(
                        Box::new(pending),
                        Box::new(move || {
                            view! {
                                <span class="pending-marker" title=move || pending_marker(waiting()).1>
                                    {move || pending_marker(waiting()).0}
                                </span>
                            }
                            .into_any()
                        }),
                    )}
                    {title.clone()}
                </span>
                <span class="conversation-meta">
                    <span class=format!("badge status-{}", status.as_str())>
                        {status_label(status)}
                    </span>
                    <span class="muted">{messages}" · "{time}</span>
                </span>
            </button>
        </li>
    }
    .into_any()
}
