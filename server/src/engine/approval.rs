//! The approval lifecycle lives in the core ([`asg_core::lifecycle`]);
//! this adds what needs the engine's logging.

pub use asg_core::lifecycle::*;

use asg_shared::Conversation;
use chrono::Utc;

/// The conversation a turn starts from, taken under its lock. No turn
/// runs while the lock is held, so an approval still `executing` or a
/// turn still marked in progress was left by a turn whose last save
/// failed (storage away): it is recorded as interrupted, never run again,
/// before this turn goes on (its own saves then keep it).
pub fn turn_start(snapshot: &Conversation) -> Conversation {
    let mut conversation = snapshot.clone();
    if recover_interrupted(&mut conversation, Utc::now()) {
        tracing::warn!(conversation = %conversation.id, "a turn whose last save failed left the conversation unfinished; recorded as interrupted, nothing re-run");
    }
    conversation
}
