//! A2A (Agent2Agent) below the engine: the client that delegates to
//! sub-agents and the protocol's view of a conversation. The server side
//! (`POST /a2a` for v0.3 and v1.0 JSON-RPC, `/a2a/v1` HTTP+JSON, the card,
//! streams) is a door, in `api::a2a`; push notifications are outbound
//! delivery, in `notify::a2a_push`.
//!
//! - [`client`]: card discovery, the route (A2A v1.0 first, else v0.3),
//!   and messages and task reads to sub-agents.
//! - [`mapping`]: conversation -> task.

pub mod client;
pub mod mapping;
