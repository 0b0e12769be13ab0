//! `copy` and `move`, within a root or across two roots (the tool layer
//! has checked that both roots allow the tool).
//!
//! The destination must not exist (no silent overwrite); its missing
//! parent folders are created. A folder is copied recursively; symlinks
//! inside it are skipped (they are reported), so a copy never follows a
//! link anywhere. A move is one `renameat` (atomic within a root, and
//! across roots on the same filesystem); across filesystems it is a copy
//! followed by removing the source.

use std::io;

use cap_std::fs::{Dir, MetadataExt as _, OpenOptions};
use serde_json::{Value, json};

use super::sandbox::{FsError, RelPath, Root};

/// One side of a transfer.
pub struct End<'a> {
    /// The root.
    pub root: &'a Root,
    /// The path in it.
    pub path: RelPath,
}

/// What a recursive copy did.
#[derive(Debug, Default)]
struct Copied {
    files: u64,
    folders: u64,
    bytes: u64,
    skipped_links: Vec<String>,
    /// Device and inode of the top destination folder: met again while
    /// walking the source (two roots that overlap), it is not descended.
    dest_top: Option<(u64, u64)>,
}

fn describe(tool: &str, from: &End<'_>, to: &End<'_>) -> Value {
    json!({
        "tool": tool,
        "source_root": from.root.name, "source_path": from.path.shown(),
        "dest_root": to.root.name, "dest_path": to.path.shown(),
    })
}

/// Checks the destination: not the root, nothing there yet; then
/// creates its parent folders.
fn prepare_dest(tool: &str, to: &End<'_>) -> Result<(), FsError> {
    if to.path.is_root() {
        return Err(FsError::Invalid(format!(
            "dest_root {:?}: give a destination path inside the root, not the root itself",
            to.root.name
        )));
    }
    match to.root.dir.symlink_metadata(to.path.fs()) {
        Ok(_) => Err(to.root.invalid(
            &to.path,
            format!("already exists; {tool} does not overwrite (remove it first)"),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match to.path.parent() {
            Some(parent) if !parent.is_root() => {
                to.root.dir.create_dir_all(parent.fs()).map_err(|e| {
                    to.root
                        .error_probing(&parent, "create the parent folders", e)
                })
            }
            _ => Ok(()),
        },
        Err(e) => Err(to.root.error(&to.path, "stat", e)),
    }
}

/// Refuses copying or moving a folder into itself.
fn not_into_itself(from: &End<'_>, to: &End<'_>) -> Result<(), FsError> {
    if !std::ptr::eq(from.root, to.root) {
        return Ok(());
    }
    let canonical = |end: &End<'_>, path: &RelPath| -> Result<RelPath, FsError> {
        let real = end
            .root
            .dir
            .canonicalize(path.fs())
            .map_err(|e| end.root.error(path, "resolve", e))?;
        RelPath::parse(&end.root.name, &real.to_string_lossy())
    };
    let source = canonical(from, &from.path)?;
    let dest_parent = to.path.parent().unwrap_or_else(RelPath::root);
    let dest = canonical(to, &dest_parent)?.join(to.path.file_name().unwrap_or_default());
    if dest.starts_with(&source) {
        return Err(FsError::Invalid(format!(
            "root {:?}: cannot put {:?} inside itself ({:?})",
            from.root.name,
            from.path.shown(),
            to.path.shown()
        )));
    }
    Ok(())
}

/// `copy`: a file (following a symlink inside the root) or a folder tree.
pub fn copy(from: End<'_>, to: End<'_>) -> Result<Value, FsError> {
    let meta = from
        .root
        .dir
        .metadata(from.path.fs())
        .map_err(|e| from.root.error(&from.path, "stat", e))?;
    if meta.is_dir() {
        not_into_itself(&from, &to)?;
    } else if !meta.is_file() {
        return Err(from.root.invalid(&from.path, "is not a file or a folder"));
    }
    prepare_dest("copy", &to)?;
    let mut copied = Copied::default();
    if meta.is_dir() {
        copy_tree(&from, &to, &mut copied)?;
    } else {
        copied.bytes = copy_file(&from, &to)?;
        copied.files = 1;
    }
    let mut answer = describe("copy", &from, &to);
    answer["files"] = json!(copied.files);
    answer["folders"] = json!(copied.folders);
    answer["bytes"] = json!(copied.bytes);
    if !copied.skipped_links.is_empty() {
        answer["skipped_symlinks"] = json!(copied.skipped_links);
    }
    Ok(answer)
}

/// Copies one regular file to a new file (permissions kept).
fn copy_file(from: &End<'_>, to: &End<'_>) -> Result<u64, FsError> {
    let mut source = super::read_file::open_regular(from.root, &from.path)?;
    let permissions = source
        .metadata()
        .map_err(|e| from.root.error(&from.path, "stat", e))?
        .permissions();
    let mut dest = to
        .root
        .dir
        .open_with(
            to.path.fs(),
            OpenOptions::new().write(true).create_new(true),
        )
        .map_err(|e| to.root.error(&to.path, "create", e))?;
    let bytes = io::copy(&mut source, &mut dest)
        .and_then(|n| dest.set_permissions(permissions).map(|()| n))
        .and_then(|n| dest.sync_all().map(|()| n))
        .map_err(|e| to.root.error(&to.path, "copy into", e))?;
    Ok(bytes)
}

/// Copies a folder tree; symlinks are skipped, never followed.
fn copy_tree(from: &End<'_>, to: &End<'_>, copied: &mut Copied) -> Result<(), FsError> {
    to.root
        .dir
        .create_dir(to.path.fs())
        .map_err(|e| to.root.error(&to.path, "create the folder", e))?;
    copied.folders += 1;
    if copied.dest_top.is_none() {
        let meta = to
            .root
            .dir
            .symlink_metadata(to.path.fs())
            .map_err(|e| to.root.error(&to.path, "stat", e))?;
        copied.dest_top = Some((meta.dev(), meta.ino()));
    }
    let entries = from
        .root
        .dir
        .read_dir(from.path.fs())
        .map_err(|e| from.root.error(&from.path, "list the folder", e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| from.root.error(&from.path, "list the folder", e))?;
        let meta = entry
            .metadata()
            .map_err(|e| from.root.error(&from.path, "list the folder", e))?;
        if copied.dest_top == Some((meta.dev(), meta.ino())) {
            continue;
        }
        names.push((entry.file_name(), meta.file_type()));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, file_type) in names {
        let child_from = End {
            root: from.root,
            path: from.path.join(&name),
        };
        let child_to = End {
            root: to.root,
            path: to.path.join(&name),
        };
        if file_type.is_dir() {
            copy_tree(&child_from, &child_to, copied)?;
        } else if file_type.is_file() {
            copied.bytes += copy_file(&child_from, &child_to)?;
            copied.files += 1;
        } else {
            copied.skipped_links.push(child_from.path.shown());
        }
    }
    Ok(())
}

/// `move`: one rename when possible (atomic within a root), else copy and
/// remove. The root itself cannot be moved; a symlink is moved as a link.
pub fn move_path(from: End<'_>, to: End<'_>) -> Result<Value, FsError> {
    if from.path.is_root() {
        return Err(FsError::Invalid(format!(
            "source_root {:?}: the root itself cannot be moved",
            from.root.name
        )));
    }
    let meta = from
        .root
        .dir
        .symlink_metadata(from.path.fs())
        .map_err(|e| from.root.error(&from.path, "stat", e))?;
    if meta.is_dir() {
        not_into_itself(&from, &to)?;
    }
    prepare_dest("move", &to)?;
    let mut answer = describe("move", &from, &to);
    match from
        .root
        .dir
        .rename(from.path.fs(), &to.root.dir, to.path.fs())
    {
        Ok(()) => answer["method"] = json!("rename"),
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            move_by_copy(&from, &to, meta.is_dir())?;
            answer["method"] = json!("copy and remove");
        }
        Err(e) => return Err(from.root.error(&from.path, "move", e)),
    }
    Ok(answer)
}

/// Across filesystems: copy, then remove the source.
fn move_by_copy(from: &End<'_>, to: &End<'_>, is_dir: bool) -> Result<(), FsError> {
    let source: &Dir = &from.root.dir;
    if is_dir {
        let mut copied = Copied::default();
        copy_tree(from, to, &mut copied)?;
        if !copied.skipped_links.is_empty() {
            return Err(from.root.invalid(
                &from.path,
                format!(
                    "was copied but not removed: it holds symlinks that cannot be moved \
                     across filesystems ({})",
                    copied.skipped_links.join(", ")
                ),
            ));
        }
        source.remove_dir_all(from.path.fs())
    } else {
        copy_file(from, to)?;
        source.remove_file(from.path.fs())
    }
    .map_err(|e| from.root.error(&from.path, "remove after copying", e))
}
