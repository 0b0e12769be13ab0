//! Who a channel's user stands for: principal subjects named in
//! `channels:` resolved once at startup to [`Principal`]s, with the roles
//! and groups of their `auth.api_keys` entry (`key:<name>`) or of their
//! `channels.principals` entry. An unknown subject is a startup error, so
//! a typo never becomes a user nobody can find at decision time.

use std::collections::BTreeMap;

use asg_core::principal::{Credential, Principal, Role};

use crate::config::AuthConfig;
use crate::config::channels::ChannelsConfig;

/// The subject prefix of API key principals.
const KEY_PREFIX: &str = "key:";

/// Subjects → principals, for the channels' user maps.
#[derive(Debug, Clone, Default)]
pub struct Directory {
    people: BTreeMap<String, Principal>,
}

impl Directory {
    /// Resolves every `(field, subject)` the channels name; the error
    /// names the field and the subject.
    pub fn build<'a>(
        auth: &AuthConfig,
        channels: &ChannelsConfig,
        named: impl IntoIterator<Item = (String, &'a str)>,
    ) -> Result<Directory, String> {
        let mut people = BTreeMap::new();
        for (field, subject) in named {
            let principal = resolve(auth, channels, subject).ok_or_else(|| {
                format!(
                    "{field}: principal {subject:?} is neither an auth.api_keys entry \
                     (key:<name>) nor listed under channels.principals"
                )
            })?;
            people.insert(subject.to_string(), principal);
        }
        Ok(Directory { people })
    }

    /// The principal a mapped subject stands for.
    pub fn principal(&self, subject: &str) -> Option<Principal> {
        self.people.get(subject).cloned()
    }
}

/// A subject as a principal. Its credential is [`Credential::ApiKey`]: a
/// static identity whose decision carries no token to forward.
fn resolve(auth: &AuthConfig, channels: &ChannelsConfig, subject: &str) -> Option<Principal> {
    let (name, roles, groups) = if let Some(entry) = channels.principals.get(subject) {
        (entry.name.clone(), &entry.roles, &entry.groups)
    } else {
        let key_name = subject.strip_prefix(KEY_PREFIX)?;
        let entry = auth.api_keys.iter().find(|k| k.name == key_name)?;
        (None, &entry.roles, &entry.groups)
    };
    Some(Principal {
        subject: subject.to_string(),
        name,
        roles: roles.iter().filter_map(|r| Role::parse(r)).collect(),
        groups: groups.iter().cloned().collect(),
        credential: Credential::ApiKey,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiKeyConfig;
    use crate::config::channels::ChannelPrincipalConfig;

    fn auth() -> AuthConfig {
        AuthConfig {
            api_keys: vec![ApiKeyConfig {
                name: "alice".into(),
                key_env: "ALICE_KEY".into(),
                roles: vec!["approver".into()],
                groups: vec!["sre".into()],
            }],
            ..AuthConfig::default()
        }
    }

    #[test]
    fn api_key_subjects_take_their_keys_roles_and_groups() {
        let directory = Directory::build(
            &auth(),
            &ChannelsConfig::default(),
            [("channels.slack.user_map.U1".to_string(), "key:alice")],
        )
        .unwrap();
        let alice = directory.principal("key:alice").unwrap();
        assert!(alice.has(Role::Approver));
        assert!(alice.is_in("sre"));
        assert_eq!(alice.credential, Credential::ApiKey);
        assert!(directory.principal("key:bob").is_none());
    }

    #[test]
    fn listed_principals_take_their_entry() {
        let mut channels = ChannelsConfig::default();
        channels.principals.insert(
            "oidc:https://idp#42".into(),
            ChannelPrincipalConfig {
                name: Some("Bob".into()),
                roles: vec!["admin".into()],
                groups: vec![],
            },
        );
        let directory = Directory::build(
            &auth(),
            &channels,
            [(
                "channels.email.to.bob@example.com".to_string(),
                "oidc:https://idp#42",
            )],
        )
        .unwrap();
        let bob = directory.principal("oidc:https://idp#42").unwrap();
        assert_eq!(bob.name.as_deref(), Some("Bob"));
        assert!(bob.has(Role::Admin) && !bob.has(Role::Approver));
    }

    #[test]
    fn an_unknown_subject_is_refused_naming_the_field() {
        let err = Directory::build(
            &auth(),
            &ChannelsConfig::default(),
            [("channels.slack.user_map.U9".to_string(), "key:mallory")],
        )
        .unwrap_err();
        assert!(err.contains("channels.slack.user_map.U9"), "{err}");
        assert!(err.contains("key:mallory"), "{err}");
    }
}
