//! Markdown shown as the server rendered it (`POST /markdown`): plain text
//! until the HTML is here, then that HTML. Texts are asked for in batches
//! (every view of one render in one request) and remembered
//! ([`Renderings`]); a failed request leaves them as plain text.

use std::cell::RefCell;
use std::time::Duration;

use leptos::prelude::*;

use crate::api;
use crate::logic::rendered::Renderings;

thread_local! {
    static RENDERINGS: RefCell<Renderings<RwSignal<Option<String>>>> =
        RefCell::new(Renderings::default());
}

/// `text` as Markdown, in a `<div>` of class `class`.
#[component]
pub fn Markdown(text: String, class: &'static str) -> impl IntoView {
    let html = RwSignal::new(RENDERINGS.with(|r| r.borrow().html(&text)));
    if html.get_untracked().is_none() {
        let first = RENDERINGS.with(|r| r.borrow_mut().wait(text.clone(), html));
        if first {
            leptos::task::spawn_local(render_waiting());
        }
    }
    move || match html.get() {
        Some(html) => view! { <div class=class inner_html=html></div> }.into_any(),
        None => view! { <div class=class>{text.clone()}</div> }.into_any(),
    }
}

/// Asks for the HTML of every text waiting, batch after batch.
async fn render_waiting() {
    // The other views of the same render queue their texts meanwhile.
    api::sleep(Duration::ZERO).await;
    loop {
        let (texts, waiting) = RENDERINGS.with(|r| r.borrow_mut().take_batch());
        if texts.is_empty() {
            return;
        }
        let Ok(html) = api::render_markdown(&texts).await else {
            continue;
        };
        let kept = RENDERINGS.with(|r| r.borrow_mut().store(texts, html));
        if !kept {
            continue;
        }
        for (text, view) in waiting {
            let html = RENDERINGS.with(|r| r.borrow().html(&text));
            // A view gone meanwhile (another conversation opened) is fine.
            let _ = view.try_set(html);
        }
    }
}
