//! Who is calling: every request's credential becomes a [`Principal`]
//! (JWT bearer tokens from an OpenID Connect provider, or static API
//! keys), and [`policy`] decides what that principal may do.
//!
//! Without an `auth:` section every request is the anonymous principal
//! with every role: the keyless demo, as before. Credentials are never
//! logged, stored or echoed; errors name the problem, not the token.

pub mod oidc;

/// What a principal may do: the core's one authorization.
pub use asg_core::access as policy;
pub use asg_core::principal::{Credential, Principal, Role};

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::{ApiKeyConfig, AuthConfig};
use oidc::OidcVerifier;

/// Subjects are namespaced by how the principal authenticated, so no
/// credential can pass for another kind: an API key's subject is
/// `key:<name>`, a token's `oidc:<issuer>#<sub>` ([`oidc`]), the
/// anonymous caller's `anonymous`, the system's `system:...`.
pub const API_KEY_SUBJECT_PREFIX: &str = "key:";

/// Why a request has no principal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No credential at all.
    #[error("authentication required: send Authorization: Bearer <token> or X-API-Key: <key>")]
    Missing,
    /// A credential that is not valid; says why.
    #[error("invalid credentials: {0}")]
    Invalid(String),
    /// The provider's keys cannot be read right now.
    #[error("the identity provider's signing keys cannot be read right now ({0}); retry shortly")]
    Unavailable(String),
}

/// One configured API key: only the SHA-256 of its value is kept, so
/// every comparison is of two 32-byte digests (no length to leak).
struct ApiKey {
    name: String,
    digest: [u8; 32],
    roles: BTreeSet<Role>,
    groups: BTreeSet<String>,
}

impl ApiKey {
    /// The entry with its key read from the environment now; a missing or
    /// short key is an error naming the variable.
    fn load(entry: &ApiKeyConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<ApiKey, String> {
        let key = env(&entry.key_env)
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                format!(
                    "auth.api_keys {:?} needs the environment variable {}",
                    entry.name, entry.key_env
                )
            })?;
        if key.len() < 16 {
            return Err(format!(
                "auth.api_keys {:?}: the key in {} is shorter than 16 characters",
                entry.name, entry.key_env
            ));
        }
        Ok(ApiKey {
            name: entry.name.clone(),
            digest: key_digest(key.as_bytes()),
            roles: entry.roles.iter().filter_map(|r| Role::parse(r)).collect(),
            groups: entry.groups.iter().cloned().collect(),
        })
    }
}

/// SHA-256 of a key: what is stored and what a presented key is
/// compared by.
fn key_digest(key: &[u8]) -> [u8; 32] {
    Sha256::digest(key).into()
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("name", &self.name)
            .field("digest", &"<redacted>")
            .finish()
    }
}

/// Turns request credentials into principals.
#[derive(Debug, Clone)]
pub struct Authenticator {
    inner: Option<Arc<Configured>>,
}

#[derive(Debug)]
struct Configured {
    oidc: Option<OidcVerifier>,
    api_keys: Vec<ApiKey>,
}

impl Authenticator {
    /// No authentication: every request is [`Principal::anonymous`].
    pub fn disabled() -> Authenticator {
        Authenticator { inner: None }
    }

    /// From `auth:`; API keys are read from their environment variables
    /// now (a missing or short one is a startup error naming the
    /// variable).
    pub fn from_config(
        config: &AuthConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Authenticator, String> {
        if !config.enabled() {
            return Ok(Authenticator::disabled());
        }
        let mut api_keys: Vec<ApiKey> = Vec::new();
        for entry in &config.api_keys {
            let key = ApiKey::load(entry, env)?;
            // Two names for one key would make the key's principal a
            // matter of order; refuse it (names only, never the key).
            if let Some(twin) = api_keys.iter().find(|k| k.digest == key.digest) {
                return Err(format!(
                    "auth.api_keys {:?} and {:?} have the same key; every key must be different",
                    twin.name, key.name
                ));
            }
            api_keys.push(key);
        }
        let oidc = config
            .oidc
            .as_ref()
            .map(|oidc| OidcVerifier::new(oidc, config.role_map.as_ref()));
        Ok(Authenticator {
            inner: Some(Arc::new(Configured { oidc, api_keys })),
        })
    }

    /// True when credentials are required.
    pub fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Starts reading the provider's keys in the background, so the first
    /// request does not wait (a provider that is down is not fatal).
    pub fn warm_up(&self) {
        if let Some(oidc) = self.inner.as_ref().and_then(|c| c.oidc.clone()) {
            tokio::spawn(async move { oidc.warm_up().await });
        }
    }

    /// The principal of a request.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthError> {
        let Some(configured) = &self.inner else {
            return Ok(Principal::anonymous());
        };
        if let Some(key) = header_text(headers, "x-api-key") {
            return configured.api_key(key);
        }
        let token = bearer(headers).ok_or(AuthError::Missing)?;
        if let Ok(principal) = configured.api_key(token) {
            return Ok(principal);
        }
        match &configured.oidc {
            // Boxed: the verification (a key set fetched over HTTPS at
            // worst) is a large future, and inline it would make every
            // request's middleware future as large, tokens or not.
            Some(oidc) if looks_like_jwt(token) => Box::pin(oidc.verify(token)).await,
            Some(_) => Err(AuthError::Invalid(
                "the bearer credential is neither a JWT nor a known API key".into(),
            )),
            None => Err(AuthError::Invalid("unknown API key".into())),
        }
    }
}

impl Configured {
    /// Compares the presented key's digest with every stored digest, each
    /// in constant time and without stopping at a match: the time taken
    /// depends on neither the key's length nor which entry matches.
    fn api_key(&self, presented: &str) -> Result<Principal, AuthError> {
        let presented = key_digest(presented.as_bytes());
        let mut found = None;
        for key in &self.api_keys {
            if bool::from(key.digest.ct_eq(&presented)) {
                found = Some(key);
            }
        }
        let key = found.ok_or_else(|| AuthError::Invalid("unknown API key".into()))?;
        Ok(Principal {
            subject: format!("{API_KEY_SUBJECT_PREFIX}{}", key.name),
            name: None,
            roles: key.roles.clone(),
            groups: key.groups.clone(),
            credential: Credential::ApiKey,
        })
    }
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The token of `Authorization: Bearer <token>`.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

#[cfg(test)]
mod tests;
