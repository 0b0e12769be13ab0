//! The web server's sign-in over plain HTTP (no browser): a real OpenID
//! Connect provider, an agent that requires its tokens and the `web`
//! binary with `oidc:`. The provider's login pages are driven by
//! `OidcProvider::sign_in`.

use asg_end2end::login::{LoginOptions, LoginStack, dist_or_empty};
use asg_tests::oidc::query_param;
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use serde_json::{Value, json};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn set_cookies(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

fn cookie_pair(cookies: &[String], name: &str) -> Option<String> {
    cookies
        .iter()
        .find(|c| c.starts_with(&format!("{name}=")))
        .map(|c| c.split(';').next().unwrap().to_string())
}

/// Signs `user` in; returns the `asg_session=...` pair and where the
/// callback sent the browser.
async fn sign_in(stack: &LoginStack, user: &str, return_to: &str) -> (String, String) {
    let http = client();
    let start = http
        .get(format!(
            "{}/auth/login?return_to={}",
            stack.web.url,
            asg_tests::oidc::form_encode(return_to)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(start.status(), StatusCode::SEE_OTHER, "{}", stack.web.log());
    let login_cookie = cookie_pair(&set_cookies(&start), "asg_login").expect("login cookie");
    let authorize = start.headers()[LOCATION].to_str().unwrap().to_string();
    assert!(authorize.starts_with(&stack.provider.issuer), "{authorize}");
    assert_eq!(
        query_param(&authorize, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert!(query_param(&authorize, "nonce").is_some());
    assert!(query_param(&authorize, "state").is_some());
    let callback = stack.provider.sign_in(&authorize, user).await;
    assert!(
        callback.starts_with(&format!("{}/auth/callback", stack.web.url)),
        "{callback}"
    );
    let done = http
        .get(&callback)
        .header(COOKIE, &login_cookie)
        .send()
        .await
        .unwrap();
    let cookies = set_cookies(&done);
    assert_eq!(
        done.status(),
        StatusCode::SEE_OTHER,
        "{}\n{}",
        done.text().await.unwrap_or_default(),
        stack.web.log()
    );
    let session = cookies
        .iter()
        .find(|c| c.starts_with("asg_session="))
        .expect("session cookie")
        .clone();
    assert!(session.contains("HttpOnly"), "{session}");
    assert!(session.contains("SameSite=Lax"), "{session}");
    assert!(!session.contains("Secure"), "http redirect URL: {session}");
    let location = done.headers()[LOCATION].to_str().unwrap().to_string();
    (cookie_pair(&cookies, "asg_session").unwrap(), location)
}

async fn me(stack: &LoginStack, cookie: Option<&str>) -> (StatusCode, Value) {
    let mut request = client().get(format!("{}/auth/me", stack.web.url));
    if let Some(cookie) = cookie {
        request = request.header(COOKIE, cookie);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn sign_in_proxy_with_bearer_csrf_and_sign_out() {
    let stack = LoginStack::start(&dist_or_empty()).await;
    let http = client();

    // Not signed in: /auth/me and /api answer 401.
    let (status, body) = me(&stack, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let response = http
        .get(format!("{}/api/conversations", stack.web.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthenticated");
    assert_eq!(body["login_url"], "/auth/login");

    let (cookie, location) = sign_in(&stack, "alice", "/?c=abc").await;
    assert_eq!(location, "/?c=abc");
    let (status, who) = me(&stack, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{who}");
    assert_eq!(who["subject"], stack.provider.subject("alice"));
    assert_eq!(who["name"], "Alice Approver");
    assert_eq!(who["roles"], json!(["approver"]));
    assert_eq!(who["authenticated"], true);

    // The proxy adds the session's token (a browser-sent one is ignored).
    let created = http
        .post(format!("{}/api/conversations", stack.web.url))
        .header(COOKIE, &cookie)
        .header(ORIGIN, &stack.web.url)
        .header("authorization", "Bearer not-a-token")
        .json(&json!({"message": "list resources"}))
        .send()
        .await
        .unwrap();
    let status = created.status();
    let body: Value = created.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        body["conversation"]["owner"],
        stack.provider.subject("alice"),
        "{body}"
    );

    // A state-changing call from another site is refused.
    for (header, value) in [
        ("origin", "http://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let refused = http
            .post(format!("{}/api/conversations", stack.web.url))
            .header(COOKIE, &cookie)
            .header(header, value)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{header}: {value}");
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["code"], "forbidden");
    }

    // Sign out: the session ends, the browser goes to the provider's
    // end-session endpoint with the ID token hint.
    let out = http
        .post(format!("{}/auth/logout", stack.web.url))
        .header(COOKIE, &cookie)
        .header(ORIGIN, &stack.web.url)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    let cleared = cookie_pair(&set_cookies(&out), "asg_session").unwrap();
    assert_eq!(cleared, "asg_session=");
    let next = out.headers()[LOCATION].to_str().unwrap().to_string();
    assert!(next.starts_with(&stack.provider.issuer), "{next}");
    assert!(query_param(&next, "id_token_hint").is_some(), "{next}");
    assert_eq!(
        query_param(&next, "post_logout_redirect_uri"),
        Some(format!("{}/", stack.web.url))
    );
    let (status, _) = me(&stack, Some(&cookie)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let log = stack.web.log();
    assert!(log.contains("signed out"), "{log}");
    // The refresh token is revoked (the provider's JWT access tokens
    // cannot be: RFC 7009 unsupported_token_type, they expire).
    assert!(
        log.contains("revoked=1") || log.contains("revoked=2"),
        "{log}"
    );
}

#[tokio::test]
async fn the_callback_refuses_a_foreign_state_and_open_redirects() {
    let stack = LoginStack::start(&dist_or_empty()).await;
    let http = client();
    // A callback without the login cookie of the browser that started it.
    let start = http
        .get(format!("{}/auth/login", stack.web.url))
        .send()
        .await
        .unwrap();
    let authorize = start.headers()[LOCATION].to_str().unwrap().to_string();
    let callback = stack.provider.sign_in(&authorize, "bob").await;
    let refused = http.get(&callback).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(cookie_pair(&set_cookies(&refused), "asg_session").is_none());
    assert!(refused.text().await.unwrap().contains("state mismatch"));

    // return_to must stay on this site.
    let (cookie, location) = sign_in(&stack, "bob", "//evil.example/x").await;
    assert_eq!(location, "/");
    let (status, who) = me(&stack, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(who["subject"], stack.provider.subject("bob"));
    assert_eq!(who["roles"], json!([]));
}

#[tokio::test]
async fn tokens_are_refreshed_before_they_expire() {
    // 20 s tokens are always within the refresh margin (60 s).
    let stack = LoginStack::start_with(
        &dist_or_empty(),
        LoginOptions {
            access_token_ttl: Some(20),
            ..LoginOptions::default()
        },
    )
    .await;
    let (cookie, _) = sign_in(&stack, "alice", "/").await;
    let (status, who) = me(&stack, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{who}");
    assert_eq!(who["subject"], stack.provider.subject("alice"));
    let log = stack.web.log();
    assert!(log.contains("web session tokens refreshed"), "{log}");
}

#[tokio::test]
async fn oauth2_block_signs_in_with_the_user_from_the_agent() {
    // The reference implementation's `oauth2:` block: the same code flow
    // with PKCE on configured endpoints, no ID token; who signed in is
    // what the agent's GET /me says about the access token.
    let stack = LoginStack::start_with(
        &dist_or_empty(),
        LoginOptions {
            oauth2: true,
            ..LoginOptions::default()
        },
    )
    .await;
    let discovery = stack.provider.discovery().await;
    let issuer = &stack.provider.issuer;
    assert_eq!(
        discovery["authorization_endpoint"],
        format!("{issuer}/auth")
    );
    assert_eq!(discovery["token_endpoint"], format!("{issuer}/token"));
    assert_eq!(
        discovery["revocation_endpoint"],
        format!("{issuer}/token/revocation")
    );
    let http = client();

    let (status, _) = me(&stack, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (cookie, location) = sign_in(&stack, "alice", "/?c=oauth2").await;
    assert_eq!(location, "/?c=oauth2");
    let (status, who) = me(&stack, Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{who}\n{}", stack.web.log());
    assert_eq!(who["subject"], stack.provider.subject("alice"), "{who}");
    assert_eq!(who["name"], "Alice Approver", "{who}");
    assert_eq!(who["roles"], json!(["approver"]), "{who}");
    assert_eq!(who["authenticated"], true, "{who}");

    // An /api call reaches the agent with her token.
    let response = http
        .get(format!("{}/api/me", stack.web.url))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["subject"], stack.provider.subject("alice"), "{body}");
    assert_eq!(body["roles"], json!(["approver"]), "{body}");
    let created = http
        .post(format!("{}/api/conversations", stack.web.url))
        .header(COOKIE, &cookie)
        .header(ORIGIN, &stack.web.url)
        .json(&json!({"message": "list resources"}))
        .send()
        .await
        .unwrap();
    let status = created.status();
    let body: Value = created.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        body["conversation"]["owner"],
        stack.provider.subject("alice"),
        "{body}"
    );

    // Sign out: no end-session endpoint in this mode, back to the chat;
    // the refresh token is revoked at revoke_url.
    let out = http
        .post(format!("{}/auth/logout", stack.web.url))
        .header(COOKIE, &cookie)
        .header(ORIGIN, &stack.web.url)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    assert_eq!(out.headers()[LOCATION], "/");
    let (status, _) = me(&stack, Some(&cookie)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let log = stack.web.log();
    assert!(
        log.contains("revoked=1") || log.contains("revoked=2"),
        "{log}"
    );
}
