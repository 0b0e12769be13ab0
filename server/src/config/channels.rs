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
