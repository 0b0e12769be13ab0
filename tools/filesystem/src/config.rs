//! `config/mcp-filesystem.yaml`: the reference's shape — `host` (default
//! `0.0.0.0`), `port` (default 8091), `max_full_read_size` (bytes, default
//! 1 MiB) and `roots: [{name, path, allowed_tools}]`; over HTTP also
//! `allowed_hosts` and `auth_token_env` (see `asg_tool_http::Access`).
//!
//! Unknown keys are errors naming the field. After parsing, [`FsConfig::parse`]
//! checks what needs no filesystem: at least one root, names unique and not
//! empty, every entry of `allowed_tools` a known tool name (or `"*"`).
//! Whether each `path` is an existing directory is checked when the roots
//! are opened ([`super::sandbox::Sandbox::open`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The 15 tools, in the order they are listed to clients.
pub const TOOL_NAMES: [&str; 15] = [
    "list_roots",
    "list_folder",
    "read_file",
    "stat_file",
    "hash_file",
    "permissions_file",
    "grep",
    "glob",
    "write_file",
    "remove_file",
    "patch_file",
    "create_folder",
    "remove_folder",
    "copy",
    "move",
];

/// The whole configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsConfig {
    /// Listen address.
    #[serde(default = "default_host")]
    pub host: String,
    /// Listen port (0 picks a free one).
    #[serde(default = "default_port")]
    pub port: u16,
    /// Largest file `read_file` returns whole; larger ones must be read
    /// with `offset_*` / `limit_*` (which are capped at this size too).
    #[serde(default = "default_max_full_read_size")]
    pub max_full_read_size: u64,
    /// The directories the tools may touch.
    #[serde(default)]
    pub roots: Vec<RootConfig>,
    /// Host names answered over HTTP besides loopback ones (compose
    /// service names); other `Host` headers get 421 on any listen address.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// The environment variable holding the service token `/mcp`
    /// requires as `Authorization: Bearer` (none: no token; HTTP only).
    #[serde(default)]
    pub auth_token_env: Option<String>,
}

/// One entry of `roots:`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    /// The name tools use (`root: docs`).
    pub name: String,
    /// The directory (relative paths are relative to the working directory).
    pub path: PathBuf,
    /// `["*"]` or tool names; required, so that no root is writable by
    /// accident of omission.
    #[serde(default)]
    pub allowed_tools: Vec<String>,
}

fn default_host() -> String {
    "0.0.0.0".into()
}
fn default_port() -> u16 {
    8091
}
fn default_max_full_read_size() -> u64 {
    1024 * 1024
}

impl FsConfig {
    /// Reads, parses and checks a configuration file; errors name the file
    /// and the field.
    pub fn load(path: &Path) -> Result<FsConfig, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the configuration: {e}", path.display()))?;
        FsConfig::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses and checks configuration text.
    pub fn parse(text: &str) -> Result<FsConfig, String> {
        let config: FsConfig = asg_tool_http::config::parse(text)?;
        config.validate()?;
        Ok(config)
    }

    /// Who may call `/mcp` when serving HTTP on `listen_host` (the
    /// service token read from the environment now; an error names the
    /// variable).
    pub fn access(&self, listen_host: &str) -> Result<asg_tool_http::Access, String> {
        asg_tool_http::Access::new(
            "mcp-filesystem",
            listen_host,
            &self.allowed_hosts,
            self.auth_token_env.as_deref(),
        )
    }

    fn validate(&self) -> Result<(), String> {
        if self.roots.is_empty() {
            return Err("roots: no roots are configured; add at least one \
                        `{name, path, allowed_tools}` entry"
                .into());
        }
        if self.max_full_read_size == 0 {
            return Err("max_full_read_size: must be at least 1 byte".into());
        }
        asg_http::host_check::validate_allowed_hosts(&self.allowed_hosts)
            .map_err(|(field, problem)| format!("{field}: {problem}"))?;
        let mut names = BTreeSet::new();
        for (i, root) in self.roots.iter().enumerate() {
            root.validate(i)?;
            if !names.insert(root.name.as_str()) {
                return Err(format!(
                    "roots[{i}].name: the root name {:?} is used twice",
                    root.name
                ));
            }
        }
        Ok(())
    }
}

impl RootConfig {
    fn validate(&self, i: usize) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err(format!("roots[{i}].name: must not be empty"));
        }
        if self.path.as_os_str().is_empty() {
            return Err(format!(
                "roots[{i}].path ({}): must not be empty",
                self.name
            ));
        }
        if self.allowed_tools.is_empty() {
            return Err(format!(
                "roots[{i}].allowed_tools ({}): list the tools allowed in this root, \
                 or [\"*\"] for all of them",
                self.name
            ));
        }
        for tool in &self.allowed_tools {
            if tool != "*" && !TOOL_NAMES.contains(&tool.as_str()) {
                return Err(format!(
                    "roots[{i}].allowed_tools ({}): unknown tool {tool:?}; known tools: {}",
                    self.name,
                    TOOL_NAMES.join(", ")
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE_ROOT: &str = "roots:\n  - {name: docs, path: /tmp, allowed_tools: [\"*\"]}\n";

    #[test]
    fn defaults_apply() {
        let config = FsConfig::parse(ONE_ROOT).unwrap();
        assert_eq!(config.host, "0.0.0.0");
        assert_eq!(config.port, 8091);
        assert_eq!(config.max_full_read_size, 1024 * 1024);
        assert_eq!(config.roots[0].allowed_tools, ["*"]);
    }

    #[test]
    fn the_reference_file_parses() {
        let reference = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/reference/mcp-filesystem.yaml");
        let config = FsConfig::load(&reference).unwrap();
        assert_eq!(config.port, 8091);
        assert!(config.roots.len() >= 2, "{config:?}");
        let shipped =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/mcp-filesystem.yaml");
        FsConfig::load(&shipped).unwrap();
    }

    /// The compose service answers its name and requires the token agent
    /// C sends (the agent's config tests check that side).
    #[test]
    fn the_compose_service_answers_its_name_and_needs_the_token() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/compose/mcp-filesystem.yaml");
        let config = FsConfig::load(&path).unwrap();
        assert_eq!(config.allowed_hosts, ["mcp-filesystem"]);
        assert_eq!(
            config.auth_token_env.as_deref(),
            Some("MCP_FILESYSTEM_TOKEN")
        );
    }

    #[test]
    fn bad_files_are_refused_naming_the_problem() {
        let cases = [
            ("", "no roots"),
            ("roots: []", "no roots"),
            (&format!("{ONE_ROOT}prot: 1\n"), "prot"),
            (
                "roots:\n  - {name: a, path: /tmp, allowed_tools: [\"*\"], mode: x}\n",
                "mode",
            ),
            ("roots:\n  - {name: a, path: /tmp}\n", "allowed_tools"),
            (
                "roots:\n  - {name: a, path: /tmp, allowed_tools: [read_fle]}\n",
                "read_fle",
            ),
            (
                "roots:\n  - {name: '', path: /tmp, allowed_tools: [grep]}\n",
                "name",
            ),
            ("roots:\n  - {path: /tmp, allowed_tools: [grep]}\n", "name"),
            (
                "roots:\n  - {name: a, path: /tmp, allowed_tools: [grep]}\n  - {name: a, path: /, allowed_tools: [grep]}\n",
                "used twice",
            ),
            (
                &format!("{ONE_ROOT}max_full_read_size: 0\n"),
                "max_full_read_size",
            ),
            (&format!("{ONE_ROOT}port: eighty\n"), "port: "),
        ];
        for (text, needle) in cases {
            let err = FsConfig::parse(text).unwrap_err();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }
}
