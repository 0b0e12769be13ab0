//! Making a checkpoint's files durable before the journal lets go of
//! their records.
//!
//! On Linux 5.8 and later one `syncfs` on the data directory's file
//! system does it: it writes back every dirty page and inode there and
//! flushes the device once, and it reports a write-back error that
//! happened since the file it is called on was opened (the first file
//! the checkpoint opened). A `fsync` per file instead writes each
//! file's inode on its own and waits for it: under A2A load (a new task
//! file each request, about 4,000 a second) those syncs were a sixth of
//! the agent's CPU samples. Older kernels' `syncfs` may not report a
//! failed write-back, so there each file is synced, from several
//! threads at once (the file system commits concurrent syncs together).
//!
//! `syncfs` also writes back what other programs left dirty on the same
//! file system, so a checkpoint (at most one a second) pays for busy
//! neighbours' writes; `data_dir` on a volume of its own has none.

use std::fs::File;
use std::sync::OnceLock;

/// Syncs `files`, all just written under one directory: one `syncfs`
/// where it reports errors, else each file.
pub(super) fn sync_files(files: &[File]) -> std::io::Result<()> {
    let Some(first) = files.first() else {
        return Ok(());
    };
    if syncfs_reports_errors() {
        return syncfs(first);
    }
    sync_each(files)
}

#[cfg(target_os = "linux")]
fn syncfs(file: &File) -> std::io::Result<()> {
    rustix::fs::syncfs(file).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn syncfs(_file: &File) -> std::io::Result<()> {
    unreachable!("syncfs is used on Linux only")
}

/// Whether this kernel's `syncfs` reports write-back errors (Linux 5.8
/// and later), asked once.
fn syncfs_reports_errors() -> bool {
    static REPORTS: OnceLock<bool> = OnceLock::new();
    *REPORTS.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            let uname = rustix::system::uname();
            reports_errors(&uname.release().to_string_lossy())
        }
        #[cfg(not(target_os = "linux"))]
        false
    })
}

/// Whether a Linux release string (`6.1.0-13-amd64`, `4.18.0-553.el8`)
/// is 5.8 or later; an unreadable one is not.
fn reports_errors(release: &str) -> bool {
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(str::parse::<u32>);
    match (numbers.next(), numbers.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => (major, minor) >= (5, 8),
        _ => false,
    }
}

/// Threads that sync files together.
const SYNC_THREADS: usize = 16;

/// Syncs `files` from several threads at once: the file system commits
/// concurrent syncs together, where one thread would wait for each in
/// turn.
fn sync_each(files: &[File]) -> std::io::Result<()> {
    let chunk = files.len().div_ceil(SYNC_THREADS).max(1);
    std::thread::scope(|scope| {
        let syncs: Vec<_> = files
            .chunks(chunk)
            .map(|some| scope.spawn(move || some.iter().try_for_each(File::sync_all)))
            .collect();
        syncs.into_iter().try_for_each(|sync| {
            sync.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a file sync panicked")))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncfs_is_trusted_from_linux_5_8_on() {
        for release in ["5.8.0", "5.10.0-28-amd64", "6.18.44-fc-v669", "10.0"] {
            assert!(reports_errors(release), "{release}");
        }
        for release in [
            "5.7.19",
            "4.18.0-553.el8_10.x86_64",
            "3.10.0",
            "",
            "linux",
            "6",
        ] {
            assert!(!reports_errors(release), "{release}");
        }
    }

    #[test]
    fn both_ways_leave_the_files_synced_and_an_empty_list_alone() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<File> = (0..20)
            .map(|n| {
                let path = dir.path().join(format!("{n}.json"));
                std::fs::write(&path, format!("{{\"n\": {n}}}")).unwrap();
                File::options().write(true).open(path).unwrap()
            })
            .collect();
        sync_each(&files).unwrap();
        sync_files(&files).unwrap();
        sync_files(&[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("7.json")).unwrap(),
            "{\"n\": 7}"
        );
    }
}
