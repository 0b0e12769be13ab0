//! The channels' own doors under `/channels/`: requests that prove who
//! sent them without our credentials — Slack's signed interactivity
//! payloads, an email link's signed token — and arrive as forms, not
//! JSON. So this prefix skips the bearer check ([`super::auth`]) and the
//! JSON content-type rule ([`super::guard`]); each handler verifies its
//! request itself before anything else, then decides through the engine
//! as the principal the channel maps the person to
//! (`crate::channels::directory`).

pub mod email;
pub mod slack;

use axum::Router;
use axum::routing::{get, post};

use super::AppState;

/// Where the channels' routes live.
pub const PREFIX: &str = "/channels/";

/// Whether `path` is a channel's route (authenticated by the channel).
pub fn is_channel_path(path: &str) -> bool {
    path.starts_with(PREFIX)
}

/// The channels' routes (each answers 404 when its channel is not
/// configured).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/channels/email/approve", get(email::email_approve))
        .route("/channels/email/reject", get(email::email_reject))
        .route("/channels/email/decide", post(email::email_decide))
        .route("/channels/slack/actions", post(slack::slack_actions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_channel_prefix_is_a_channel_path() {
        assert!(is_channel_path("/channels/slack/actions"));
        assert!(!is_channel_path("/channels"));
        assert!(!is_channel_path("/approvals/channels/x"));
    }
}
