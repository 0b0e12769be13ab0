//! `channels.email` beyond its entry: the TLS modes, routes per rule,
//! defaults and validation (addresses parsed as lettre does when it
//! sends, so a bad one is a startup error, not a lost mail).

use serde::Deserialize;

use super::{ChannelsConfig, ConfigDuration, EmailConfig};

/// How the SMTP connection is secured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmailTls {
    /// Plain text (a trusted local relay only).
    None,
    /// Plain text upgraded with `STARTTLS`, which the server must offer.
    #[default]
    Starttls,
    /// TLS from the first byte (SMTPS).
    Tls,
}

/// One `channels.email.routes` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailRoute {
    /// The rule: its index in `approval.rules`.
    pub rule: usize,
    /// Who its approvals are mailed to (addresses of `channels.email.to`).
    pub to: Vec<String>,
}

pub(super) fn default_smtp_port() -> u16 {
    587
}

pub(super) fn default_link_ttl() -> ConfigDuration {
    ConfigDuration::from_secs(24 * 3_600)
}

/// Checks `channels.email` (addresses, port, routes against the
/// `rules` approval rules); the field path and the problem on failure.
pub fn validate_email(channels: &ChannelsConfig, rules: usize) -> Result<(), (String, String)> {
    let Some(email) = &channels.email else {
        return Ok(());
    };
    let at = |field: &str| format!("channels.email.{field}");
    if email.smtp_host.trim().is_empty() {
        return Err((at("smtp_host"), "must not be empty".into()));
    }
    if email.smtp_port == 0 {
        return Err((at("smtp_port"), "must be a port from 1 to 65535".into()));
    }
    if email.from.parse::<lettre::message::Mailbox>().is_err() {
        return Err((
            at("from"),
            format!(
                "{:?} is not an email address (agent@example.com or Agent <agent@example.com>)",
                email.from
            ),
        ));
    }
    if email.username_env.is_some() != email.password_env.is_some() {
        return Err((
            at("username_env"),
            "username_env and password_env go together (both or neither)".into(),
        ));
    }
    if email.to.is_empty() {
        return Err((at("to"), "must name at least one recipient".into()));
    }
    for address in email.to.keys() {
        if address.parse::<lettre::Address>().is_err() {
            return Err((
                at(&format!("to.{address}")),
                format!("{address:?} is not an email address"),
            ));
        }
    }
    validate_routes(email, rules)
}

/// Each route names an existing rule and recipients of `to`.
fn validate_routes(email: &EmailConfig, rules: usize) -> Result<(), (String, String)> {
    for (i, route) in email.routes.iter().enumerate() {
        let at = |field: &str| format!("channels.email.routes[{i}].{field}");
        if route.rule >= rules {
            return Err((
                at("rule"),
                format!(
                    "approval.rules has no entry {} (it has {rules})",
                    route.rule
                ),
            ));
        }
        if route.to.is_empty() {
            return Err((at("to"), "must name at least one recipient".into()));
        }
        if let Some(unknown) = route.to.iter().find(|a| !email.to.contains_key(*a)) {
            return Err((
                at("to"),
                format!("{unknown:?} is not a recipient of channels.email.to"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<ChannelsConfig, String> {
        serde_yaml::from_str(yaml).map_err(|e| e.to_string())
    }

    fn email(extra: &str) -> String {
        format!(
            "email:\n  smtp_host: mail.example.com\n  from: Agent <agent@example.com>\n  \
             link_secret_env: LINK_SECRET\n  to: {{ ops@example.com: 'key:ops' }}\n{extra}"
        )
    }

    fn problem(yaml: &str, rules: usize) -> (String, String) {
        let channels = parse(yaml).expect("parses");
        validate_email(&channels, rules).expect_err("refused")
    }

    #[test]
    fn defaults_are_submission_with_starttls_and_a_day_long_links() {
        let channels = parse(&email("")).unwrap();
        validate_email(&channels, 0).unwrap();
        let email = channels.email.unwrap();
        assert_eq!(email.smtp_port, 587);
        assert_eq!(email.tls, EmailTls::Starttls);
        assert_eq!(email.link_ttl.get().as_secs(), 86_400);
        assert!(email.routes.is_empty() && email.username_env.is_none());
    }

    #[test]
    fn tls_modes_and_ttl_parse() {
        let channels = parse(&email("  tls: tls\n  smtp_port: 465\n  link_ttl: 30m\n")).unwrap();
        let config = channels.email.unwrap();
        assert_eq!((config.tls, config.smtp_port), (EmailTls::Tls, 465));
        assert_eq!(config.link_ttl.get().as_secs(), 1_800);
        assert_eq!(
            parse(&email("  tls: none\n")).unwrap().email.unwrap().tls,
            EmailTls::None
        );
        let unknown = parse(&email("  tls: ssl\n")).unwrap_err();
        assert!(
            unknown.contains("unknown variant") && unknown.contains("starttls"),
            "{unknown}"
        );
    }

    #[test]
    fn bad_fields_are_named() {
        let (field, why) = problem(&email("  smtp_port: 0\n"), 0);
        assert_eq!(field, "channels.email.smtp_port", "{why}");
        let bad_to = email("").replace("ops@example.com", "not-an-address");
        let (field, why) = problem(&bad_to, 0);
        assert_eq!(field, "channels.email.to.not-an-address", "{why}");
        let bad_from = email("").replace("Agent <agent@example.com>", "agent at example");
        assert_eq!(problem(&bad_from, 0).0, "channels.email.from");
        let half = email("  username_env: SMTP_USER\n");
        assert_eq!(problem(&half, 0).0, "channels.email.username_env");
        let no_host = email("").replace("mail.example.com", "' '");
        assert_eq!(problem(&no_host, 0).0, "channels.email.smtp_host");
    }

    #[test]
    fn routes_name_existing_rules_and_known_recipients() {
        let route = |rule: usize, to: &str| {
            email(&format!(
                "  routes:\n    - {{ rule: {rule}, to: [{to}] }}\n"
            ))
        };
        validate_email(&parse(&route(1, "ops@example.com")).unwrap(), 2).unwrap();
        let (field, why) = problem(&route(2, "ops@example.com"), 2);
        assert_eq!(field, "channels.email.routes[0].rule", "{why}");
        let (field, why) = problem(&route(0, "eve@example.com"), 1);
        assert_eq!(field, "channels.email.routes[0].to", "{why}");
        assert!(why.contains("eve@example.com"), "{why}");
    }
}
