//! Pages of a listing (`GET /conversations`, `GET /approvals`): at most
//! `limit` items after an opaque cursor, and the cursor of the next page.
//!
//! A cursor is the sort key of the last item given out (its time and id),
//! so a page stays correct while items are added or removed: nothing is
//! skipped or repeated that existed on both requests. It is base64url of
//! `v1:<unix seconds>.<nanoseconds>:<uuid>` (any date); anything else is
//! refused as not a cursor this agent gave out.
//!
//! The cursor text is the door's: the engine and the store take and give
//! only the sort key (`after` / `next` as `(created_at, id)`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Items per page when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 50;
/// The largest `limit`.
pub const MAX_LIMIT: usize = 500;

/// The sort key of one listed item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    /// Its creation time.
    pub at: DateTime<Utc>,
    /// Its id (ties of time).
    pub id: Uuid,
}

/// Which direction a listing runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Oldest first (approvals).
    Oldest,
    /// Newest first (conversations).
    Newest,
}

/// One page asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// Most items.
    pub limit: usize,
    /// Items after this key only.
    pub after: Option<Key>,
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest {
            limit: DEFAULT_LIMIT,
            after: None,
        }
    }
}

impl PageRequest {
    /// A page from the query's `limit` and `cursor` (absent: defaults).
    pub fn parse(limit: Option<&str>, cursor: Option<&str>) -> Result<PageRequest, String> {
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(text) => match text.parse::<usize>() {
                Ok(n) if digits(text) && (1..=MAX_LIMIT).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "limit must be a whole number from 1 to {MAX_LIMIT}, got {text:?}"
                    ));
                }
            },
        };
        // `cursor=` empty is the first page.
        let after = cursor.filter(|c| !c.is_empty()).map(decode).transpose()?;
        Ok(PageRequest { limit, after })
    }

    /// Whether an item with `key` comes after the cursor in `order`.
    pub fn admits(&self, key: Key, order: Order) -> bool {
        let Some(after) = self.after else {
            return true;
        };
        match order {
            Order::Oldest => (key.at, key.id) > (after.at, after.id),
            Order::Newest => {
                (key.at, std::cmp::Reverse(key.id)) < (after.at, std::cmp::Reverse(after.id))
            }
        }
    }

    /// The page of `items` (any order) sorted by `order`: the items after
    /// the cursor, at most `limit`, and the next page's cursor when more
    /// follow.
    pub fn take<T>(
        &self,
        mut items: Vec<T>,
        order: Order,
        key: impl Fn(&T) -> Key,
    ) -> (Vec<T>, Option<String>) {
        items.retain(|item| self.admits(key(item), order));
        items.sort_by(|a, b| match order {
            Order::Oldest => (key(a).at, key(a).id).cmp(&(key(b).at, key(b).id)),
            Order::Newest => (key(b).at, key(a).id).cmp(&(key(a).at, key(b).id)),
        });
        let more = items.len() > self.limit;
        items.truncate(self.limit);
        let next = items.last().filter(|_| more).map(|last| encode(key(last)));
        (items, next)
    }
}

/// The cursor that points after `key`.
pub fn encode(key: Key) -> String {
    let (seconds, nanos) = (key.at.timestamp(), key.at.timestamp_subsec_nanos());
    URL_SAFE_NO_PAD.encode(format!("v1:{seconds}.{nanos:09}:{}", key.id))
}

/// The key a cursor points after.
pub fn decode(cursor: &str) -> Result<Key, String> {
    let refused =
        || format!("cursor {cursor:?} is not one this agent gave out (use next_cursor as it came)");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| refused())?;
    let text = String::from_utf8(bytes).map_err(|_| refused())?;
    let mut parts = text.splitn(3, ':');
    let (Some("v1"), Some(time), Some(id)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(refused());
    };
    let (seconds, nanos) = time.split_once('.').ok_or_else(refused)?;
    let seconds: i64 = seconds.parse().map_err(|_| refused())?;
    let nanos: u32 = nanos.parse().map_err(|_| refused())?;
    let at = DateTime::from_timestamp(seconds, nanos).ok_or_else(refused)?;
    let id = Uuid::parse_str(id).map_err(|_| refused())?;
    Ok(Key { at, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seconds: i64, id: u128) -> Key {
        Key {
            at: DateTime::from_timestamp(seconds, 0).unwrap(),
            id: Uuid::from_u128(id),
        }
    }

    /// Every page of `items` in `order`, walking the cursors.
    fn walk(items: &[Key], order: Order, limit: usize) -> Vec<Vec<u128>> {
        let mut pages = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let limit = limit.to_string();
            let request = PageRequest::parse(Some(&limit), cursor.as_deref()).unwrap();
            let (page, next) = request.take(items.to_vec(), order, |k| *k);
            pages.push(page.iter().map(|k| k.id.as_u128()).collect());
            match next {
                Some(next) => cursor = Some(next),
                None => return pages,
            }
            assert!(pages.len() < 100, "cursors never end");
        }
    }

    #[test]
    fn pages_cover_every_item_once_in_order_with_ties_broken_by_id() {
        let items = [key(3, 1), key(1, 2), key(2, 3), key(2, 4), key(5, 5)];
        let newest = walk(&items, Order::Newest, 2);
        assert_eq!(newest, [vec![5, 1], vec![3, 4], vec![2]]);
        let oldest = walk(&items, Order::Oldest, 2);
        assert_eq!(oldest, [vec![2, 3], vec![4, 1], vec![5]]);
        // An exact multiple of the limit ends without an empty page.
        assert_eq!(walk(&items[..4], Order::Oldest, 2).len(), 2);
        assert_eq!(walk(&[], Order::Newest, 2), [Vec::<u128>::new()]);
    }

    #[test]
    fn a_page_after_a_removed_item_still_continues_in_place() {
        let items = vec![key(1, 1), key(2, 2), key(3, 3), key(4, 4)];
        let first = PageRequest::parse(Some("2"), None).unwrap();
        let (_, next) = first.take(items.clone(), Order::Oldest, |k| *k);
        let next = next.unwrap();
        // The last item of the first page is gone; a new one came first.
        let changed = vec![key(0, 9), key(1, 1), key(3, 3), key(4, 4)];
        let second = PageRequest::parse(None, Some(&next)).unwrap();
        let (page, _) = second.take(changed, Order::Oldest, |k| *k);
        assert_eq!(page, [key(3, 3), key(4, 4)]);
    }

    #[test]
    fn bad_limits_and_cursors_are_named() {
        for bad in ["0", "501", "-1", "ten", "", "+5", " 5", "5 "] {
            let error = PageRequest::parse(Some(bad), None).unwrap_err();
            assert!(error.contains("limit") && error.contains("500"), "{error}");
        }
        assert_eq!(PageRequest::parse(Some("500"), None).unwrap().limit, 500);
        assert_eq!(PageRequest::parse(None, None).unwrap().limit, DEFAULT_LIMIT);
        let forged = [
            "not-base64!".to_string(),
            URL_SAFE_NO_PAD.encode("v2:1:00000000-0000-0000-0000-000000000001"),
            URL_SAFE_NO_PAD.encode("v1:abc:00000000-0000-0000-0000-000000000001"),
            URL_SAFE_NO_PAD.encode("v1:1:../../etc/passwd"),
            URL_SAFE_NO_PAD.encode([0xff, 0xfe]),
        ];
        for cursor in forged {
            let error = PageRequest::parse(None, Some(&cursor)).unwrap_err();
            assert!(error.contains("cursor"), "{error}");
        }
        let round = key(1_700_000_000, 7);
        assert_eq!(decode(&encode(round)).unwrap(), round);
        // Dates nanoseconds since 1970 cannot hold still page.
        for seconds in [-20_000_000_000, 10_000_000_000] {
            let far = key(seconds, 8);
            assert_eq!(decode(&encode(far)).unwrap(), far);
        }
        let with_nanos = Key {
            at: DateTime::from_timestamp(5, 123).unwrap(),
            id: Uuid::from_u128(9),
        };
        assert_eq!(decode(&encode(with_nanos)).unwrap(), with_nanos);
        assert_eq!(PageRequest::parse(None, Some("")).unwrap().after, None);
    }
}
