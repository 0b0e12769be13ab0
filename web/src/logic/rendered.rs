//! Markdown the server rendered (`POST /markdown`): the HTML of texts
//! already seen, and the texts waiting for theirs, sent in batches. The
//! chat shows a text as plain text until its HTML is here, so nothing of
//! the text is ever markup, and a text seen again is not asked for again.

use rustc_hash::FxHashMap;

/// Texts per request (the server takes at most 200).
pub const MAX_TEXTS: usize = 200;
/// Bytes of text per request: well under the server's 256 KiB body limit
/// once JSON-escaped. A single longer text goes alone (and stays plain if
/// the server refuses it).
pub const MAX_BATCH_BYTES: usize = 96 * 1024;
/// Rendered texts kept; past it the oldest half is forgotten (asked for
/// again if shown again).
pub const MAX_KEPT: usize = 1_000;

/// The HTML known so far and the views waiting (`W`: whatever tells a
/// view its HTML arrived).
#[derive(Debug)]
pub struct Renderings<W> {
    done: FxHashMap<String, (u64, String)>,
    waiting: Vec<(String, W)>,
    stamp: u64,
}

impl<W> Default for Renderings<W> {
    fn default() -> Self {
        Renderings {
            done: FxHashMap::default(),
            waiting: Vec::new(),
            stamp: 0,
        }
    }
}

impl<W> Renderings<W> {
    /// The HTML of `text`, when the server rendered it already.
    pub fn html(&self, text: &str) -> Option<String> {
        self.done.get(text).map(|(_, html)| html.clone())
    }

    /// Queues a view for `text`'s HTML. True when the queue was empty: the
    /// caller then schedules a [`Renderings::take_batch`].
    pub fn wait(&mut self, text: String, waiter: W) -> bool {
        self.waiting.push((text, waiter));
        self.waiting.len() == 1
    }

    /// The next request: distinct texts (at most [`MAX_TEXTS`], about
    /// [`MAX_BATCH_BYTES`]), with the views waiting for them taken out of
    /// the queue. Empty when nothing waits.
    pub fn take_batch(&mut self) -> (Vec<String>, Vec<(String, W)>) {
        let mut texts: Vec<String> = Vec::new();
        let mut bytes = 0;
        let mut taken = Vec::new();
        let mut left = Vec::new();
        for (text, waiter) in std::mem::take(&mut self.waiting) {
            let known = texts.contains(&text);
            let fits = texts.is_empty()
                || (texts.len() < MAX_TEXTS && bytes + text.len() <= MAX_BATCH_BYTES);
            if known || (fits && left.is_empty()) {
                if !known {
                    bytes += text.len();
                    texts.push(text.clone());
                }
                taken.push((text, waiter));
            } else {
                left.push((text, waiter));
            }
        }
        self.waiting = left;
        (texts, taken)
    }

    /// Keeps what the server answered for `texts` (one HTML per text).
    /// False, and nothing kept, when the answer does not match.
    pub fn store(&mut self, texts: Vec<String>, html: Vec<String>) -> bool {
        if texts.len() != html.len() {
            return false;
        }
        if self.done.len() + texts.len() > MAX_KEPT {
            self.forget_oldest_half();
        }
        for (text, html) in texts.into_iter().zip(html) {
            self.stamp += 1;
            self.done.insert(text, (self.stamp, html));
        }
        true
    }

    fn forget_oldest_half(&mut self) {
        let mut stamps: Vec<u64> = self.done.values().map(|(stamp, _)| *stamp).collect();
        stamps.sort_unstable();
        let Some(&median) = stamps.get(stamps.len() / 2) else {
            return;
        };
        self.done.retain(|_, (stamp, _)| *stamp >= median);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_asks_once_per_text_and_answers_every_view_waiting_for_it() {
        let mut renderings = Renderings::default();
        assert!(renderings.wait("*a*".to_string(), 1));
        assert!(!renderings.wait("*b*".to_string(), 2));
        assert!(!renderings.wait("*a*".to_string(), 3));
        let (texts, waiting) = renderings.take_batch();
        assert_eq!(texts, ["*a*", "*b*"]);
        assert_eq!(
            waiting.iter().map(|(_, w)| *w).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(renderings.take_batch().0.len(), 0);
        assert!(renderings.html("*a*").is_none());
        assert!(renderings.store(texts, vec!["<em>a</em>".into(), "<em>b</em>".into()]));
        assert_eq!(renderings.html("*a*").as_deref(), Some("<em>a</em>"));
        // Once more after the queue emptied: the caller schedules again.
        assert!(renderings.wait("*c*".to_string(), 4));
    }

    #[test]
    fn an_answer_that_does_not_match_the_texts_is_not_kept() {
        let mut renderings: Renderings<()> = Renderings::default();
        assert!(!renderings.store(vec!["a".into(), "b".into()], vec!["<p>a</p>".into()]));
        assert!(renderings.html("a").is_none());
    }

    #[test]
    fn batches_stay_within_the_servers_limits_in_order() {
        let mut renderings = Renderings::default();
        for i in 0..(MAX_TEXTS + 5) {
            renderings.wait(format!("t{i}"), i);
        }
        let (first, _) = renderings.take_batch();
        assert_eq!(first.len(), MAX_TEXTS);
        assert_eq!(first[0], "t0");
        let (second, _) = renderings.take_batch();
        assert_eq!(second, ["t200", "t201", "t202", "t203", "t204"]);

        let big = "x".repeat(MAX_BATCH_BYTES - 10);
        renderings.wait(big.clone(), 0);
        renderings.wait("y".repeat(20), 1);
        renderings.wait("z".to_string(), 2);
        let (texts, _) = renderings.take_batch();
        assert_eq!(texts, [big]);
        // The rest keeps its order: z never jumps ahead of the long one.
        let (texts, _) = renderings.take_batch();
        assert_eq!(texts, ["y".repeat(20), "z".to_string()]);
        // A text longer than a batch goes alone.
        renderings.wait("w".repeat(MAX_BATCH_BYTES * 2), 3);
        renderings.wait("v".to_string(), 4);
        assert_eq!(renderings.take_batch().0.len(), 1);
        assert_eq!(renderings.take_batch().0, ["v"]);
    }

    #[test]
    fn past_the_bound_the_oldest_renderings_are_forgotten() {
        let mut renderings: Renderings<()> = Renderings::default();
        let texts: Vec<String> = (0..MAX_KEPT).map(|i| format!("t{i}")).collect();
        assert!(renderings.store(texts.clone(), texts.clone()));
        assert!(renderings.store(vec!["new".into()], vec!["<p>new</p>".into()]));
        assert!(renderings.html("t0").is_none());
        assert!(renderings.html(&format!("t{}", MAX_KEPT - 1)).is_some());
        assert!(renderings.html("new").is_some());
        assert!(renderings.done.len() <= MAX_KEPT / 2 + 2);
    }
}
