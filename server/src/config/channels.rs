//! `channels:` — where approval requests (and questions) are also shown
//! and decided, beside the web chat and the REST API: Slack and email.
//! A channel is only a door: who decides is a principal of
//! [`ChannelsConfig::principals`] or an `auth.api_keys` entry, judged by
//! the same gate. Secrets are not here: tokens and passwords come from the
//! environment variables the entries name.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigDuration;

mod email;
pub use email::{EmailRoute, EmailTls, validate_email};

/// `channels:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelsConfig {
    /// Principals a channel's users may stand for that are not API keys
    /// (e.g. `oidc:<issuer>#<sub>`): subject → display name, roles and
    /// groups. A user mapped to `key:<name>` takes that `auth.api_keys`
    /// entry's roles and groups instead.
    #[serde(default)]
    pub principals: BTreeMap<String, ChannelPrincipalConfig>,
    /// A Slack app that posts approvals and takes decisions from its
    /// buttons.
    #[serde(default)]
    pub slack: Option<SlackConfig>,
    /// Approval mails with signed links to a confirmation page.
    #[serde(default)]
    pub email: Option<EmailConfig>,
}

/// One `channels.principals` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelPrincipalConfig {
    /// Display name recorded with decisions.
    #[serde(default)]
    pub name: Option<String>,
    /// Roles (`approver`, `admin`).
    #[serde(default)]
    pub roles: Vec<String>,
    /// Groups an approval rule's `approvers` may name.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// `channels.slack`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// The environment variable holding the bot token (`xoxb-…`).
    pub bot_token_env: String,
    /// The environment variable holding the app's signing secret.
    pub signing_secret_env: String,
    /// The channel approvals are posted to (id, e.g. `C0123456789`).
    pub channel: String,
    /// Slack user id or email → principal subject (`key:<name>` or a
    /// `channels.principals` entry).
    #[serde(default)]
    pub user_map: BTreeMap<String, String>,
    /// The Web API's base URL (a stand-in in tests).
    #[serde(default = "default_slack_api_url")]
    pub api_url: String,
    /// Per `approval.rules` entry: another channel, a user group to
    /// mention. Approvals no route names go to `channel`.
    #[serde(default)]
    pub routes: Vec<SlackRouteConfig>,
}

/// One `channels.slack.routes` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackRouteConfig {
    /// The `approval.rules` index whose approvals this route takes.
    pub rule: usize,
    /// The channel they are posted to (default: `channels.slack.channel`).
    #[serde(default)]
    pub channel: Option<String>,
    /// A user group id (`S0123456789`) mentioned in the message and its
    /// reminder.
    #[serde(default)]
    pub mention: Option<String>,
}

/// Slack's Web API.
pub const DEFAULT_SLACK_API_URL: &str = "https://slack.com/api";

fn default_slack_api_url() -> String {
    DEFAULT_SLACK_API_URL.to_string()
}

impl ChannelsConfig {
    /// Checks what serde cannot; `rules` is how many `approval.rules`
    /// there are (routes name them by index).
    pub fn validate(&self, rules: usize) -> Result<(), (String, String)> {
        if let Some(slack) = &self.slack {
            slack.validate(rules)?;
        }
        validate_email(self, rules)
    }
}

impl SlackConfig {
    fn validate(&self, rules: usize) -> Result<(), (String, String)> {
        let at = |field: &str| format!("channels.slack.{field}");
        for (field, value) in [
            ("bot_token_env", &self.bot_token_env),
            ("signing_secret_env", &self.signing_secret_env),
        ] {
            if value.trim().is_empty() {
                return Err((at(field), "must name an environment variable".into()));
            }
        }
        check_channel(&at("channel"), &self.channel)?;
        super::check_http_url(&at("api_url"), &self.api_url)?;
        for (i, route) in self.routes.iter().enumerate() {
            let at = |field: &str| format!("channels.slack.routes[{i}].{field}");
            if route.rule >= rules {
                return Err((
                    at("rule"),
                    format!(
                        "approval.rules[{}] does not exist ({rules} rule(s) configured)",
                        route.rule
                    ),
                ));
            }
            if let Some(channel) = &route.channel {
                check_channel(&at("channel"), channel)?;
            }
            if let Some(group) = &route.mention
                && !is_slack_id(group, 'S')
            {
                return Err((
                    at("mention"),
                    format!("must be a user group id like S0123456789, got {group:?}"),
                ));
            }
        }
        Ok(())
    }
}

/// A channel id (`C…`, `G…`) or a channel name (`#ops`).
fn check_channel(field: &str, channel: &str) -> Result<(), (String, String)> {
    let named =
        channel.len() > 1 && channel.starts_with('#') && !channel.contains(char::is_whitespace);
    if named || is_slack_id(channel, 'C') || is_slack_id(channel, 'G') {
        return Ok(());
    }
    Err((
        field.to_string(),
        format!("must be a channel id like C0123456789 (or #name), got {channel:?}"),
    ))
}

/// `prefix` followed by upper-case letters and digits.
fn is_slack_id(id: &str, prefix: char) -> bool {
    id.len() > 2
        && id.starts_with(prefix)
        && id
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// `channels.email`: approval mails over SMTP with signed links to a
/// confirmation page (`channels/email`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailConfig {
    /// The SMTP server's host name.
    pub smtp_host: String,
    /// Its port (default 587, the submission port).
    #[serde(default = "email::default_smtp_port")]
    pub smtp_port: u16,
    /// `starttls` (default: upgrade, required), `tls` (TLS from the first
    /// byte, usually port 465) or `none` (a trusted local relay only).
    #[serde(default)]
    pub tls: EmailTls,
    /// The environment variable holding the SMTP user name (with
    /// `password_env`; neither: no authentication).
    #[serde(default)]
    pub username_env: Option<String>,
    /// The environment variable holding the SMTP password.
    #[serde(default)]
    pub password_env: Option<String>,
    /// The sender: `agent@example.com` or `Agent <agent@example.com>`.
    pub from: String,
    /// Recipients: address → principal subject (`key:<name>` or a
    /// `channels.principals` entry); a decision through a recipient's
    /// link is recorded as that principal.
    #[serde(default)]
    pub to: BTreeMap<String, String>,
    /// The environment variable holding the links' HMAC-SHA256 secret (at
    /// least 32 bytes).
    pub link_secret_env: String,
    /// How long a mail's links stay valid (default 24h).
    #[serde(default = "email::default_link_ttl")]
    pub link_ttl: ConfigDuration,
    /// Recipients per approval rule; an approval raised by a rule listed
    /// here goes to its `to` only, every other one to all of `to`.
    #[serde(default)]
    pub routes: Vec<EmailRoute>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slack(extra: &str) -> ChannelsConfig {
        let yaml = format!(
            "slack:\n  bot_token_env: SLACK_BOT_TOKEN\n  signing_secret_env: SLACK_SIGNING_SECRET\n  \
             channel: C0123456789\n{extra}"
        );
        serde_yaml::from_str(&yaml).unwrap()
    }

    #[test]
    fn the_api_url_defaults_to_slack() {
        let config = slack("");
        assert_eq!(config.slack.unwrap().api_url, "https://slack.com/api");
        assert!(slack("").validate(0).is_ok());
    }

    #[test]
    fn a_route_to_a_missing_rule_is_refused_naming_it() {
        let config = slack("  routes:\n    - { rule: 2, channel: C0OPS }\n");
        let (field, problem) = config.validate(2).unwrap_err();
        assert_eq!(field, "channels.slack.routes[0].rule");
        assert!(problem.contains("approval.rules[2]"), "{problem}");
        assert!(config.validate(3).is_ok());
    }

    #[test]
    fn malformed_channels_mentions_and_urls_are_refused() {
        for (extra, field) in [
            (
                "  routes:\n    - { rule: 0, mention: ops }\n",
                "channels.slack.routes[0].mention",
            ),
            (
                "  routes:\n    - { rule: 0, channel: \"ops room\" }\n",
                "channels.slack.routes[0].channel",
            ),
            ("  api_url: ftp://x\n", "channels.slack.api_url"),
        ] {
            let (got, _) = slack(extra).validate(1).unwrap_err();
            assert_eq!(got, field, "{extra}");
        }
        let mut config = slack("");
        if let Some(slack) = config.slack.as_mut() {
            slack.channel = "ops".into();
        }
        assert_eq!(config.validate(0).unwrap_err().0, "channels.slack.channel");
    }
}
