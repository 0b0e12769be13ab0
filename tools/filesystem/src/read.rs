//! The read-only tools on single paths: `list_roots`, `list_folder`,
//! `stat_file`, `hash_file`, `permissions_file` (`read_file` is in
//! [`super::read_file`], searches in [`super::search`]).
//!
//! Every function runs on the blocking pool and touches the disk only
//! through the root's `Dir`.

use std::io::Read;

use cap_std::fs::{FileType, Metadata, MetadataExt as _};
use serde_json::{Value, json};

use super::sandbox::{FsError, RelPath, Root, Sandbox};

/// `file`, `directory`, `symlink` or `other`.
pub fn kind(file_type: &FileType) -> &'static str {
    if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_dir() {
        "directory"
    } else if file_type.is_file() {
        "file"
    } else {
        "other"
    }
}

/// A Unix time as RFC 3339 UTC.
fn rfc3339(seconds: i64, nanos: i64) -> Value {
    chrono::DateTime::from_timestamp(seconds, nanos.clamp(0, 999_999_999) as u32)
        .map(|t| Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)))
        .unwrap_or(Value::Null)
}

/// The modification time of `meta` as RFC 3339.
pub fn mtime(meta: &Metadata) -> Value {
    rfc3339(meta.mtime(), meta.mtime_nsec())
}

/// `list_roots`: every root and the tools it allows.
pub fn list_roots(sandbox: &Sandbox) -> Value {
    let roots: Vec<Value> = sandbox
        .roots()
        .iter()
        .map(|r| json!({ "name": r.name, "allowed_tools": r.allowed.names() }))
        .collect();
    json!({ "roots": roots })
}

/// Entries beyond this are left out of a `list_folder` answer.
const MAX_LISTED: usize = 10_000;

/// `list_folder`: the entries of a folder sorted by name (a symlink is
/// listed as one, not followed).
pub fn list_folder(root: &Root, path: &RelPath) -> Result<Value, FsError> {
    let entries = root.dir.read_dir(path.fs()).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotADirectory => root.invalid(path, "is not a folder"),
        _ => root.error(path, "list the folder", e),
    })?;
    let mut listed = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| root.error(path, "list the folder", e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta = entry.metadata().ok();
        let file_type = match &meta {
            Some(meta) => kind(&meta.file_type()),
            None => entry.file_type().map(|t| kind(&t)).unwrap_or("other"),
        };
        listed.push(json!({
            "name": name,
            "type": file_type,
            "size": meta.as_ref().map(|m| m.len()),
            "mtime": meta.as_ref().map(mtime),
        }));
    }
    listed.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let total = listed.len();
    listed.truncate(MAX_LISTED);
    let mut answer = json!({
        "root": root.name, "path": path.shown(), "count": total, "entries": listed,
    });
    if total > MAX_LISTED {
        answer["note"] = json!(format!("only the first {MAX_LISTED} entries are listed"));
    }
    Ok(answer)
}

/// `stat_file`: type, size, times and mode; for a symlink, also what it
/// leads to (when that is inside the root).
pub fn stat_file(root: &Root, path: &RelPath) -> Result<Value, FsError> {
    let meta = root
        .dir
        .symlink_metadata(path.fs())
        .map_err(|e| root.error(path, "stat", e))?;
    let mut answer = describe(&meta);
    answer["root"] = json!(root.name);
    answer["path"] = json!(path.shown());
    if meta.file_type().is_symlink() {
        answer["target"] = match root.dir.metadata(path.fs()) {
            Ok(target) => describe(&target),
            Err(e) => json!({ "error": root.error(path, "follow the link", e).to_string() }),
        };
    }
    Ok(answer)
}

fn describe(meta: &Metadata) -> Value {
    json!({
        "type": kind(&meta.file_type()),
        "size": meta.len(),
        "mtime": mtime(meta),
        "atime": rfc3339(meta.atime(), meta.atime_nsec()),
        "ctime": rfc3339(meta.ctime(), meta.ctime_nsec()),
        "mode": format!("{:04o}", meta.mode() & 0o7777),
        "readonly": meta.permissions().readonly(),
        "nlink": meta.nlink(),
    })
}

/// The hash algorithms of `hash_file`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// MD5 (not for security, for comparing with published sums).
    Md5,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
}

impl Algorithm {
    /// `md5`, `sha1` or `sha256` (case and a dash ignored).
    pub fn parse(name: &str) -> Result<Algorithm, FsError> {
        match name.to_ascii_lowercase().replace('-', "").as_str() {
            "md5" => Ok(Algorithm::Md5),
            "sha1" => Ok(Algorithm::Sha1),
            "sha256" => Ok(Algorithm::Sha256),
            _ => Err(FsError::Invalid(format!(
                "unknown algorithm {name:?}; use md5, sha1 or sha256"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "md5",
            Algorithm::Sha1 => "sha1",
            Algorithm::Sha256 => "sha256",
        }
    }
}

/// `hash_file`: the file's digest, read in 64 KiB chunks.
pub fn hash_file(root: &Root, path: &RelPath, algorithm: Algorithm) -> Result<Value, FsError> {
    let file = super::read_file::open_regular(root, path)?;
    let read = |e| root.error(path, "read", e);
    let (hex, size) = match algorithm {
        Algorithm::Md5 => digest::<md5::Md5>(file).map_err(read)?,
        Algorithm::Sha1 => digest::<sha1::Sha1>(file).map_err(read)?,
        Algorithm::Sha256 => digest::<sha2::Sha256>(file).map_err(read)?,
    };
    Ok(json!({
        "root": root.name, "path": path.shown(), "algorithm": algorithm.name(),
        "hash": hex, "size": size,
    }))
}

fn digest<D: sha2::Digest>(mut file: cap_std::fs::File) -> std::io::Result<(String, u64)> {
    let mut hasher = D::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buffer[..n]);
    }
    let hex = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((hex, size))
}

/// `permissions_file`: owner, group (names when known) and mode, of the
/// path itself (a symlink is not followed).
pub fn permissions_file(root: &Root, path: &RelPath) -> Result<Value, FsError> {
    let meta = root
        .dir
        .symlink_metadata(path.fs())
        .map_err(|e| root.error(path, "stat", e))?;
    let (uid, gid, mode) = (meta.uid(), meta.gid(), meta.mode());
    let owner = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name);
    let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map(|g| g.name);
    Ok(json!({
        "root": root.name, "path": path.shown(), "type": kind(&meta.file_type()),
        "owner": owner, "uid": uid, "group": group, "gid": gid,
        "mode": format!("{:04o}", mode & 0o7777),
        "permissions": symbolic(mode),
    }))
}

/// `rwxr-x---` style, with setuid/setgid/sticky letters.
fn symbolic(mode: u32) -> String {
    let bit = |mask: u32, c: char| if mode & mask != 0 { c } else { '-' };
    let exec = |x: u32, special: u32, set: char| match (mode & x != 0, mode & special != 0) {
        (true, true) => set,
        (false, true) => set.to_ascii_uppercase(),
        (true, false) => 'x',
        (false, false) => '-',
    };
    [
        bit(0o400, 'r'),
        bit(0o200, 'w'),
        exec(0o100, 0o4000, 's'),
        bit(0o040, 'r'),
        bit(0o020, 'w'),
        exec(0o010, 0o2000, 's'),
        bit(0o004, 'r'),
        bit(0o002, 'w'),
        exec(0o001, 0o1000, 't'),
    ]
    .iter()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_modes() {
        assert_eq!(symbolic(0o644), "rw-r--r--");
        assert_eq!(symbolic(0o755), "rwxr-xr-x");
        assert_eq!(symbolic(0o4755), "rwsr-xr-x");
        assert_eq!(symbolic(0o1777), "rwxrwxrwt");
        assert_eq!(symbolic(0o2640), "rw-r-S---");
    }

    #[test]
    fn algorithms() {
        assert_eq!(Algorithm::parse("SHA-256").unwrap(), Algorithm::Sha256);
        assert_eq!(Algorithm::parse("md5").unwrap(), Algorithm::Md5);
        assert!(Algorithm::parse("crc32").is_err());
    }
}
