//! The chat pane: header (title, status, live state), error banner,
//! messages, remembered approvals, approval panel, working line and
//! composer.

use leptos::prelude::*;

use crate::api::LiveStatus;
use crate::components::approval::ApprovalPanel;
use crate::components::banner::ErrorBanner;
use crate::components::composer::{Composer, WorkingLine};
use crate::components::grants::GrantList;
use crate::components::messages::MessageList;
use crate::components::shown::shown_while;
use crate::logic::auth::AuthState;
use crate::logic::labels::{short_id, status_label};
use crate::state::AppState;

/// The right-hand side.
#[component]
pub fn ChatPane() -> impl IntoView {
    let state = expect_context::<AppState>();
    let signed_out = move || state.auth.with(|a| *a == AuthState::SignedOut);
    view! {
        <main class="chat">
            <ChatHeader />
            <div class="chat-body">
                {shown_while(
                    Box::new(signed_out),
                    Box::new(move || {
                        view! {
                            <div id="sign-in-prompt" class="sign-in-prompt">
                                <h2>"Sign in to use the agent"</h2>
                                <p class="muted">
                                    "This chat needs to know who you are: your name is recorded on what you ask and what you approve."
                                </p>
                                <button
                                    id="sign-in-main"
                                    type="button"
                                    class="btn primary"
                                    on:click=move |_| state.sign_in()
                                >
                                    "Sign in"
                                </button>
                            </div>
                        }
                        .into_any()
                    }),
                )}
                <ErrorBanner />
                <MessageList />
            </div>
            <GrantList />
            <ApprovalPanel />
            <WorkingLine />
            <Composer />
        </main>
    }
}

#[component]
fn ChatHeader() -> impl IntoView {
    let state = expect_context::<AppState>();
    let title = move || {
        let Some(id) = state.selected.get() else {
            return "New conversation".to_string();
        };
        state
            .conversations
            .with(|list| {
                list.iter()
                    .find(|c| c.id == id)
                    .and_then(|c| c.title.clone())
            })
            .unwrap_or_else(|| format!("Conversation {}", short_id(id)))
    };
    let status = move || state.conversation.with(|c| c.as_ref().map(|c| c.status));
    let live = move || match state.live.get() {
        Some(LiveStatus::Live) => ("live", "live"),
        Some(LiveStatus::Connecting) => ("connecting", "connecting…"),
        Some(LiveStatus::Reconnecting) => ("reconnecting", "reconnecting…"),
        None => ("", ""),
    };
    view! {
        <header class="chat-head">
            <h1 class="chat-title">{title}</h1>
            {move || {
                status()
                    .map(|s| {
                        view! {
                            <span class=format!("badge status-{}", s.as_str())>
                                {status_label(s)}
                            </span>
                        }
                    })
            }}
            <span
                class=move || format!("live-state {}", live().0)
                title="Live updates from the agent"
            >
                {move || live().1}
            </span>
        </header>
    }
}
