//! `/auth/*`: sign-in, callback, sign-out and "who am I" for the browser,
//! and the bearer token of a request's session for the `/api` proxy.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;

use super::oidc::{Login, LoginSettings};
use super::security::{check_same_origin, safe_return_to};
use super::session::{
    CookiePolicy, LOGIN_COOKIE, SESSION_COOKIE, SessionStore, SessionUser, cookie_value,
};

/// Sign-in state of the web server.
pub struct WebAuth {
    login: Login,
    sessions: SessionStore,
    cookies: CookiePolicy,
    trusted_origins: Arc<[String]>,
    agent_url: String,
    http: reqwest::Client,
    refreshing: tokio::sync::Mutex<()>,
}

/// Why a request has no token to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoSession {
    /// No cookie, an unknown or ended session, or one that could not be
    /// refreshed.
    SignedOut,
}

impl WebAuth {
    /// Sign-in with these settings; sessions in `sessions`;
    /// `trusted_origins` may sign out (`WebConfig::trusted_origins`).
    pub fn new(
        settings: LoginSettings,
        sessions: SessionStore,
        agent_url: &str,
        trusted_origins: Arc<[String]>,
    ) -> WebAuth {
        let secure = settings.redirect_url.starts_with("https://");
        WebAuth {
            login: Login::new(settings),
            sessions,
            cookies: CookiePolicy { secure },
            trusted_origins,
            agent_url: agent_url.trim_end_matches('/').to_string(),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap_or_default(),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// The origins that may send state-changing requests (this server's
    /// configured ones).
    pub fn trusted_origins(&self) -> &[String] {
        &self.trusted_origins
    }

    /// The session cookie's value, if the request has one.
    pub fn session_id(headers: &HeaderMap) -> Option<String> {
        cookie_value(headers, SESSION_COOKIE)
    }

    /// The access token of the request's session, refreshed first when
    /// it expires soon. A session whose token expired and cannot be
    /// refreshed ends.
    pub async fn bearer(&self, headers: &HeaderMap) -> Result<String, NoSession> {
        let id = WebAuth::session_id(headers).ok_or(NoSession::SignedOut)?;
        let session = self.sessions.get(&id).ok_or(NoSession::SignedOut)?;
        if !session.tokens.needs_refresh(Utc::now()) || session.tokens.refresh_token.is_none() {
            return Ok(session.tokens.access_token);
        }
        // One refresh at a time: a rotated refresh token is used once.
        let _guard = self.refreshing.lock().await;
        let session = self.sessions.get(&id).ok_or(NoSession::SignedOut)?;
        if !session.tokens.needs_refresh(Utc::now()) {
            return Ok(session.tokens.access_token);
        }
        match self.login.refresh(&session.tokens).await {
            Ok(tokens) => {
                let access = tokens.access_token.clone();
                self.sessions.update_tokens(&id, tokens);
                tracing::info!(user = %session.user.subject, "web session tokens refreshed");
                Ok(access)
            }
            Err(e) if session.tokens.expired(Utc::now()) => {
                tracing::warn!(user = %session.user.subject, "web session ended: {e}");
                self.sessions.remove(&id);
                Err(NoSession::SignedOut)
            }
            Err(e) => {
                tracing::warn!(user = %session.user.subject, "token refresh failed, the current token is still valid: {e}");
                Ok(session.tokens.access_token)
            }
        }
    }

    /// `GET {agent}/me` with a token.
    async fn agent_me(&self, token: &str) -> Result<(StatusCode, serde_json::Value), String> {
        let response = self
            .http
            .get(format!("{}/me", self.agent_url))
            .bearer_auth(token)
            .header(asg_http::CLIENT_HEADER, "web")
            .send()
            .await
            .map_err(|_| format!("cannot reach the agent at {}", self.agent_url))?;
        let status =
            StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
        let body = response.json().await.unwrap_or(serde_json::Value::Null);
        Ok((status, body))
    }
}

/// A JSON error answer `{"error": {"code", "message"}}`.
pub fn json_error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(serde_json::json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

/// The answer to an `/api` call without a session while login is on.
pub fn sign_in_required() -> Response {
    let mut response = (
        StatusCode::UNAUTHORIZED,
        axum::Json(serde_json::json!({
            "error": {"code": "unauthenticated", "message": "Sign in to use the chat."},
            "login_url": "/auth/login",
        })),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A small HTML page for sign-in failures (the browser is mid-redirect).
fn failure_page(status: StatusCode, problem: &str) -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Sign-in failed</title></head>\
         <body style=\"font:16px system-ui;margin:3em\"><h1>Sign-in failed</h1><p id=\"auth-error\">{}</p>\
         <p><a href=\"/auth/login\">Try again</a> · <a href=\"/\">Back to the chat</a></p></body></html>",
        escape_html(problem)
    );
    (status, Html(page)).into_response()
}

fn redirect(location: &str, cookies: &[String]) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(location) {
        headers.insert(header::LOCATION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    for cookie in cookies {
        if let Ok(value) = HeaderValue::from_str(cookie) {
            headers.append(header::SET_COOKIE, value);
        }
    }
    response
}

/// `/auth/login` query.
#[derive(Debug, Deserialize)]
pub struct LoginQuery {
    return_to: Option<String>,
}

/// `GET /auth/login`: starts the authorization code flow.
pub async fn login(State(auth): State<Arc<WebAuth>>, Query(query): Query<LoginQuery>) -> Response {
    let return_to = safe_return_to(query.return_to.as_deref());
    match auth.login.authorize(return_to).await {
        Ok((url, pending)) => {
            let id = auth.sessions.start_login(pending);
            redirect(&url, &[auth.cookies.login(&id)])
        }
        Err(e) => {
            tracing::error!("sign-in cannot start: {e}");
            failure_page(
                StatusCode::BAD_GATEWAY,
                &format!("The sign-in provider cannot be used: {e}"),
            )
        }
    }
}

/// `/auth/callback` query.
#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /auth/callback`: checks `state` against the login cookie,
/// exchanges the code, verifies the ID token, starts the session. Either
/// way the login cookie is cleared.
pub async fn callback(
    State(auth): State<Arc<WebAuth>>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let clear_login = auth.cookies.clear_login();
    match sign_in(&auth, &headers, query).await {
        Ok((session, return_to)) => {
            redirect(&return_to, &[auth.cookies.session(&session), clear_login])
        }
        Err((status, message)) => {
            let mut response = failure_page(status, &message);
            append_cookie(&mut response, &clear_login);
            response
        }
    }
}

/// A refused sign-in: the status and what the page says.
type Refused = (StatusCode, String);

/// The new session's id and where the browser goes back to.
async fn sign_in(
    auth: &WebAuth,
    headers: &HeaderMap,
    query: CallbackQuery,
) -> Result<(String, String), Refused> {
    let login_id = cookie_value(headers, LOGIN_COOKIE).unwrap_or_default();
    let pending = auth
        .sessions
        .finish_login(&login_id, query.state.as_deref().unwrap_or_default());
    if let Some(error) = &query.error {
        let description = query.error_description.as_deref().unwrap_or_default();
        let message = format!("The provider refused: {error} {description}");
        return Err((StatusCode::BAD_REQUEST, message));
    }
    let (Some(pending), Some(code)) = (pending, query.code) else {
        let message = "This sign-in is unknown, expired or was started in another browser \
                       (state mismatch).";
        return Err((StatusCode::BAD_REQUEST, message.into()));
    };
    let (tokens, user) = auth.login.finish(code, &pending).await.map_err(|e| {
        tracing::warn!("sign-in failed: {e}");
        (StatusCode::BAD_GATEWAY, e.to_string())
    })?;
    let user = match user {
        Some(user) => user,
        // Plain OAuth2: the agent says who the token belongs to.
        None => user_of_token(auth, &tokens.access_token).await?,
    };
    // A new session id at every sign-in (no fixation); the old one ends.
    if let Some(old) = WebAuth::session_id(headers) {
        auth.sessions.remove(&old);
    }
    tracing::info!(user = %user.subject, "signed in to the web chat");
    Ok((auth.sessions.create(tokens, user), pending.return_to))
}

/// Who a plain OAuth2 access token belongs to, as the agent's `GET /me`
/// says.
async fn user_of_token(auth: &WebAuth, token: &str) -> Result<SessionUser, Refused> {
    match auth.agent_me(token).await {
        Ok((status, body)) if status.is_success() => Ok(SessionUser {
            subject: body["subject"].as_str().unwrap_or_default().to_string(),
            name: body["name"].as_str().map(str::to_string),
        }),
        Ok((status, body)) => {
            let message = body["error"]["message"].as_str().unwrap_or("refused");
            Err((
                StatusCode::BAD_GATEWAY,
                format!("The agent does not accept the token ({status}): {message}"),
            ))
        }
        Err(e) => Err((StatusCode::BAD_GATEWAY, e)),
    }
}

fn append_cookie(response: &mut Response, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// `POST /auth/logout`: revokes the tokens where the provider can, ends
/// the session, then sends the browser to the provider's end-session
/// endpoint (or `/`). A `fetch` asking for JSON gets `{"redirect": URL}`.
pub async fn logout(
    State(auth): State<Arc<WebAuth>>,
    method: axum::http::Method,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = check_same_origin(&method, &headers, auth.trusted_origins()) {
        return json_error(StatusCode::FORBIDDEN, "forbidden", &refused.0);
    }
    let mut next = "/".to_string();
    if let Some(id) = WebAuth::session_id(&headers)
        && let Some(session) = auth.sessions.remove(&id)
    {
        let revoked = auth.login.revoke(&session.tokens).await;
        if let Some(url) = auth.login.end_session_url(&session.tokens).await {
            next = url;
        }
        tracing::info!(user = %session.user.subject, revoked, "signed out of the web chat");
    }
    let clear = auth.cookies.clear_session();
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"));
    if wants_json {
        let mut response = axum::Json(serde_json::json!({"redirect": next})).into_response();
        append_cookie(&mut response, &clear);
        response
    } else {
        redirect(&next, &[clear])
    }
}

/// `GET /auth/me`: who is signed in, as the agent's `GET /me` says for
/// the session's token; 401 when nobody is.
pub async fn me(State(auth): State<Arc<WebAuth>>, headers: HeaderMap) -> Response {
    let Ok(token) = auth.bearer(&headers).await else {
        return sign_in_required();
    };
    let mut response = match auth.agent_me(&token).await {
        Ok((status, mut body)) if status.is_success() => {
            body["login"] = serde_json::Value::Bool(true);
            axum::Json(body).into_response()
        }
        Ok((StatusCode::UNAUTHORIZED, body)) => {
            let message = body["error"]["message"]
                .as_str()
                .unwrap_or("the agent refused the session's token");
            json_error(StatusCode::UNAUTHORIZED, "unauthenticated", message)
        }
        Ok((status, body)) => (status, axum::Json(body)).into_response(),
        Err(e) => json_error(StatusCode::BAD_GATEWAY, "agent_unreachable", &e),
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `GET /auth/me` when `web.yaml` configures no login: 200 with
/// `"login": false` (the chat then asks the agent's `/me`), so loading
/// the chat makes no request that fails.
pub async fn me_without_login() -> Response {
    let mut response = axum::Json(serde_json::json!({
        "subject": "anonymous", "roles": [], "authenticated": false, "login": false
    }))
    .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `/auth/*` when `web.yaml` configures no login: 404 with a code the
/// chat recognizes.
pub async fn not_configured() -> Response {
    json_error(
        StatusCode::NOT_FOUND,
        "login_not_configured",
        "this web server has no login (no oidc or oauth2 in web.yaml)",
    )
}
