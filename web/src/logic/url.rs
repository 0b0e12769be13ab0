//! The selected conversation in the page URL (`?c=<uuid>`), so a reload or
//! a shared link opens the same conversation.

use uuid::Uuid;

/// The query parameter holding the conversation id.
pub const PARAM: &str = "c";

/// The conversation id in a `location.search` string (`?c=<uuid>&…`);
/// `None` when absent or not a UUID.
pub fn conversation_from_query(search: &str) -> Option<Uuid> {
    search
        .trim_start_matches('?')
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == PARAM)
        .and_then(|(_, value)| Uuid::parse_str(value.trim()).ok())
}

/// The query string for a selection: `?c=<uuid>`, or empty for none.
pub fn query_for(id: Option<Uuid>) -> String {
    id.map(|id| format!("?{PARAM}={id}")).unwrap_or_default()
}

/// The URL to put in the address bar: the current path with the
/// selection's query (and the hash kept).
pub fn url_for(pathname: &str, hash: &str, id: Option<Uuid>) -> String {
    let path = if pathname.is_empty() { "/" } else { pathname };
    format!("{path}{}{hash}", query_for(id))
}

/// The REST path of a conversation's live events.
pub fn events_path(id: Uuid) -> String {
    format!("/api/conversations/{id}/events")
}

/// The REST path of the operator inbox (approvals and statuses of every
/// conversation, live).
pub fn inbox_path() -> &'static str {
    "/api/events"
}

/// The REST path (below `/api`) that revokes a conversation's remembered
/// approvals of `tool`; the tool name is percent-encoded.
pub fn grant_path(id: Uuid, tool: &str) -> String {
    format!("/conversations/{id}/grants/{}", encode(tool))
}

/// One page of a listing (`/conversations`, `/approvals`): `base` with
/// `?limit=` when given and `cursor=` (a previous page's `next_cursor`,
/// percent-encoded) when given.
pub fn page_path(base: &str, limit: Option<usize>, cursor: Option<&str>) -> String {
    let mut query = Vec::new();
    if let Some(limit) = limit {
        query.push(format!("limit={limit}"));
    }
    if let Some(cursor) = cursor {
        query.push(format!("cursor={}", encode(cursor)));
    }
    if query.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", query.join("&"))
    }
}

/// `text` percent-encoded for a path segment or a query value (only
/// unreserved characters stay as they are).
fn encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                encoded.push(b as char)
            }
            _ => encoded.push_str(&format!("%{b:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "6f1c2a7e-0d3b-4c55-9a4e-2b7f8e9d0a11";

    #[test]
    fn the_id_is_read_from_the_query() {
        let id = Uuid::parse_str(ID).unwrap();
        assert_eq!(conversation_from_query(&format!("?c={ID}")), Some(id));
        assert_eq!(conversation_from_query(&format!("?x=1&c={ID}&y")), Some(id));
        assert_eq!(conversation_from_query(&format!("c={ID}")), Some(id));
    }

    #[test]
    fn missing_or_malformed_ids_are_none() {
        assert_eq!(conversation_from_query(""), None);
        assert_eq!(conversation_from_query("?"), None);
        assert_eq!(conversation_from_query("?c="), None);
        assert_eq!(conversation_from_query("?c=../../etc"), None);
        assert_eq!(conversation_from_query(&format!("?cc={ID}")), None);
    }

    #[test]
    fn urls_round_trip() {
        let id = Uuid::parse_str(ID).unwrap();
        assert_eq!(query_for(None), "");
        assert_eq!(url_for("/", "", Some(id)), format!("/?c={ID}"));
        assert_eq!(url_for("", "#top", None), "/#top");
        assert_eq!(
            conversation_from_query(&query_for(Some(id))),
            Some(id),
            "what we write we read back"
        );
        assert_eq!(events_path(id), format!("/api/conversations/{ID}/events"));
        assert_eq!(inbox_path(), "/api/events");
    }

    #[test]
    fn grant_paths_encode_the_tool() {
        let id = Uuid::parse_str(ID).unwrap();
        assert_eq!(
            grant_path(id, "resources_add"),
            format!("/conversations/{ID}/grants/resources_add")
        );
        assert_eq!(
            grant_path(id, "a/b c"),
            format!("/conversations/{ID}/grants/a%2Fb%20c")
        );
    }

    #[test]
    fn page_paths_carry_the_limit_and_the_encoded_cursor() {
        assert_eq!(page_path("/conversations", None, None), "/conversations");
        assert_eq!(
            page_path("/approvals", Some(500), None),
            "/approvals?limit=500"
        );
        assert_eq!(
            page_path("/conversations", None, Some("djE6MTIz_-")),
            "/conversations?cursor=djE6MTIz_-"
        );
        assert_eq!(
            page_path("/approvals", Some(500), Some("a+b/c=")),
            "/approvals?limit=500&cursor=a%2Bb%2Fc%3D"
        );
    }
}
