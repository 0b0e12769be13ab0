//! Tool arguments as a key/value table (structured values pretty-printed).

use leptos::prelude::*;
use serde_json::{Map, Value};

use crate::logic::args::arg_rows;

/// A key/value table of tool arguments.
#[component]
pub fn ArgsTable(args: Map<String, Value>) -> impl IntoView {
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
                        view! {
                            <tr>
                                <th scope="row">{row.key}</th>
                                <td>
                                    {if row.block {
                                        view! { <pre>{row.value}</pre> }.into_any()
                                    } else {
                                        view! { <code>{row.value}</code> }.into_any()
                                    }}
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
