//! The root component: provides the [`AppState`], loads the start data,
//! follows the browser history, and lays out the sidebar and the chat.

use leptos::ev;
use leptos::prelude::*;

use crate::components::chat::ChatPane;
use crate::components::sidebar::Sidebar;
use crate::logic::url;
use crate::state::AppState;

/// The whole page.
#[component]
pub fn App() -> impl IntoView {
    let state = AppState::new();
    provide_context(state);
    state.start();

    // Back/forward: follow the conversation named in the URL.
    let history = window_event_listener(ev::popstate, move |_| {
        let search = window().location().search().unwrap_or_default();
        state.select(url::conversation_from_query(&search), false);
    });
    // Coming back to the tab: the list may have changed meanwhile.
    let focus = window_event_listener(ev::focus, move |_| state.refresh_list());
    on_cleanup(move || {
        history.remove();
        focus.remove();
    });

    view! {
        <div class="app">
            <Sidebar />
            <ChatPane />
        </div>
    }
}
