//! View-free logic of the chat, plain Rust that runs (and is tested) on the
//! host as well as in the browser.

pub mod approvals;
pub mod args;
pub mod auth;
pub mod choices;
pub mod errors;
pub mod events;
pub mod expiry;
pub mod inbox;
pub mod json;
pub mod labels;
pub mod objects;
pub mod pages;
pub mod question;
pub mod rendered;
pub mod tagged;
pub mod timeline;
pub mod url;

#[cfg(test)]
pub(crate) mod fixtures;
