//! JWT bearer tokens from an OpenID Connect provider: discovery of the
//! key set, a cached JWKS (read again, at most every
//! [`REFETCH_INTERVAL`], when a token names an unknown key), and
//! validation with `jsonwebtoken`: signature, `iss`, `aud`, `exp`/`nbf`
//! with `clock_skew_secs` of clock skew.
//!
//! Only asymmetric algorithms are accepted, and only those of the key's
//! own type (an RSA key verifies RS*/PS*, an EC key ES*): `alg: none` and
//! an HMAC token "signed" with a public key never verify.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;

use super::{AuthError, Credential, Principal, Role};
use crate::config::OidcConfig;

/// Least time between two key-set reads.
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
    keys: RwLock<Option<Arc<JwkSet>>>,
    /// When the key set was last fetched (or tried).
    last_fetch: Mutex<Option<Instant>>,
    /// Serializes fetches.
    fetching: tokio::sync::Mutex<()>,
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
                keys: RwLock::new(None),
                last_fetch: Mutex::new(None),
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
        if let Ok(mut cached) = verifier.inner.keys.write() {
            *cached = Some(Arc::new(keys));
        }
        if let Ok(mut last) = verifier.inner.last_fetch.lock() {
            *last = Some(Instant::now());
        }
        verifier
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
    /// The key `kid`, from the cache or, when unknown, a fresh key set.
    async fn key(&self, kid: &str) -> Result<Jwk, AuthError> {
        let cached = self.keys.read().ok().and_then(|k| k.clone());
        if let Some(keys) = &cached
            && let Some(jwk) = find(keys, kid)
        {
            return Ok(jwk);
        }
        let recently = self
            .last_fetch
            .lock()
            .ok()
            .and_then(|l| *l)
            .is_some_and(|at| at.elapsed() < REFETCH_INTERVAL);
        // Rate-limited: a token naming an unknown key (or a provider that
        // is down) does not make every request hit the provider.
        if recently {
            return Err(match cached {
                Some(_) => AuthError::Invalid(format!(
                    "the token's key id {kid:?} is not one of the provider's keys"
                )),
                None => AuthError::Unavailable("the last attempt to read them failed".into()),
            });
        }
        let keys = self.fetch().await.map_err(AuthError::Unavailable)?;
        find(&keys, kid).ok_or_else(|| {
            AuthError::Invalid(format!(
                "the token's key id {kid:?} is not one of the provider's keys"
            ))
        })
    }

    /// Discovery, then the key set; cached.
    async fn fetch(&self) -> Result<Arc<JwkSet>, String> {
        let _one = self.fetching.lock().await;
        if let Ok(mut last) = self.last_fetch.lock() {
            *last = Some(Instant::now());
        }
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
        let keys = Arc::new(keys);
        if let Ok(mut cached) = self.keys.write() {
            *cached = Some(keys.clone());
        }
        Ok(keys)
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

    /// The token's principal; a `sub` that is not a non-empty string is
    /// refused (it would be an empty, shared subject).
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
            subject,
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
    let text_or_list = |v: &Value| match v {
        Value::String(_) => true,
        Value::Array(items) => items.iter().all(Value::is_string),
        _ => false,
    };
    match claims.get("sub") {
        Some(Value::String(sub)) if !sub.trim().is_empty() => {}
        Some(_) => return Some(SUB_PROBLEM.into()),
        None => {}
    }
    let checks: [(&str, &dyn Fn(&Value) -> bool); 4] = [
        ("exp", &Value::is_number),
        ("nbf", &Value::is_number),
        ("iss", &text_or_list),
        ("aud", &text_or_list),
    ];
    checks.iter().find_map(|(name, ok)| {
        let wrong = claims.get(*name).is_some_and(|v| !ok(v));
        wrong.then(|| format!("the token's {name:?} claim has the wrong type"))
    })
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
