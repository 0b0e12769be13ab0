//! A2A (Agent2Agent, v0.3 over JSON-RPC) below the engine: the client
//! that delegates to sub-agents and the protocol's view of a
//! conversation. The server side (`POST /a2a`, the card, streams) is a
//! door, in `api::a2a`; push notifications are outbound delivery, in
//! `notify::a2a_push`.
//!
//! - [`client`]: card discovery and `message/send` to sub-agents.
//! - [`mapping`]: conversation -> task.

pub mod client;
pub mod mapping;
