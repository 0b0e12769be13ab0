//! The tools' arguments. Their doc comments are the descriptions clients
//! (and models) see in the input schemas. Unknown fields are refused, so
//! a misspelt option is an error rather than silently ignored.

use rmcp::schemars;
use serde::Deserialize;

use super::read_file::Window;

/// `list_folder`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FolderArgs {
    /// The root's name (see list_roots).
    pub root: String,
    /// Folder relative to the root; "" or "." for the root itself.
    #[serde(default)]
    pub path: Option<String>,
}

/// One path in a root.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    /// The root's name (see list_roots).
    pub root: String,
    /// Path relative to the root (no `..`, not absolute).
    pub path: String,
}

/// `read_file`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The root's name (see list_roots).
    pub root: String,
    /// File relative to the root.
    pub path: String,
    /// Bytes to skip (byte window; not with the line window).
    pub offset_bytes: Option<u64>,
    /// Bytes to return at most (capped at max_full_read_size).
    pub limit_bytes: Option<u64>,
    /// Lines to skip, 0 = from the first line (line window; not with the
    /// byte window).
    pub offset_lines: Option<u64>,
    /// Lines to return at most.
    pub limit_lines: Option<u64>,
}

impl ReadFileArgs {
    /// The window part.
    pub fn window(&self) -> Window {
        Window {
            offset_bytes: self.offset_bytes,
            limit_bytes: self.limit_bytes,
            offset_lines: self.offset_lines,
            limit_lines: self.limit_lines,
        }
    }
}

/// `hash_file`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HashArgs {
    /// The root's name (see list_roots).
    pub root: String,
    /// File relative to the root.
    pub path: String,
    /// md5, sha1 or sha256.
    pub algorithm: String,
}

/// `grep`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// The root's name (see list_roots).
    pub root: String,
    /// Regular expression (Rust regex syntax) matched against each line.
    pub pattern: String,
    /// Folder to search, relative to the root (default: the whole root).
    pub path: Option<String>,
    /// Only files whose name or relative path matches this glob (e.g.
    /// `*.rs`, `src/**/*.toml`).
    pub glob_filter: Option<String>,
    /// Ignore case.
    pub case_insensitive: Option<bool>,
    /// Lines of context before and after each match (at most 50).
    pub context_lines: Option<u64>,
    /// Stop after this many matching lines (default 100).
    pub max_results: Option<u64>,
    /// Stop after this many seconds (default 300); the answer says so.
    pub timeout_seconds: Option<u64>,
    /// How deep to descend: 1 = only files directly in `path`.
    pub max_depth: Option<u64>,
}

/// `glob`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    /// The root's name (see list_roots).
    pub root: String,
    /// Glob matched against paths relative to `path`: `*` stays within a
    /// folder name, `**` crosses folders (e.g. `**/*.md`). Give this or
    /// `regex`.
    pub pattern: Option<String>,
    /// Regular expression searched in paths relative to `path` (instead of
    /// `pattern`).
    pub regex: Option<String>,
    /// Folder to search, relative to the root (default: the whole root).
    pub path: Option<String>,
    /// Stop after this many paths (default 100).
    pub max_results: Option<u64>,
    /// Stop after this many seconds (default 300); the answer says so.
    pub timeout_seconds: Option<u64>,
    /// How deep to descend: 1 = only entries directly in `path`.
    pub max_depth: Option<u64>,
    /// file, directory, symlink or all (default).
    pub type_filter: Option<String>,
}

/// `write_file`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// The root's name (see list_roots).
    pub root: String,
    /// File relative to the root; missing parent folders are created.
    pub path: String,
    /// The text to write.
    pub content: String,
    /// overwrite (default: replace atomically), append, or create_only
    /// (fail if the file exists).
    pub mode: Option<String>,
}

/// `patch_file`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchArgs {
    /// The root's name (see list_roots).
    pub root: String,
    /// File relative to the root (a missing file is patched as empty).
    pub path: String,
    /// A unified diff (`--- a/f`, `+++ b/f`, `@@ -1,2 +1,3 @@` hunks).
    pub patch: String,
}

/// `copy` and `move`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferArgs {
    /// The root of the source.
    pub source_root: String,
    /// Source path relative to `source_root`.
    pub source_path: String,
    /// The root of the destination (may be another root: both must allow
    /// the tool).
    pub dest_root: String,
    /// Destination path relative to `dest_root`; must not exist yet.
    pub dest_path: String,
}
