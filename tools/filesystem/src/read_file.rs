//! `read_file`: a whole file up to `max_full_read_size`, or a window of
//! bytes (`offset_bytes` / `limit_bytes`) or of lines (`offset_lines` /
//! `limit_lines`), never more than `max_full_read_size` bytes at once.
//!
//! Content that is valid UTF-8 is returned as text; anything else as
//! base64 (`"encoding": "base64"`).

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use base64::Engine as _;
use cap_std::fs::{File, OpenOptions, OpenOptionsExt as _};
use serde_json::{Value, json};

use super::sandbox::{FsError, RelPath, Root};

/// The window arguments of `read_file`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    /// Bytes to skip.
    pub offset_bytes: Option<u64>,
    /// Bytes to return at most.
    pub limit_bytes: Option<u64>,
    /// Lines to skip.
    pub offset_lines: Option<u64>,
    /// Lines to return at most.
    pub limit_lines: Option<u64>,
}

/// Opens a regular file for reading (following symlinks inside the root);
/// a folder or a device is refused. `O_NONBLOCK` keeps a FIFO from
/// blocking the open.
pub fn open_regular(root: &Root, path: &RelPath) -> Result<File, FsError> {
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(nix::libc::O_NONBLOCK);
    let file = root
        .dir
        .open_with(path.fs(), &options)
        .map_err(|e| root.error(path, "open", e))?;
    let meta = file.metadata().map_err(|e| root.error(path, "stat", e))?;
    if meta.is_dir() {
        return Err(root.invalid(path, "is a folder, not a file (use list_folder)"));
    }
    if !meta.is_file() {
        return Err(root.invalid(path, "is not a regular file"));
    }
    Ok(file)
}

/// `read_file`.
pub fn read_file(root: &Root, path: &RelPath, window: Window, max: u64) -> Result<Value, FsError> {
    let bytes = window.offset_bytes.is_some() || window.limit_bytes.is_some();
    let lines = window.offset_lines.is_some() || window.limit_lines.is_some();
    if bytes && lines {
        return Err(FsError::Invalid(
            "offset_bytes/limit_bytes and offset_lines/limit_lines cannot be \
             combined; give one kind of window"
                .into(),
        ));
    }
    let file = open_regular(root, path)?;
    let size = file
        .metadata()
        .map_err(|e| root.error(path, "stat", e))?
        .len();
    let mut answer = if bytes {
        read_bytes(root, path, file, window, size, max)?
    } else if lines {
        read_lines(root, path, file, window, max)?
    } else {
        read_whole(root, path, file, size, max)?
    };
    answer["root"] = json!(root.name);
    answer["path"] = json!(path.shown());
    answer["size"] = json!(size);
    Ok(answer)
}

fn too_large(root: &Root, path: &RelPath, size: u64, max: u64) -> FsError {
    root.invalid(
        path,
        format!(
            "is {size} bytes, more than max_full_read_size ({max} bytes): read it in parts \
             with offset_bytes/limit_bytes or offset_lines/limit_lines"
        ),
    )
}

fn read_whole(
    root: &Root,
    path: &RelPath,
    file: File,
    size: u64,
    max: u64,
) -> Result<Value, FsError> {
    if size > max {
        return Err(too_large(root, path, size, max));
    }
    let mut data = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut data)
        .map_err(|e| root.error(path, "read", e))?;
    if data.len() as u64 > max {
        return Err(too_large(root, path, data.len() as u64, max));
    }
    Ok(content(data))
}

fn read_bytes(
    root: &Root,
    path: &RelPath,
    mut file: File,
    window: Window,
    size: u64,
    max: u64,
) -> Result<Value, FsError> {
    let offset = window.offset_bytes.unwrap_or(0);
    let limit = window.limit_bytes.unwrap_or(max).min(max);
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| root.error(path, "seek", e))?;
    let mut data = Vec::new();
    file.take(limit)
        .read_to_end(&mut data)
        .map_err(|e| root.error(path, "read", e))?;
    let end = offset + data.len() as u64;
    let mut answer = content(data);
    answer["offset_bytes"] = json!(offset);
    answer["eof"] = json!(end >= size);
    if end < size {
        answer["next_offset_bytes"] = json!(end);
    }
    if window.limit_bytes.is_some_and(|l| l > max) {
        answer["note"] = json!(format!(
            "limit_bytes was capped at max_full_read_size ({max})"
        ));
    }
    Ok(answer)
}

fn read_lines(
    root: &Root,
    path: &RelPath,
    file: File,
    window: Window,
    max: u64,
) -> Result<Value, FsError> {
    let read = |e| root.error(path, "read", e);
    let mut reader = BufReader::new(file);
    let offset = window.offset_lines.unwrap_or(0);
    let limit = window.limit_lines.unwrap_or(u64::MAX);
    let mut line = Vec::new();
    for _ in 0..offset {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(read)? == 0 {
            break;
        }
    }
    let (mut data, mut count, mut capped) = (Vec::new(), 0u64, false);
    while count < limit {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(read)?;
        if n == 0 {
            break;
        }
        if (data.len() + n) as u64 > max {
            capped = true;
            break;
        }
        data.extend_from_slice(&line);
        count += 1;
    }
    if capped && count == 0 {
        return Err(root.invalid(
            path,
            format!(
                "line {} is longer than max_full_read_size ({max} bytes): read it with \
                 offset_bytes/limit_bytes",
                offset + 1
            ),
        ));
    }
    let eof = !capped && reader.fill_buf().map_err(read)?.is_empty();
    let mut answer = content(data);
    answer["first_line"] = json!(offset + 1);
    answer["lines"] = json!(count);
    answer["eof"] = json!(eof);
    if !eof {
        answer["next_offset_lines"] = json!(offset + count);
    }
    if capped {
        answer["note"] = json!(format!("stopped at max_full_read_size ({max} bytes)"));
    }
    Ok(answer)
}

/// `{"encoding": "utf-8", "content": text}` or base64 for other bytes.
fn content(data: Vec<u8>) -> Value {
    let bytes = data.len();
    match String::from_utf8(data) {
        Ok(text) => json!({ "encoding": "utf-8", "bytes": bytes, "content": text }),
        Err(e) => json!({
            "encoding": "base64",
            "bytes": bytes,
            "content": base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
        }),
    }
}
