//! Token validation: every rejection reason, with keys generated here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use p256::pkcs8::EncodePrivateKey as _;
use rsa::traits::PublicKeyParts as _;
use serde_json::{Value, json};

use super::oidc::OidcVerifier;
use super::*;
use crate::config::{ApiKeyConfig, OidcConfig};

const ISSUER: &str = "https://idp.test";
const AUDIENCE: &str = "agent-stop-and-go";

struct Keys {
    rsa_pem: String,
    ec_pem: String,
    jwks: JwkSet,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An RSA and an EC key pair, and their public JWKS (kids "rsa1", "ec1").
fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut rng = rsa::rand_core::OsRng;
        let rsa = rsa::RsaPrivateKey::new(&mut rng, 2048).expect("rsa key");
        let ec = p256::SecretKey::random(&mut rng);
        let point = ec.public_key().to_encoded_point(false);
        let jwks = json!({"keys": [
            {"kty": "RSA", "kid": "rsa1", "use": "sig",
             "n": b64(&rsa.n().to_bytes_be()), "e": b64(&rsa.e().to_bytes_be())},
            {"kty": "EC", "kid": "ec1", "use": "sig", "crv": "P-256",
             "x": b64(point.x().unwrap()), "y": b64(point.y().unwrap())},
        ]});
        Keys {
            rsa_pem: rsa.to_pkcs8_pem(Default::default()).unwrap().to_string(),
            ec_pem: ec.to_pkcs8_pem(Default::default()).unwrap().to_string(),
            jwks: serde_json::from_value(jwks).unwrap(),
        }
    })
}

fn oidc_config() -> OidcConfig {
    oidc_config_at(ISSUER)
}

fn oidc_config_at(issuer: &str) -> OidcConfig {
    OidcConfig {
        issuer: issuer.into(),
        audience: AUDIENCE.into(),
        roles_claim: "groups".into(),
        clock_skew_secs: 30,
        jwks_ttl_secs: 60,
        jwks_max_age_secs: 600,
    }
}

/// A verifier whose `role_map` maps the IdP group `sre` to approver.
fn verifier() -> OidcVerifier {
    let role_map = BTreeMap::from([("approver".to_string(), vec!["sre".to_string()])]);
    OidcVerifier::with_keys(&oidc_config(), Some(&role_map), keys().jwks.clone())
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "name": "Alice",
           "groups": ["sre", "dev"], "exp": now() + 300, "iat": now()})
}

fn rsa_token(claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa1".into());
    let key = EncodingKey::from_rsa_pem(keys().rsa_pem.as_bytes()).unwrap();
    encode(&header, claims, &key).unwrap()
}

fn rejection(token: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    match runtime.block_on(verifier().verify(token)) {
        Err(AuthError::Invalid(why)) => why,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test]
async fn a_valid_rs256_token_gives_its_principal_and_mapped_roles() {
    let principal = verifier().verify(&rsa_token(&claims())).await.unwrap();
    assert_eq!(principal.subject, format!("oidc:{ISSUER}#alice"));
    assert_eq!(principal.name.as_deref(), Some("Alice"));
    assert!(principal.has(Role::Approver), "sre maps to approver");
    assert!(!principal.has(Role::Admin));
    assert_eq!(
        principal.groups,
        ["dev".to_string(), "sre".to_string()].into(),
        "every claim name, for approval rules"
    );
    assert_eq!(principal.credential, Credential::Token);
}

#[tokio::test]
async fn a_valid_es256_token_verifies_and_roles_may_be_a_string() {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("ec1".into());
    let key = EncodingKey::from_ec_pem(keys().ec_pem.as_bytes()).unwrap();
    let mut claims = claims();
    claims["groups"] = json!("sre viewer");
    let principal = verifier()
        .verify(&encode(&header, &claims, &key).unwrap())
        .await
        .unwrap();
    assert!(principal.has(Role::Approver));
    assert!(!principal.has(Role::Admin));
}

#[tokio::test]
async fn with_a_role_map_a_group_named_like_a_role_grants_nothing() {
    // roles_claim is `groups`: anyone who may create a group called
    // "admin" in the IdP must not become our admin.
    let mut claims = claims();
    claims["groups"] = json!(["admin", "approver", "dev"]);
    let principal = verifier().verify(&rsa_token(&claims)).await.unwrap();
    assert_eq!(
        principal.roles,
        BTreeSet::new(),
        "only role_map grants roles"
    );
    assert!(
        principal.groups.contains("admin"),
        "the names stay groups, for approval rules"
    );
    // An explicitly empty role_map: no role comes from the IdP at all.
    let none = OidcVerifier::with_keys(&oidc_config(), Some(&BTreeMap::new()), keys().jwks.clone());
    let principal = none.verify(&rsa_token(&claims)).await.unwrap();
    assert_eq!(principal.roles, BTreeSet::new());
}

#[tokio::test]
async fn without_a_role_map_role_names_in_the_claim_are_roles() {
    let verifier = OidcVerifier::with_keys(&oidc_config(), None, keys().jwks.clone());
    let mut claims = claims();
    claims["groups"] = json!(["admin", "sre"]);
    let principal = verifier.verify(&rsa_token(&claims)).await.unwrap();
    assert_eq!(principal.roles, BTreeSet::from([Role::Admin]));
}

#[test]
fn expired_wrong_audience_wrong_issuer_and_not_yet_valid_are_named() {
    let mut expired = claims();
    expired["exp"] = json!(now() - 3600);
    assert!(rejection(&rsa_token(&expired)).contains("expired"));
    let mut other = claims();
    other["aud"] = json!("other-api");
    assert!(rejection(&rsa_token(&other)).contains("another audience"));
    let mut foreign = claims();
    foreign["iss"] = json!("https://evil.test");
    assert!(rejection(&rsa_token(&foreign)).contains("another issuer"));
    let mut early = claims();
    early["nbf"] = json!(now() + 3600);
    assert!(rejection(&rsa_token(&early)).contains("not valid yet"));
    let mut anonymous = claims();
    anonymous.as_object_mut().unwrap().remove("sub");
    assert!(rejection(&rsa_token(&anonymous)).contains("\"sub\""));
}

#[test]
fn a_sub_that_is_not_a_non_empty_string_is_refused() {
    for sub in [
        json!(42),
        json!(""),
        json!("   "),
        json!(null),
        json!(["alice"]),
    ] {
        let mut odd = claims();
        odd["sub"] = sub.clone();
        let why = rejection(&rsa_token(&odd));
        assert!(why.contains("\"sub\""), "sub {sub}: {why}");
    }
    let mut odd = claims();
    odd["exp"] = json!("tomorrow");
    let why = rejection(&rsa_token(&odd));
    assert!(why.contains("\"exp\""), "{why}");
}

#[test]
fn a_small_clock_skew_is_tolerated() {
    let mut just_expired = claims();
    just_expired["exp"] = json!(now() - 5);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert!(
        runtime
            .block_on(verifier().verify(&rsa_token(&just_expired)))
            .is_ok()
    );
}

#[test]
fn a_tampered_payload_fails_the_signature() {
    let token = rsa_token(&claims());
    let parts: Vec<&str> = token.split('.').collect();
    let mut forged = claims();
    forged["sub"] = json!("mallory");
    let payload = b64(forged.to_string().as_bytes());
    let tampered = format!("{}.{payload}.{}", parts[0], parts[2]);
    assert!(rejection(&tampered).contains("signature"));
}

#[test]
fn alg_none_and_hmac_signed_with_the_public_key_are_refused() {
    let body = b64(claims().to_string().as_bytes());
    let none = format!("{}.{body}.", b64(br#"{"alg":"none","kid":"rsa1"}"#));
    assert!(
        rejection(&none).contains("not supported"),
        "{}",
        rejection(&none)
    );
    // The classic confusion: HS256 "signed" with the RSA public key.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("rsa1".into());
    let public = serde_json::to_vec(&keys().jwks.keys[0]).unwrap();
    let hmac = encode(&header, &claims(), &EncodingKey::from_secret(&public)).unwrap();
    assert!(rejection(&hmac).contains("algorithm is not allowed"));
    // An EC-signed token presented under the RSA key's id.
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("rsa1".into());
    let key = EncodingKey::from_ec_pem(keys().ec_pem.as_bytes()).unwrap();
    let crossed = encode(&header, &claims(), &key).unwrap();
    assert!(rejection(&crossed).contains("algorithm is not allowed"));
}

#[test]
fn an_unknown_key_id_and_garbage_are_refused() {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rotated-away".into());
    let key = EncodingKey::from_rsa_pem(keys().rsa_pem.as_bytes()).unwrap();
    let token = encode(&header, &claims(), &key).unwrap();
    assert!(rejection(&token).contains("not one of the provider's keys"));
    assert!(rejection("a.b.c").contains("malformed"));
}

fn api_key_auth() -> Authenticator {
    let config = crate::test_support::ops_bot_key(&["approver"], &["sre"]);
    Authenticator::from_config(&config, &|name| {
        (name == "OPS_BOT_KEY").then(|| "k-0123456789abcdef".to_string())
    })
    .unwrap()
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, value.parse().unwrap());
    }
    map
}

#[tokio::test]
async fn api_keys_work_in_both_headers_and_wrong_ones_are_refused() {
    let auth = api_key_auth();
    for h in [
        headers(&[("authorization", "Bearer k-0123456789abcdef")]),
        headers(&[("x-api-key", "k-0123456789abcdef")]),
    ] {
        let principal = auth.authenticate(&h).await.unwrap();
        assert_eq!(principal.subject, "key:ops-bot");
        assert!(principal.has(Role::Approver));
        assert!(principal.is_in("sre") && principal.is_in("approver"));
        assert!(!principal.is_in("admin"));
        assert_eq!(principal.credential, Credential::ApiKey);
    }
    assert_eq!(
        auth.authenticate(&HeaderMap::new()).await,
        Err(AuthError::Missing)
    );
    assert_eq!(
        auth.authenticate(&headers(&[("x-api-key", "k-0123456789abcdeX")]))
            .await,
        Err(AuthError::Invalid("unknown API key".into()))
    );
}

fn key_entry(name: &str, env: &str) -> ApiKeyConfig {
    ApiKeyConfig {
        name: name.into(),
        key_env: env.into(),
        roles: vec![],
        groups: vec![],
    }
}

fn two_keys(ops: &'static str, script: &'static str) -> Result<Authenticator, String> {
    let config = AuthConfig {
        oidc: None,
        api_keys: vec![key_entry("ops-bot", "OPS"), key_entry("script", "SCRIPT")],
        role_map: None,
    };
    Authenticator::from_config(&config, &move |name| match name {
        "OPS" => Some(ops.to_string()),
        "SCRIPT" => Some(script.to_string()),
        _ => None,
    })
}

#[tokio::test]
async fn an_api_key_matches_only_exactly_whatever_the_lengths() {
    let auth = two_keys("k-0123456789abcdef", "s-0123456789abcdef-longer").unwrap();
    let subject = |key: &'static str| {
        let auth = auth.clone();
        async move {
            let presented = headers(&[("x-api-key", key)]);
            auth.authenticate(&presented).await.map(|p| p.subject)
        }
    };
    assert_eq!(subject("k-0123456789abcdef").await.unwrap(), "key:ops-bot");
    assert_eq!(
        subject("s-0123456789abcdef-longer").await.unwrap(),
        "key:script"
    );
    for wrong in [
        "k-0123456789abcde",
        "k-0123456789abcdef0",
        "s-0123456789abcdef",
        "K-0123456789ABCDEF",
    ] {
        assert_eq!(
            subject(wrong).await,
            Err(AuthError::Invalid("unknown API key".into())),
            "{wrong}"
        );
    }
}

#[test]
fn two_entries_with_the_same_key_stop_startup_naming_both() {
    let same = two_keys("k-0123456789abcdef", "k-0123456789abcdef").unwrap_err();
    assert!(
        same.contains("ops-bot") && same.contains("script"),
        "{same}"
    );
    assert!(
        !same.contains("0123456789abcdef"),
        "the key is never shown: {same}"
    );
}

#[test]
fn a_missing_or_short_key_stops_startup_naming_the_variable() {
    let config = crate::test_support::ops_bot_key(&[], &[]);
    let missing = Authenticator::from_config(&config, &|_| None).unwrap_err();
    assert!(missing.contains("OPS_BOT_KEY"), "{missing}");
    let short = Authenticator::from_config(&config, &|_| Some("short".into())).unwrap_err();
    assert!(short.contains("shorter than 16"), "{short}");
    let debug = format!("{:?}", api_key_auth());
    assert!(!debug.contains("0123456789abcdef"), "{debug}");
}

#[tokio::test]
async fn without_auth_everyone_is_the_anonymous_principal() {
    let principal = Authenticator::disabled()
        .authenticate(&HeaderMap::new())
        .await
        .unwrap();
    assert!(principal.is_anonymous());
    assert!(principal.has(Role::Approver) && principal.has(Role::Admin));
}

#[tokio::test]
async fn an_unreachable_provider_is_unavailable_not_invalid() {
    let verifier = OidcVerifier::new(&oidc_config_at("http://127.0.0.1:9"), None);
    match verifier.verify(&rsa_token(&claims())).await {
        Err(AuthError::Unavailable(_)) => {}
        other => panic!("expected unavailable, got {other:?}"),
    }
}

fn es_token(claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("ec1".into());
    let key = EncodingKey::from_ec_pem(keys().ec_pem.as_bytes()).unwrap();
    encode(&header, claims, &key).unwrap()
}

/// A provider whose key set no longer holds the RSA key (rotated away).
async fn provider_without_rsa1() -> wiremock::MockServer {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    let server = wiremock::MockServer::start().await;
    let discovery = json!({"issuer": server.uri(), "jwks_uri": format!("{}/jwks", server.uri())});
    Mock::given(method("GET"))
        .and(path("/.well-known/openid-configuration"))
        .respond_with(ResponseTemplate::new(200).set_body_json(discovery))
        .mount(&server)
        .await;
    let mut jwks = serde_json::to_value(&keys().jwks).unwrap();
    jwks["keys"]
        .as_array_mut()
        .unwrap()
        .retain(|k| k["kid"] != "rsa1");
    Mock::given(method("GET"))
        .and(path("/jwks"))
        .respond_with(ResponseTemplate::new(200).set_body_json(jwks))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn keys_older_than_the_ttl_are_read_again_so_a_removed_key_stops_verifying() {
    let provider = provider_without_rsa1().await;
    let config = oidc_config_at(&provider.uri());
    let verifier = OidcVerifier::with_keys(&config, None, keys().jwks.clone());
    let mut claims = claims();
    claims["iss"] = json!(provider.uri());
    let token = rsa_token(&claims);
    assert!(verifier.verify(&token).await.is_ok(), "cached and fresh");
    verifier.age_keys(Duration::from_secs(59));
    assert!(verifier.verify(&token).await.is_ok(), "within the TTL");
    assert!(provider.received_requests().await.unwrap().is_empty());
    verifier.age_keys(Duration::from_secs(2));
    match verifier.verify(&token).await {
        Err(AuthError::Invalid(why)) => {
            assert!(why.contains("not one of the provider's keys"), "{why}")
        }
        other => panic!("the removed key still verifies: {other:?}"),
    }
    assert!(
        verifier.verify(&es_token(&claims)).await.is_ok(),
        "the kept key does"
    );
}

#[tokio::test]
async fn a_failed_refresh_keeps_the_cached_keys_until_the_max_age_then_fails_closed() {
    let config = oidc_config_at("http://127.0.0.1:9");
    let verifier = OidcVerifier::with_keys(&config, None, keys().jwks.clone());
    let mut claims = claims();
    claims["iss"] = json!("http://127.0.0.1:9");
    let token = rsa_token(&claims);
    verifier.age_keys(Duration::from_secs(120));
    assert!(
        verifier.verify(&token).await.is_ok(),
        "past the TTL, the provider down: the cached keys still serve"
    );
    verifier.age_keys(Duration::from_secs(500));
    match verifier.verify(&token).await {
        Err(AuthError::Unavailable(why)) => assert!(why.contains("600"), "{why}"),
        other => panic!("expected unavailable past the max age, got {other:?}"),
    }
}

#[tokio::test]
async fn subjects_are_namespaced_so_a_token_cannot_pass_for_an_api_key() {
    let entry = ApiKeyConfig {
        roles: vec!["approver".into()],
        ..key_entry("ops-bot", "OPS")
    };
    let key = ApiKey::load(&entry, &|_| Some("k-0123456789abcdef".into())).unwrap();
    let auth = Authenticator {
        inner: Some(Arc::new(Configured {
            oidc: Some(verifier()),
            api_keys: vec![key],
        })),
    };
    let mut claims = claims();
    claims["sub"] = json!("ops-bot");
    let bearer = format!("Bearer {}", rsa_token(&claims));
    let by_token = auth
        .authenticate(&headers(&[("authorization", &bearer)]))
        .await
        .unwrap();
    let by_key = auth
        .authenticate(&headers(&[("x-api-key", "k-0123456789abcdef")]))
        .await
        .unwrap();
    assert_eq!(by_key.subject, "key:ops-bot");
    assert_eq!(by_token.subject, format!("oidc:{ISSUER}#ops-bot"));
    // A token whose sub mimics a system actor is not that actor either.
    claims["sub"] = json!("system:expiry");
    let mimic = verifier().verify(&rsa_token(&claims)).await.unwrap();
    assert_eq!(mimic.subject, format!("oidc:{ISSUER}#system:expiry"));
    assert_eq!(Principal::anonymous().subject, "anonymous");
}

/// Most bytes an authentication's future may take. Every request's
/// middleware future holds it inline while it runs, so its size is paid
/// by every request in flight, with or without a token; verifying a
/// token (a key set fetched over HTTPS at worst: 1,648 bytes inline) is
/// boxed for that reason (40 bytes now).
const MAX_AUTHENTICATE_FUTURE_BYTES: usize = 256;

#[test]
fn authenticating_a_request_takes_a_small_future_whatever_the_credential() {
    let auth = api_key_auth();
    let token = headers(&[("authorization", "Bearer header.payload.signature")]);
    let size = std::mem::size_of_val(&auth.authenticate(&token));
    assert!(
        size <= MAX_AUTHENTICATE_FUTURE_BYTES,
        "authenticating takes a future of {size} bytes; box the part that grew"
    );
}
