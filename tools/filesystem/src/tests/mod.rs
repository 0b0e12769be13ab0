//! Unit tests of `mcp-filesystem`: the sandbox against every escape
//! (`security.rs`), the tools' behaviour (`ops.rs`, `search.rs`), and the
//! MCP surface through an in-process rmcp client (`server.rs`).

mod ops;
mod search;
mod security;
mod server;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::config::FsConfig;
use super::sandbox::{FsError, RelPath, Root, Sandbox};

/// A temp dir holding three roots (`main` and `other` allow every tool,
/// `ro` only the read-only ones) and a folder `outside` with a secret.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub sandbox: Arc<Sandbox>,
}

pub const SECRET: &str = "TOP SECRET outside the root\n";

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with_config("")
    }

    /// With extra top-level YAML (e.g. `max_full_read_size: 10`).
    pub fn with_config(extra: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["main", "other", "ro", "outside"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("outside/secret.txt"), SECRET).unwrap();
        let yaml = format!(
            "{extra}\nroots:\n  - {{name: main, path: {p}/main, allowed_tools: [\"*\"]}}\n  \
             - {{name: other, path: {p}/other, allowed_tools: [\"*\"]}}\n  \
             - {{name: ro, path: {p}/ro, allowed_tools: [list_roots, list_folder, read_file, grep, glob]}}\n",
            p = dir.path().display()
        );
        let config = FsConfig::parse(&yaml).unwrap();
        let sandbox = Arc::new(Sandbox::open(&config).unwrap());
        Fixture { dir, sandbox }
    }

    /// A host path under the temp dir.
    pub fn host(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Writes a file on the host under the temp dir (parents created).
    pub fn put(&self, relative: &str, content: &str) {
        let path = self.host(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// A symlink on the host: `link` (under the temp dir) -> `target`.
    pub fn link(&self, target: impl AsRef<Path>, link: &str) {
        std::os::unix::fs::symlink(target, self.host(link)).unwrap();
    }

    pub fn root(&self, name: &str) -> &Root {
        self.sandbox.root(name, "list_roots").unwrap()
    }

    /// Everything under `outside/`, to check nothing there changed.
    pub fn outside(&self) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        for entry in walk(&self.host("outside")) {
            let content = std::fs::read_to_string(&entry).unwrap_or_default();
            found.push((entry, content));
        }
        found.sort();
        found
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

/// A checked path (panics on a refused one).
pub fn p(raw: &str) -> RelPath {
    RelPath::parse("test", raw).unwrap()
}

/// The error's message, panicking on success.
pub fn err(result: Result<Value, FsError>) -> FsError {
    match result {
        Ok(value) => panic!("expected an error, got {value}"),
        Err(e) => e,
    }
}

/// Asserts that `result` is a refusal because the path escapes the root.
#[track_caller]
pub fn assert_escape(result: Result<Value, FsError>) {
    match err(result) {
        FsError::Escape { .. } => {}
        other => panic!("expected an escape refusal, got {other:?} ({other})"),
    }
}
