//! The mutating tools of [`FilesystemServer`], annotated
//! `readOnlyHint: false, destructiveHint: true` so that an agent gates
//! them behind a human approval.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{ErrorData, tool, tool_router};

use super::args::{PatchArgs, PathArgs, TransferArgs, WriteArgs};
use super::sandbox::{FsError, Sandbox};
use super::tools::{FilesystemServer, input};
use super::transfer::{self, End};
use super::write::{self, WriteMode};

/// Both ends of a `copy` / `move`, each root allowing `tool`.
fn ends<'a>(fs: &'a Sandbox, tool: &str, a: &TransferArgs) -> Result<(End<'a>, End<'a>), FsError> {
    let from = fs.root(&a.source_root, tool)?;
    let to = fs.root(&a.dest_root, tool)?;
    Ok((
        End {
            root: from,
            path: from.path(&a.source_path)?,
        },
        End {
            root: to,
            path: to.path(&a.dest_path)?,
        },
    ))
}

#[tool_router(router = write_tools, vis = "pub(super)")]
impl FilesystemServer {
    /// `write_file`.
    #[tool(
        name = "write_file",
        description = "Write text to a file, creating missing parent folders. mode: overwrite (default; replaces the file atomically), append, or create_only (fails if the file exists).",
        input_schema = input::<WriteArgs>(),
        annotations(title = "Write a file", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn write_file(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("write_file", args, |fs, a: WriteArgs| {
            let root = fs.root(&a.root, "write_file")?;
            let path = root.path(&a.path)?;
            write::write_file(
                root,
                &path,
                &a.content,
                WriteMode::parse(a.mode.as_deref())?,
            )
        })
        .await
    }

    /// `remove_file`.
    #[tool(
        name = "remove_file",
        description = "Remove a file (or a symlink itself). Refuses folders: use remove_folder.",
        input_schema = input::<PathArgs>(),
        annotations(title = "Remove a file", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn remove_file(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("remove_file", args, |fs, a: PathArgs| {
            let root = fs.root(&a.root, "remove_file")?;
            write::remove_file(root, &root.path(&a.path)?)
        })
        .await
    }

    /// `patch_file`.
    #[tool(
        name = "patch_file",
        description = "Apply a unified diff to a file: all hunks or none, the file replaced atomically. A missing file is patched as empty (so a diff can create a file).",
        input_schema = input::<PatchArgs>(),
        annotations(title = "Patch a file", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn patch_file(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("patch_file", args, |fs, a: PatchArgs| {
            let root = fs.root(&a.root, "patch_file")?;
            let path = root.path(&a.path)?;
            write::patch_file(root, &path, &a.patch, fs.max_full_read_size)
        })
        .await
    }

    /// `create_folder`.
    #[tool(
        name = "create_folder",
        description = "Create a folder and its missing parents. An existing folder is not an error.",
        input_schema = input::<PathArgs>(),
        annotations(title = "Create a folder", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn create_folder(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("create_folder", args, |fs, a: PathArgs| {
            let root = fs.root(&a.root, "create_folder")?;
            write::create_folder(root, &root.path(&a.path)?)
        })
        .await
    }

    /// `remove_folder`.
    #[tool(
        name = "remove_folder",
        description = "Remove a folder and everything in it (symlinks inside are removed, not followed). Never the root itself.",
        input_schema = input::<PathArgs>(),
        annotations(title = "Remove a folder", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn remove_folder(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("remove_folder", args, |fs, a: PathArgs| {
            let root = fs.root(&a.root, "remove_folder")?;
            write::remove_folder(root, &root.path(&a.path)?)
        })
        .await
    }

    /// `copy`.
    #[tool(
        name = "copy",
        description = "Copy a file or a folder tree to a new path, in the same root or another one (both roots must allow copy). The destination must not exist; symlinks inside a copied folder are skipped.",
        input_schema = input::<TransferArgs>(),
        annotations(title = "Copy", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn copy(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("copy", args, |fs, a: TransferArgs| {
            let (from, to) = ends(fs, "copy", &a)?;
            transfer::copy(from, to)
        })
        .await
    }

    /// `move`.
    #[tool(
        name = "move",
        description = "Move (rename) a file or folder, in the same root (an atomic rename) or to another root (both roots must allow move). The destination must not exist.",
        input_schema = input::<TransferArgs>(),
        annotations(title = "Move", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn move_path(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        self.run("move", args, |fs, a: TransferArgs| {
            let (from, to) = ends(fs, "move", &a)?;
            transfer::move_path(from, to)
        })
        .await
    }
}
