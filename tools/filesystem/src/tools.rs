//! The MCP server handler: [`FilesystemServer`] and its read-only tools
//! (annotated `readOnlyHint: true`); the mutating ones are in
//! [`super::tools_write`].
//!
//! Every tool takes its arguments as a JSON object and parses them itself,
//! so a malformed call is an error *tool result* (`isError: true`) naming
//! the problem, like every refusal (unknown root, tool not allowed there,
//! path escaping the root). The work runs on the blocking pool.

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_input;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::args::{FolderArgs, GlobArgs, GrepArgs, HashArgs, PathArgs, ReadFileArgs};
use super::grep::{Query, grep};
use super::read::{self, Algorithm};
use super::sandbox::{FsError, Sandbox};
use super::search::{Limits, Matcher, TypeFilter, base, glob_search};

/// The `mcp-filesystem` MCP server: one per session, all sharing the
/// sandbox (the roots' directory handles).
#[derive(Clone)]
pub struct FilesystemServer {
    pub(super) sandbox: Arc<Sandbox>,
    tool_router: ToolRouter<Self>,
}

/// The input schema of an argument type (for `#[tool(input_schema)]`).
pub(super) fn input<T: schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_input::<T>().unwrap_or_else(|e| panic!("argument schema: {e}"))
}

fn tool_error(message: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
}

impl FilesystemServer {
    /// A server over `sandbox`.
    pub fn new(sandbox: Arc<Sandbox>) -> FilesystemServer {
        FilesystemServer {
            sandbox,
            tool_router: Self::read_tools() + Self::write_tools(),
        }
    }

    /// Parses `raw` as `A` and runs `op` on the blocking pool; a parse
    /// failure or an [`FsError`] becomes an error tool result prefixed with
    /// the tool name.
    pub(super) async fn run<A, F>(
        &self,
        tool: &'static str,
        raw: JsonObject,
        op: F,
    ) -> Result<CallToolResult, ErrorData>
    where
        A: DeserializeOwned + Send + 'static,
        F: FnOnce(&Sandbox, A) -> Result<Value, FsError> + Send + 'static,
    {
        let args: A = match serde_json::from_value(Value::Object(raw)) {
            Ok(args) => args,
            Err(e) => return tool_error(format!("{tool}: invalid arguments: {e}")),
        };
        let sandbox = Arc::clone(&self.sandbox);
        match tokio::task::spawn_blocking(move || op(&sandbox, args)).await {
            Ok(Ok(value)) => {
                let text =
                    serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
                Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
            }
            Ok(Err(error)) => {
                tracing::info!(tool, %error, "tool call refused or failed");
                tool_error(format!("{tool}: {error}"))
            }
            Err(e) => {
                tracing::error!(tool, "tool worker failed: {e}");
                tool_error(format!("{tool}: internal error: {e}"))
            }
        }
    }
}

#[tool_router(router = read_tools, vis = "pub(super)")]
impl FilesystemServer {
    /// `list_roots`.
    #[tool(
        name = "list_roots",
        description = "List the roots (named folders this server may touch) and the tools each allows. Every other tool takes a `root` name and a path relative to it.",
        annotations(
            title = "List roots",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_roots(&self) -> Result<CallToolResult, ErrorData> {
        self.run("list_roots", JsonObject::new(), |fs, _: JsonObject| {
            Ok(read::list_roots(fs))
        })
        .await
    }

    /// `list_folder`.
    #[tool(
        name = "list_folder",
        description = "List a folder's entries sorted by name: name, type (file, directory, symlink), size, mtime. `path` \"\" or \".\" is the root.",
        input_schema = input::<FolderArgs>(),
        annotations(title = "List a folder", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_folder(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("list_folder", args, |fs, a: FolderArgs| {
            let root = fs.root(&a.root, "list_folder")?;
            read::list_folder(root, &root.path(a.path.as_deref().unwrap_or(""))?)
        })
        .await
    }

    /// `read_file`.
    #[tool(
        name = "read_file",
        description = "Read a text file. Files larger than max_full_read_size must be read in parts: a byte window (offset_bytes, limit_bytes) or a line window (offset_lines, limit_lines), not both. Non-UTF-8 content comes back base64-encoded.",
        input_schema = input::<ReadFileArgs>(),
        annotations(title = "Read a file", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn read_file(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("read_file", args, |fs, a: ReadFileArgs| {
            let root = fs.root(&a.root, "read_file")?;
            let path = root.path(&a.path)?;
            super::read_file::read_file(root, &path, a.window(), fs.max_full_read_size)
        })
        .await
    }

    /// `stat_file`.
    #[tool(
        name = "stat_file",
        description = "Type, size, times and mode of a path; for a symlink, also what it leads to.",
        input_schema = input::<PathArgs>(),
        annotations(title = "Stat a path", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn stat_file(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("stat_file", args, |fs, a: PathArgs| {
            let root = fs.root(&a.root, "stat_file")?;
            read::stat_file(root, &root.path(&a.path)?)
        })
        .await
    }

    /// `hash_file`.
    #[tool(
        name = "hash_file",
        description = "Hash a file's contents (streamed): algorithm md5, sha1 or sha256. Returns the hex digest and the size.",
        input_schema = input::<HashArgs>(),
        annotations(title = "Hash a file", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn hash_file(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("hash_file", args, |fs, a: HashArgs| {
            let root = fs.root(&a.root, "hash_file")?;
            let path = root.path(&a.path)?;
            read::hash_file(root, &path, Algorithm::parse(&a.algorithm)?)
        })
        .await
    }

    /// `permissions_file`.
    #[tool(
        name = "permissions_file",
        description = "Owner, group and mode (octal and rwx) of a path (a symlink itself, not followed).",
        input_schema = input::<PathArgs>(),
        annotations(title = "Permissions of a path", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn permissions_file(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("permissions_file", args, |fs, a: PathArgs| {
            let root = fs.root(&a.root, "permissions_file")?;
            read::permissions_file(root, &root.path(&a.path)?)
        })
        .await
    }

    /// `grep`.
    #[tool(
        name = "grep",
        description = "Search file contents with a regular expression under a folder of a root. Binary files are skipped and symlinks are not followed. Options: glob_filter, case_insensitive, context_lines, max_results (default 100), timeout_seconds (default 300), max_depth. The answer says when results were cut or the timeout hit.",
        input_schema = input::<GrepArgs>(),
        annotations(title = "Search file contents", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn grep(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("grep", args, |fs, a: GrepArgs| {
            let root = fs.root(&a.root, "grep")?;
            let query = Query::new(
                &a.pattern,
                a.case_insensitive.unwrap_or(false),
                a.glob_filter.as_deref(),
                a.context_lines,
            )?;
            let base = base(root, a.path.as_deref())?;
            let limits = Limits::new(a.max_results, a.timeout_seconds, a.max_depth);
            Ok(grep(root, &base, &query, &limits))
        })
        .await
    }

    /// `glob`.
    #[tool(
        name = "glob",
        description = "Find paths under a folder of a root by glob `pattern` (`**` crosses folders, e.g. **/*.md) or by `regex`, matched against the path relative to `path`. type_filter: file, directory, symlink or all. Symlinks are listed, never followed. max_results (default 100), timeout_seconds (default 300), max_depth.",
        input_schema = input::<GlobArgs>(),
        annotations(title = "Find paths", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn glob(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("glob", args, |fs, a: GlobArgs| {
            let root = fs.root(&a.root, "glob")?;
            let matcher = Matcher::new(a.pattern.as_deref(), a.regex.as_deref())?;
            let type_filter = TypeFilter::parse(a.type_filter.as_deref())?;
            let base = base(root, a.path.as_deref())?;
            let limits = Limits::new(a.max_results, a.timeout_seconds, a.max_depth);
            Ok(glob_search(root, &base, &matcher, type_filter, &limits))
        })
        .await
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "mcp-filesystem",
    instructions = "mcp-filesystem: files in named roots (call list_roots first). Paths are relative to a root; `..`, absolute paths and symlinks leading outside a root are refused. Reading tools are safe; write_file, patch_file, remove_file, create_folder, remove_folder, copy and move change files."
)]
impl ServerHandler for FilesystemServer {}
