//! Architecture check: the top-level modules of every crate of the
//! workspace import each other without a cycle (issue 19, "no import
//! loop").
//!
//! For each workspace member (`members` of the root `Cargo.toml`) the
//! check starts at every crate root (`src/lib.rs`, `src/main.rs`,
//! `src/bin/*.rs`), follows the `mod` declarations (`#[path]` included)
//! and reads every module's tokens. A `crate::x::…` or `super::…` path
//! (in `use` items, `use crate::{a, b::c}` groups included, and inline in
//! code and macro bodies) is resolved to the top-level module it names,
//! and counts as an edge from the top-level module of the file holding
//! it. Roots are not nodes: `lib.rs` only declares modules. Files
//! directly in `src/` (`context.rs`) are modules like directories.
//!
//! Not counted, by decision:
//! - test code: a `#[cfg(test)]` item (a `mod tests;` and the files
//!   beneath it, such as `tests.rs`, `*_tests.rs` and `tests/`, an inline
//!   `mod tests { … }`, a test-only `use`), because a test may build its
//!   fixtures from any layer, the way cargo allows cycles through
//!   dev-dependencies;
//! - comments (intra-doc links included), strings, `$crate` and
//!   visibility paths (`pub(in crate::store)`).
//!
//! A failure names the crate, one cycle, and each edge of the strongly
//! connected modules with the place (file:line) of its first reference.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

#[test]
fn top_level_modules_import_each_other_without_a_cycle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for member in workspace_members(&workspace) {
        let dir = workspace.join(&member);
        for root in crate_roots(&dir.join("src")) {
            let graph = module_graph(&root);
            checked += 1;
            // The layering as found (`cargo test … -- --nocapture`).
            println!(
                "{member} ({}):",
                root.strip_prefix(&workspace).unwrap_or(&root).display()
            );
            for module in &graph.modules {
                let imports: Vec<&str> = graph
                    .edges
                    .keys()
                    .filter(|(from, _)| from == module)
                    .map(|(_, to)| to.as_str())
                    .collect();
                println!("  {module} -> {}", imports.join(", "));
            }
            if let Some(report) = cycle_report(&graph) {
                let report = report.replace(&format!("{}/", workspace.display()), "");
                failures.push(format!(
                    "{member} ({}):\n{report}",
                    root.strip_prefix(&workspace).unwrap_or(&root).display()
                ));
            }
        }
    }
    assert!(checked >= 3, "found only {checked} crate roots to check");
    assert!(
        failures.is_empty(),
        "top-level modules import each other in a cycle:\n\n{}",
        failures.join("\n\n")
    );
}

/// The checker itself on a made-up crate: a cycle through a group import,
/// a `super::` path and a file directly in `src/` is found; test code and
/// comments are not counted.
#[test]
fn the_check_finds_a_cycle_and_skips_test_code() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("b")).unwrap();
    fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\npub mod c;\n").unwrap();
    fs::write(
        src.join("a.rs"),
        "use crate::{b::inner::Thing, c};\n// crate::c::in_a_comment\n",
    )
    .unwrap();
    fs::write(src.join("b/mod.rs"), "pub mod inner;\n").unwrap();
    fs::write(
        src.join("b/inner.rs"),
        "pub struct Thing;\nfn f() { super::super::c::g(); }\n\
         #[cfg(test)]\nmod tests { use crate::a; }\n",
    )
    .unwrap();
    fs::write(
        src.join("c.rs"),
        "pub fn g() { let _ = \"crate::a\"; }\n#[cfg(test)]\nuse crate::a::X;\n",
    )
    .unwrap();
    let graph = module_graph(&src.join("lib.rs"));
    let edges: BTreeSet<(&str, &str)> = graph
        .edges
        .keys()
        .map(|(from, to)| (from.as_str(), to.as_str()))
        .collect();
    assert_eq!(edges, BTreeSet::from([("a", "b"), ("a", "c"), ("b", "c")]));
    assert!(cycle_report(&graph).is_none());

    fs::write(
        src.join("c.rs"),
        "pub fn g() { let _ = crate::a::f; }\npub(in crate::b) fn h() {}\n",
    )
    .unwrap();
    let report = cycle_report(&module_graph(&src.join("lib.rs"))).expect("a cycle");
    assert!(report.contains("cycle: a -> c -> a"), "{report}");
}

/// The `members` of the workspace's `Cargo.toml`.
fn workspace_members(workspace: &Path) -> Vec<String> {
    let manifest = fs::read_to_string(workspace.join("Cargo.toml")).unwrap();
    let start = manifest.find("members").expect("workspace members");
    let list = &manifest[start..];
    let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
    list.split(',')
        .map(|member| member.trim().trim_matches('"').to_string())
        .filter(|member| !member.is_empty())
        .collect()
}

fn crate_roots(src: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|name| src.join(name))
        .filter(|path| path.is_file())
        .collect();
    if let Ok(entries) = fs::read_dir(src.join("bin")) {
        let mut bins: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .map(|path| {
                if path.is_dir() {
                    path.join("main.rs")
                } else {
                    path
                }
            })
            .filter(|path| path.is_file() && path.extension().is_some_and(|ext| ext == "rs"))
            .collect();
        bins.sort();
        roots.extend(bins);
    }
    roots
}

/// Edges between top-level modules, each with the place of its first
/// reference.
#[derive(Default)]
struct Graph {
    modules: BTreeSet<String>,
    edges: BTreeMap<(String, String), String>,
}

/// A module's file and where its child modules' files are.
struct ModuleFile {
    path: Vec<String>,
    file: PathBuf,
    /// The directory of `mod x;` children's files (`x.rs`, `x/mod.rs`).
    child_dir: PathBuf,
}

fn module_graph(root: &Path) -> Graph {
    let mut graph = Graph::default();
    let mut pending = vec![ModuleFile {
        path: Vec::new(),
        file: root.to_path_buf(),
        child_dir: root.parent().unwrap().to_path_buf(),
    }];
    let mut references = Vec::new();
    while let Some(module) = pending.pop() {
        let source = fs::read_to_string(&module.file)
            .unwrap_or_else(|err| panic!("{}: {err}", module.file.display()));
        let scan = scan_file(&source, &module);
        if module.path.len() == 1 {
            graph.modules.insert(module.path[0].clone());
        }
        for (target, line) in scan.references {
            references.push((
                module.path.clone(),
                target,
                format!("{}:{line}", module.file.display()),
            ));
        }
        pending.extend(scan.children);
    }
    for (from, target, place) in references {
        let (Some(from), Some(to)) = (from.first(), target.first()) else {
            continue;
        };
        if from != to && graph.modules.contains(to) {
            graph
                .edges
                .entry((from.clone(), to.clone()))
                .or_insert(place);
        }
    }
    graph
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Punct(char),
    /// A string literal's contents (only `#[path = "…"]` reads them).
    Str(String),
}

/// Tokens with their line numbers; comments dropped, literals kept as
/// opaque strings, lifetimes and char literals dropped.
fn tokenize(source: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let count_lines = |from: usize, to: usize, line: &mut usize| {
        *line += chars[from..to].iter().filter(|c| **c == '\n').count();
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let start = i;
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            count_lines(start, i.min(chars.len()), &mut line);
        } else if let Some(end) = raw_string_end(&chars, i) {
            let text: String = chars[i..end].iter().collect();
            count_lines(i, end, &mut line);
            tokens.push((Token::Str(text), line));
            i = end;
        } else if c == '"' || (c == 'b' && next == Some('"')) || (c == 'c' && next == Some('"')) {
            let start = i;
            i += if c == '"' { 1 } else { 2 };
            let mut text = String::new();
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    text.push(chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    text.push(chars[i]);
                }
                i += 1;
            }
            i += 1;
            count_lines(start, i.min(chars.len()), &mut line);
            tokens.push((Token::Str(text), line));
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push((Token::Ident(chars[start..i].iter().collect()), line));
        } else {
            tokens.push((Token::Punct(c), line));
            i += 1;
        }
    }
    tokens
}

/// Where a raw string literal (`r"…"`, `r#"…"#`, `br#"…"#`) starting at
/// `i` ends, if one does.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') || chars.get(j) == Some(&'c') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

struct Scan {
    /// Absolute module paths referenced (`crate::a::b` → `[a, b]`), with
    /// their lines.
    references: Vec<(Vec<String>, usize)>,
    children: Vec<ModuleFile>,
}

/// An inline `mod x { … }` open at a brace depth.
struct Inline {
    name: String,
    depth: usize,
}

fn scan_file(source: &str, module: &ModuleFile) -> Scan {
    let tokens = tokenize(source);
    let is = |i: usize, expected: &Token| tokens.get(i).map(|(token, _)| token) == Some(expected);
    let ident = |i: usize| match tokens.get(i) {
        Some((Token::Ident(name), _)) => Some(name.as_str()),
        _ => None,
    };
    let colons = |i: usize| is(i, &Token::Punct(':')) && is(i + 1, &Token::Punct(':'));

    let mut scan = Scan {
        references: Vec::new(),
        children: Vec::new(),
    };
    let mut inline: Vec<Inline> = Vec::new();
    let mut depth = 0;
    // Attributes read since the last item began: cfg(test), path = "…".
    let mut cfg_test = false;
    let mut path_attr: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        let (token, line) = &tokens[i];
        match token {
            Token::Punct('#')
                if is(i + 1, &Token::Punct('['))
                    || (is(i + 1, &Token::Punct('!')) && is(i + 2, &Token::Punct('['))) =>
            {
                let open = if is(i + 1, &Token::Punct('!')) {
                    i + 2
                } else {
                    i + 1
                };
                let close = matching(&tokens, open);
                let body = &tokens[open + 1..close];
                if body.first().map(|(token, _)| token) == Some(&Token::Ident("cfg".into()))
                    && body.len() == 4
                    && body[2].0 == Token::Ident("test".into())
                {
                    if open == i + 2 {
                        // `#![cfg(test)]`: the whole file is test code.
                        return Scan {
                            references: Vec::new(),
                            children: Vec::new(),
                        };
                    }
                    cfg_test = true;
                }
                if let [
                    (Token::Ident(name), _),
                    (Token::Punct('='), _),
                    (Token::Str(path), _),
                ] = body
                    && name == "path"
                {
                    path_attr = Some(path.clone());
                }
                i = close + 1;
                continue;
            }
            _ if cfg_test => {
                // Skip the test-only item.
                i = item_end(&tokens, i);
                cfg_test = false;
                path_attr = None;
                continue;
            }
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|open| open.depth == depth) {
                    inline.pop();
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let Some(name) = ident(i + 1) {
                    if is(i + 2, &Token::Punct(';')) {
                        scan.children
                            .push(child_file(module, &inline, name, path_attr.take()));
                        i += 3;
                        continue;
                    }
                    if is(i + 2, &Token::Punct('{')) {
                        inline.push(Inline {
                            name: name.to_string(),
                            depth,
                        });
                        depth += 1;
                        path_attr = None;
                        i += 3;
                        continue;
                    }
                }
            }
            Token::Ident(word) if word == "crate" && colons(i + 1) => {
                let dollar = i > 0 && is(i - 1, &Token::Punct('$'));
                let visibility = i > 0 && ident(i - 1) == Some("in");
                if !dollar && !visibility {
                    let (targets, end) = path_targets(&tokens, i + 3, Vec::new());
                    scan.references
                        .extend(targets.into_iter().map(|target| (target, *line)));
                    i = end;
                    continue;
                }
            }
            Token::Ident(word) if word == "super" && colons(i + 1) => {
                let mut base: Vec<String> = module.path.clone();
                base.extend(inline.iter().map(|open| open.name.clone()));
                let mut j = i;
                while ident(j) == Some("super") && colons(j + 1) {
                    base.pop();
                    j += 3;
                }
                let visibility = i > 0 && ident(i - 1) == Some("in");
                let (targets, end) = path_targets(&tokens, j, base);
                if !visibility {
                    scan.references
                        .extend(targets.into_iter().map(|target| (target, *line)));
                }
                i = end;
                continue;
            }
            _ => {}
        }
        if matches!(
            token,
            Token::Punct(';') | Token::Punct('{') | Token::Punct('}')
        ) {
            path_attr = None;
        }
        i += 1;
    }
    scan
}

/// The absolute paths named by the path (or `use` tree) starting at `i`
/// after `base::`; only their first segment under the root matters, so
/// one level of names is read. Returns them and where the path ends.
fn path_targets(
    tokens: &[(Token, usize)],
    i: usize,
    base: Vec<String>,
) -> (Vec<Vec<String>>, usize) {
    match tokens.get(i).map(|(token, _)| token) {
        Some(Token::Ident(name)) => {
            let mut target = base;
            if name != "self" {
                target.push(name.clone());
            }
            (vec![target], i + 1)
        }
        Some(Token::Punct('{')) => {
            let close = matching(tokens, i);
            let mut targets = Vec::new();
            let mut nesting = 0;
            let mut item_start = true;
            for (token, _) in &tokens[i + 1..close] {
                match token {
                    Token::Punct('{') => nesting += 1,
                    Token::Punct('}') => nesting -= 1,
                    Token::Punct(',') if nesting == 0 => {
                        item_start = true;
                        continue;
                    }
                    Token::Ident(name) if item_start && nesting == 0 => {
                        let mut target = base.clone();
                        if name != "self" {
                            target.push(name.clone());
                        }
                        targets.push(target);
                    }
                    _ => {}
                }
                item_start = false;
            }
            (targets, close + 1)
        }
        _ => (vec![base], i),
    }
}

/// The file of `mod name;` declared in `module` inside the inline modules
/// `inline`.
fn child_file(
    module: &ModuleFile,
    inline: &[Inline],
    name: &str,
    path_attr: Option<String>,
) -> ModuleFile {
    let mut path = module.path.clone();
    path.extend(inline.iter().map(|open| open.name.clone()));
    path.push(name.to_string());
    if let Some(relative) = path_attr {
        let mut dir = if inline.is_empty() {
            module.file.parent().unwrap().to_path_buf()
        } else {
            module.child_dir.clone()
        };
        for open in inline {
            dir.push(&open.name);
        }
        let file = dir.join(relative);
        let child_dir = file.parent().unwrap().join(file.file_stem().unwrap());
        return ModuleFile {
            path,
            file,
            child_dir,
        };
    }
    let mut dir = module.child_dir.clone();
    for open in inline {
        dir.push(&open.name);
    }
    let flat = dir.join(format!("{name}.rs"));
    if flat.is_file() {
        ModuleFile {
            path,
            file: flat,
            child_dir: dir.join(name),
        }
    } else {
        ModuleFile {
            path,
            file: dir.join(name).join("mod.rs"),
            child_dir: dir.join(name),
        }
    }
}

/// The index of the bracket closing the one at `open`.
fn matching(tokens: &[(Token, usize)], open: usize) -> usize {
    let mut depth = 0;
    for (k, (token, _)) in tokens.iter().enumerate().skip(open) {
        match token {
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    tokens.len() - 1
}

/// Where the item starting at `i` ends: a `use`/`const`/`static`/`type`
/// at its `;`, anything else at its `;` or after its first `{ … }` block.
fn item_end(tokens: &[(Token, usize)], i: usize) -> usize {
    let to_semicolon = tokens[i..]
        .iter()
        .take_while(|(token, _)| !matches!(token, Token::Punct(';' | '{' | '(')))
        .any(|(token, _)| {
            matches!(token, Token::Ident(word) if ["use", "const", "static", "type", "let"].contains(&word.as_str()))
        });
    let mut k = i;
    while k < tokens.len() {
        match &tokens[k].0 {
            Token::Punct(';') => return k + 1,
            Token::Punct('(' | '[') => k = matching(tokens, k),
            Token::Punct('{') if !to_semicolon => return matching(tokens, k) + 1,
            Token::Punct('{') => k = matching(tokens, k),
            _ => {}
        }
        k += 1;
    }
    k
}

/// One cycle and every edge among the modules that form cycles, or `None`.
fn cycle_report(graph: &Graph) -> Option<String> {
    let nodes: Vec<&String> = graph.modules.iter().collect();
    let index = |name: &String| nodes.iter().position(|node| *node == name).unwrap();
    let mut successors = vec![Vec::new(); nodes.len()];
    for (from, to) in graph.edges.keys() {
        successors[index(from)].push(index(to));
    }
    let components = strongly_connected(&successors);
    let mut report = Vec::new();
    for component in components.iter().filter(|component| component.len() > 1) {
        let members: BTreeSet<usize> = component.iter().copied().collect();
        let cycle = find_cycle(&successors, &members);
        let names: Vec<&str> = cycle.iter().map(|&k| nodes[k].as_str()).collect();
        report.push(format!("  cycle: {} -> {}", names.join(" -> "), names[0]));
        report.push("  edges among these modules (first reference):".to_string());
        for ((from, to), place) in &graph.edges {
            if members.contains(&index(from)) && members.contains(&index(to)) {
                report.push(format!("    {from} -> {to}  ({place})"));
            }
        }
    }
    (!report.is_empty()).then(|| report.join("\n"))
}

/// Tarjan's strongly connected components.
fn strongly_connected(successors: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        successors: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        components: Vec<Vec<usize>>,
    }
    fn visit(state: &mut State, v: usize) {
        state.index[v] = Some(state.next);
        state.low[v] = state.next;
        state.next += 1;
        state.stack.push(v);
        state.on_stack[v] = true;
        for &w in &state.successors[v] {
            match state.index[w] {
                None => {
                    visit(state, w);
                    state.low[v] = state.low[v].min(state.low[w]);
                }
                Some(w_index) if state.on_stack[w] => state.low[v] = state.low[v].min(w_index),
                Some(_) => {}
            }
        }
        if Some(state.low[v]) == state.index[v] {
            let mut component = Vec::new();
            while let Some(w) = state.stack.pop() {
                state.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            component.sort();
            state.components.push(component);
        }
    }
    let n = successors.len();
    let mut state = State {
        successors,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.components
}

/// A shortest cycle through the smallest member of a strongly connected
/// set (breadth-first back to it).
fn find_cycle(successors: &[Vec<usize>], members: &BTreeSet<usize>) -> Vec<usize> {
    let start = *members.iter().next().unwrap();
    let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &successors[v] {
            if !members.contains(&w) {
                continue;
            }
            if w == start {
                let mut cycle = vec![v];
                let mut at = v;
                while at != start {
                    at = parent[&at];
                    cycle.push(at);
                }
                cycle.reverse();
                return cycle;
            }
            if w != start && !parent.contains_key(&w) {
                parent.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    vec![start]
}
