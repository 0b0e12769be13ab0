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

/// Files a batch syncs together where each file is synced: the most a
/// checkpoint holds open at once.
const OPEN_AT_MOST: usize = 256;

/// The files a checkpoint (or a replay) has written, made durable by
/// [`Syncing::finish`] while few of them stay open: where one `syncfs`
/// covers them all, only the first file is kept (the `syncfs` on it
/// reports any write-back error on the file system since it was opened)
/// and every other one is closed once written; elsewhere they are synced
/// [`OPEN_AT_MOST`] at a time. Holding every file open until one sync made
/// a checkpoint or a replay of more conversations than the process may
/// open files (1,024 by default) fail with "Too many open files": an agent
/// with that many conversations in its journal could not start again.
pub(super) struct Syncing {
    whole_file_system: bool,
    first: Option<File>,
    open: Vec<File>,
    added: usize,
}

impl Syncing {
    /// Syncing the way this kernel allows.
    pub(super) fn new() -> Syncing {
        Syncing::with(syncfs_reports_errors())
    }

    fn with(whole_file_system: bool) -> Syncing {
        Syncing {
            whole_file_system,
            first: None,
            open: Vec::new(),
            added: 0,
        }
    }

    /// Takes a file just written under the checkpoint's directory.
    pub(super) fn add(&mut self, file: File) -> std::io::Result<()> {
        self.added += 1;
        if self.whole_file_system {
            // Later files are closed here: the `syncfs` on the first one
            // writes their pages back and reports their errors.
            self.first.get_or_insert(file);
            return Ok(());
        }
        self.open.push(file);
        if self.open.len() >= OPEN_AT_MOST {
            sync_each(&self.open)?;
            self.open.clear();
        }
        Ok(())
    }

    /// Makes every file added durable; how many there were.
    pub(super) fn finish(self) -> std::io::Result<usize> {
        match &self.first {
            Some(first) => syncfs(first)?,
            None => sync_each(&self.open)?,
        }
        Ok(self.added)
    }
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

    /// Files written as a checkpoint writes them, each added at once.
    fn add_files(syncing: &mut Syncing, dir: &std::path::Path, count: usize) {
        for n in 0..count {
            let path = dir.join(format!("{n}.json"));
            std::fs::write(&path, format!("{{\"n\": {n}}}")).unwrap();
            syncing
                .add(File::options().write(true).open(path).unwrap())
                .unwrap();
        }
    }

    #[test]
    fn both_ways_leave_the_files_synced_and_an_empty_list_alone() {
        let ways = if cfg!(target_os = "linux") {
            vec![false, true]
        } else {
            vec![false]
        };
        for whole_file_system in ways {
            let dir = tempfile::tempdir().unwrap();
            let mut syncing = Syncing::with(whole_file_system);
            add_files(&mut syncing, dir.path(), 20);
            assert_eq!(syncing.finish().unwrap(), 20);
            assert_eq!(Syncing::with(whole_file_system).finish().unwrap(), 0);
            assert_eq!(
                std::fs::read_to_string(dir.path().join("7.json")).unwrap(),
                "{\"n\": 7}"
            );
        }
    }

    /// Files this process has open now.
    #[cfg(target_os = "linux")]
    fn open_files() -> usize {
        std::fs::read_dir("/proc/self/fd").unwrap().count()
    }

    /// A checkpoint or replay of thousands of conversations held every
    /// file open until its one sync, and failed past the process's limit
    /// of open files ("Too many open files", 1,024 by default).
    #[cfg(target_os = "linux")]
    #[test]
    fn thousands_of_files_are_synced_with_few_open() {
        for whole_file_system in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let before = open_files();
            let mut syncing = Syncing::with(whole_file_system);
            let mut most = 0;
            for _ in 0..10 {
                add_files(&mut syncing, dir.path(), 300);
                most = most.max(open_files());
            }
            assert_eq!(syncing.finish().unwrap(), 3_000);
            assert!(
                most < before + 1_500,
                "{most} files open while syncing 3,000 (whole file system: {whole_file_system}), {before} before"
            );
        }
    }
}
