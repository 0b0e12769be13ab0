//! `auth:` section: who may call the agent, and with which roles.
//! Secrets are not here: an API key's value comes from the environment
//! variable its entry names.

use std::collections::BTreeMap;

use serde::Deserialize;

/// `auth:`. Absent: every request is accepted (the keyless demo).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// JWT bearer tokens from an OpenID Connect provider.
    #[serde(default)]
    pub oidc: Option<OidcConfig>,
    /// Static keys for services and scripts.
    #[serde(default)]
    pub api_keys: Vec<ApiKeyConfig>,
    /// Our role → the IdP group or role names that grant it. When set
    /// (even empty), it is the only source of a token's roles; absent,
    /// the names `approver` and `admin` in the roles claim are the roles.
    #[serde(default)]
    pub role_map: Option<BTreeMap<String, Vec<String>>>,
}

/// `auth.oidc`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The provider; discovery at `{issuer}/.well-known/openid-configuration`.
    pub issuer: String,
    /// The required `aud`.
    pub audience: String,
    /// The claim holding roles or groups (a list or a space-separated
    /// string).
    #[serde(default = "default_roles_claim")]
    pub roles_claim: String,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    #[serde(default = "default_clock_skew")]
    pub clock_skew_secs: u64,
    /// How long the provider's key set is used before it is read again,
    /// in seconds (a key the provider removed stops verifying after at
    /// most this long).
    #[serde(default = "default_jwks_ttl")]
    pub jwks_ttl_secs: u64,
    /// How long the cached key set keeps verifying tokens while it cannot
    /// be read again (the provider down), in seconds; past it, requests
    /// with tokens answer 503 until the keys are read.
    #[serde(default = "default_jwks_max_age")]
    pub jwks_max_age_secs: u64,
}

fn default_clock_skew() -> u64 {
    30
}

fn default_jwks_ttl() -> u64 {
    300
}

fn default_jwks_max_age() -> u64 {
    3600
}

/// One `auth.api_keys` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// Who the key stands for (recorded as the subject).
    pub name: String,
    /// The environment variable holding the key.
    pub key_env: String,
    /// Its roles.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Groups it belongs to, free-form (an `approval.rules` entry's
    /// `approvers` may name them), like the names in a token's roles
    /// claim.
    #[serde(default)]
    pub groups: Vec<String>,
}

fn default_roles_claim() -> String {
    "roles".to_string()
}

/// The roles an entry may name.
pub const KNOWN_ROLES: [&str; 2] = ["approver", "admin"];

impl AuthConfig {
    /// Checks names, URLs and roles; the error names the field.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if let Some(oidc) = &self.oidc {
            if !(oidc.issuer.starts_with("https://") || oidc.issuer.starts_with("http://")) {
                return Err((
                    "auth.oidc.issuer".into(),
                    format!("must be an http(s) URL, got {:?}", oidc.issuer),
                ));
            }
            if oidc.audience.trim().is_empty() {
                return Err(("auth.oidc.audience".into(), "must not be empty".into()));
            }
            if oidc.clock_skew_secs > 300 {
                return Err((
                    "auth.oidc.clock_skew_secs".into(),
                    format!("must be at most 300, got {}", oidc.clock_skew_secs),
                ));
            }
            if oidc.jwks_ttl_secs == 0 {
                return Err((
                    "auth.oidc.jwks_ttl_secs".into(),
                    "must be at least 1".into(),
                ));
            }
            if oidc.jwks_max_age_secs < oidc.jwks_ttl_secs {
                return Err((
                    "auth.oidc.jwks_max_age_secs".into(),
                    format!(
                        "must be at least jwks_ttl_secs ({}), got {}",
                        oidc.jwks_ttl_secs, oidc.jwks_max_age_secs
                    ),
                ));
            }
            if oidc.roles_claim.trim().is_empty() {
                return Err(("auth.oidc.roles_claim".into(), "must not be empty".into()));
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, key) in self.api_keys.iter().enumerate() {
            let field = format!("auth.api_keys[{i}]");
            if key.name.trim().is_empty() {
                return Err((format!("{field}.name"), "must not be empty".into()));
            }
            if !names.insert(key.name.as_str()) {
                return Err((
                    format!("{field}.name"),
                    format!("duplicate API key name {:?}", key.name),
                ));
            }
            if key.key_env.trim().is_empty() {
                return Err((format!("{field}.key_env"), "must not be empty".into()));
            }
            check_roles(&format!("{field}.roles"), &key.roles)?;
        }
        for role in self.role_map.iter().flat_map(BTreeMap::keys) {
            check_roles("auth.role_map", std::slice::from_ref(role))?;
        }
        Ok(())
    }

    /// True when any credential is configured.
    pub fn enabled(&self) -> bool {
        self.oidc.is_some() || !self.api_keys.is_empty()
    }
}

fn check_roles(field: &str, roles: &[String]) -> Result<(), (String, String)> {
    match roles.iter().find(|r| !KNOWN_ROLES.contains(&r.as_str())) {
        Some(role) => Err((
            field.to_string(),
            format!(
                "unknown role {role:?}; roles are {} (every authenticated caller may chat)",
                KNOWN_ROLES.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_oidc(extra: &str) -> Result<(), (String, String)> {
        let yaml = format!("oidc: {{ issuer: https://idp.test, audience: a{extra} }}");
        let config: AuthConfig = serde_yaml::from_str(&yaml).expect("parses");
        config.validate()
    }

    #[test]
    fn the_key_set_ttl_and_max_age_have_defaults_and_are_checked() {
        let config: AuthConfig =
            serde_yaml::from_str("oidc: { issuer: https://idp.test, audience: a }").unwrap();
        let oidc = config.oidc.unwrap();
        assert_eq!((oidc.jwks_ttl_secs, oidc.jwks_max_age_secs), (300, 3600));
        assert!(with_oidc(", jwks_ttl_secs: 1, jwks_max_age_secs: 1").is_ok());
        let zero = with_oidc(", jwks_ttl_secs: 0").unwrap_err();
        assert_eq!(zero.0, "auth.oidc.jwks_ttl_secs");
        let short = with_oidc(", jwks_ttl_secs: 600, jwks_max_age_secs: 60").unwrap_err();
        assert_eq!(short.0, "auth.oidc.jwks_max_age_secs", "{}", short.1);
    }
}
