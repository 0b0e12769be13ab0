//! Tool arguments as a key/value table, and JSON values: short ones on one
//! line, longer ones in a collapsed, pretty-printed block.

use leptos::prelude::*;
use serde_json::{Map, Value};

use crate::logic::args::arg_rows;
use crate::logic::json::Shown;

/// A key/value table of tool arguments. `open_json` shows JSON blocks
/// opened (the approval panel: what is approved must be visible).
#[component]
pub fn ArgsTable(args: Map<String, Value>, #[prop(optional)] open_json: bool) -> impl IntoView {
    let rows = arg_rows(&args);
    if rows.is_empty() {
        return view! { <p class="args-empty muted">"No arguments"</p> }.into_any();
    }
    view! {
        <table class="args">
            <tbody>
                {rows
                    .into_iter()
                    .map(|row| {
                        let multiline = row.is_multiline();
                        view! {
                            <tr>
                                <th scope="row">{row.key}</th>
                                <td>
                                    <ShownValue shown=row.value multiline=multiline open=open_json />
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// A value as [`Shown`]: text in `<code>` (or `<pre>` when `multiline`),
/// short JSON on one line, longer JSON collapsed (unless `open`).
#[component]
pub fn ShownValue(shown: Shown, multiline: bool, open: bool) -> impl IntoView {
    match shown {
        Shown::Text(text) if multiline => view! { <pre>{text}</pre> }.into_any(),
        Shown::Text(text) => view! { <code>{text}</code> }.into_any(),
        Shown::Inline(json) => view! { <code class="json-inline">{json}</code> }.into_any(),
        Shown::Collapsed { summary, pretty } => {
            view! { <JsonBlock summary=summary pretty=pretty open=open /> }.into_any()
        }
    }
}

/// `<details class="json-block">`: the summary, and the pretty-printed
/// JSON when opened.
#[component]
pub fn JsonBlock(summary: String, pretty: String, open: bool) -> impl IntoView {
    view! {
        <details class="json-block" open=open>
            <summary>
                <span class="json-label">"JSON"</span>
                <span class="json-summary">{summary}</span>
            </summary>
            <pre>
                <code class="language-json">{pretty}</code>
            </pre>
        </details>
    }
}
