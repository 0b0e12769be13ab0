//! The single-path tools and copy/move behave as documented.

use std::os::unix::fs::PermissionsExt as _;

use super::super::read::{self, Algorithm};
use super::super::read_file::{Window, read_file};
use super::super::transfer::{self, End};
use super::super::write::{self, WriteMode};
use super::{Fixture, err, p};

const MAX: u64 = 1 << 20;

#[test]
fn list_roots_names_the_allowed_tools() {
    let fx = Fixture::new();
    let roots = read::list_roots(&fx.sandbox);
    assert_eq!(roots["roots"][0]["name"], "main");
    assert_eq!(
        roots["roots"][0]["allowed_tools"].as_array().unwrap().len(),
        15
    );
    assert_eq!(
        roots["roots"][2]["allowed_tools"],
        serde_json::json!(["list_roots", "list_folder", "read_file", "grep", "glob"])
    );
}

#[test]
fn list_folder_sorts_entries_and_names_types() {
    let fx = Fixture::new();
    fx.put("main/b.txt", "bb");
    fx.put("main/a/inner.txt", "i");
    fx.link("b.txt", "main/c-link");
    let listed = read::list_folder(fx.root("main"), &p("")).unwrap();
    let entries = listed["entries"].as_array().unwrap();
    let summary: Vec<(String, String)> = entries
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["type"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("a".into(), "directory".into()),
            ("b.txt".into(), "file".into()),
            ("c-link".into(), "symlink".into())
        ]
    );
    assert_eq!(entries[1]["size"], 2);
    assert!(entries[1]["mtime"].as_str().unwrap().ends_with('Z'));
    let e = err(read::list_folder(fx.root("main"), &p("b.txt")));
    assert!(e.to_string().contains("is not a folder"), "{e}");
    let e = err(read::list_folder(fx.root("main"), &p("missing")));
    assert_eq!(e.to_string(), "root \"main\": \"missing\" does not exist");
}

#[test]
fn read_file_whole_and_in_windows() {
    let fx = Fixture::with_config("max_full_read_size: 20");
    fx.put("main/small.txt", "one\ntwo\nthree\n");
    fx.put("main/big.txt", &"line\n".repeat(10));
    let root = fx.root("main");
    let max = fx.sandbox.max_full_read_size;
    let whole = read_file(root, &p("small.txt"), Window::default(), max).unwrap();
    assert_eq!(whole["content"], "one\ntwo\nthree\n");
    let e = err(read_file(root, &p("big.txt"), Window::default(), max)).to_string();
    assert!(
        e.contains("50 bytes, more than max_full_read_size (20 bytes)"),
        "{e}"
    );
    assert!(
        e.contains("offset_bytes/limit_bytes or offset_lines/limit_lines"),
        "{e}"
    );
    let bytes = Window {
        offset_bytes: Some(4),
        limit_bytes: Some(3),
        ..Window::default()
    };
    let part = read_file(root, &p("small.txt"), bytes, max).unwrap();
    assert_eq!(
        (part["content"].as_str(), part["next_offset_bytes"].as_u64()),
        (Some("two"), Some(7))
    );
    let capped = Window {
        offset_bytes: Some(0),
        limit_bytes: Some(1000),
        ..Window::default()
    };
    let part = read_file(root, &p("big.txt"), capped, max).unwrap();
    assert_eq!(part["bytes"], 20);
    assert!(part["note"].as_str().unwrap().contains("capped"), "{part}");
    let lines = Window {
        offset_lines: Some(1),
        limit_lines: Some(1),
        ..Window::default()
    };
    let part = read_file(root, &p("small.txt"), lines, max).unwrap();
    assert_eq!(
        (part["content"].as_str(), part["first_line"].as_u64()),
        (Some("two\n"), Some(2))
    );
    assert_eq!(part["next_offset_lines"], 2);
    let rest = Window {
        offset_lines: Some(2),
        ..Window::default()
    };
    let part = read_file(root, &p("small.txt"), rest, max).unwrap();
    assert_eq!(
        (part["content"].as_str(), part["eof"].as_bool()),
        (Some("three\n"), Some(true))
    );
    let both = Window {
        offset_bytes: Some(1),
        limit_lines: Some(1),
        ..Window::default()
    };
    let e = err(read_file(root, &p("small.txt"), both, max)).to_string();
    assert!(e.contains("cannot be combined"), "{e}");
    let e = err(read_file(root, &p(""), Window::default(), max)).to_string();
    assert!(e.contains("is a folder"), "{e}");
}

#[test]
fn read_file_returns_binary_as_base64() {
    let fx = Fixture::new();
    std::fs::write(fx.host("main/bin"), [0u8, 159, 146, 150]).unwrap();
    let read = read_file(fx.root("main"), &p("bin"), Window::default(), MAX).unwrap();
    assert_eq!(
        (read["encoding"].as_str(), read["content"].as_str()),
        (Some("base64"), Some("AJ+Slg=="))
    );
}

#[test]
fn stat_hash_and_permissions() {
    let fx = Fixture::new();
    fx.put("main/abc.txt", "abc");
    std::fs::set_permissions(
        fx.host("main/abc.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let root = fx.root("main");
    let stat = read::stat_file(root, &p("abc.txt")).unwrap();
    assert_eq!(
        (stat["type"].as_str(), stat["size"].as_u64()),
        (Some("file"), Some(3))
    );
    assert_eq!(stat["mode"], "0640");
    let cases = [
        (Algorithm::Md5, "900150983cd24fb0d6963f7d28e17f72"),
        (Algorithm::Sha1, "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (
            Algorithm::Sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
    ];
    for (algorithm, hex) in cases {
        let hashed = read::hash_file(root, &p("abc.txt"), algorithm).unwrap();
        assert_eq!(hashed["hash"], hex);
    }
    assert!(read::hash_file(root, &p(""), Algorithm::Md5).is_err());
    let perms = read::permissions_file(root, &p("abc.txt")).unwrap();
    assert_eq!(
        (perms["mode"].as_str(), perms["permissions"].as_str()),
        (Some("0640"), Some("rw-r-----"))
    );
    assert!(perms["uid"].is_u64() && perms["gid"].is_u64());
}

#[test]
fn write_file_modes() {
    let fx = Fixture::new();
    let root = fx.root("main");
    let made = write::write_file(root, &p("deep/er/f.txt"), "one", WriteMode::Overwrite).unwrap();
    assert_eq!(made["created"], true);
    std::fs::set_permissions(
        fx.host("main/deep/er/f.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    write::write_file(root, &p("deep/er/f.txt"), "two", WriteMode::Overwrite).unwrap();
    let host = fx.host("main/deep/er/f.txt");
    assert_eq!(std::fs::read_to_string(&host).unwrap(), "two");
    assert_eq!(
        std::fs::metadata(&host).unwrap().permissions().mode() & 0o777,
        0o600
    );
    write::write_file(root, &p("deep/er/f.txt"), "+3", WriteMode::Append).unwrap();
    assert_eq!(std::fs::read_to_string(&host).unwrap(), "two+3");
    let e = err(write::write_file(
        root,
        &p("deep/er/f.txt"),
        "x",
        WriteMode::CreateOnly,
    ));
    assert!(
        e.to_string().contains("already exists (mode create_only)"),
        "{e}"
    );
    write::write_file(root, &p("deep/new.txt"), "n", WriteMode::CreateOnly).unwrap();
    let e = err(write::write_file(
        root,
        &p("deep"),
        "x",
        WriteMode::Overwrite,
    ));
    assert!(e.to_string().contains("is a folder"), "{e}");
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(fx.host("main/deep/er"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["f.txt"]);
    assert!(WriteMode::parse(Some("truncate")).is_err());
}

#[test]
fn patch_file_applies_all_hunks_or_none() {
    let fx = Fixture::new();
    fx.put("main/p.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");
    let root = fx.root("main");
    let good = "--- a/p.txt\n+++ b/p.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -8,3 +8,3 @@\n h\n-i\n+I\n j\n";
    let patched = write::patch_file(root, &p("p.txt"), good, MAX).unwrap();
    assert_eq!(patched["hunks"], 2);
    assert_eq!(
        std::fs::read_to_string(fx.host("main/p.txt")).unwrap(),
        "a\nB\nc\nd\ne\nf\ng\nh\nI\nj\n"
    );
    let half = "--- a/p.txt\n+++ b/p.txt\n@@ -1,3 +1,3 @@\n a\n-B\n+bb\n c\n@@ -8,3 +8,3 @@\n h\n-zzz\n+I\n j\n";
    let e = err(write::patch_file(root, &p("p.txt"), half, MAX)).to_string();
    assert!(e.contains("does not apply") && e.contains("hunk #2"), "{e}");
    assert_eq!(
        std::fs::read_to_string(fx.host("main/p.txt")).unwrap(),
        "a\nB\nc\nd\ne\nf\ng\nh\nI\nj\n"
    );
    let create = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n";
    let made = write::patch_file(root, &p("sub/new.txt"), create, MAX).unwrap();
    assert_eq!(made["created"], true);
    assert_eq!(
        std::fs::read_to_string(fx.host("main/sub/new.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert!(write::patch_file(root, &p("p.txt"), "not a diff", MAX).is_err());
}

#[test]
fn folders_are_created_idempotently_and_removed_recursively() {
    let fx = Fixture::new();
    let root = fx.root("main");
    assert_eq!(
        write::create_folder(root, &p("x/y")).unwrap()["created"],
        true
    );
    assert_eq!(
        write::create_folder(root, &p("x/y")).unwrap()["created"],
        false
    );
    fx.put("main/x/y/f.txt", "f");
    fx.link(fx.host("outside"), "main/x/y/out");
    let e = err(write::create_folder(root, &p("x/y/f.txt")));
    assert!(e.to_string().contains("not a folder"), "{e}");
    let e = err(write::remove_file(root, &p("x")));
    assert!(e.to_string().contains("use remove_folder"), "{e}");
    let e = err(write::remove_folder(root, &p("x/y/f.txt")));
    assert!(e.to_string().contains("use remove_file"), "{e}");
    write::remove_folder(root, &p("x")).unwrap();
    assert!(!fx.host("main/x").exists());
    assert!(
        fx.host("outside/secret.txt").exists(),
        "a link inside was followed"
    );
    write::write_file(root, &p("f"), "f", WriteMode::Overwrite).unwrap();
    write::remove_file(root, &p("f")).unwrap();
    assert!(
        err(write::remove_file(root, &p("f")))
            .to_string()
            .contains("does not exist")
    );
}

fn end<'a>(fx: &'a Fixture, root: &str, path: &str) -> End<'a> {
    End {
        root: fx.sandbox.root(root, "copy").unwrap(),
        path: p(path),
    }
}

#[test]
fn copy_files_and_trees_within_and_across_roots() {
    let fx = Fixture::new();
    fx.put("main/t/a.txt", "a");
    fx.put("main/t/sub/b.txt", "bb");
    fx.link("a.txt", "main/t/link");
    let copied = transfer::copy(end(&fx, "main", "t"), end(&fx, "other", "copy/t2")).unwrap();
    assert_eq!(
        (copied["files"].as_u64(), copied["bytes"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(copied["skipped_symlinks"], serde_json::json!(["t/link"]));
    assert_eq!(
        std::fs::read_to_string(fx.host("other/copy/t2/sub/b.txt")).unwrap(),
        "bb"
    );
    transfer::copy(end(&fx, "main", "t/a.txt"), end(&fx, "main", "a-copy.txt")).unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.host("main/a-copy.txt")).unwrap(),
        "a"
    );
    let e = err(transfer::copy(
        end(&fx, "main", "t/a.txt"),
        end(&fx, "main", "a-copy.txt"),
    ));
    assert!(e.to_string().contains("already exists"), "{e}");
    let e = err(transfer::copy(
        end(&fx, "main", "t"),
        end(&fx, "main", "t/sub/again"),
    ));
    assert!(e.to_string().contains("inside itself"), "{e}");
    assert!(transfer::copy(end(&fx, "main", "missing"), end(&fx, "main", "m")).is_err());
}

#[test]
fn copy_between_overlapping_roots_does_not_recurse_forever() {
    let fx = Fixture::new();
    fx.put("main/nested/f.txt", "f");
    let yaml = format!(
        "roots:\n  - {{name: top, path: {p}/main, allowed_tools: [\"*\"]}}\n  \
         - {{name: inner, path: {p}/main/nested, allowed_tools: [\"*\"]}}\n",
        p = fx.dir.path().display()
    );
    let sandbox = super::super::sandbox::Sandbox::open(
        &super::super::config::FsConfig::parse(&yaml).unwrap(),
    )
    .unwrap();
    let from = End {
        root: sandbox.root("top", "copy").unwrap(),
        path: p(""),
    };
    let to = End {
        root: sandbox.root("inner", "copy").unwrap(),
        path: p("backup"),
    };
    transfer::copy(from, to).unwrap();
    assert!(fx.host("main/nested/backup/nested/f.txt").exists());
    assert!(!fx.host("main/nested/backup/nested/backup").exists());
}

#[test]
fn move_renames_within_a_root_and_moves_across_roots() {
    let fx = Fixture::new();
    fx.put("main/m.txt", "m");
    fx.put("main/d/x.txt", "x");
    let moved =
        transfer::move_path(end(&fx, "main", "m.txt"), end(&fx, "main", "n/m2.txt")).unwrap();
    assert_eq!(moved["method"], "rename");
    assert!(!fx.host("main/m.txt").exists() && fx.host("main/n/m2.txt").exists());
    transfer::move_path(end(&fx, "main", "d"), end(&fx, "other", "d")).unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.host("other/d/x.txt")).unwrap(),
        "x"
    );
    fx.put("main/e.txt", "e");
    let e = err(transfer::move_path(
        end(&fx, "main", "e.txt"),
        end(&fx, "main", "n/m2.txt"),
    ));
    assert!(e.to_string().contains("already exists"), "{e}");
    let e = err(transfer::move_path(
        end(&fx, "main", "n"),
        end(&fx, "main", "n/inner"),
    ));
    assert!(e.to_string().contains("inside itself"), "{e}");
}
