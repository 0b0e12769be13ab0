//! Keyed lists, all drawn by one `<For>`: each list gives its rows as a
//! key and a function that draws the row. Leptos compiles a `<For>` (its
//! keyed diff and the view around it) once per item, key and closure
//! type; four lists of different types made four copies of it in the
//! bundle, rows with one type make one.

use leptos::prelude::*;

/// One row of a keyed list: the key it is known by (a row whose key
/// stays is kept as drawn, with what was typed into it) and what draws
/// it.
pub struct Row {
    key: String,
    draw: Box<dyn FnOnce() -> AnyView + Send>,
}

impl Row {
    /// A row drawn by `draw` while `key` stays in the list.
    pub fn new(key: String, draw: impl FnOnce() -> AnyView + Send + 'static) -> Row {
        Row {
            key,
            draw: Box::new(draw),
        }
    }
}

/// The rows that `rows` gives (tracked: the list follows the signals it
/// reads), in their order, each drawn once while its key stays.
pub fn keyed_rows(rows: Box<dyn Fn() -> Vec<Row> + Send>) -> impl IntoView {
    view! {
        <For
            each=move || rows()
            key=|row: &Row| row.key.clone()
            children=|row: Row| (row.draw)()
        />
    }
}
