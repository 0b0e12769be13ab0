//! Types shared by the agent server and the web chat.
//!
//! Everything here is plain data with serde derives: the conversation model
//! that the server persists ([`conversation`]) with a paused run's state
//! ([`pipeline`]), the REST request and response bodies ([`rest`]), the
//! live conversation events ([`events`]) and the A2A protocol types
//! ([`a2a`]); with the `fixtures` feature, test
//! builders for the conversation model (`fixtures`). The crate depends on
//! no runtime, HTTP stack or I/O, so it compiles for
//! `wasm32-unknown-unknown`.

pub mod a2a;
pub mod conversation;
pub mod events;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod links;
pub mod pipeline;
pub mod rest;
pub mod timestamp;

pub use conversation::{
    Actor, ApprovalDecision, ApprovalState, Conversation, ConversationStatus, Grant, GrantScope,
    Message, PendingApproval, Question, QuestionReply, Role, ToolCall, ToolResult,
};
pub use pipeline::{BranchOutput, PausedRun, PausedStep, PipelineState};
