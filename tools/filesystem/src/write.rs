//! The mutating tools on one path: `write_file`, `remove_file`,
//! `patch_file`, `create_folder`, `remove_folder`.
//!
//! A file whose contents are replaced (`write_file` overwrite,
//! `patch_file`) is written to a temporary file in the same folder,
//! synced, given the old file's permissions and renamed over it: a reader
//! sees the old or the new contents, never a mix. All of it happens
//! relative to a handle on that folder, so the temporary file and the
//! rename cannot be redirected between the two steps.

use std::io::{Read as _, Write as _};

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt as _, Permissions};
use serde_json::{Value, json};

use super::sandbox::{FsError, RelPath, Root};

/// How `write_file` treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Replace it atomically (or create it).
    Overwrite,
    /// Add to its end (or create it).
    Append,
    /// Fail if anything exists at the path.
    CreateOnly,
}

impl WriteMode {
    /// `overwrite` (default), `append` or `create_only`.
    pub fn parse(mode: Option<&str>) -> Result<WriteMode, FsError> {
        match mode.map(str::trim) {
            None | Some("") | Some("overwrite") => Ok(WriteMode::Overwrite),
            Some("append") => Ok(WriteMode::Append),
            Some("create_only") => Ok(WriteMode::CreateOnly),
            Some(other) => Err(FsError::Invalid(format!(
                "unknown mode {other:?}; use overwrite, append or create_only"
            ))),
        }
    }
}

/// Refuses the root itself as the target of a file operation.
fn not_root(root: &Root, path: &RelPath) -> Result<(), FsError> {
    if path.is_root() {
        return Err(FsError::Invalid(format!(
            "root {:?}: give a path inside the root, not the root itself",
            root.name
        )));
    }
    Ok(())
}

/// Creates the missing parent folders of `path`.
fn create_parents(root: &Root, path: &RelPath) -> Result<(), FsError> {
    match path.parent() {
        Some(parent) if !parent.is_root() => root
            .dir
            .create_dir_all(parent.fs())
            .map_err(|e| root.error_probing(&parent, "create the parent folders", e)),
        _ => Ok(()),
    }
}

/// `write_file`.
pub fn write_file(
    root: &Root,
    path: &RelPath,
    content: &str,
    mode: WriteMode,
) -> Result<Value, FsError> {
    not_root(root, path)?;
    create_parents(root, path)?;
    let created = match mode {
        WriteMode::Overwrite => replace(root, path, content.as_bytes())?,
        WriteMode::Append => append(root, path, content.as_bytes())?,
        WriteMode::CreateOnly => create_new(root, path, content.as_bytes())?,
    };
    Ok(json!({
        "root": root.name, "path": path.shown(), "bytes_written": content.len(),
        "created": created,
        "mode": match mode {
            WriteMode::Overwrite => "overwrite",
            WriteMode::Append => "append",
            WriteMode::CreateOnly => "create_only",
        },
    }))
}

fn append(root: &Root, path: &RelPath, bytes: &[u8]) -> Result<bool, FsError> {
    let existed = root.dir.metadata(path.fs()).is_ok();
    let mut options = OpenOptions::new();
    // O_NONBLOCK: a FIFO without a reader fails instead of hanging.
    options
        .append(true)
        .create(true)
        .custom_flags(nix::libc::O_NONBLOCK);
    let mut file = root
        .dir
        .open_with(path.fs(), &options)
        .map_err(|e| root.error(path, "open for appending", e))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(root.invalid(path, "is not a regular file"));
    }
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| root.error(path, "append", e))?;
    Ok(!existed)
}

fn create_new(root: &Root, path: &RelPath, bytes: &[u8]) -> Result<bool, FsError> {
    let mut file = root
        .dir
        .open_with(path.fs(), OpenOptions::new().write(true).create_new(true))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                root.invalid(path, "already exists (mode create_only)")
            }
            _ => root.error(path, "create", e),
        })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| root.error(path, "write", e))?;
    Ok(true)
}

/// Where the contents of `path` live: the path itself, or for a symlink
/// the file it leads to (inside the root; an escape is refused). Also
/// whether a file is there now.
fn target(root: &Root, path: &RelPath) -> Result<(RelPath, bool), FsError> {
    let meta = match root.dir.symlink_metadata(path.fs()) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((path.clone(), false)),
        Err(e) => return Err(root.error(path, "stat", e)),
    };
    if meta.is_dir() {
        return Err(root.invalid(path, "is a folder, not a file"));
    }
    if !meta.file_type().is_symlink() {
        return Ok((path.clone(), true));
    }
    let resolved = root
        .dir
        .canonicalize(path.fs())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                root.invalid(path, "is a symlink whose target does not exist")
            }
            _ => root.error(path, "follow the link", e),
        })?;
    let resolved = RelPath::parse(&root.name, &resolved.to_string_lossy())?;
    if root.dir.metadata(resolved.fs()).is_ok_and(|m| m.is_dir()) {
        return Err(root.invalid(path, "leads to a folder, not a file"));
    }
    Ok((resolved, true))
}

/// Atomically replaces (or creates) the file at `path` with `bytes`;
/// returns true when it did not exist.
pub fn replace(root: &Root, path: &RelPath, bytes: &[u8]) -> Result<bool, FsError> {
    let (target, existed) = target(root, path)?;
    let parent = target.parent().unwrap_or_else(RelPath::root);
    let dir = root
        .dir
        .open_dir(parent.fs())
        .map_err(|e| root.error(&parent, "open the folder", e))?;
    let name = target.file_name().unwrap_or_default().to_owned();
    let permissions = existed
        .then(|| dir.metadata(&name).ok().map(|m| m.permissions()))
        .flatten();
    let temp =
        write_temp(&dir, &name, bytes, permissions).map_err(|e| root.error(path, "write", e))?;
    if let Err(e) = dir.rename(&temp, &dir, &name) {
        let _ = dir.remove_file(&temp);
        return Err(root.error(path, "replace", e));
    }
    sync_dir(&dir);
    Ok(!existed)
}

/// Writes `bytes` to a new hidden file beside `name`; returns its name.
fn write_temp(
    dir: &Dir,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    permissions: Option<Permissions>,
) -> std::io::Result<std::ffi::OsString> {
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".asg-tmp-{}", uuid::Uuid::new_v4().simple()));
    let mut file = dir.open_with(&temp, OpenOptions::new().write(true).create_new(true))?;
    let written = file.write_all(bytes).and_then(|()| {
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()
    });
    if let Err(e) = written {
        let _ = dir.remove_file(&temp);
        return Err(e);
    }
    Ok(temp)
}

/// Best effort: makes a rename in `dir` durable.
fn sync_dir(dir: &Dir) {
    if let Ok(handle) = dir.open(".") {
        let _ = handle.sync_all();
    }
}

/// `remove_file`: a file or a symlink (the link itself); never a folder.
pub fn remove_file(root: &Root, path: &RelPath) -> Result<Value, FsError> {
    not_root(root, path)?;
    let meta = root
        .dir
        .symlink_metadata(path.fs())
        .map_err(|e| root.error(path, "stat", e))?;
    if meta.is_dir() {
        return Err(root.invalid(path, "is a folder; use remove_folder"));
    }
    root.dir
        .remove_file(path.fs())
        .map_err(|e| root.error(path, "remove", e))?;
    Ok(
        json!({ "root": root.name, "removed": path.shown(), "type": super::read::kind(&meta.file_type()) }),
    )
}

/// `patch_file`: applies a unified diff, all hunks or none; a missing file
/// is patched as empty. The result replaces the file atomically.
pub fn patch_file(root: &Root, path: &RelPath, patch: &str, max: u64) -> Result<Value, FsError> {
    not_root(root, path)?;
    let parsed = diffy::Patch::from_bytes(patch.as_bytes())
        .map_err(|e| FsError::Invalid(format!("the patch is not a unified diff: {e}")))?;
    if parsed.hunks().is_empty() {
        return Err(FsError::Invalid(
            "the patch has no hunks (expected a unified diff with `@@ -a,b +c,d @@` lines)".into(),
        ));
    }
    let (target, existed) = target(root, path)?;
    let base = if existed {
        read_limited(root, &target, max)?
    } else {
        Vec::new()
    };
    let patched = diffy::apply_bytes(&base, &parsed).map_err(|e| {
        root.invalid(
            path,
            format!("was not changed: the patch does not apply ({e}); no hunk was applied"),
        )
    })?;
    create_parents(root, path)?;
    let created = replace(root, path, &patched)?;
    Ok(json!({
        "root": root.name, "path": path.shown(), "hunks": parsed.hunks().len(),
        "created": created, "size": patched.len(),
    }))
}

fn read_limited(root: &Root, path: &RelPath, max: u64) -> Result<Vec<u8>, FsError> {
    let file = super::read_file::open_regular(root, path)?;
    let mut data = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut data)
        .map_err(|e| root.error(path, "read", e))?;
    if data.len() as u64 > max {
        return Err(root.invalid(
            path,
            format!("is larger than max_full_read_size ({max} bytes) and cannot be patched"),
        ));
    }
    Ok(data)
}

/// `create_folder`: creates the folder and its parents; an existing
/// folder is fine.
pub fn create_folder(root: &Root, path: &RelPath) -> Result<Value, FsError> {
    let existed = match root.dir.metadata(path.fs()) {
        Ok(meta) if meta.is_dir() => true,
        Ok(_) => return Err(root.invalid(path, "exists and is not a folder")),
        Err(_) => false,
    };
    if !existed {
        root.dir
            .create_dir_all(path.fs())
            .map_err(|e| root.error_probing(path, "create the folder", e))?;
    }
    Ok(json!({ "root": root.name, "path": path.shown(), "created": !existed }))
}

/// `remove_folder`: removes a folder and everything in it (symlinks inside
/// are removed, never followed); never the root itself.
pub fn remove_folder(root: &Root, path: &RelPath) -> Result<Value, FsError> {
    if path.is_root() {
        return Err(FsError::Invalid(format!(
            "root {:?}: the root itself cannot be removed",
            root.name
        )));
    }
    let meta = root
        .dir
        .symlink_metadata(path.fs())
        .map_err(|e| root.error(path, "stat", e))?;
    if meta.file_type().is_symlink() {
        return Err(root.invalid(path, "is a symlink; use remove_file to remove the link"));
    }
    if !meta.is_dir() {
        return Err(root.invalid(path, "is not a folder; use remove_file"));
    }
    root.dir
        .remove_dir_all(path.fs())
        .map_err(|e| root.error(path, "remove the folder", e))?;
    Ok(json!({ "root": root.name, "removed": path.shown() }))
}
