//! `grep`: a regex over the lines of the regular files under a folder
//! (symlinks are never followed, files with a NUL byte in their first
//! block are skipped as binary), with optional context lines, bounded by
//! `max_results` and `timeout_seconds`.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};

use globset::GlobMatcher;
use regex::bytes::{Regex, RegexBuilder};
use serde_json::{Value, json};

use super::sandbox::{FsError, RelPath, Root};
use super::search::{Flow, Limits, finish, walk};

/// A matched line longer than this is cut (with `…`).
const MAX_LINE_CHARS: usize = 500;
/// The clock is read every this many lines.
const LINES_PER_CLOCK_CHECK: u64 = 1024;

/// What to look for.
pub struct Query {
    /// The regex.
    pub regex: Regex,
    /// Only files whose name or path (relative to the search folder)
    /// match this glob.
    pub glob_filter: Option<GlobMatcher>,
    /// Lines of context before and after each match.
    pub context_lines: usize,
}

impl Query {
    /// Builds the query from the tool arguments.
    pub fn new(
        pattern: &str,
        case_insensitive: bool,
        glob_filter: Option<&str>,
        context_lines: Option<u64>,
    ) -> Result<Query, FsError> {
        let regex = RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .build()
            .map_err(|e| FsError::Invalid(format!("pattern {pattern:?} is invalid: {e}")))?;
        let glob_filter = glob_filter
            .filter(|g| !g.trim().is_empty())
            .map(|g| super::search::glob(g, "glob_filter"))
            .transpose()?;
        Ok(Query {
            regex,
            glob_filter,
            context_lines: context_lines.unwrap_or(0).min(50) as usize,
        })
    }

    fn selects(&self, base: &RelPath, path: &RelPath) -> bool {
        let Some(filter) = &self.glob_filter else {
            return true;
        };
        let relative = path
            .as_path()
            .strip_prefix(base.as_path())
            .unwrap_or(path.as_path());
        filter.is_match(relative) || path.file_name().is_some_and(|n| filter.is_match(n))
    }
}

/// How the search of one file ended.
enum FileEnd {
    Searched,
    Binary,
    Unreadable,
    Full,
    TimedOut,
}

/// Counters of a grep.
#[derive(Default)]
struct Tally {
    matches: Vec<Value>,
    files: u64,
    binary: u64,
    unreadable: Vec<String>,
    truncated: bool,
    timed_out: bool,
}

/// `grep`.
pub fn grep(root: &Root, base: &RelPath, query: &Query, limits: &Limits) -> Value {
    let mut tally = Tally::default();
    let mut end = walk(root, base, limits, |path, file_type| {
        if !file_type.is_file() || !query.selects(base, path) {
            return Flow::Continue;
        }
        match grep_file(root, path, query, limits, &mut tally.matches) {
            FileEnd::Searched => tally.files += 1,
            FileEnd::Binary => tally.binary += 1,
            FileEnd::Unreadable => tally.unreadable.push(path.shown()),
            FileEnd::Full => {
                tally.truncated = true;
                return Flow::Stop;
            }
            FileEnd::TimedOut => {
                tally.timed_out = true;
                return Flow::Stop;
            }
        }
        Flow::Continue
    });
    end.timed_out |= tally.timed_out;
    // Stable: the lines of one file stay in order.
    tally
        .matches
        .sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    let mut answer = json!({
        "root": root.name, "path": base.shown(), "pattern": query.regex.as_str(),
        "count": tally.matches.len(), "matches": tally.matches,
        "files_searched": tally.files, "binary_files_skipped": tally.binary,
    });
    if !tally.unreadable.is_empty() {
        answer["unreadable_files"] = json!(tally.unreadable);
    }
    finish(&mut answer, &end, tally.truncated, limits);
    answer
}

/// Searches one file, appending its matches to `out`.
fn grep_file(
    root: &Root,
    path: &RelPath,
    query: &Query,
    limits: &Limits,
    out: &mut Vec<Value>,
) -> FileEnd {
    let Ok(file) = super::read_file::open_regular(root, path) else {
        return FileEnd::Unreadable;
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    match reader.fill_buf() {
        Ok(head) if head.contains(&0) => return FileEnd::Binary,
        Ok(_) => {}
        Err(_) => return FileEnd::Unreadable,
    }
    let context = query.context_lines;
    let mut before: VecDeque<Value> = VecDeque::with_capacity(context + 1);
    let mut pending: Vec<(usize, usize)> = Vec::new();
    let (mut buffer, mut number) = (Vec::new(), 0u64);
    loop {
        buffer.clear();
        match reader.read_until(b'\n', &mut buffer) {
            Ok(0) => return FileEnd::Searched,
            Ok(_) => number += 1,
            Err(_) => return FileEnd::Unreadable,
        }
        if number.is_multiple_of(LINES_PER_CLOCK_CHECK) && limits.expired() {
            return FileEnd::TimedOut;
        }
        let line = strip_eol(&buffer);
        let numbered = json!({ "line": number, "text": shown(line) });
        pending.retain_mut(|(index, left)| {
            if let Some(after) = out[*index]["after"].as_array_mut() {
                after.push(numbered.clone());
            }
            *left -= 1;
            *left > 0
        });
        if query.regex.is_match(line) {
            if out.len() == limits.max_results {
                return FileEnd::Full;
            }
            let mut found = json!({ "path": path.shown(), "line": number, "text": shown(line) });
            if context > 0 {
                found["before"] = json!(before.iter().collect::<Vec<_>>());
                found["after"] = json!([]);
                pending.push((out.len(), context));
            }
            out.push(found);
        }
        if context > 0 {
            if before.len() == context {
                before.pop_front();
            }
            before.push_back(numbered);
        }
    }
}

fn strip_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A line as text, cut at [`MAX_LINE_CHARS`].
fn shown(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    if text.chars().count() <= MAX_LINE_CHARS {
        return text.into_owned();
    }
    let mut cut: String = text.chars().take(MAX_LINE_CHARS).collect();
    cut.push('…');
    cut
}
