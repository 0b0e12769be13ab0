//! The sandbox: every root is a capability directory (`cap_std::fs::Dir`)
//! opened once at startup, and every path a tool receives becomes a
//! [`RelPath`] that is only ever used *through* that `Dir`.
//!
//! Two layers refuse escapes:
//! - [`RelPath::parse`] refuses absolute paths, `..` components and NUL
//!   bytes with a clear message before anything touches the disk;
//! - `cap-std` resolves every path beneath the root's directory handle
//!   (Linux `openat2` with `RESOLVE_BENEATH`, or its own checked
//!   component-by-component resolution), so a symlink leading outside —
//!   one present at startup, created later, or swapped in between a check
//!   and a use — is refused by the operation itself. There is no
//!   check-then-use on host paths anywhere in this module tree.
//!
//! Symlinks that stay inside the root are followed by the tools that read
//! or write a file's contents (read, hash, write, patch, copy source);
//! tools that act on a name (`remove_file`, `move`, `stat_file`,
//! `list_folder` entries) act on the link itself; searches (`grep`,
//! `glob`) never follow links.

use std::collections::BTreeSet;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::config::{FsConfig, TOOL_NAMES};

/// A tool failure, shown to the caller as an error tool result.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// No root of that name.
    #[error("unknown root {root:?}; the roots are: {known}")]
    UnknownRoot { root: String, known: String },
    /// The tool is not in the root's `allowed_tools`.
    #[error("the tool {tool} is not allowed in root {root:?} (allowed there: {allowed})")]
    NotAllowed {
        tool: String,
        root: String,
        allowed: String,
    },
    /// A path refused before any access.
    #[error("root {root:?}: path {path:?} is refused: {reason}")]
    BadPath {
        root: String,
        path: String,
        reason: &'static str,
    },
    /// The OS-level sandbox refused: the path leads outside the root.
    #[error(
        "root {root:?}: path {path:?} is refused: it leads outside the root (through a symlink)"
    )]
    Escape { root: String, path: String },
    /// Nothing at that path.
    #[error("root {root:?}: {path:?} does not exist")]
    NotFound { root: String, path: String },
    /// Any other I/O failure.
    #[error("root {root:?}: {path:?}: cannot {action}: {source}")]
    Io {
        root: String,
        path: String,
        action: &'static str,
        source: io::Error,
    },
    /// A request that cannot be carried out (wrong type, too large, ...).
    #[error("{0}")]
    Invalid(String),
}

/// True for cap-std's "a path led outside of the filesystem".
fn is_escape(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::PermissionDenied
        && error.to_string().contains("outside of the filesystem")
}

/// A path relative to a root, without `..`, absolute parts or `.`; empty
/// for the root itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelPath(PathBuf);

impl RelPath {
    /// The root itself.
    pub fn root() -> RelPath {
        RelPath(PathBuf::new())
    }

    /// Checks a path given by a caller (`""` and `"."` are the root).
    pub fn parse(root: &str, raw: &str) -> Result<RelPath, FsError> {
        let refuse = |reason| FsError::BadPath {
            root: root.to_string(),
            path: raw.to_string(),
            reason,
        };
        if raw.contains('\0') {
            return Err(refuse("it contains a NUL byte"));
        }
        let mut clean = PathBuf::new();
        for component in Path::new(raw).components() {
            match component {
                Component::Normal(part) => clean.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(refuse("`..` components are not allowed"));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refuse(
                        "absolute paths are not allowed (give a path relative to the root)",
                    ));
                }
            }
        }
        Ok(RelPath(clean))
    }

    /// True for the root itself.
    pub fn is_root(&self) -> bool {
        self.0.as_os_str().is_empty()
    }

    /// The path to hand to `Dir` methods (`.` for the root).
    pub fn fs(&self) -> &Path {
        if self.is_root() {
            Path::new(".")
        } else {
            &self.0
        }
    }

    /// The path as callers see it (`.` for the root).
    pub fn shown(&self) -> String {
        self.fs().to_string_lossy().into_owned()
    }

    /// The parent (the root for a top-level name); None for the root.
    pub fn parent(&self) -> Option<RelPath> {
        self.0.parent().map(|p| RelPath(p.to_path_buf()))
    }

    /// The last component; None for the root.
    pub fn file_name(&self) -> Option<&std::ffi::OsStr> {
        self.0.file_name()
    }

    /// A child entry.
    pub fn join(&self, name: &std::ffi::OsStr) -> RelPath {
        RelPath(self.0.join(name))
    }

    /// True when `self` is `other` or lies beneath it.
    pub fn starts_with(&self, other: &RelPath) -> bool {
        self.0.starts_with(&other.0)
    }

    /// The inner relative path (empty for the root).
    pub fn as_path(&self) -> &Path {
        &self.0
    }
}

/// Which tools a root allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// `["*"]`.
    All,
    /// These names.
    Only(BTreeSet<String>),
}

impl Allowed {
    fn from_config(names: &[String]) -> Allowed {
        if names.iter().any(|n| n == "*") {
            Allowed::All
        } else {
            Allowed::Only(names.iter().cloned().collect())
        }
    }

    /// True when `tool` may run in the root.
    pub fn allows(&self, tool: &str) -> bool {
        match self {
            Allowed::All => true,
            Allowed::Only(names) => names.contains(tool),
        }
    }

    /// The allowed tool names, in the tools' listing order.
    pub fn names(&self) -> Vec<&'static str> {
        TOOL_NAMES
            .iter()
            .copied()
            .filter(|t| self.allows(t))
            .collect()
    }
}

/// One configured root.
#[derive(Debug)]
pub struct Root {
    /// Its name.
    pub name: String,
    /// The capability handle every operation goes through.
    pub dir: Dir,
    /// What may run in it.
    pub allowed: Allowed,
}

impl Root {
    /// Checks a caller's path for this root.
    pub fn path(&self, raw: &str) -> Result<RelPath, FsError> {
        RelPath::parse(&self.name, raw)
    }

    /// Turns an I/O error on `path` into an [`FsError`].
    pub fn error(&self, path: &RelPath, action: &'static str, source: io::Error) -> FsError {
        let (root, path) = (self.name.clone(), path.shown());
        if is_escape(&source) {
            FsError::Escape { root, path }
        } else if source.kind() == io::ErrorKind::NotFound {
            FsError::NotFound { root, path }
        } else {
            FsError::Io {
                root,
                path,
                action,
                source,
            }
        }
    }

    /// Like [`Root::error`], but first asks whether `path` leads outside
    /// the root (an operation such as `create_dir_all` reports a symlink
    /// escape as "already exists").
    pub fn error_probing(
        &self,
        path: &RelPath,
        action: &'static str,
        source: io::Error,
    ) -> FsError {
        match self.dir.metadata(path.fs()) {
            Err(probe) if is_escape(&probe) => FsError::Escape {
                root: self.name.clone(),
                path: path.shown(),
            },
            _ => self.error(path, action, source),
        }
    }

    /// An [`FsError::Invalid`] naming this root and `path`.
    pub fn invalid(&self, path: &RelPath, problem: impl std::fmt::Display) -> FsError {
        FsError::Invalid(format!(
            "root {:?}: {:?} {problem}",
            self.name,
            path.shown()
        ))
    }
}

/// Every root, and the read limit.
#[derive(Debug)]
pub struct Sandbox {
    roots: Vec<Root>,
    /// `max_full_read_size`.
    pub max_full_read_size: u64,
}

impl Sandbox {
    /// Opens every root of a checked configuration; errors name the root
    /// (a path that does not exist or is not a directory).
    pub fn open(config: &FsConfig) -> Result<Sandbox, String> {
        let mut roots = Vec::with_capacity(config.roots.len());
        for (i, root) in config.roots.iter().enumerate() {
            let at = format!("roots[{i}].path ({}): {}", root.name, root.path.display());
            let meta = std::fs::metadata(&root.path).map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => format!("{at}: the directory does not exist"),
                _ => format!("{at}: {e}"),
            })?;
            if !meta.is_dir() {
                return Err(format!("{at}: not a directory"));
            }
            let dir = Dir::open_ambient_dir(&root.path, ambient_authority())
                .map_err(|e| format!("{at}: cannot open: {e}"))?;
            roots.push(Root {
                name: root.name.clone(),
                dir,
                allowed: Allowed::from_config(&root.allowed_tools),
            });
        }
        Ok(Sandbox {
            roots,
            max_full_read_size: config.max_full_read_size,
        })
    }

    /// The roots, in configuration order.
    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    /// The root called `name`, if `tool` may run in it.
    pub fn root(&self, name: &str, tool: &str) -> Result<&Root, FsError> {
        let root =
            self.roots
                .iter()
                .find(|r| r.name == name)
                .ok_or_else(|| FsError::UnknownRoot {
                    root: name.to_string(),
                    known: self.names(),
                })?;
        if !root.allowed.allows(tool) {
            return Err(FsError::NotAllowed {
                tool: tool.to_string(),
                root: name.to_string(),
                allowed: root.allowed.names().join(", "),
            });
        }
        Ok(root)
    }

    /// The root names, comma separated.
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.roots.iter().map(|r| r.name.as_str()).collect();
        names.join(", ")
    }
}
