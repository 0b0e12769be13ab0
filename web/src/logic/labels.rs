//! Short texts for the view: status labels, conversation titles, ids.

use asg_shared::ConversationStatus;
use asg_shared::rest::ConversationSummary;
use chrono::{DateTime, TimeDelta, Timelike, Utc};
use uuid::Uuid;

/// The status as a person reads it.
pub fn status_label(status: ConversationStatus) -> &'static str {
    match status {
        ConversationStatus::Active => "active",
        ConversationStatus::WaitingApproval => "waiting for approval",
        ConversationStatus::Completed => "completed",
        ConversationStatus::Canceled => "canceled",
    }
}

/// The first 8 characters of a uuid.
pub fn short_id(id: Uuid) -> String {
    id.simple().to_string()[..8].to_string()
}

/// A conversation's name in the list: its title, else a placeholder with
/// the short id.
pub fn conversation_title(summary: &ConversationSummary) -> String {
    match summary.title.as_deref().map(str::trim) {
        Some(title) if !title.is_empty() => title.to_string(),
        _ => format!("New conversation · {}", short_id(summary.id)),
    }
}

/// The key of a conversation's row in the list: it changes, and the row
/// is drawn again, when the status, the message count or the title does.
/// The title comes last, so a title can hold anything without making two
/// keys alike.
pub fn summary_key(summary: &ConversationSummary) -> String {
    format!(
        "{} {} {} {}",
        summary.id.simple(),
        status_label(summary.status),
        summary.message_count,
        summary.title.as_deref().unwrap_or("\u{0}")
    )
}

/// `n` with the singular or plural noun, e.g. `1 message`, `3 messages`.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// `HH:MM` of `time` in the viewer's time zone, given as JavaScript's
/// `Date.getTimezoneOffset()` (minutes *behind* UTC, e.g. -120 for UTC+2).
pub fn clock(time: DateTime<Utc>, js_offset_minutes: i32) -> String {
    let local = time - TimeDelta::minutes(i64::from(js_offset_minutes));
    format!("{:02}:{:02}", local.hour(), local.minute())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fixtures::at;

    fn summary(title: Option<&str>) -> ConversationSummary {
        ConversationSummary {
            id: Uuid::from_u128(0xabcdef12_0000_0000_0000_000000000000),
            session_id: "s".into(),
            status: ConversationStatus::Active,
            message_count: 1,
            title: title.map(str::to_string),
            pending_approvals: Vec::new(),
            pending_approval: None,
            created_at: at(0),
            updated_at: at(0),
        }
    }

    #[test]
    fn titles_fall_back_to_the_short_id() {
        assert_eq!(
            conversation_title(&summary(Some("list resources"))),
            "list resources"
        );
        assert_eq!(
            conversation_title(&summary(Some("  "))),
            "New conversation · abcdef12"
        );
        assert_eq!(
            conversation_title(&summary(None)),
            "New conversation · abcdef12"
        );
    }

    #[test]
    fn a_row_key_changes_with_what_the_row_shows() {
        let base = summary(Some("list resources"));
        let key = summary_key(&base);
        assert_eq!(key, summary_key(&base.clone()));
        let mut waiting = base.clone();
        waiting.status = ConversationStatus::WaitingApproval;
        let mut longer = base.clone();
        longer.message_count += 1;
        let mut renamed = base.clone();
        renamed.title = Some("list resources again".into());
        let mut untitled = base.clone();
        untitled.title = None;
        let mut other = base.clone();
        other.id = Uuid::from_u128(7);
        let keys = [&waiting, &longer, &renamed, &untitled, &other].map(summary_key);
        for (i, changed) in keys.iter().enumerate() {
            assert_ne!(changed, &key, "change {i} kept the key");
        }
        // No title and an empty one are different rows too.
        let mut empty = base.clone();
        empty.title = Some(String::new());
        assert_ne!(summary_key(&empty), summary_key(&untitled));
    }

    #[test]
    fn labels_read_naturally() {
        assert_eq!(
            status_label(ConversationStatus::WaitingApproval),
            "waiting for approval"
        );
        assert_eq!(count(1, "message", "messages"), "1 message");
        assert_eq!(count(0, "message", "messages"), "0 messages");
        // at(0) is 2025-06-15T15:06:40Z.
        assert_eq!(clock(at(0), 0), "15:06");
        assert_eq!(clock(at(0), -120), "17:06");
        assert_eq!(clock(at(0), 600), "05:06");
    }
}
