//! `asg`, the terminal client of the agent's REST API, as a library: the
//! binary (`main.rs`) only parses the arguments and calls [`app::run`].
//!
//! Layers, top-down: `app` dispatches the commands (`chat`, `inbox`,
//! `listing`, `login`); `decide` prompts for one approval or question;
//! `client` speaks HTTP with the wire types of `asg-shared`; the leaves
//! (`args`, `dirs`, `error`, `keys`, `sse`, `style`, `format`,
//! `terminal`, `editor`, `credentials`) hold the pure parts and are unit
//! tested.

pub mod app;
pub mod args;
pub mod chat;
pub mod client;
pub mod credentials;
pub mod decide;
pub mod dirs;
pub mod editor;
pub mod error;
pub mod format;
pub mod inbox;
pub mod keys;
pub mod listing;
pub mod login;
pub mod sse;
pub mod style;
pub mod terminal;
