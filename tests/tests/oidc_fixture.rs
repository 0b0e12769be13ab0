//! The OpenID Connect test provider (`tests/oidc/provider.js`) issues what
//! the auth tests rely on: discovery, a JWKS, RS256 and ES256 JWT access
//! tokens with `sub`, `aud`, `roles` and `name`, other audiences, short
//! lifetimes, and the browser client's code flow with PKCE and refresh.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use asg_tests::oidc::{
    AUDIENCE, OTHER_AUDIENCE, OidcOptions, OidcProvider, SHORT_LIVED_TTL, USERS, WEB_CLIENT_ID,
    free_port, jwt_claims, jwt_header, pkce_pair, query_param, resource, user_secret,
};
use serde_json::{Value, json};

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// The JWKS entry with this `kid` (panics if there is none).
fn key_for(jwks: &Value, kid: &str) -> Value {
    jwks["keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["kid"] == kid))
        .cloned()
        .unwrap_or_else(|| panic!("kid {kid} not in the JWKS {jwks}"))
}

#[tokio::test]
async fn discovery_names_the_issuer_and_its_endpoints() {
    let idp = OidcProvider::start().await;
    assert!(
        idp.issuer.starts_with("http://127.0.0.1:"),
        "{}",
        idp.issuer
    );
    let discovery = idp.discovery().await;
    assert_eq!(discovery["issuer"], idp.issuer.as_str());
    assert_eq!(discovery["jwks_uri"], format!("{}/jwks", idp.issuer));
    assert_eq!(discovery["token_endpoint"], idp.token_endpoint());
    for endpoint in [
        "authorization_endpoint",
        "revocation_endpoint",
        "end_session_endpoint",
        "userinfo_endpoint",
    ] {
        assert!(
            discovery[endpoint]
                .as_str()
                .is_some_and(|e| e.starts_with(&idp.issuer)),
            "{endpoint} missing: {discovery}"
        );
    }
    assert_eq!(
        discovery["code_challenge_methods_supported"],
        json!(["S256"])
    );

    let jwks = idp.jwks().await;
    let keys = jwks["keys"].as_array().expect("keys");
    let types: Vec<_> = keys.iter().map(|k| k["kty"].as_str().unwrap()).collect();
    assert!(types.contains(&"RSA") && types.contains(&"EC"), "{jwks}");
    for key in keys {
        assert!(key["kid"].is_string(), "every key has a kid: {key}");
        for private in ["d", "p", "q", "dp", "dq", "qi"] {
            assert!(
                key.get(private).is_none(),
                "private part {private} published: {key}"
            );
        }
    }
}

#[tokio::test]
async fn alice_gets_an_rs256_access_token_for_the_agent() {
    let idp = OidcProvider::start().await;
    let token = idp.token("alice").await;
    let header = jwt_header(&token);
    assert_eq!(header["alg"], "RS256", "{header}");
    assert_eq!(header["typ"], "at+jwt", "{header}");
    let kid = header["kid"].as_str().expect("kid");
    let key = key_for(&idp.jwks().await, kid);
    assert_eq!(key["kty"], "RSA");
    assert_eq!(key["alg"], "RS256");
    assert_eq!(key["use"], "sig");

    let claims = jwt_claims(&token);
    assert_eq!(claims["iss"], idp.issuer.as_str(), "{claims}");
    assert_eq!(claims["aud"], AUDIENCE, "{claims}");
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["client_id"], "alice");
    assert_eq!(claims["roles"], json!(["approver"]));
    assert_eq!(claims["groups"], json!(["approver"]));
    assert_eq!(claims["name"], "Alice Approver");
    assert_eq!(claims["preferred_username"], "alice");
    let iat = claims["iat"].as_i64().expect("iat");
    let exp = claims["exp"].as_i64().expect("exp");
    assert_eq!(exp - iat, 300, "{claims}");
    assert!((iat - now()).abs() <= 5, "iat {iat} is now: {}", now());
    assert!(claims["jti"].is_string());
}

#[tokio::test]
async fn every_user_has_the_roles_of_the_table() {
    let idp = OidcProvider::start().await;
    for (user, roles, name) in USERS {
        let claims = jwt_claims(&idp.token(user).await);
        assert_eq!(claims["sub"], *user, "{claims}");
        assert_eq!(claims["name"], *name, "{claims}");
        let expected = if *user == "frank" {
            json!(roles.join(" "))
        } else {
            json!(roles)
        };
        assert_eq!(claims["roles"], expected, "{user}: {claims}");
    }
    let bob = jwt_claims(&idp.token("bob").await);
    assert_eq!(bob["roles"], json!([]), "bob is a plain user: {bob}");
    assert_eq!(bob["name"], "Bob User");
    let carol = jwt_claims(&idp.token("carol").await);
    assert_eq!(carol["roles"], json!(["sre"]));
    let dana = jwt_claims(&idp.token("dana").await);
    assert_eq!(dana["roles"], json!(["admin"]));
}

#[tokio::test]
async fn other_audiences_es256_and_short_lived_tokens() {
    let idp = OidcProvider::start().await;
    let jwks = idp.jwks().await;

    let other = jwt_claims(&idp.token_for_resource("alice", OTHER_AUDIENCE).await);
    assert_eq!(other["aud"], OTHER_AUDIENCE, "{other}");
    assert_eq!(other["sub"], "alice");
    assert_eq!(other["roles"], json!(["approver"]));

    let erin = idp.token("erin").await;
    let header = jwt_header(&erin);
    assert_eq!(header["alg"], "ES256", "{header}");
    let key = key_for(&jwks, header["kid"].as_str().expect("kid"));
    assert_eq!(key["kty"], "EC");
    assert_eq!(key["crv"], "P-256");
    let claims = jwt_claims(&erin);
    assert_eq!(claims["aud"], AUDIENCE);
    assert_eq!(claims["sub"], "erin");
    assert_eq!(claims["roles"], json!(["approver"]));

    for alg in ["ES256", "RS256"] {
        let token = idp.token_signed_with("bob", alg).await;
        assert_eq!(jwt_header(&token)["alg"], alg);
        assert_eq!(jwt_claims(&token)["aud"], AUDIENCE);
    }

    let short = idp.short_lived_token("bob").await;
    let claims = jwt_claims(&short);
    let exp = claims["exp"].as_i64().expect("exp");
    assert_eq!(
        exp - claims["iat"].as_i64().expect("iat"),
        SHORT_LIVED_TTL as i64
    );
    assert!(exp <= now() + SHORT_LIVED_TTL as i64 + 1, "{claims}");
    assert_eq!(claims["aud"], AUDIENCE);
    tokio::time::sleep(Duration::from_millis(SHORT_LIVED_TTL * 1000 + 1100)).await;
    assert!(exp < now(), "expired by now");

    let custom = jwt_claims(
        &idp.token_with("carol", &resource("agent-b", Some("ES256"), Some(60)))
            .await,
    );
    assert_eq!(custom["aud"], "agent-b");
    assert_eq!(
        custom["exp"].as_i64().unwrap() - custom["iat"].as_i64().unwrap(),
        60
    );
}

#[tokio::test]
async fn the_token_endpoint_refuses_bad_requests() {
    let idp = OidcProvider::start().await;
    let (status, body) = idp
        .token_request("alice", "wrong", Some(&resource(AUDIENCE, None, None)))
        .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"], "invalid_client");
    // Resource indicators are absolute URIs: the audience alone is not one.
    let (status, body) = idp
        .token_request("alice", &user_secret("alice"), Some(AUDIENCE))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_target");
    // Without a resource, the default one (the agent's audience).
    let (status, body) = idp
        .token_request("alice", &user_secret("alice"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let claims = jwt_claims(body["access_token"].as_str().unwrap());
    assert_eq!(claims["aud"], AUDIENCE);
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 300);
}

#[tokio::test]
async fn the_browser_client_signs_in_with_code_and_pkce_and_refreshes() {
    let redirect_uri = "http://127.0.0.1:9/auth/callback";
    let idp = OidcProvider::start_with(OidcOptions {
        redirect_uris: vec![redirect_uri.to_string()],
        post_logout_redirect_uris: vec!["http://127.0.0.1:9/".to_string()],
        web_access_token_ttl: Some(30),
        ..Default::default()
    })
    .await;
    let (verifier, challenge) = pkce_pair();
    let authorize = idp.authorize_url(redirect_uri, &challenge, "state-1");
    let callback = idp.sign_in(&authorize, "alice").await;
    assert!(callback.starts_with(redirect_uri), "{callback}");
    assert_eq!(query_param(&callback, "state").as_deref(), Some("state-1"));
    assert_eq!(
        query_param(&callback, "iss").as_deref(),
        Some(idp.issuer.as_str())
    );
    let code = query_param(&callback, "code").expect("code");

    // PKCE is required: the code is refused without the right verifier.
    let (status, body) = idp
        .post_token(
            WEB_CLIENT_ID,
            &idp.web_client_secret,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", redirect_uri),
                (
                    "code_verifier",
                    "a-wrong-verifier-a-wrong-verifier-a-wrong-verifier",
                ),
            ],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_grant");
    let tokens = idp.exchange_code(&code, redirect_uri, &verifier).await;

    let access = tokens["access_token"].as_str().expect("access_token");
    assert_eq!(jwt_header(access)["typ"], "at+jwt");
    let claims = jwt_claims(access);
    assert_eq!(claims["aud"], AUDIENCE, "{claims}");
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["roles"], json!(["approver"]));
    assert_eq!(claims["name"], "Alice Approver");
    assert_eq!(claims["client_id"], WEB_CLIENT_ID);
    assert_eq!(claims["scope"], "openid profile email", "{claims}");
    assert_eq!(tokens["expires_in"], 30);
    assert_eq!(tokens["scope"], "openid profile email", "{tokens}");

    let id_token = tokens["id_token"].as_str().expect("id_token");
    assert_eq!(jwt_header(id_token)["alg"], "RS256");
    let id = jwt_claims(id_token);
    assert_eq!(id["iss"], idp.issuer.as_str());
    assert_eq!(id["aud"], WEB_CLIENT_ID);
    assert_eq!(id["sub"], "alice");
    assert_eq!(id["roles"], json!(["approver"]));
    assert_eq!(id["name"], "Alice Approver");
    assert!(
        id["nonce"]
            .as_str()
            .is_some_and(|n| n.starts_with("nonce-"))
    );

    let refresh = tokens["refresh_token"].as_str().expect("refresh_token");
    let (status, refreshed) = idp.refresh(refresh).await;
    assert_eq!(status, 200, "{refreshed}");
    let claims = jwt_claims(refreshed["access_token"].as_str().unwrap());
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["roles"], json!(["approver"]));
    // Revocation (confidential clients' refresh tokens do not rotate: the
    // library's default).
    let current = refreshed["refresh_token"].as_str().unwrap_or(refresh);
    let client = reqwest::Client::new();
    let revoked = client
        .post(format!("{}/token/revocation", idp.issuer))
        .basic_auth(WEB_CLIENT_ID, Some(&idp.web_client_secret))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={current}&token_type_hint=refresh_token"))
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    let (status, body) = idp.refresh(current).await;
    assert_eq!(status, 400, "revoked: {body}");

    // Any user name signs in; unknown names have no roles.
    let (v, c) = pkce_pair();
    let callback = idp
        .sign_in(&idp.authorize_url(redirect_uri, &c, "state-3"), "zoe")
        .await;
    let code = query_param(&callback, "code").expect("code");
    let tokens = idp.exchange_code(&code, redirect_uri, &v).await;
    let claims = jwt_claims(tokens["access_token"].as_str().unwrap());
    assert_eq!(claims["sub"], "zoe");
    assert_eq!(claims["roles"], json!([]));
}

#[tokio::test]
async fn loopback_redirects_may_use_any_port() {
    let idp = OidcProvider::start_with(OidcOptions {
        redirect_uris: vec!["http://127.0.0.1/auth/callback".to_string()],
        loopback_any_port: true,
        ..Default::default()
    })
    .await;
    let redirect_uri = "http://127.0.0.1:4321/auth/callback";
    let (verifier, challenge) = pkce_pair();
    let callback = idp
        .sign_in(&idp.authorize_url(redirect_uri, &challenge, "s"), "bob")
        .await;
    assert!(callback.starts_with(redirect_uri), "{callback}");
    let code = query_param(&callback, "code").expect("code");
    let tokens = idp.exchange_code(&code, redirect_uri, &verifier).await;
    assert_eq!(
        jwt_claims(tokens["access_token"].as_str().unwrap())["sub"],
        "bob"
    );
}

#[tokio::test]
async fn restarts_on_the_same_port_keep_or_rotate_the_keys() {
    let port = free_port();
    let mut idp = OidcProvider::start_with(OidcOptions {
        port,
        ..Default::default()
    })
    .await;
    assert_eq!(idp.issuer, format!("http://127.0.0.1:{port}"));
    let kid = |token: &str| jwt_header(token)["kid"].as_str().unwrap().to_string();
    let first = kid(&idp.token("alice").await);

    idp.restart(true).await;
    assert_eq!(idp.port, port);
    assert_eq!(kid(&idp.token("alice").await), first, "keys kept");

    idp.kill();
    assert!(
        reqwest::get(idp.discovery_url()).await.is_err(),
        "the provider is down"
    );
    idp.restart(false).await;
    let rotated = kid(&idp.token("alice").await);
    assert_ne!(rotated, first, "new keys");
    let jwks = idp.jwks().await;
    key_for(&jwks, &rotated);
    assert!(
        jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["kid"] != first.as_str()),
        "the old key is gone: {jwks}"
    );
}
