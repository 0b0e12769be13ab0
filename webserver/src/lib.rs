//! The `web` binary's server: serves the built chat bundle and proxies
//! `/api/*` to the agent's REST API on the same origin, so the browser
//! needs no CORS set-up. Streaming answers (server-sent events) pass
//! through as they arrive; `Authorization` and `X-Session-ID` are
//! forwarded. With `oidc:` (or `oauth2:`) in `web.yaml`, the browser
//! signs in through the provider (`auth.rs`, `oidc.rs`); the tokens stay
//! here, in a session the browser knows only by an HttpOnly cookie
//! (`session.rs`), and the proxy adds `Authorization: Bearer` to `/api`
//! calls. State-changing `/api` calls from other sites are refused
//! (`security.rs`: their `Origin` must be one of this server's configured
//! origins). Every request with a `Host` that is neither a loopback name
//! nor in `allowed_hosts` (or the host of `public_url` / the sign-in
//! redirect URL) gets 421 first (`asg_http::host_check`, against DNS
//! rebinding), on any listen address.

pub mod auth;
pub mod metrics;
pub mod oidc;
mod proxy;
pub mod security;
pub mod session;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use asg_http::host_check::{HostPolicy, refuse_foreign_hosts};
use axum::http::{HeaderValue, header};
use axum::response::Html;
use axum::routing::{any, get, post};
use axum::{Router, middleware};
use serde::Deserialize;

use self::oidc::{LoginSettings, ProviderKind};
use self::session::SessionStore;
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeader;

/// `web.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// REST base URL of the agent.
    #[serde(default = "default_agent_url")]
    pub agent_url: String,
    /// Listen address.
    #[serde(default = "default_host")]
    pub host: String,
    /// Listen port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// The trunk-built bundle (`index.html`, wasm, js); relative paths are
    /// relative to the working directory.
    #[serde(default = "default_dist")]
    pub dist_dir: PathBuf,
    /// Browser sign-in with OpenID Connect (authorization code + PKCE).
    #[serde(default)]
    pub oidc: Option<OidcLoginConfig>,
    /// Browser sign-in with plain OAuth2 endpoints (the reference
    /// implementation's block); the user is who the agent's `/me` says.
    #[serde(default)]
    pub oauth2: Option<OAuth2LoginConfig>,
    /// A second listen address (`host:port`) serving only `GET /metrics`,
    /// without sign-in, for a scraper on a private network.
    #[serde(default)]
    pub metrics_listen: Option<String>,
    /// Where sessions are kept across restarts (`web-sessions.json`,
    /// owner-only); in memory only when absent.
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    /// Host names besides loopback ones (`localhost`, 127.0.0.1, `[::1]`)
    /// this server answers, on any listen address (DNS rebinding); an
    /// optional port is ignored. Other hosts get 421.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// The URL browsers open when it is neither a loopback nor an
    /// allowed host name at the listen port (a reverse proxy, a port
    /// mapping): its origin may send state-changing requests and its host
    /// is answered.
    #[serde(default)]
    pub public_url: Option<String>,
}

/// `oidc:` in `web.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcLoginConfig {
    /// The issuer (discovery at `{issuer}/.well-known/openid-configuration`).
    pub issuer: String,
    /// This web server's client id at the provider.
    pub client_id: String,
    /// The environment variable holding the client secret (none: a public
    /// client, PKCE only).
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// This server's `/auth/callback` as the provider knows it.
    pub redirect_url: String,
    /// Scopes (`openid` is always asked for).
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// Where the provider sends the browser after sign-out (must be
    /// registered there); without it the provider shows its own page.
    #[serde(default)]
    pub post_logout_redirect_url: Option<String>,
}

/// `oauth2:` in `web.yaml` (the reference implementation's keys).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth2LoginConfig {
    /// Client id.
    pub client_id: String,
    /// The client secret written in the file (prefer `client_secret_env`).
    #[serde(default)]
    pub client_secret: Option<String>,
    /// The environment variable holding the client secret.
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// Authorization endpoint.
    pub auth_url: String,
    /// Token endpoint.
    pub token_url: String,
    /// Revocation endpoint (RFC 7009).
    #[serde(default)]
    pub revoke_url: Option<String>,
    /// This server's `/auth/callback`.
    pub redirect_url: String,
    /// Scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for OAuth2LoginConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth2LoginConfig")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("client_secret_env", &self.client_secret_env)
            .field("auth_url", &self.auth_url)
            .field("token_url", &self.token_url)
            .field("revoke_url", &self.revoke_url)
            .field("redirect_url", &self.redirect_url)
            .field("scopes", &self.scopes)
            .finish()
    }
}

fn default_scopes() -> Vec<String> {
    ["openid", "profile", "email", "offline_access"]
        .map(String::from)
        .to_vec()
}

fn secret_from_env(field: &str, var: &Option<String>) -> Result<Option<String>, String> {
    let Some(var) = var else { return Ok(None) };
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Ok(Some(value)),
        _ => Err(format!(
            "{field}: the environment variable {var} is not set (it holds the client secret)"
        )),
    }
}

fn check_url(field: &str, url: &str) -> Result<(), String> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(format!("{field}: must be an http(s) URL, got {url:?}"))
    }
}

fn default_agent_url() -> String {
    "http://127.0.0.1:8080".to_string()
}
fn default_host() -> String {
    "127.0.0.1".to_string()
}
fn default_port() -> u16 {
    3000
}
fn default_dist() -> PathBuf {
    PathBuf::from("web/dist")
}

impl WebConfig {
    /// Reads and checks `web.yaml`; errors name the file and the field.
    pub fn load(path: &Path) -> Result<WebConfig, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the configuration: {e}", path.display()))?;
        let deserializer = serde_yaml::Deserializer::from_str(&text);
        let config: WebConfig = serde_path_to_error::deserialize(deserializer)
            .map_err(|e| format!("{}: {}: {}", path.display(), e.path(), e.inner()))?;
        if !(config.agent_url.starts_with("http://") || config.agent_url.starts_with("https://")) {
            return Err(format!(
                "{}: agent_url: must be an http(s) URL, got {:?}",
                path.display(),
                config.agent_url
            ));
        }
        if let Some(address) = &config.metrics_listen {
            asg_http::metrics::check_listen_address(address)
                .map_err(|problem| format!("{}: metrics_listen: {problem}", path.display()))?;
        }
        config
            .check_public_names()
            .and_then(|()| config.login_settings().map(|_| ()))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(config)
    }

    /// `allowed_hosts` are host names, `public_url` an http(s) URL.
    fn check_public_names(&self) -> Result<(), String> {
        asg_http::host_check::validate_allowed_hosts(&self.allowed_hosts)
            .map_err(|(field, problem)| format!("{field}: {problem}"))?;
        match &self.public_url {
            Some(url) => check_url("public_url", url),
            None => Ok(()),
        }
    }

    /// The URLs browsers reach this server by, as configured: `public_url`
    /// and the sign-in redirect URL.
    fn public_urls(&self) -> Vec<&str> {
        let redirect = match (&self.oidc, &self.oauth2) {
            (Some(oidc), _) => Some(oidc.redirect_url.as_str()),
            (None, Some(oauth2)) => Some(oauth2.redirect_url.as_str()),
            (None, None) => None,
        };
        self.public_url
            .as_deref()
            .into_iter()
            .chain(redirect)
            .collect()
    }

    /// The `Host` names answered: loopback ones, `allowed_hosts` and the
    /// hosts of the configured public URLs, on every listen address.
    pub fn host_policy(&self) -> HostPolicy {
        HostPolicy::always("web server", &self.host, &self.allowed_hosts)
            .with_names(self.public_urls().into_iter().filter_map(security::host_of))
    }

    /// The origins that may send state-changing requests to this server
    /// listening on `port` (never the request's own `Host`).
    pub fn trusted_origins(&self, port: u16) -> Vec<String> {
        let names = HostPolicy::always("web server", &self.host, &self.allowed_hosts);
        security::trusted_origins(port, names.allowed_names(), &self.public_urls())
    }

    /// The sign-in settings, when `oidc:` or `oauth2:` is set (secrets read
    /// from the environment now).
    pub fn login_settings(&self) -> Result<Option<LoginSettings>, String> {
        match (&self.oidc, &self.oauth2) {
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err("oidc and oauth2: set one of them, not both".into()),
            (Some(o), None) => {
                check_url("oidc.issuer", &o.issuer)?;
                check_url("oidc.redirect_url", &o.redirect_url)?;
                if let Some(url) = &o.post_logout_redirect_url {
                    check_url("oidc.post_logout_redirect_url", url)?;
                }
                if o.client_id.trim().is_empty() {
                    return Err("oidc.client_id: must not be empty".into());
                }
                Ok(Some(LoginSettings {
                    provider: ProviderKind::Oidc {
                        issuer: o.issuer.trim_end_matches('/').to_string(),
                    },
                    client_id: o.client_id.clone(),
                    client_secret: secret_from_env("oidc.client_secret_env", &o.client_secret_env)?,
                    redirect_url: o.redirect_url.clone(),
                    scopes: o.scopes.clone(),
                    post_logout_redirect_url: o.post_logout_redirect_url.clone(),
                }))
            }
            (None, Some(o)) => {
                check_url("oauth2.auth_url", &o.auth_url)?;
                check_url("oauth2.token_url", &o.token_url)?;
                check_url("oauth2.redirect_url", &o.redirect_url)?;
                if let Some(url) = &o.revoke_url {
                    check_url("oauth2.revoke_url", url)?;
                }
                let client_secret =
                    match secret_from_env("oauth2.client_secret_env", &o.client_secret_env)? {
                        Some(secret) => Some(secret),
                        None => o.client_secret.clone().filter(|s| !s.is_empty()),
                    };
                Ok(Some(LoginSettings {
                    provider: ProviderKind::OAuth2 {
                        auth_url: o.auth_url.clone(),
                        token_url: o.token_url.clone(),
                        revoke_url: o.revoke_url.clone(),
                    },
                    client_id: o.client_id.clone(),
                    client_secret,
                    redirect_url: o.redirect_url.clone(),
                    scopes: o.scopes.clone(),
                    post_logout_redirect_url: None,
                }))
            }
        }
    }
}

/// The web server's router for a server listening on `port` (sessions in
/// memory, or under `data_dir`).
pub fn router(config: &WebConfig, port: u16) -> Router {
    let sessions = match &config.data_dir {
        Some(dir) => SessionStore::persisted(dir).unwrap_or_else(|e| {
            tracing::error!("web sessions kept in memory only: {e}");
            SessionStore::in_memory()
        }),
        None => SessionStore::in_memory(),
    };
    router_with(config, sessions, port)
}

/// The router with a given session store. A foreign `Host` gets 421
/// before any route (`host_check`).
pub fn router_with(config: &WebConfig, sessions: SessionStore, port: u16) -> Router {
    let login = match config.login_settings() {
        Ok(login) => login,
        Err(e) => {
            tracing::error!("login disabled: {e}");
            None
        }
    };
    let origins: Arc<[String]> = config.trusted_origins(port).into();
    let auth = login.map(|settings| {
        Arc::new(auth::WebAuth::new(
            settings,
            sessions,
            &config.agent_url,
            origins.clone(),
        ))
    });
    let proxy = Arc::new(proxy::Proxy::new(&config.agent_url, auth.clone(), origins));
    let api = Router::new()
        .route("/api/{*path}", any(proxy::forward))
        .route("/api", any(proxy::forward))
        .with_state(proxy);
    let metrics_routes = metrics::routes(auth.clone());
    let auth_routes = match auth {
        Some(auth) => Router::new()
            .route("/auth/login", get(auth::login))
            .route("/auth/callback", get(auth::callback))
            .route("/auth/logout", post(auth::logout))
            .route("/auth/me", get(auth::me))
            .with_state(auth),
        None => Router::new()
            .route("/auth/me", get(auth::me_without_login))
            .route("/auth/{*path}", any(auth::not_configured)),
    };
    let router = Router::new()
        .route(
            "/web/health",
            get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        )
        .merge(api)
        .merge(auth_routes)
        .merge(metrics_routes);
    let router = with_static_files(router, config).layer(middleware::from_fn_with_state(
        metrics::metrics().http.clone(),
        asg_http::metrics::count_requests,
    ));
    router.layer(middleware::from_fn_with_state(
        Arc::new(config.host_policy()),
        refuse_foreign_hosts,
    ))
}

/// The bundle, with the single-page fallback, or the page saying how to
/// build it. A file is sent compressed when `scripts/build-web.sh` wrote
/// its `.br` or `.gz` beside it and the browser accepts that encoding,
/// else as it is; `Vary: accept-encoding` tells caches in between that
/// the answer depends on it.
fn with_static_files(router: Router, config: &WebConfig) -> Router {
    let index = config.dist_dir.join("index.html");
    if index.is_file() {
        let index = ServeFile::new(index)
            .precompressed_br()
            .precompressed_gzip();
        let files = ServeDir::new(&config.dist_dir)
            .precompressed_br()
            .precompressed_gzip()
            .fallback(index);
        router.fallback_service(SetResponseHeader::appending(
            files,
            header::VARY,
            HeaderValue::from_static("accept-encoding"),
        ))
    } else {
        tracing::error!(dist = %config.dist_dir.display(), "the web bundle is not built; serving instructions instead");
        let dist = config.dist_dir.display().to_string();
        router.fallback(move || {
            let dist = dist.clone();
            async move {
                (
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    Html(missing_bundle_page(&dist)),
                )
            }
        })
    }
}

fn missing_bundle_page(dist: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Agent Stop and Go</title></head>\
         <body style=\"font:16px system-ui;margin:3em\"><h1>The chat bundle is not built</h1>\
         <p>No <code>index.html</code> in <code>{dist}</code>. Build it with \
         <code>./scripts/build-web.sh</code> (or start everything with <code>./scripts/demo.sh</code>), \
         then reload this page.</p><p>The agent API is still reachable under <a href=\"/api/docs\">/api/docs</a>.</p></body></html>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<WebConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("web.yaml");
        std::fs::write(&path, text).unwrap();
        WebConfig::load(&path)
    }

    #[test]
    fn allowed_hosts_and_public_url_are_checked_and_unknown_keys_refused() {
        let config =
            load("allowed_hosts: [web, Chat.Lan]\npublic_url: https://chat.example.com/\n")
                .unwrap();
        assert_eq!(config.allowed_hosts, ["web", "Chat.Lan"]);
        let err = load("allowed_hosts: [\"http://web/\"]\n").unwrap_err();
        assert!(err.contains("allowed_hosts[0]"), "{err}");
        let err = load("public_url: chat.example.com\n").unwrap_err();
        assert!(err.contains("public_url: must be an http(s) URL"), "{err}");
        let err = load("allowed_host: [web]\n").unwrap_err();
        assert!(err.contains("allowed_host"), "{err}");
        load("{}").unwrap();
    }

    /// The compose service answers its name (`web`).
    #[test]
    fn the_compose_service_answers_its_name() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/compose/web.yaml");
        let config = WebConfig::load(&path).unwrap();
        assert_eq!(config.allowed_hosts, ["web"]);
    }

    #[test]
    fn hosts_and_origins_come_from_the_configuration() {
        let config = load(
            "host: 0.0.0.0\nallowed_hosts: [web]\npublic_url: https://chat.example.com\n\
             oidc:\n  issuer: https://idp.example\n  client_id: c\n  \
             redirect_url: https://sso.example.com/auth/callback\n",
        )
        .unwrap();
        let policy = config.host_policy();
        for host in [
            "web:8080",
            "chat.example.com",
            "sso.example.com",
            "localhost:8080",
        ] {
            assert!(policy.accepts(host), "{host}");
        }
        assert!(!policy.accepts("evil.example:8080"));
        assert_eq!(
            config.trusted_origins(8080),
            [
                "http://localhost:8080",
                "http://127.0.0.1:8080",
                "http://[::1]:8080",
                "http://web:8080",
                "https://chat.example.com",
                "https://sso.example.com",
            ]
        );
        let plain = load("host: 0.0.0.0\n").unwrap();
        assert!(!plain.host_policy().accepts("evil.example"));
    }
}
