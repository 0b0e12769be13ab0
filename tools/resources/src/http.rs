//! `mcp-resources --config FILE`: the same tools over MCP streamable HTTP
//! (rmcp's `StreamableHttpService`, one session per client) at `/mcp`,
//! with `GET /health`, as the reference implementation serves them.
//!
//! The configuration file has the reference's shape: `host` (default
//! `0.0.0.0`), `port` (default 8090) and `db_path` (default
//! `./data/resources.db`), plus `allowed_hosts` (names answered besides
//! loopback ones, on any address) and `auth_token_env` (the variable
//! holding the service token `/mcp` requires); unknown keys are errors
//! naming the field. The guard itself is `asg_tool_http::Access`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use serde::Deserialize;

use tokio_util::sync::CancellationToken;

use asg_tool_http::Access;

use super::{FaultInjection, ResourceDb, ResourcesServer};

/// `config/mcp-resources.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Listen address.
    #[serde(default = "default_host")]
    pub host: String,
    /// Listen port (0 picks a free one).
    #[serde(default = "default_port")]
    pub port: u16,
    /// The SQLite database file.
    #[serde(default = "default_db_path")]
    pub db_path: PathBuf,
    /// Host names answered besides loopback ones (compose service
    /// names); other `Host` headers get 421 on any listen address.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// The environment variable holding the service token `/mcp`
    /// requires as `Authorization: Bearer` (none: no token).
    #[serde(default)]
    pub auth_token_env: Option<String>,
}

fn default_host() -> String {
    "0.0.0.0".into()
}
fn default_port() -> u16 {
    8090
}
fn default_db_path() -> PathBuf {
    PathBuf::from("./data/resources.db")
}

impl HttpConfig {
    /// Reads and parses a configuration file; errors name the file and the
    /// field.
    pub fn load(path: &Path) -> Result<HttpConfig, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the configuration: {e}", path.display()))?;
        HttpConfig::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses configuration text (an empty file gets every default).
    pub fn parse(text: &str) -> Result<HttpConfig, String> {
        let config: HttpConfig = asg_tool_http::config::parse(text)?;
        asg_http::host_check::validate_allowed_hosts(&config.allowed_hosts)
            .map_err(|(field, problem)| format!("{field}: {problem}"))?;
        Ok(config)
    }

    /// Who may call `/mcp` (the service token read from the environment
    /// now; an error names the variable).
    pub fn access(&self) -> Result<Access, String> {
        Access::new(
            "mcp-resources",
            &self.host,
            &self.allowed_hosts,
            self.auth_token_env.as_deref(),
        )
    }
}

/// Binds `config.host:config.port`, prints
/// `mcp-resources listening on http://ADDR:PORT/mcp` on stdout, and serves
/// `/mcp` to callers `access` lets through until `shutdown` completes.
pub async fn serve_http(
    config: HttpConfig,
    access: Access,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let db = {
        let path = config.db_path.clone();
        tokio::task::spawn_blocking(move || ResourceDb::open(&path))
            .await
            .context("database open task failed")??
    };
    let db = Arc::new(db);
    let faults = FaultInjection::from_env();
    if faults.crash_on.is_some() || faults.delay.is_some() {
        tracing::warn!(?faults, "test fault injection is enabled");
    }
    let (listener, bound) = asg_tool_http::bind(&config.host, config.port).await?;
    let cancel = CancellationToken::new();
    let token = if access.needs_token() {
        ", service token required"
    } else {
        ""
    };
    let router = router(db, faults, access, cancel.clone());
    println!(
        "mcp-resources listening on http://{}/mcp (db {}{token})",
        asg_http::process::shown(bound),
        config.db_path.display()
    );
    asg_tool_http::serve(listener, router, shutdown, cancel).await?;
    tracing::info!("mcp-resources stopped");
    Ok(())
}

/// `/mcp` (streamable HTTP, one [`ResourcesServer`] per session over the
/// shared database) and `GET /health` (`asg_tool_http::router`).
pub fn router(
    db: Arc<ResourceDb>,
    faults: FaultInjection,
    access: Access,
    cancel: CancellationToken,
) -> Router {
    asg_tool_http::router(
        move || ResourcesServer::new(db.clone(), faults.clone()),
        access,
        cancel,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_the_reference_file() {
        let config = HttpConfig::parse("").unwrap();
        assert_eq!(config.host, "0.0.0.0");
        assert_eq!(config.port, 8090);
        assert_eq!(config.db_path, PathBuf::from("./data/resources.db"));
        let reference = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/reference/mcp-resources.yaml");
        let config = HttpConfig::load(&reference).unwrap();
        assert_eq!(
            config,
            HttpConfig {
                host: "0.0.0.0".into(),
                port: 8090,
                db_path: PathBuf::from("./data/resources.db"),
                allowed_hosts: Vec::new(),
                auth_token_env: None,
            }
        );
    }

    #[test]
    fn allowed_hosts_and_the_token_variable() {
        let config = HttpConfig::parse(
            "allowed_hosts: [mcp-resources]
auth_token_env: RES_TOKEN
",
        )
        .unwrap();
        assert_eq!(config.allowed_hosts, ["mcp-resources"]);
        assert_eq!(config.auth_token_env.as_deref(), Some("RES_TOKEN"));
        let err = HttpConfig::parse("allowed_hosts: [\"http://x/\"]\n").unwrap_err();
        assert!(err.starts_with("allowed_hosts[0]: "), "{err}");
        let err = config.access().unwrap_err();
        assert!(
            err.contains("RES_TOKEN") && err.contains("auth_token_env"),
            "{err}"
        );
    }

    /// Every `mcp-resources*.yaml` under `dir` (recursively).
    fn config_files(dir: &Path) -> Vec<PathBuf> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                found.extend(config_files(&path));
            } else if name.starts_with("mcp-resources") && name.ends_with(".yaml") {
                found.push(path);
            }
        }
        found
    }

    #[test]
    fn every_shipped_and_test_config_is_valid() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut count = 0;
        for dir in ["config", "testdata"] {
            for path in config_files(&root.join(dir)) {
                HttpConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
                count += 1;
            }
        }
        assert!(count >= 2, "only {count} mcp-resources configs found");
    }

    /// The compose service answers its name and requires the token agent
    /// B sends (the agent's config tests check that side).
    #[test]
    fn the_compose_service_answers_its_name_and_needs_the_token() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/compose/mcp-resources.yaml");
        let config = HttpConfig::load(&path).unwrap();
        assert_eq!(config.allowed_hosts, ["mcp-resources"]);
        assert_eq!(
            config.auth_token_env.as_deref(),
            Some("MCP_RESOURCES_TOKEN")
        );
    }

    #[test]
    fn an_unknown_key_is_named() {
        let err = HttpConfig::parse("port: 1\ndb_pth: x\n").unwrap_err();
        assert!(err.contains("db_pth"), "{err}");
        let err = HttpConfig::parse("port: eighty\n").unwrap_err();
        assert!(err.starts_with("port: "), "{err}");
    }
}
