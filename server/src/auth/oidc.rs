//! JWT bearer tokens from an OpenID Connect provider: discovery of the
//! key set, a cached JWKS, and validation with `jsonwebtoken`:
//! signature, `iss`, `aud`, `exp`/`nbf` with `clock_skew_secs` of clock
//! skew.
//!
//! The key set is read again when it is older than `jwks_ttl_secs` (so a
//! key the provider removed stops verifying) and when a token names an
//! unknown key; reads are at most every [`REFETCH_INTERVAL`] (or the TTL,
//! if shorter), and concurrent requests share one read. When a read fails,
//! the cached keys keep verifying until they are `jwks_max_age_secs` old;
//! then requests with tokens answer 503 (fail closed) until a read works.
//!
//! Only asymmetric algorithms are accepted, and only those of the key's
//! own type (an RSA key verifies RS*/PS*, an EC key ES*): `alg: none` and
//! an HMAC token "signed" with a public key never verify.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;

use super::{AuthError, Credential, Principal, Role};
use crate::config::OidcConfig;

/// Least time between two key-set reads (a token naming an unknown key,
/// or a provider that is down, does not make every request read them).
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(10);
/// Longest a discovery or key-set request may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Verifies tokens of one provider; cheap to clone.
#[derive(Debug, Clone)]
pub struct OidcVerifier {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    issuer: String,
    audience: String,
    roles_claim: String,
    leeway: u64,
    /// IdP group or role name → our role; `None`: the claim's names
    /// `approver` and `admin` are the roles.
    role_map: Option<BTreeMap<String, Role>>,
    http: reqwest::Client,
    /// Keys older than this are read again.
    ttl: Duration,
    /// Keys older than this never verify (when they cannot be read again).
    max_age: Duration,
    /// Never held across an await.
    cache: Mutex<KeyCache>,
    /// Serializes reads.
    fetching: tokio::sync::Mutex<()>,
}

/// The provider's keys as last read, and the last attempt to read them.
#[derive(Debug, Default)]
struct KeyCache {
    /// The key set and when it was read.
    keys: Option<(Arc<JwkSet>, Instant)>,
    /// When a read last started, successful or not.
    attempted_at: Option<Instant>,
    /// Why that read failed; `None` when it succeeded.
    last_error: Option<String>,
}

impl KeyCache {
    /// The outcome of a read that started at or after `since`, if any.
    fn read_since(&self, since: Instant) -> Option<Result<Arc<JwkSet>, String>> {
        if self.attempted_at? < since {
            return None;
        }
        match (&self.last_error, &self.keys) {
            (Some(error), _) => Some(Err(error.clone())),
            (None, Some((keys, _))) => Some(Ok(keys.clone())),
            (None, None) => None,
        }
    }
}

impl OidcVerifier {
    /// A verifier for `config`; nothing is fetched yet.
    pub fn new(
        config: &OidcConfig,
        role_map: Option<&BTreeMap<String, Vec<String>>>,
    ) -> OidcVerifier {
        let role_map = role_map.map(|map| {
            map.iter()
                .filter_map(|(role, groups)| Some((Role::parse(role)?, groups)))
                .flat_map(|(role, groups)| groups.iter().map(move |g| (g.clone(), role)))
                .collect()
        });
        OidcVerifier {
            inner: Arc::new(Inner {
                issuer: config.issuer.trim_end_matches('/').to_string(),
                audience: config.audience.clone(),
                roles_claim: config.roles_claim.clone(),
                leeway: config.clock_skew_secs,
                role_map,
                http: reqwest::Client::new(),
                ttl: Duration::from_secs(config.jwks_ttl_secs),
                max_age: Duration::from_secs(config.jwks_max_age_secs),
                cache: Mutex::default(),
                fetching: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// A verifier with a fixed key set (tests).
    pub fn with_keys(
        config: &OidcConfig,
        role_map: Option<&BTreeMap<String, Vec<String>>>,
        keys: JwkSet,
    ) -> OidcVerifier {
        let verifier = OidcVerifier::new(config, role_map);
        {
            let mut cache = verifier.inner.cache();
            let now = Instant::now();
            cache.keys = Some((Arc::new(keys), now));
            cache.attempted_at = Some(now);
        }
        verifier
    }

    /// Makes the cached key set (and the last read attempt) older by `by`.
    #[cfg(test)]
    pub(crate) fn age_keys(&self, by: Duration) {
        let back = |at: Instant| at.checked_sub(by).expect("the clock goes back that far");
        let mut cache = self.inner.cache();
        if let Some((_, read_at)) = &mut cache.keys {
            *read_at = back(*read_at);
        }
        cache.attempted_at = cache.attempted_at.map(back);
    }

    /// Reads the key set, retrying with backoff until it succeeds.
    pub async fn warm_up(&self) {
        let mut pause = Duration::from_secs(1);
        loop {
            match self.inner.fetch().await {
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(issuer = %self.inner.issuer, %error, "identity provider unreachable; requests with tokens answer 503 until its keys can be read");
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(60));
        }
    }

    /// Validates `token` and returns its principal.
    pub async fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let header =
            decode_header(token).map_err(|_| AuthError::Invalid(unreadable_header(token)))?;
        let kid = header.kid.clone().unwrap_or_default();
        let jwk = self.inner.key(&kid).await?;
        let validation = self.inner.validation(&jwk)?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| {
            AuthError::Invalid(format!("the provider's key {kid:?} is unusable: {e}"))
        })?;
        let data = decode::<Value>(token, &key, &validation)
            .map_err(|e| AuthError::Invalid(self.inner.problem(e.kind(), token)))?;
        self.inner.principal(&data.claims)
    }
}

impl Inner {
    fn cache(&self) -> MutexGuard<'_, KeyCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key `kid`: from the cached set while it is younger than the TTL
    /// and holds it, else from a set read now (rate-limited), else from
    /// the cached set up to its max age.
    async fn key(&self, kid: &str) -> Result<Jwk, AuthError> {
        let (cached, may_read) = {
            let cache = self.cache();
            let rate = REFETCH_INTERVAL.min(self.ttl);
            let may_read = cache.attempted_at.is_none_or(|at| at.elapsed() >= rate);
            (cache.keys.clone(), may_read)
        };
        if let Some((keys, read_at)) = &cached
            && read_at.elapsed() < self.ttl
            && let Some(jwk) = find(keys, kid)
        {
            return Ok(jwk);
        }
        if !may_read {
            return self.stale_key(kid, "the last attempt to read them failed");
        }
        match self.fetch().await {
            Ok(keys) => find(&keys, kid).ok_or_else(|| unknown_kid(kid)),
            Err(error) => {
                tracing::warn!(issuer = %self.issuer, %error, "identity provider keys cannot be read; cached keys (if any) serve until jwks_max_age_secs");
                self.stale_key(kid, &error)
            }
        }
    }

    /// The key `kid` of the cached set when no fresh set can be had: only
    /// while the set is younger than the max age (then fail closed).
    fn stale_key(&self, kid: &str, why: &str) -> Result<Jwk, AuthError> {
        let cached = self.cache().keys.clone();
        match cached {
            Some((keys, read_at)) if read_at.elapsed() < self.max_age => {
                find(&keys, kid).ok_or_else(|| unknown_kid(kid))
            }
            Some(_) => Err(AuthError::Unavailable(format!(
                "the keys read last are older than jwks_max_age_secs ({} s): {why}",
                self.max_age.as_secs()
            ))),
            None => Err(AuthError::Unavailable(why.to_string())),
        }
    }

    /// Discovery, then the key set; cached. A request that waited for
    /// another one's read takes its outcome instead of reading again.
    async fn fetch(&self) -> Result<Arc<JwkSet>, String> {
        let asked = Instant::now();
        let _one = self.fetching.lock().await;
        if let Some(outcome) = self.cache().read_since(asked) {
            return outcome;
        }
        self.cache().attempted_at = Some(Instant::now());
        let outcome = self.read_key_set().await;
        let mut cache = self.cache();
        match &outcome {
            Ok(keys) => {
                cache.keys = Some((keys.clone(), Instant::now()));
                cache.last_error = None;
            }
            Err(error) => cache.last_error = Some(error.clone()),
        }
        outcome
    }

    async fn read_key_set(&self) -> Result<Arc<JwkSet>, String> {
        let discovery: Value = self
            .get_json(&format!("{}/.well-known/openid-configuration", self.issuer))
            .await?;
        let jwks_uri = discovery
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or("the discovery document has no jwks_uri")?;
        let keys: JwkSet = serde_json::from_value(self.get_json(jwks_uri).await?)
            .map_err(|e| format!("the key set at {jwks_uri} cannot be read: {e}"))?;
        tracing::info!(issuer = %self.issuer, keys = keys.keys.len(), "identity provider keys read");
        Ok(Arc::new(keys))
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let response = self
            .http
            .get(url)
            .timeout(FETCH_TIMEOUT)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!(
                "{url} answered HTTP {}",
                response.status().as_u16()
            ));
        }
        response.json().await.map_err(|e| format!("{url}: {e}"))
    }

    /// What a token signed with `jwk` must satisfy.
    fn validation(&self, jwk: &Jwk) -> Result<Validation, AuthError> {
        let algorithms = algorithms_for(jwk);
        let Some(first) = algorithms.first() else {
            return Err(AuthError::Invalid(
                "the provider's key is not an asymmetric signing key".into(),
            ));
        };
        let mut validation = Validation::new(*first);
        validation.algorithms = algorithms;
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        validation.set_issuer(&[self.issuer.as_str(), &format!("{}/", self.issuer)]);
        validation.set_audience(&[self.audience.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        Ok(validation)
    }

    fn problem(&self, kind: &ErrorKind, token: &str) -> String {
        match kind {
            ErrorKind::ExpiredSignature => "the token has expired".into(),
            ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".into(),
            ErrorKind::InvalidAudience => format!(
                "the token is for another audience (expected {:?})",
                self.audience
            ),
            ErrorKind::InvalidIssuer => {
                format!(
                    "the token is from another issuer (expected {:?})",
                    self.issuer
                )
            }
            ErrorKind::InvalidSignature => "the token's signature does not verify".into(),
            ErrorKind::InvalidAlgorithm => {
                "the token's algorithm is not allowed for the provider's key".into()
            }
            // A claim of the wrong type reads as missing (or breaks the
            // claims' parsing): say which one it is.
            ErrorKind::MissingRequiredClaim(claim) => {
                claim_problem(token).unwrap_or_else(|| format!("the token has no {claim:?} claim"))
            }
            ErrorKind::Json(_) => {
                claim_problem(token).unwrap_or_else(|| "the token's claims are malformed".into())
            }
            other => header_problem(other),
        }
    }

    /// The role a name of the roles claim grants: through `role_map` only
    /// when it is set (so an IdP group that happens to be called "admin"
    /// grants nothing), else the name itself.
    fn role_of(&self, name: &str) -> Option<Role> {
        match &self.role_map {
            Some(map) => map.get(name).copied(),
            None => Role::parse(name),
        }
    }

    /// The token's principal, subject `oidc:<issuer>#<sub>` (the configured
    /// issuer, without a trailing slash); a `sub` that is not a non-empty
    /// string is refused (it would be an empty, shared subject).
    fn principal(&self, claims: &Value) -> Result<Principal, AuthError> {
        let text = |key: &str| claims.get(key).and_then(Value::as_str).map(str::to_string);
        let subject = text("sub")
            .filter(|sub| !sub.trim().is_empty())
            .ok_or_else(|| AuthError::Invalid(SUB_PROBLEM.into()))?;
        let mut roles = BTreeSet::new();
        let mut groups = BTreeSet::new();
        for name in claim_names(claims.get(&self.roles_claim)) {
            if let Some(role) = self.role_of(&name) {
                roles.insert(role);
            }
            groups.insert(name);
        }
        Ok(Principal {
            subject: format!("oidc:{}#{subject}", self.issuer),
            name: text("name").or_else(|| text("preferred_username")),
            roles,
            groups,
            credential: Credential::Token,
        })
    }
}

/// Why a header did not parse: an algorithm we do not take (`none`,
/// anything unknown), or plain garbage.
fn unreadable_header(token: &str) -> String {
    use base64::Engine as _;
    let alg = token
        .split('.')
        .next()
        .and_then(|h| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(h)
                .ok()
        })
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|header| {
            header
                .get("alg")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    match alg {
        Some(alg) => {
            format!("the token's algorithm {alg:?} is not supported (alg \"none\" never is)")
        }
        None => "the token is malformed".into(),
    }
}

/// The message for a `sub` that is missing, not a string, or empty.
const SUB_PROBLEM: &str = "the token's \"sub\" claim must be a non-empty string";

/// Which registered claim of a token has the wrong type. Only called once
/// the signature verified (`decode` checks it before the claims), and only
/// to word the refusal.
fn claim_problem(token: &str) -> Option<String> {
    let claims = jsonwebtoken::dangerous::insecure_decode::<Value>(token)
        .ok()?
        .claims;
    match claims.get("sub") {
        Some(Value::String(sub)) if !sub.trim().is_empty() => {}
        Some(_) => return Some(SUB_PROBLEM.into()),
        None => {}
    }
    ["exp", "nbf", "iss", "aud"].into_iter().find_map(|name| {
        let wrong = claims.get(name).is_some_and(|v| !of_its_type(name, v));
        wrong.then(|| format!("the token's {name:?} claim has the wrong type"))
    })
}

/// `exp` and `nbf` are numbers; `iss` and `aud` a string or a list of them.
fn of_its_type(claim: &str, value: &Value) -> bool {
    match (claim, value) {
        ("exp" | "nbf", value) => value.is_number(),
        (_, Value::String(_)) => true,
        (_, Value::Array(items)) => items.iter().all(Value::is_string),
        _ => false,
    }
}

fn header_problem(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::InvalidAlgorithmName | ErrorKind::UnsupportedAlgorithm => {
            "the token's algorithm is not supported (alg \"none\" never is)".into()
        }
        _ => "the token is malformed".into(),
    }
}

/// A list claim or a space-separated string.
fn claim_names(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(Value::String(text)) => text.split_whitespace().map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

fn unknown_kid(kid: &str) -> AuthError {
    AuthError::Invalid(format!(
        "the token's key id {kid:?} is not one of the provider's keys"
    ))
}

fn find(keys: &JwkSet, kid: &str) -> Option<Jwk> {
    if kid.is_empty() && keys.keys.len() == 1 {
        return keys.keys.first().cloned();
    }
    keys.find(kid).cloned()
}

/// The algorithms a key may verify: its own `alg` when it names one, else
/// every algorithm of its type. Never HMAC.
pub fn algorithms_for(jwk: &Jwk) -> Vec<Algorithm> {
    let family: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(_) => vec![Algorithm::ES256, Algorithm::ES384],
        AlgorithmParameters::OctetKeyPair(_) => vec![Algorithm::EdDSA],
        _ => Vec::new(),
    };
    match jwk
        .common
        .key_algorithm
        .and_then(|a| a.to_string().parse::<Algorithm>().ok())
    {
        Some(alg) if family.contains(&alg) => vec![alg],
        Some(_) => Vec::new(),
        None => family,
    }
}
