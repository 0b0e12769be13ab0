//! The versions this process saves, for a follower that may fall behind
//! (the A2A push dispatcher): bounded however fast saves come.
//!
//! Each follower says which versions it wants and what kind each is
//! ([`Classify`]: for A2A push, the notable task state). A version of a
//! conversation whose last waiting version is of the same kind replaces
//! it in its place, and a conversation has at most [`MAX_WAITING`]
//! versions waiting (past it, the newest replaces its last one). So a
//! follower behind a flood of saves holds a few versions per
//! conversation, not every version saved meanwhile: before, an unbounded
//! channel of every version grew to 400 MiB in 25 s of turns failing on
//! the model (every one a notable "failed" state) under 100 clients, and
//! shrank only when the load stopped. A follower that keeps up sees every
//! wanted version, in order.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use asg_shared::Conversation;
use tokio::sync::Notify;
use uuid::Uuid;

/// Which versions a follower wants (`None`: not this one) and their kind.
pub type Classify = Box<dyn Fn(&Conversation) -> Option<&'static str> + Send + Sync>;

/// Most versions of one conversation waiting for a follower.
pub const MAX_WAITING: usize = 4;

/// The follower's end: the versions waiting, oldest first.
pub struct SavedFeed {
    shared: Arc<Shared>,
}

/// The saving side's handle on one follower.
#[derive(Clone)]
pub(crate) struct Follower {
    shared: Arc<Shared>,
}

struct Shared {
    classify: Classify,
    waiting: Mutex<Waiting>,
    ready: Notify,
}

#[derive(Default)]
struct Waiting {
    entries: VecDeque<Entry>,
    /// The position (counted since the start) of `entries[0]`.
    first: u64,
    /// Per conversation: the position of its last waiting version, and
    /// how many of its versions wait.
    last: HashMap<Uuid, (u64, usize)>,
}

struct Entry {
    kind: &'static str,
    conversation: Arc<Conversation>,
}

/// A new feed and the handle the index keeps.
pub(crate) fn feed(classify: Classify) -> (Follower, SavedFeed) {
    let shared = Arc::new(Shared {
        classify,
        waiting: Mutex::default(),
        ready: Notify::new(),
    });
    (
        Follower {
            shared: shared.clone(),
        },
        SavedFeed { shared },
    )
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Follower {
    /// Whether the follower's end is still there.
    pub(crate) fn is_followed(&self) -> bool {
        Arc::strong_count(&self.shared) > 1
    }

    /// A version saved here.
    pub(crate) fn saved(&self, conversation: &Arc<Conversation>) {
        let Some(kind) = (self.shared.classify)(conversation) else {
            return;
        };
        self.shared.lock().put(kind, conversation.clone());
        self.shared.ready.notify_one();
    }
}

impl Waiting {
    fn put(&mut self, kind: &'static str, conversation: Arc<Conversation>) {
        let id = conversation.id;
        if let Some(&(at, count)) = self.last.get(&id) {
            let index = usize::try_from(at - self.first).unwrap_or(usize::MAX);
            if let Some(entry) = self.entries.get_mut(index)
                && (entry.kind == kind || count >= MAX_WAITING)
            {
                *entry = Entry { kind, conversation };
                return;
            }
        }
        let at = self.first + self.entries.len() as u64;
        let count = self.last.get(&id).map_or(0, |&(_, count)| count);
        self.entries.push_back(Entry { kind, conversation });
        self.last.insert(id, (at, count + 1));
    }

    fn take(&mut self) -> Option<Arc<Conversation>> {
        let entry = self.entries.pop_front()?;
        let at = self.first;
        self.first += 1;
        let id = entry.conversation.id;
        if let Some((last, count)) = self.last.get_mut(&id) {
            if *last == at {
                self.last.remove(&id);
            } else {
                *count -= 1;
            }
        }
        Some(entry.conversation)
    }
}

impl SavedFeed {
    /// The oldest waiting version, waiting for one.
    pub async fn next(&self) -> Arc<Conversation> {
        loop {
            // Registered before looking, so a version put in between wakes it.
            let ready = self.shared.ready.notified();
            if let Some(conversation) = self.try_next() {
                return conversation;
            }
            ready.await;
        }
    }

    /// The oldest waiting version, if any.
    pub fn try_next(&self) -> Option<Arc<Conversation>> {
        self.shared.lock().take()
    }

    /// How many versions wait.
    pub fn len(&self) -> usize {
        self.shared.lock().entries.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use asg_shared::fixtures;

    use super::*;

    fn version(id: Uuid, messages: usize) -> Arc<Conversation> {
        let mut conversation = fixtures::conversation();
        conversation.id = id;
        conversation.messages.truncate(0);
        for n in 0..messages {
            conversation
                .messages
                .push(fixtures::message(asg_shared::Role::User, &format!("m{n}")).into());
        }
        Arc::new(conversation)
    }

    /// Kind: "odd" or "even" by message count; none for 0 messages.
    fn by_parity() -> Classify {
        Box::new(|c: &Conversation| match c.messages.len() {
            0 => None,
            n if n % 2 == 1 => Some("odd"),
            _ => Some("even"),
        })
    }

    fn drain(feed: &SavedFeed) -> Vec<(Uuid, usize)> {
        std::iter::from_fn(|| feed.try_next())
            .map(|c| (c.id, c.messages.len()))
            .collect()
    }

    #[test]
    fn a_follower_that_keeps_up_sees_every_wanted_version_in_order() {
        let (follower, feed) = feed(by_parity());
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        follower.saved(&version(a, 1));
        assert_eq!(drain(&feed), [(a, 1)]);
        follower.saved(&version(a, 2));
        follower.saved(&version(b, 0));
        follower.saved(&version(b, 1));
        assert_eq!(
            drain(&feed),
            [(a, 2), (b, 1)],
            "unwanted versions are left out"
        );
        assert!(feed.is_empty());
    }

    #[test]
    fn a_newer_version_of_the_same_kind_replaces_the_waiting_one_in_its_place() {
        let (follower, feed) = feed(by_parity());
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        follower.saved(&version(a, 1));
        follower.saved(&version(b, 1));
        follower.saved(&version(a, 3));
        follower.saved(&version(a, 4));
        follower.saved(&version(a, 6));
        assert_eq!(
            drain(&feed),
            [(a, 3), (b, 1), (a, 6)],
            "a's odd version replaced in place, its even one after b's"
        );
    }

    #[test]
    fn a_flood_of_saves_of_one_conversation_keeps_at_most_a_few_waiting() {
        let (follower, feed) = feed(by_parity());
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        for n in 1..=10_000 {
            follower.saved(&version(a, n % 7 + 1));
            follower.saved(&version(b, n % 2 + 1));
        }
        assert!(feed.len() <= 2 * MAX_WAITING, "{} waiting", feed.len());
        let seen = drain(&feed);
        assert_eq!(
            seen.iter().rfind(|(id, _)| *id == a),
            Some(&(a, 10_000 % 7 + 1)),
            "the newest version is the last one seen: {seen:?}"
        );
        assert_eq!(seen.iter().rfind(|(id, _)| *id == b), Some(&(b, 1)));
        follower.saved(&version(a, 1));
        assert_eq!(drain(&feed), [(a, 1)], "positions stay right after a drain");
    }

    #[test]
    fn the_follower_is_gone_once_its_end_is_dropped() {
        let (follower, feed) = feed(by_parity());
        assert!(follower.is_followed());
        drop(feed);
        assert!(!follower.is_followed());
    }

    #[tokio::test]
    async fn next_waits_for_a_version_saved_later() {
        let (follower, feed) = feed(by_parity());
        let id = Uuid::new_v4();
        let waiting = tokio::spawn(async move { feed.next().await.messages.len() });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        follower.saved(&version(id, 1));
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .expect("no panic");
        assert_eq!(got, 1);
    }
}
