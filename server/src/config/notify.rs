//! The notification settings of `agent.yaml`: `approval.webhooks`,
//! `approval.web_url` and `a2a_push`. Secrets are not here: a webhook's
//! signing secret comes from the environment variable it names.

use serde::Deserialize;

/// Webhook event names, in the order the approval lifecycle reaches them.
pub const EVENTS: [&str; 8] = [
    "approval.requested",
    "approval.reminded",
    "approval.decided",
    "approval.expired",
    "question.asked",
    "question.reminded",
    "question.answered",
    "question.expired",
];

/// Shortest signing secret accepted, in bytes.
pub const MIN_SECRET_BYTES: usize = 16;

/// One `approval.webhooks` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// Where approval events are POSTed (http or https).
    pub url: String,
    /// The environment variable holding the HMAC-SHA256 signing secret
    /// (set at startup, at least 16 bytes).
    pub secret_env: String,
    /// The events sent (see [`EVENTS`]); absent: all of them.
    #[serde(default)]
    pub events: Option<Vec<String>>,
}

impl WebhookConfig {
    /// Does this webhook want `event`?
    pub fn wants(&self, event: &str) -> bool {
        self.events
            .as_ref()
            .is_none_or(|events| events.iter().any(|e| e == event))
    }
}

/// `a2a_push:` — which callback URLs A2A clients may register for push
/// notifications (SSRF rules, see `notify::ssrf`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aPushConfig {
    /// Accept callbacks on loopback, private (10/8, 172.16/12,
    /// 192.168/16, 100.64/10) and unique-local (fc00::/7) addresses.
    /// Link-local (169.254/16, fe80::/10: cloud metadata), unspecified,
    /// broadcast and multicast addresses stay refused.
    #[serde(default)]
    pub allow_private_networks: bool,
    /// Host names (or IP literals) accepted whatever they resolve to.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

fn is_http_url(url: &str) -> bool {
    (url.starts_with("http://") || url.starts_with("https://"))
        && reqwest::Url::parse(url).is_ok_and(|u| u.host_str().is_some_and(|h| !h.is_empty()))
}

/// Checks `approval.webhooks`, `approval.web_url` and `a2a_push`; the
/// field path and the problem on failure.
pub fn validate(
    webhooks: &[WebhookConfig],
    web_url: Option<&str>,
    push: &A2aPushConfig,
) -> Result<(), (String, String)> {
    for (i, hook) in webhooks.iter().enumerate() {
        let field = format!("approval.webhooks[{i}]");
        if !is_http_url(&hook.url) {
            return Err((
                format!("{field}.url"),
                format!("must be an http(s) URL, got {:?}", hook.url),
            ));
        }
        let env_name = !hook.secret_env.is_empty()
            && hook
                .secret_env
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !env_name {
            return Err((
                format!("{field}.secret_env"),
                format!(
                    "must name an environment variable (letters, digits, _), got {:?}",
                    hook.secret_env
                ),
            ));
        }
        for (j, event) in hook.events.iter().flatten().enumerate() {
            if !EVENTS.contains(&event.as_str()) {
                return Err((
                    format!("{field}.events[{j}]"),
                    format!("unknown event {event:?}; known: {}", EVENTS.join(", ")),
                ));
            }
        }
    }
    if let Some(url) = web_url
        && !is_http_url(url)
    {
        return Err((
            "approval.web_url".into(),
            format!("must be an http(s) URL, got {url:?}"),
        ));
    }
    for (i, host) in push.allowed_hosts.iter().enumerate() {
        if host.trim().is_empty() || host.contains(['/', '@', ' ']) {
            return Err((
                format!("a2a_push.allowed_hosts[{i}]"),
                format!("must be a host name or an IP address, got {host:?}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(url: &str, env: &str, events: Option<Vec<&str>>) -> WebhookConfig {
        WebhookConfig {
            url: url.into(),
            secret_env: env.into(),
            events: events.map(|e| e.into_iter().map(String::from).collect()),
        }
    }

    #[test]
    fn webhook_settings_are_checked_field_by_field() {
        let push = A2aPushConfig::default();
        let ok = hook("https://hooks.example.com/x", "HOOK_SECRET", None);
        assert!(validate(std::slice::from_ref(&ok), Some("http://chat:8081"), &push).is_ok());
        let cases = [
            (hook("ftp://x", "S", None), "approval.webhooks[0].url"),
            (hook("http://", "S", None), "approval.webhooks[0].url"),
            (
                hook("http://x", "", None),
                "approval.webhooks[0].secret_env",
            ),
            (
                hook("http://x", "A-B", None),
                "approval.webhooks[0].secret_env",
            ),
            (
                hook("http://x", "S", Some(vec!["approval.done"])),
                "approval.webhooks[0].events[0]",
            ),
        ];
        for (bad, field) in cases {
            let got = validate(&[bad], None, &push).unwrap_err();
            assert_eq!(got.0, field, "{}", got.1);
        }
        assert_eq!(
            validate(&[], Some("chat.example.com"), &push)
                .unwrap_err()
                .0,
            "approval.web_url"
        );
        let hosts = A2aPushConfig {
            allowed_hosts: vec!["http://x/".into()],
            ..A2aPushConfig::default()
        };
        assert_eq!(
            validate(&[], None, &hosts).unwrap_err().0,
            "a2a_push.allowed_hosts[0]"
        );
        assert!(ok.wants("approval.expired"));
        assert!(!hook("http://x", "S", Some(vec!["approval.decided"])).wants("approval.requested"));
    }
}
