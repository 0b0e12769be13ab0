//! A2A (Agent2Agent, v0.3 over JSON-RPC): the server side that lets other
//! agents use this one, and the client side that delegates to sub-agents.
//!
//! - [`card`]: the agent card.
//! - [`mapping`]: conversation -> task.
//! - [`server`]: `POST /a2a` JSON-RPC dispatcher and the card routes.
//! - [`push`]: push notification configs and their delivery.
//! - [`stream`]: `message/stream` and `tasks/resubscribe` (SSE).
//! - [`client`]: card discovery and `message/send` to sub-agents.

pub mod card;
pub mod client;
pub mod mapping;
pub mod push;
pub mod server;
pub mod stream;
