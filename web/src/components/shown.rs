//! Parts of a view drawn while a condition holds. Leptos' `<Show>` is
//! compiled once per condition and content type; every such part of the
//! chat goes through [`shown_while`] instead, compiled once.

use leptos::prelude::*;

/// What `draw` draws while `when` holds (tracked), nothing otherwise;
/// drawn again each time `when` turns true, like `<Show>`.
pub fn shown_while(
    when: Box<dyn Fn() -> bool + Send + Sync>,
    draw: Box<dyn Fn() -> AnyView + Send + Sync>,
) -> AnyView {
    let when = Memo::new(move |_| when());
    (move || when.get().then(&draw)).into_any()
}
