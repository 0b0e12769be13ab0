//! The browser chat of Agent Stop and Go (crate `asg-web`).
//!
//! [`logic`] holds everything that is not a view: argument formatting,
//! pairing tool calls with their results, applying live events to a
//! conversation, URL handling and error messages. It has no browser
//! dependency, so `cargo test -p asg-web --lib` runs its tests natively.
//! The Leptos UI ([`api`], the app and its components) only exists on
//! `wasm32`; [`start`] mounts it.

pub mod logic;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
mod app;
#[cfg(target_arch = "wasm32")]
mod components;
#[cfg(target_arch = "wasm32")]
mod state;

/// Mounts the chat into `<body>`.
#[cfg(target_arch = "wasm32")]
pub fn start() {
    leptos::mount::mount_to_body(app::App);
}
