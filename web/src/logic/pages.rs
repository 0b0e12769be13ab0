//! Paged listings (`GET /conversations`, `GET /approvals`: `?limit=`,
//! `?cursor=`, `next_cursor` on every page but the last).
//!
//! The sidebar starts with the first page of conversations (newest first)
//! and appends the next page when the user scrolls near its end or
//! presses "Load more". Refreshes (after a turn, an inbox event, focus)
//! fetch the first page again and lay it over the top of the list,
//! keeping the older pages already loaded. The pending approvals, read
//! while the live inbox is down, are every page of `/approvals` (bounded).

use std::cmp::Ordering;

use asg_shared::PendingApproval;
use asg_shared::rest::ConversationSummary;
use rustc_hash::FxHashSet;
use uuid::Uuid;

/// How far from the end of the sidebar list (in CSS pixels) scrolling
/// loads the next page.
pub const LOAD_MARGIN_PX: i32 = 240;

/// Items per page when reading every pending approval.
pub const APPROVALS_PAGE_LIMIT: usize = 500;

/// The most pages of approvals read in one go (10 000 approvals).
pub const MAX_APPROVAL_PAGES: usize = 20;

/// Where the sidebar's paging stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paging {
    /// The `?cursor=` of the next page not loaded yet; `None` once the
    /// last page is in (or before the first).
    pub next_cursor: Option<String>,
    /// The next page is being fetched.
    pub loading: bool,
}

impl Paging {
    /// More conversations exist past the end of the list.
    pub fn has_more(&self) -> bool {
        self.next_cursor.is_some()
    }

    /// Starts fetching the next page: its cursor, or `None` when there is
    /// none or a fetch already runs.
    pub fn start_next(&mut self) -> Option<String> {
        if self.loading {
            return None;
        }
        let cursor = self.next_cursor.clone()?;
        self.loading = true;
        Some(cursor)
    }

    /// The fetch of the next page failed: it may be tried again.
    pub fn failed(&mut self) {
        self.loading = false;
    }
}

/// The agent's order of conversations: newest created first, ties by id.
pub fn listing_order(a: &ConversationSummary, b: &ConversationSummary) -> Ordering {
    b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id))
}

/// Lays a freshly fetched first page (`page`, with its `next_cursor`)
/// over the list. The conversations the page covers are replaced by it
/// (gone ones drop out, new ones come in at the top); the older ones
/// loaded from later pages stay after it, once each, and so does the
/// cursor past them. When the page reaches past everything loaded, or
/// leaves a gap before it (many conversations created meanwhile), it
/// starts the list over.
pub fn merge_first_page(
    list: &mut Vec<ConversationSummary>,
    paging: &mut Paging,
    page: Vec<ConversationSummary>,
    next_cursor: Option<String>,
) {
    let gap = match (page.last(), list.iter().min_by(|a, b| listing_order(a, b))) {
        (Some(last), Some(newest)) => listing_order(last, newest) == Ordering::Less,
        _ => false,
    };
    let kept: Vec<ConversationSummary> = match (page.last(), &next_cursor) {
        (Some(last), Some(_)) if !gap => {
            let ids: FxHashSet<Uuid> = page.iter().map(|c| c.id).collect();
            list.iter()
                .filter(|c| !ids.contains(&c.id))
                .filter(|c| listing_order(c, last) == Ordering::Greater)
                .cloned()
                .collect()
        }
        _ => Vec::new(),
    };
    if kept.is_empty() {
        paging.next_cursor = next_cursor;
    }
    *list = page;
    append_new(list, kept);
}

/// Appends a next page fetched with the cursor `requested`: only the
/// conversations not listed yet, then moves the cursor on. A page asked
/// for with a cursor a refresh has replaced meanwhile is dropped (false).
pub fn append_page(
    list: &mut Vec<ConversationSummary>,
    paging: &mut Paging,
    requested: &str,
    page: Vec<ConversationSummary>,
    next_cursor: Option<String>,
) -> bool {
    paging.loading = false;
    if paging.next_cursor.as_deref() != Some(requested) {
        return false;
    }
    append_new(list, page);
    paging.next_cursor = next_cursor;
    true
}

/// Appends the items of `more` whose id is not in `list` yet (nor
/// earlier in `more`).
fn append_new(list: &mut Vec<ConversationSummary>, more: Vec<ConversationSummary>) {
    let mut seen: FxHashSet<Uuid> = list.iter().map(|c| c.id).collect();
    list.extend(more.into_iter().filter(|c| seen.insert(c.id)));
}

/// A scrolled element's position and sizes (CSS pixels), as the DOM
/// reports them (`scrollTop`, `clientHeight`, `scrollHeight`, …).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scroll {
    /// `scrollTop`.
    pub top: i32,
    /// `scrollLeft`.
    pub left: i32,
    /// `clientHeight`.
    pub client_height: i32,
    /// `clientWidth`.
    pub client_width: i32,
    /// `scrollHeight`.
    pub scroll_height: i32,
    /// `scrollWidth`.
    pub scroll_width: i32,
}

/// True when the end of the list is within `margin` pixels of the view:
/// down (the sidebar) and right (the strip on narrow screens), so a list
/// too short to scroll is at its end too. A list not laid out (no size)
/// is not.
pub fn near_end(scroll: &Scroll, margin: i32) -> bool {
    if scroll.client_height <= 0 && scroll.client_width <= 0 {
        return false;
    }
    let down = scroll.top + scroll.client_height >= scroll.scroll_height - margin;
    let right = scroll.left + scroll.client_width >= scroll.scroll_width - margin;
    down && right
}

/// Reading every page of `/approvals`: gathers the approvals (each once)
/// and says which page comes next, stopping after [`MAX_APPROVAL_PAGES`]
/// or when a cursor comes back.
#[derive(Debug, Default)]
pub struct ApprovalPages {
    approvals: Vec<PendingApproval>,
    seen: FxHashSet<Uuid>,
    cursors: FxHashSet<String>,
    pages: usize,
}

impl ApprovalPages {
    /// Takes one page; the cursor of the next page to read, if any.
    pub fn take(
        &mut self,
        page: Vec<PendingApproval>,
        next_cursor: Option<String>,
    ) -> Option<String> {
        self.pages += 1;
        for approval in page {
            if self.seen.insert(approval.uuid) {
                self.approvals.push(approval);
            }
        }
        let next = next_cursor?;
        (self.pages < MAX_APPROVAL_PAGES && self.cursors.insert(next.clone())).then_some(next)
    }

    /// Everything read, oldest first.
    pub fn finish(mut self) -> Vec<PendingApproval> {
        super::inbox::oldest_first(&mut self.approvals);
        self.approvals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fixtures::{approval, at, id};
    use asg_shared::ConversationStatus;

    /// Conversation `n`, created at `n` seconds: a larger `n` is newer.
    fn conv(n: u128) -> ConversationSummary {
        ConversationSummary {
            id: id(n),
            session_id: "s".into(),
            status: ConversationStatus::Active,
            message_count: 2,
            title: Some(format!("conversation {n}")),
            pending_approvals: Vec::new(),
            pending_approval: None,
            created_at: at(n as i64),
            updated_at: at(n as i64),
        }
    }

    /// Conversations `from` down to `to` (newest first).
    fn newest(from: u128, to: u128) -> Vec<ConversationSummary> {
        (to..=from).rev().map(conv).collect()
    }

    fn ids(list: &[ConversationSummary]) -> Vec<u128> {
        list.iter().map(|c| c.id.as_u128()).collect()
    }

    fn cursor(n: u128) -> Option<String> {
        Some(format!("after-{n}"))
    }

    /// 60 conversations (1..=60), the first page of 50 loaded.
    fn first_page_loaded() -> (Vec<ConversationSummary>, Paging) {
        let mut list = Vec::new();
        let mut paging = Paging::default();
        merge_first_page(&mut list, &mut paging, newest(60, 11), cursor(11));
        (list, paging)
    }

    #[test]
    fn the_first_page_then_the_next_one_lists_everything_once() {
        let (mut list, mut paging) = first_page_loaded();
        assert_eq!(list.len(), 50);
        assert!(paging.has_more());
        let requested = paging.start_next().unwrap();
        assert_eq!(requested, "after-11");
        assert_eq!(paging.start_next(), None, "one fetch at a time");
        assert!(append_page(
            &mut list,
            &mut paging,
            &requested,
            newest(10, 1),
            None
        ));
        assert_eq!(ids(&list), (1..=60).rev().collect::<Vec<_>>());
        assert!(!paging.has_more());
        assert!(!paging.loading);
        assert_eq!(paging.start_next(), None);
    }

    #[test]
    fn a_single_page_is_the_whole_list() {
        let mut list = newest(5, 1);
        let mut paging = Paging {
            next_cursor: cursor(1),
            loading: false,
        };
        merge_first_page(&mut list, &mut paging, newest(3, 1), None);
        assert_eq!(ids(&list), [3, 2, 1]);
        assert!(!paging.has_more());
    }

    #[test]
    fn a_refresh_keeps_the_older_pages_and_their_cursor() {
        let (mut list, mut paging) = first_page_loaded();
        let requested = paging.start_next().unwrap();
        append_page(&mut list, &mut paging, &requested, newest(10, 6), cursor(6));
        // Conversation 61 is created: the first page now ends at 12.
        merge_first_page(&mut list, &mut paging, newest(61, 12), cursor(12));
        assert_eq!(ids(&list), (6..=61).rev().collect::<Vec<_>>());
        assert_eq!(paging.next_cursor, cursor(6));
    }

    #[test]
    fn a_refresh_drops_gone_conversations_and_shows_new_ones_first() {
        let (mut list, mut paging) = first_page_loaded();
        let mut page = newest(62, 13);
        page.retain(|c| c.id != id(40));
        merge_first_page(&mut list, &mut paging, page, cursor(13));
        assert_eq!(&ids(&list)[..3], [62, 61, 60]);
        assert!(!ids(&list).contains(&40));
        // 12 and 11 were loaded already and stay; the cursor is past 11.
        assert_eq!(&ids(&list)[list.len() - 2..], [12, 11]);
        assert_eq!(list.len(), 51);
        assert_eq!(paging.next_cursor, cursor(11));
    }

    #[test]
    fn a_page_asked_for_before_a_restart_of_the_list_is_dropped() {
        let (mut list, mut paging) = first_page_loaded();
        let requested = paging.start_next().unwrap();
        // Meanwhile 200 conversations came: the new first page leaves a gap.
        merge_first_page(&mut list, &mut paging, newest(260, 211), cursor(211));
        assert_eq!(ids(&list), (211..=260).rev().collect::<Vec<_>>());
        assert_eq!(paging.next_cursor, cursor(211));
        assert!(!append_page(
            &mut list,
            &mut paging,
            &requested,
            newest(10, 1),
            None
        ));
        assert_eq!(list.len(), 50);
        assert!(!paging.loading);
        assert_eq!(paging.start_next().as_deref(), Some("after-211"));
    }

    #[test]
    fn pages_that_overlap_add_each_conversation_once() {
        let (mut list, mut paging) = first_page_loaded();
        let requested = paging.start_next().unwrap();
        // The page repeats 12 and 11 (and 11 twice).
        let mut page = newest(12, 1);
        page.push(conv(11));
        assert!(append_page(&mut list, &mut paging, &requested, page, None));
        let mut unique = ids(&list);
        unique.dedup();
        assert_eq!(unique.len(), list.len());
        assert_eq!(list.len(), 60);
    }

    #[test]
    fn a_failed_fetch_can_be_tried_again() {
        let (_, mut paging) = first_page_loaded();
        assert!(paging.start_next().is_some());
        paging.failed();
        assert_eq!(paging.start_next().as_deref(), Some("after-11"));
    }

    #[test]
    fn ties_of_creation_time_follow_the_agent_s_order() {
        let mut a = conv(2);
        let b = conv(1);
        a.created_at = b.created_at;
        assert_eq!(listing_order(&b, &a), Ordering::Less);
        assert_eq!(listing_order(&conv(9), &conv(3)), Ordering::Less);
    }

    #[test]
    fn the_end_is_near_when_scrolled_down_or_right() {
        let top = Scroll {
            top: 0,
            left: 0,
            client_height: 700,
            client_width: 260,
            scroll_height: 2800,
            scroll_width: 260,
        };
        assert!(!near_end(&top, LOAD_MARGIN_PX));
        let bottom = Scroll { top: 2100, ..top };
        assert!(near_end(&bottom, LOAD_MARGIN_PX));
        let almost = Scroll { top: 1900, ..top };
        assert!(near_end(&almost, LOAD_MARGIN_PX));
        let short = Scroll {
            scroll_height: 700,
            ..top
        };
        assert!(near_end(&short, LOAD_MARGIN_PX), "nothing to scroll");
        // The narrow-screen strip scrolls sideways.
        let strip = Scroll {
            top: 0,
            left: 0,
            client_height: 60,
            client_width: 400,
            scroll_height: 60,
            scroll_width: 9800,
        };
        assert!(!near_end(&strip, LOAD_MARGIN_PX));
        assert!(near_end(
            &Scroll {
                left: 9400,
                ..strip
            },
            LOAD_MARGIN_PX
        ));
        assert!(
            !near_end(&Scroll::default(), LOAD_MARGIN_PX),
            "not laid out"
        );
    }

    #[test]
    fn every_page_of_approvals_is_read_once_and_in_order() {
        let mut pages = ApprovalPages::default();
        let next = pages.take(vec![approval(1, "a"), approval(2, "b")], cursor(2));
        assert_eq!(next, cursor(2));
        let next = pages.take(vec![approval(3, "c"), approval(2, "b")], None);
        assert_eq!(next, None);
        let uuids: Vec<_> = pages.finish().iter().map(|a| a.uuid).collect();
        assert_eq!(uuids, [id(1), id(2), id(3)]);
    }

    #[test]
    fn reading_approvals_stops_after_the_last_allowed_page_or_a_repeated_cursor() {
        let mut pages = ApprovalPages::default();
        let mut read = 0;
        let mut next = Some("start".to_string());
        while let Some(cursor) = next {
            read += 1;
            next = pages.take(vec![approval(read, &cursor)], Some(format!("c{read}")));
        }
        assert_eq!(read as usize, MAX_APPROVAL_PAGES);
        assert_eq!(pages.finish().len(), MAX_APPROVAL_PAGES);

        let mut pages = ApprovalPages::default();
        assert_eq!(pages.take(vec![], cursor(1)), cursor(1));
        assert_eq!(pages.take(vec![], cursor(1)), None, "a cursor came back");
    }
}
