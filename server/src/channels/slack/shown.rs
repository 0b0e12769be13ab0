//! The approvals shown in Slack, in memory: for each approval uuid its
//! pending approval (to draw the decided message), where it was posted
//! (channel, and `ts` once Slack answered) and how it is presented. An
//! entry goes when its decision is posted; at most [`MAX_SHOWN`] are kept
//! (the oldest go first), so approvals decided on another replica cannot
//! grow it without bound. Not kept across a restart.

use std::collections::{HashMap, VecDeque};

use asg_shared::PendingApproval;
use uuid::Uuid;

use super::blocks::Presentation;

/// Approvals remembered at most.
pub const MAX_SHOWN: usize = 10_000;

/// One approval's message.
#[derive(Debug, Clone)]
pub struct Shown {
    /// The approval as requested.
    pub approval: PendingApproval,
    /// The channel it is (to be) posted in.
    pub channel: String,
    /// The message's `ts`, once posted.
    pub ts: Option<String>,
    /// Its mention and link.
    pub presentation: Presentation,
}

/// The approvals shown.
#[derive(Debug, Default)]
pub struct ShownMessages {
    by_uuid: HashMap<Uuid, Shown>,
    order: VecDeque<Uuid>,
}

impl ShownMessages {
    /// Remembers an approval about to be posted.
    pub fn insert(&mut self, shown: Shown) {
        let uuid = shown.approval.uuid;
        while self.by_uuid.len() >= MAX_SHOWN {
            match self.order.pop_front() {
                Some(oldest) => {
                    self.by_uuid.remove(&oldest);
                }
                None => break,
            }
        }
        if self.by_uuid.insert(uuid, shown).is_none() {
            self.order.push_back(uuid);
        }
        // Uuids of entries already gone stay in `order` until here.
        if self.order.len() > 2 * MAX_SHOWN {
            let live = &self.by_uuid;
            self.order.retain(|u| live.contains_key(u));
        }
    }

    /// Where Slack put the message.
    pub fn posted(&mut self, uuid: Uuid, channel: &str, ts: &str) {
        if let Some(shown) = self.by_uuid.get_mut(&uuid) {
            shown.channel = channel.to_string();
            shown.ts = Some(ts.to_string());
        }
    }

    /// The approval's message, if shown.
    pub fn get(&self, uuid: Uuid) -> Option<Shown> {
        self.by_uuid.get(&uuid).cloned()
    }

    /// Forgets it (its decision was posted).
    pub fn remove(&mut self, uuid: Uuid) {
        self.by_uuid.remove(&uuid);
    }

    /// How many are remembered.
    pub fn len(&self) -> usize {
        self.by_uuid.len()
    }

    /// None is remembered.
    pub fn is_empty(&self) -> bool {
        self.by_uuid.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asg_shared::fixtures::pending_approval;

    fn shown() -> Shown {
        Shown {
            approval: pending_approval("t"),
            channel: "C1".into(),
            ts: None,
            presentation: Presentation::default(),
        }
    }

    #[test]
    fn a_posted_message_is_found_until_removed() {
        let mut messages = ShownMessages::default();
        let entry = shown();
        let uuid = entry.approval.uuid;
        messages.insert(entry);
        messages.posted(uuid, "C2", "1.5");
        let got = messages.get(uuid).unwrap();
        assert_eq!(
            (got.channel.as_str(), got.ts.as_deref()),
            ("C2", Some("1.5"))
        );
        messages.remove(uuid);
        assert!(messages.get(uuid).is_none());
    }

    #[test]
    fn the_oldest_go_past_the_bound() {
        let mut messages = ShownMessages::default();
        let first = shown();
        let first_uuid = first.approval.uuid;
        messages.insert(first);
        for _ in 0..MAX_SHOWN {
            messages.insert(shown());
        }
        assert_eq!(messages.len(), MAX_SHOWN);
        assert!(messages.get(first_uuid).is_none());
    }
}
