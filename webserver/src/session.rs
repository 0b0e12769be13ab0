//! Browser sessions of the web chat: a random id in an HttpOnly cookie,
//! mapped in memory (and optionally in an owner-only file) to the tokens
//! the provider issued. Tokens never reach the browser and are never
//! logged: [`Tokens`] redacts itself in `Debug`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use rand::TryRngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "asg_session";
/// Name of the short-lived cookie that binds a login in progress to the
/// browser that started it (against login CSRF).
pub const LOGIN_COOKIE: &str = "asg_login";
/// A session ends this long after sign-in, whatever the tokens say.
pub const MAX_SESSION_AGE: Duration = Duration::hours(12);
/// A session not used for this long ends.
pub const MAX_IDLE: Duration = Duration::hours(4);
/// A login must come back from the provider within this time.
pub const LOGIN_TIMEOUT: Duration = Duration::minutes(10);
/// At most this many logins in progress are remembered (oldest dropped).
pub const MAX_PENDING_LOGINS: usize = 1000;
/// The access token is refreshed when it expires within this time.
pub const REFRESH_MARGIN: Duration = Duration::seconds(60);

/// A random identifier: 32 bytes from the operating system's CSPRNG,
/// base64url (43 characters).
pub fn random_id() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random generator failed");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The key a session is stored under: a hash of the cookie value, so a
/// persisted session file does not hold the cookies themselves.
fn key_of(id: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(id.as_bytes()))
}

/// The tokens of a signed-in session.
#[derive(Clone, Serialize, Deserialize)]
pub struct Tokens {
    /// Sent to the agent as `Authorization: Bearer`.
    pub access_token: String,
    /// For the refresh_token grant.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// The ID token (OpenID Connect), the `id_token_hint` at logout.
    #[serde(default)]
    pub id_token: Option<String>,
    /// When the access token expires, when the provider said.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &"[redacted]")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "[redacted]"),
            )
            .field("id_token", &self.id_token.as_ref().map(|_| "[redacted]"))
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl Tokens {
    /// True when the access token should be refreshed before use.
    pub fn needs_refresh(&self, now: DateTime<Utc>) -> bool {
        self.expires_at
            .is_some_and(|expires| expires - REFRESH_MARGIN <= now)
    }

    /// True when the access token has expired.
    pub fn expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|expires| expires <= now)
    }
}

/// Who signed in, as the ID token (or the agent's `/me`) said.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SessionUser {
    /// `sub`.
    pub subject: String,
    /// Display name, when known.
    #[serde(default)]
    pub name: Option<String>,
}

/// One signed-in browser.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    /// The tokens.
    pub tokens: Tokens,
    /// Who.
    pub user: SessionUser,
    /// When the user signed in.
    pub created_at: DateTime<Utc>,
    /// Last use.
    pub last_seen: DateTime<Utc>,
}

impl Session {
    /// True when the session may no longer be used.
    pub fn ended(&self, now: DateTime<Utc>) -> bool {
        now - self.created_at > MAX_SESSION_AGE
            || now - self.last_seen > MAX_IDLE
            || (self.tokens.expired(now) && self.tokens.refresh_token.is_none())
    }
}

/// A login in progress: what the callback needs to finish it.
#[derive(Clone)]
pub struct PendingLogin {
    /// The `state` sent to the provider.
    pub state: String,
    /// The OpenID Connect `nonce`.
    pub nonce: String,
    /// The PKCE verifier.
    pub pkce_verifier: String,
    /// Where to go afterwards (a same-origin path).
    pub return_to: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
}

impl std::fmt::Debug for PendingLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingLogin")
            .field("return_to", &self.return_to)
            .field("started_at", &self.started_at)
            .finish_non_exhaustive()
    }
}

/// Sessions and logins in progress. Cheap to clone.
#[derive(Clone, Default)]
pub struct SessionStore {
    inner: Arc<Mutex<Inner>>,
    file: Option<PathBuf>,
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<String, Session>,
    logins: HashMap<String, PendingLogin>,
}

impl SessionStore {
    /// An in-memory store.
    pub fn in_memory() -> SessionStore {
        SessionStore::default()
    }

    /// A store persisted in `data_dir/web-sessions.json` (mode 0600, the
    /// directory 0700); sessions in it are loaded now.
    pub fn persisted(data_dir: &Path) -> Result<SessionStore, String> {
        std::fs::create_dir_all(data_dir)
            .map_err(|e| format!("data_dir {}: {e}", data_dir.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700));
        }
        let file = data_dir.join("web-sessions.json");
        let sessions: HashMap<String, Session> = match std::fs::read(&file) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(file = %file.display(), "web sessions unreadable, starting empty: {e}");
                HashMap::new()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        let now = Utc::now();
        let sessions = sessions
            .into_iter()
            .filter(|(_, s)| !s.ended(now))
            .collect();
        Ok(SessionStore {
            inner: Arc::new(Mutex::new(Inner {
                sessions,
                logins: HashMap::new(),
            })),
            file: Some(file),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers a login in progress under a new random id (the value of
    /// the login cookie).
    pub fn start_login(&self, login: PendingLogin) -> String {
        let id = random_id();
        let mut inner = self.lock();
        let now = Utc::now();
        inner
            .logins
            .retain(|_, l| now - l.started_at <= LOGIN_TIMEOUT);
        if inner.logins.len() >= MAX_PENDING_LOGINS
            && let Some(oldest) = inner
                .logins
                .iter()
                .min_by_key(|(_, l)| l.started_at)
                .map(|(k, _)| k.clone())
        {
            inner.logins.remove(&oldest);
        }
        inner.logins.insert(key_of(&id), login);
        id
    }

    /// Takes the login of this login cookie, if it is still valid and its
    /// `state` is `state` (compared in constant time). It is removed
    /// either way: a state is used once.
    pub fn finish_login(&self, login_id: &str, state: &str) -> Option<PendingLogin> {
        let login = self.lock().logins.remove(&key_of(login_id))?;
        let same = subtle::ConstantTimeEq::ct_eq(login.state.as_bytes(), state.as_bytes());
        (bool::from(same) && Utc::now() - login.started_at <= LOGIN_TIMEOUT).then_some(login)
    }

    /// Stores a new session; returns its id (the cookie value).
    pub fn create(&self, tokens: Tokens, user: SessionUser) -> String {
        let id = random_id();
        let now = Utc::now();
        let session = Session {
            tokens,
            user,
            created_at: now,
            last_seen: now,
        };
        self.lock().sessions.insert(key_of(&id), session);
        self.save();
        id
    }

    /// The session of this cookie value, if it is still valid (its last
    /// use is updated). An ended session is removed.
    pub fn get(&self, id: &str) -> Option<Session> {
        let key = key_of(id);
        let now = Utc::now();
        let mut inner = self.lock();
        let session = inner.sessions.get_mut(&key)?;
        if session.ended(now) {
            inner.sessions.remove(&key);
            drop(inner);
            self.save();
            return None;
        }
        session.last_seen = now;
        Some(session.clone())
    }

    /// Replaces the tokens of a session (after a refresh).
    pub fn update_tokens(&self, id: &str, tokens: Tokens) {
        if let Some(session) = self.lock().sessions.get_mut(&key_of(id)) {
            session.tokens = tokens;
        }
        self.save();
    }

    /// Ends a session; returns it.
    pub fn remove(&self, id: &str) -> Option<Session> {
        let removed = self.lock().sessions.remove(&key_of(id));
        if removed.is_some() {
            self.save();
        }
        removed
    }

    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.lock().sessions.len()
    }

    /// True when nobody is signed in.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the sessions to the file, if there is one (atomically,
    /// owner-only). Failures are logged without any token.
    fn save(&self) {
        let Some(file) = &self.file else {
            return;
        };
        let json = {
            let inner = self.lock();
            match serde_json::to_vec(&inner.sessions) {
                Ok(json) => json,
                Err(e) => {
                    tracing::error!("cannot serialize the web sessions: {e}");
                    return;
                }
            }
        };
        if let Err(e) = write_private(file, &json) {
            tracing::error!(file = %file.display(), "cannot save the web sessions: {e}");
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same
/// directory (mode 0600), then renames it.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Cookie attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookiePolicy {
    /// Add `Secure` (the redirect URL is https).
    pub secure: bool,
}

impl CookiePolicy {
    /// `Set-Cookie` for the session cookie.
    pub fn session(&self, id: &str) -> String {
        self.cookie(SESSION_COOKIE, id, "/", Some(MAX_SESSION_AGE.num_seconds()))
    }

    /// `Set-Cookie` that deletes the session cookie.
    pub fn clear_session(&self) -> String {
        self.cookie(SESSION_COOKIE, "", "/", Some(0))
    }

    /// `Set-Cookie` for the login-in-progress cookie (only sent to /auth).
    pub fn login(&self, id: &str) -> String {
        self.cookie(LOGIN_COOKIE, id, "/auth", Some(LOGIN_TIMEOUT.num_seconds()))
    }

    /// `Set-Cookie` that deletes the login cookie.
    pub fn clear_login(&self) -> String {
        self.cookie(LOGIN_COOKIE, "", "/auth", Some(0))
    }

    fn cookie(&self, name: &str, value: &str, path: &str, max_age: Option<i64>) -> String {
        let mut cookie = format!("{name}={value}; Path={path}; HttpOnly; SameSite=Lax");
        if let Some(age) = max_age {
            cookie.push_str(&format!("; Max-Age={age}"));
        }
        if self.secure {
            cookie.push_str("; Secure");
        }
        cookie
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie_value(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;

    fn tokens(expires_in: Option<i64>, refresh: bool) -> Tokens {
        Tokens {
            access_token: "at-secret".into(),
            refresh_token: refresh.then(|| "rt-secret".into()),
            id_token: Some("id-secret".into()),
            expires_at: expires_in.map(|s| Utc::now() + Duration::seconds(s)),
        }
    }

    fn user() -> SessionUser {
        SessionUser {
            subject: "alice".into(),
            name: Some("Alice".into()),
        }
    }

    #[test]
    fn ids_are_long_random_and_url_safe() {
        let a = random_id();
        let b = random_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43, "32 bytes = 256 bits");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }

    #[test]
    fn sessions_are_found_by_cookie_value_and_removed() {
        let store = SessionStore::in_memory();
        let id = store.create(tokens(Some(300), true), user());
        assert_eq!(store.get(&id).unwrap().user, user());
        assert!(store.get("not-a-session").is_none());
        assert!(store.get(&random_id()).is_none());
        // Stored under a hash, not under the cookie value.
        assert!(!store.lock().sessions.contains_key(&id));
        assert!(store.remove(&id).is_some());
        assert!(store.get(&id).is_none());
        assert!(store.is_empty());
    }

    #[test]
    fn an_expired_session_without_refresh_token_ends() {
        let store = SessionStore::in_memory();
        let id = store.create(tokens(Some(-1), false), user());
        assert!(store.get(&id).is_none());
        let id = store.create(tokens(Some(-1), true), user());
        assert!(store.get(&id).is_some(), "can still be refreshed");
    }

    #[test]
    fn old_or_idle_sessions_end() {
        let now = Utc::now();
        let mut session = Session {
            tokens: tokens(Some(300), true),
            user: user(),
            created_at: now,
            last_seen: now,
        };
        assert!(!session.ended(now));
        session.last_seen = now - MAX_IDLE - Duration::seconds(1);
        assert!(session.ended(now));
        session.last_seen = now;
        session.created_at = now - MAX_SESSION_AGE - Duration::seconds(1);
        assert!(session.ended(now));
    }

    #[test]
    fn refresh_comes_shortly_before_expiry() {
        let now = Utc::now();
        assert!(!tokens(Some(600), true).needs_refresh(now));
        assert!(tokens(Some(30), true).needs_refresh(now));
        assert!(tokens(Some(-5), true).needs_refresh(now));
        assert!(!tokens(None, true).needs_refresh(now));
    }

    #[test]
    fn a_login_is_finished_once_with_its_own_state() {
        let store = SessionStore::in_memory();
        let login = |state: &str| PendingLogin {
            state: state.into(),
            nonce: "n".into(),
            pkce_verifier: "v".into(),
            return_to: "/".into(),
            started_at: Utc::now(),
        };
        let id = store.start_login(login("s1"));
        assert!(store.finish_login(&id, "other").is_none());
        // A wrong state used it up.
        assert!(store.finish_login(&id, "s1").is_none());
        let id = store.start_login(login("s2"));
        assert!(store.finish_login("another-browser", "s2").is_none());
        assert_eq!(store.finish_login(&id, "s2").unwrap().return_to, "/");
        assert!(store.finish_login(&id, "s2").is_none(), "used once");
        let mut old = login("s3");
        old.started_at = Utc::now() - LOGIN_TIMEOUT - Duration::seconds(1);
        let id = store.start_login(old);
        assert!(store.finish_login(&id, "s3").is_none(), "too late");
    }

    #[test]
    fn tokens_never_show_in_debug() {
        let store = SessionStore::in_memory();
        let id = store.create(tokens(Some(300), true), user());
        let text = format!("{:?}", store.get(&id).unwrap());
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains("[redacted]"));
    }

    #[test]
    fn cookies_are_http_only_lax_and_secure_behind_https() {
        let plain = CookiePolicy { secure: false };
        let cookie = plain.session("abc");
        assert!(cookie.starts_with("asg_session=abc; Path=/; HttpOnly; SameSite=Lax"));
        assert!(!cookie.contains("Secure"));
        assert!(
            CookiePolicy { secure: true }
                .session("abc")
                .ends_with("; Secure")
        );
        assert!(plain.clear_session().contains("Max-Age=0"));
        assert!(plain.login("x").contains("Path=/auth"));
    }

    #[test]
    fn cookie_values_are_read_from_any_cookie_header() {
        let mut headers = HeaderMap::new();
        headers.append("cookie", "a=1; asg_session=xyz ; b=2".parse().unwrap());
        headers.append("cookie", "asg_login=q".parse().unwrap());
        assert_eq!(
            cookie_value(&headers, SESSION_COOKIE).as_deref(),
            Some("xyz")
        );
        assert_eq!(cookie_value(&headers, LOGIN_COOKIE).as_deref(), Some("q"));
        assert_eq!(cookie_value(&headers, "asg"), None);
        headers.insert("cookie", "asg_session=".parse().unwrap());
        assert_eq!(cookie_value(&headers, SESSION_COOKIE), None);
    }

    #[test]
    fn persisted_sessions_survive_a_restart_in_an_owner_only_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::persisted(dir.path()).unwrap();
        let id = store.create(tokens(Some(300), true), user());
        let file = dir.path().join("web-sessions.json");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(&id), "the cookie value is not stored");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let again = SessionStore::persisted(dir.path()).unwrap();
        assert_eq!(again.get(&id).unwrap().user, user());
        again.remove(&id);
        assert!(SessionStore::persisted(dir.path()).unwrap().is_empty());
    }
}
