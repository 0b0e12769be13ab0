//! The gate's pure core: everything that decides, nothing that does.
//!
//! - [`principal`]: who is calling, as plain data.
//! - [`access`]: who may read, continue, list and decide.
//! - [`rules`], [`rule_config`], [`decide`]: how one call is judged
//!   (`approval.rules`, the tool's gate, the node's place, grants).
//! - [`choice`]: an approver's extras (edited arguments, remember).
//! - [`lifecycle`]: the approval state machine over a conversation.
//! - [`transition`]: the lifecycle as one transition function: a command
//!   in, the conversation after it and the effects to carry out out.
//! - [`question`]: questions for a human: who answers, what fits.
//! - [`gate`]: the one authorization of every command a door brings
//!   (send, read, decide, cancel, revoke), judged from the principal, the
//!   conversation and the rule that raised the approval.
//!
//! **Invariant:** no I/O, no async, no clock other than `Utc::now` for
//! stamps: every function here is a function of its arguments, and its
//! cases are tables in the tests.

pub mod access;
#[cfg(test)]
mod cast;
pub mod choice;
pub mod decide;
pub mod duration;
pub mod gate;
pub mod lifecycle;
pub mod principal;
pub mod question;
pub mod rule_config;
pub mod rules;
pub mod transition;
