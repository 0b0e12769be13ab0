//! "Always allowed here": the selected conversation's remembered
//! approvals, who gave them, and Revoke (later calls ask again).

use leptos::prelude::*;

use crate::components::rows::{Row, keyed_rows};
use crate::components::shown::shown_while;
use crate::logic::choices::{can_revoke, grant_label, granted_tools};
use crate::state::AppState;

/// `#grants`, while the selected conversation has remembered approvals.
#[component]
pub fn GrantList() -> impl IntoView {
    let state = expect_context::<AppState>();
    let grants = Memo::new(move |_| {
        state.conversation.with(|c| {
            c.as_ref()
                .map(|c| {
                    granted_tools(&c.grants)
                        .into_iter()
                        .map(|g| (g.tool.clone(), grant_label(g)))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    });
    view! {
        {shown_while(
            Box::new(move || !grants.with(Vec::is_empty)),
            Box::new(move || {
                view! {
                    <section id="grants" class="grants" aria-label="Always allowed in this conversation">
                        <span class="grants-title">"Always allowed here:"</span>
                        <ul class="grant-list">
                            {keyed_rows(
                                Box::new(move || {
                                    grants
                                        .get()
                                        .into_iter()
                                        .map(|(tool, label)| {
                                            Row::new(
                                                format!("{tool}\n{label}"),
                                                move || view! { <GrantItem tool=tool label=label /> }.into_any(),
                                            )
                                        })
                                        .collect()
                                }),
                            )}
                        </ul>
                    </section>
                }
                .into_any()
            }),
        )}
    }
}

/// One tool that runs without asking, with Revoke for those who may.
#[component]
fn GrantItem(tool: String, label: String) -> impl IntoView {
    let state = expect_context::<AppState>();
    let may_revoke = move || {
        let owner = state
            .conversation
            .with(|c| c.as_ref().and_then(|c| c.owner.clone()));
        state.auth.with(|a| can_revoke(a, owner.as_deref()))
    };
    let revoke = {
        let tool = tool.clone();
        move |_| state.revoke_grant(tool.clone())
    };
    let aria = format!("Revoke: {tool} asks again");
    view! {
        <li class="grant" data-tool=tool>
            <span class="grant-label">{label}</span>
            {shown_while(
                Box::new(may_revoke),
                Box::new(move || {
                    view! {
                        <button
                            type="button"
                            class="btn small grant-revoke"
                            aria-label=aria.clone()
                            on:click=revoke.clone()
                        >
                            "Revoke"
                        </button>
                    }
                    .into_any()
                }),
            )}
        </li>
    }
}
