//! The composer: Enter sends, Shift+Enter adds a line; and the working
//! indicator above it.

use leptos::ev::{KeyboardEvent, SubmitEvent};
use leptos::prelude::*;

use crate::components::shown::shown_while;
use crate::logic::events::{accepts_messages, waits_for_decision};
use crate::state::AppState;

/// A fixed-height line that shows `#working` while the agent works (fixed
/// height so nothing jumps when it appears).
#[component]
pub fn WorkingLine() -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
        <div class="status-line">
            {shown_while(
                Box::new(move || state.working()),
                Box::new(move || {
                    view! {
                        <div id="working" class="working" role="status">
                            <span class="dots" aria-hidden="true">
                                <i></i>
                                <i></i>
                                <i></i>
                            </span>
                            "The agent is working…"
                        </div>
                    }
                    .into_any()
                }),
            )}
        </div>
    }
}

/// `#composer` and `#send`.
#[component]
pub fn Composer() -> impl IntoView {
    let state = expect_context::<AppState>();
    let accepts = move || state.conversation.with(|c| accepts_messages(c.as_ref()));
    let placeholder = move || {
        if accepts() {
            "Message the agent…  (Enter to send, Shift+Enter for a new line)"
        } else if state.conversation.with(|c| {
            c.as_ref()
                .is_some_and(|c| c.pending().iter().any(|p| p.is_question()))
        }) {
            "Answer the question first"
        } else if state.conversation.with(|c| waits_for_decision(c.as_ref())) {
            "Approve or reject the pending actions first"
        } else {
            "This conversation is closed — start a new one"
        }
    };
    let on_keydown = move |ev: KeyboardEvent| {
        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
            ev.prevent_default();
            if accepts() {
                state.send();
            }
        }
    };
    let on_submit = move |ev: SubmitEvent| {
        ev.prevent_default();
        state.send();
    };
    view! {
        <form class="composer" on:submit=on_submit>
            <textarea
                id="composer"
                rows="1"
                node_ref=state.composer
                aria-label="Message"
                placeholder=placeholder
                disabled=move || !accepts()
                prop:value=move || state.draft.get()
                on:input=move |ev| state.draft.set(event_target_value(&ev))
                on:keydown=on_keydown
            ></textarea>
            <button id="send" type="submit" class="btn primary" disabled=move || !accepts()>
                "Send"
            </button>
        </form>
    }
}
