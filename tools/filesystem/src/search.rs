//! `grep` and `glob`: walks under a folder of a root that never follow a
//! symlink (a link is reported by `glob`, skipped by `grep`), bounded by
//! `max_depth`, `max_results` and `timeout_seconds`; an answer says when
//! it was cut (`truncated`) or stopped by the clock (`timed_out`).

use std::time::{Duration, Instant};

use cap_std::fs::FileType;
use globset::{Glob, GlobBuilder, GlobMatcher};
use serde_json::{Value, json};

use super::sandbox::{FsError, RelPath, Root};

/// Default `max_results`.
pub const DEFAULT_MAX_RESULTS: usize = 100;
/// Largest `max_results` accepted.
pub const MAX_RESULTS_CAP: usize = 10_000;
/// Default `timeout_seconds`.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;

/// The bounds of one search.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Stop after this many results.
    pub max_results: usize,
    /// Stop at this instant.
    pub deadline: Instant,
    /// Entries directly in the base folder are depth 1.
    pub max_depth: Option<usize>,
}

impl Limits {
    /// The limits from the tool arguments (defaults 100 results, 300 s).
    pub fn new(
        max_results: Option<u64>,
        timeout_seconds: Option<u64>,
        max_depth: Option<u64>,
    ) -> Limits {
        let max_results = max_results
            .map(|n| n.clamp(1, MAX_RESULTS_CAP as u64) as usize)
            .unwrap_or(DEFAULT_MAX_RESULTS);
        let timeout = Duration::from_secs(timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS));
        Limits {
            max_results,
            deadline: Instant::now() + timeout,
            max_depth: max_depth.map(|d| d as usize),
        }
    }

    /// True once the deadline has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }
}

/// What a visitor tells the walk.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// Stop the walk (enough results, or out of time).
    Stop,
}

/// How a walk ended.
#[derive(Debug, Default)]
pub struct WalkEnd {
    /// The deadline passed.
    pub timed_out: bool,
    /// Folders that could not be read (permissions, races).
    pub unreadable: Vec<String>,
}

/// The folder to search: `path` (default the root) must be a folder.
pub fn base(root: &Root, path: Option<&str>) -> Result<RelPath, FsError> {
    let base = root.path(path.unwrap_or(""))?;
    let meta = root
        .dir
        .metadata(base.fs())
        .map_err(|e| root.error(&base, "stat", e))?;
    if !meta.is_dir() {
        return Err(root.invalid(&base, "is not a folder"));
    }
    Ok(base)
}

/// Walks the tree under `base` depth first, entries of a folder in name
/// order, calling `visit(path, type, depth)` for each entry; descends only
/// into real folders (never through a symlink).
pub fn walk(
    root: &Root,
    base: &RelPath,
    limits: &Limits,
    mut visit: impl FnMut(&RelPath, &FileType) -> Flow,
) -> WalkEnd {
    let mut end = WalkEnd::default();
    let mut stack = vec![(base.clone(), 0usize)];
    while let Some((folder, depth)) = stack.pop() {
        let Ok(entries) = root.dir.read_dir(folder.fs()) else {
            end.unreadable.push(folder.shown());
            continue;
        };
        let mut children: Vec<(RelPath, FileType)> = entries
            .flatten()
            .filter_map(|e| Some((folder.join(&e.file_name()), e.file_type().ok()?)))
            .collect();
        children.sort_by(|a, b| a.0.cmp(&b.0));
        let mut subfolders = Vec::new();
        for (path, file_type) in children {
            if limits.expired() {
                end.timed_out = true;
                return end;
            }
            if visit(&path, &file_type) == Flow::Stop {
                return end;
            }
            if file_type.is_dir() && limits.max_depth.is_none_or(|max| depth + 1 < max) {
                subfolders.push((path, depth + 1));
            }
        }
        stack.extend(subfolders.into_iter().rev());
    }
    end
}

/// The answer fields every search shares.
pub fn finish(answer: &mut Value, end: &WalkEnd, truncated: bool, limits: &Limits) {
    answer["truncated"] = json!(truncated);
    answer["timed_out"] = json!(end.timed_out);
    let mut notes = Vec::new();
    if truncated {
        notes.push(format!(
            "results were cut at max_results ({}); narrow the search or raise max_results",
            limits.max_results
        ));
    }
    if end.timed_out {
        notes.push("the search hit timeout_seconds; the results are partial".to_string());
    }
    if !end.unreadable.is_empty() {
        answer["unreadable_folders"] = json!(end.unreadable);
    }
    if !notes.is_empty() {
        answer["note"] = json!(notes.join("; "));
    }
}

/// `glob`'s selection: a glob pattern (`**` crosses folders, `*` does not)
/// or a regex, matched against the path relative to the search folder.
pub enum Matcher {
    /// A glob.
    Glob(GlobMatcher),
    /// A regular expression (unanchored).
    Regex(regex::Regex),
}

impl Matcher {
    /// Exactly one of `pattern` and `regex`.
    pub fn new(pattern: Option<&str>, regex: Option<&str>) -> Result<Matcher, FsError> {
        match (pattern, regex) {
            (Some(p), None) => Ok(Matcher::Glob(glob(p, "pattern")?)),
            (None, Some(r)) => regex::Regex::new(r)
                .map(Matcher::Regex)
                .map_err(|e| FsError::Invalid(format!("regex {r:?} is invalid: {e}"))),
            _ => Err(FsError::Invalid(
                "give exactly one of `pattern` (a glob such as **/*.rs) or `regex`".into(),
            )),
        }
    }

    /// True when `relative` is selected.
    pub fn matches(&self, relative: &std::path::Path) -> bool {
        match self {
            Matcher::Glob(glob) => glob.is_match(relative),
            Matcher::Regex(regex) => regex.is_match(&relative.to_string_lossy()),
        }
    }
}

/// A glob whose `*` stays within one folder name.
pub fn glob(pattern: &str, field: &str) -> Result<GlobMatcher, FsError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g: Glob| g.compile_matcher())
        .map_err(|e| FsError::Invalid(format!("{field} {pattern:?} is not a valid glob: {e}")))
}

/// `glob`'s `type_filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeFilter {
    /// Everything (default).
    All,
    /// Regular files.
    File,
    /// Folders.
    Directory,
    /// Symlinks (never followed).
    Symlink,
}

impl TypeFilter {
    /// `file`, `directory`, `symlink` or `all` (default).
    pub fn parse(filter: Option<&str>) -> Result<TypeFilter, FsError> {
        match filter.map(str::trim) {
            None | Some("") | Some("all") => Ok(TypeFilter::All),
            Some("file") => Ok(TypeFilter::File),
            Some("directory") => Ok(TypeFilter::Directory),
            Some("symlink") => Ok(TypeFilter::Symlink),
            Some(other) => Err(FsError::Invalid(format!(
                "unknown type_filter {other:?}; use file, directory, symlink or all"
            ))),
        }
    }

    fn matches(self, file_type: &FileType) -> bool {
        match self {
            TypeFilter::All => true,
            TypeFilter::File => file_type.is_file(),
            TypeFilter::Directory => file_type.is_dir(),
            TypeFilter::Symlink => file_type.is_symlink(),
        }
    }
}

/// `glob`: paths (relative to the root) under `base` selected by `matcher`.
pub fn glob_search(
    root: &Root,
    base: &RelPath,
    matcher: &Matcher,
    type_filter: TypeFilter,
    limits: &Limits,
) -> Value {
    let mut found = Vec::new();
    let mut truncated = false;
    let end = walk(root, base, limits, |path, file_type| {
        let relative = path
            .as_path()
            .strip_prefix(base.as_path())
            .unwrap_or(path.as_path());
        if type_filter.matches(file_type) && matcher.matches(relative) {
            if found.len() == limits.max_results {
                truncated = true;
                return Flow::Stop;
            }
            found.push(json!({ "path": path.shown(), "type": super::read::kind(file_type) }));
        }
        Flow::Continue
    });
    found.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    let mut answer = json!({
        "root": root.name, "path": base.shown(), "count": found.len(), "matches": found,
    });
    finish(&mut answer, &end, truncated, limits);
    answer
}
