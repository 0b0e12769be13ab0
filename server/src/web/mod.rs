//! The `web` binary's server: serves the built chat bundle and proxies
//! `/api/*` to the agent's REST API on the same origin, so the browser
//! needs no CORS set-up. Streaming answers (server-sent events) pass
//! through as they arrive; `Authorization` and `X-Session-ID` are
//! forwarded.

mod proxy;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::response::Html;
use axum::routing::{any, get};
use serde::Deserialize;
use tower_http::services::{ServeDir, ServeFile};

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
        Ok(config)
    }
}

/// The web server's router.
pub fn router(config: &WebConfig) -> Router {
    let proxy = Arc::new(proxy::Proxy::new(&config.agent_url));
    let index = config.dist_dir.join("index.html");
    let api = Router::new()
        .route("/api/{*path}", any(proxy::forward))
        .route("/api", any(proxy::forward))
        .with_state(proxy);
    let router = Router::new()
        .route(
            "/web/health",
            get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        )
        .merge(api);
    if index.is_file() {
        router.fallback_service(ServeDir::new(&config.dist_dir).fallback(ServeFile::new(index)))
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
