//! The error banner: what went wrong and what to do, with Retry for
//! connection problems and a close button.

use leptos::prelude::*;

use crate::logic::errors::ErrorKind;
use crate::state::AppState;

/// `#error-banner`, shown while there is an error.
#[component]
pub fn ErrorBanner() -> impl IntoView {
    let state = expect_context::<AppState>();
    move || {
        state.error.get().map(|error| {
            let retry = error.retryable();
            let sign_in = error.kind == ErrorKind::SignInRequired
                && state.auth.with_untracked(|a| a.login_configured());
            view! {
                <div id="error-banner" class="banner" role="alert">
                    <span class="banner-icon" aria-hidden="true">"!"</span>
                    <div class="banner-text">
                        <strong>{error.title}</strong>
                        <span>{error.detail}</span>
                    </div>
                    {sign_in
                        .then(|| {
                            view! {
                                <button
                                    type="button"
                                    class="btn small primary banner-sign-in"
                                    on:click=move |_| state.sign_in()
                                >
                                    "Sign in"
                                </button>
                            }
                        })}
                    {retry
                        .then(|| {
                            view! {
                                <button
                                    type="button"
                                    class="btn small"
                                    on:click=move |_| state.retry()
                                >
                                    "Retry"
                                </button>
                            }
                        })}
                    <button
                        type="button"
                        class="btn small ghost"
                        aria-label="Dismiss"
                        on:click=move |_| state.error.set(None)
                    >
                        "×"
                    </button>
                </div>
            }
        })
    }
}
