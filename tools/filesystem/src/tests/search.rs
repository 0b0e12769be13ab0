//! `grep` and `glob`: matching, filters, depth, and the result and time
//! bounds reported in the answer.

use serde_json::Value;

use super::super::grep::{Query, grep};
use super::super::search::{Limits, Matcher, TypeFilter, base, glob_search};
use super::{Fixture, p};

fn paths(answer: &Value) -> Vec<String> {
    answer["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_string())
        .collect()
}

fn tree() -> Fixture {
    let fx = Fixture::new();
    fx.put("main/src/lib.rs", "fn main() {}\n// TODO: one\n");
    fx.put("main/src/deep/mod.rs", "a\nb\nTodo: two\nc\nd\n");
    fx.put("main/README.md", "# todo list\n");
    std::fs::write(fx.host("main/blob.bin"), b"TODO\0binary").unwrap();
    fx
}

#[test]
fn grep_finds_lines_with_filters_and_context() {
    let fx = tree();
    let root = fx.root("main");
    let all = Limits::new(None, None, None);
    let query = Query::new("TODO", false, None, None).unwrap();
    let found = grep(root, &p(""), &query, &all);
    assert_eq!(paths(&found), ["src/lib.rs"], "{found}");
    assert_eq!(found["matches"][0]["line"], 2);
    assert_eq!(found["binary_files_skipped"], 1);
    assert_eq!(
        (found["truncated"].as_bool(), found["timed_out"].as_bool()),
        (Some(false), Some(false))
    );
    let query = Query::new("todo", true, Some("*.rs"), Some(1)).unwrap();
    let found = grep(root, &p(""), &query, &all);
    assert_eq!(paths(&found), ["src/deep/mod.rs", "src/lib.rs"], "{found}");
    let deep = &found["matches"][0];
    assert_eq!(
        (
            deep["before"][0]["text"].as_str(),
            deep["after"][0]["text"].as_str()
        ),
        (Some("b"), Some("c"))
    );
    let query = Query::new("todo", true, Some("src/**/*.rs"), None).unwrap();
    assert_eq!(grep(root, &p(""), &query, &all)["count"], 2);
    let query = Query::new("todo", true, Some("*.rs"), None).unwrap();
    let found = grep(root, &p("src"), &query, &Limits::new(None, None, Some(1)));
    assert_eq!(paths(&found), ["src/lib.rs"], "max_depth 1: {found}");
    assert!(Query::new("(", false, None, None).is_err());
}

#[test]
fn grep_says_when_results_were_cut_or_time_ran_out() {
    let fx = Fixture::new();
    fx.put("main/many.txt", &"hit\n".repeat(50));
    let root = fx.root("main");
    let query = Query::new("hit", false, None, None).unwrap();
    let found = grep(root, &p(""), &query, &Limits::new(Some(5), None, None));
    assert_eq!(
        (found["count"].as_u64(), found["truncated"].as_bool()),
        (Some(5), Some(true))
    );
    assert!(
        found["note"].as_str().unwrap().contains("max_results (5)"),
        "{found}"
    );
    let found = grep(root, &p(""), &query, &Limits::new(None, Some(0), None));
    assert_eq!(found["timed_out"], true, "{found}");
    assert!(
        found["note"].as_str().unwrap().contains("timeout_seconds"),
        "{found}"
    );
    let found = grep(root, &p(""), &query, &Limits::new(None, None, None));
    assert_eq!(
        (found["count"].as_u64(), found["truncated"].as_bool()),
        (Some(50), Some(false))
    );
}

#[test]
fn glob_by_pattern_regex_and_type() {
    let fx = tree();
    fx.link("README.md", "main/readme-link");
    let root = fx.root("main");
    let all = Limits::new(None, None, None);
    let rs = Matcher::new(Some("**/*.rs"), None).unwrap();
    assert_eq!(
        paths(&glob_search(root, &p(""), &rs, TypeFilter::All, &all)),
        ["src/deep/mod.rs", "src/lib.rs"]
    );
    let top = Matcher::new(Some("*.rs"), None).unwrap();
    assert_eq!(
        paths(&glob_search(root, &p("src"), &top, TypeFilter::All, &all)),
        ["src/lib.rs"]
    );
    let regex = Matcher::new(None, Some(r"\.(md|bin)$")).unwrap();
    assert_eq!(
        paths(&glob_search(root, &p(""), &regex, TypeFilter::File, &all)),
        ["README.md", "blob.bin"]
    );
    let any = Matcher::new(Some("**"), None).unwrap();
    assert_eq!(
        paths(&glob_search(
            root,
            &p(""),
            &any,
            TypeFilter::Directory,
            &all
        )),
        ["src", "src/deep"]
    );
    assert_eq!(
        paths(&glob_search(root, &p(""), &any, TypeFilter::Symlink, &all)),
        ["readme-link"]
    );
    let cut = glob_search(
        root,
        &p(""),
        &any,
        TypeFilter::All,
        &Limits::new(Some(2), None, None),
    );
    assert_eq!(
        (cut["count"].as_u64(), cut["truncated"].as_bool()),
        (Some(2), Some(true))
    );
    let shallow = glob_search(
        root,
        &p(""),
        &any,
        TypeFilter::All,
        &Limits::new(None, None, Some(1)),
    );
    assert_eq!(
        paths(&shallow),
        ["README.md", "blob.bin", "readme-link", "src"]
    );
    assert!(Matcher::new(Some("*"), Some("x")).is_err() && Matcher::new(None, None).is_err());
    assert!(TypeFilter::parse(Some("socket")).is_err());
    assert!(base(root, Some("README.md")).is_err());
}
