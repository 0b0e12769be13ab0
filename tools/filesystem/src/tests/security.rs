//! Every way out of a root, refused: `..`, absolute paths, symlinks to
//! `/etc`, to the parent, created after startup, dangling, through a
//! symlinked folder, swapped in during the operation; for reads, writes,
//! patches, hashes, copies, moves, removals and searches.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::super::read::{self, Algorithm};
use super::super::read_file::{Window, read_file};
use super::super::sandbox::{FsError, RelPath};
use super::super::search::{Limits, Matcher, TypeFilter, glob_search};
use super::super::transfer::{self, End};
use super::super::write::{self, WriteMode};
use super::{Fixture, SECRET, assert_escape, err, p};

const MAX: u64 = 1 << 20;

#[test]
fn dot_dot_and_absolute_paths_are_refused_before_any_access() {
    for raw in [
        "..",
        "../outside/secret.txt",
        "a/../../outside",
        "a/..",
        "./..",
    ] {
        match RelPath::parse("main", raw) {
            Err(FsError::BadPath { reason, .. }) => assert!(reason.contains(".."), "{raw}"),
            other => panic!("{raw}: {other:?}"),
        }
    }
    for raw in ["/etc/passwd", "/", "//tmp"] {
        let e = RelPath::parse("main", raw).unwrap_err();
        assert!(
            e.to_string().contains("absolute paths are not allowed"),
            "{e}"
        );
    }
    let e = RelPath::parse("main", "a\0b").unwrap_err();
    assert!(e.to_string().contains("NUL"), "{e}");
    let fx = Fixture::new();
    let root = fx.root("main");
    let e = root.path("../outside/secret.txt").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("root \"main\": path \"../outside/secret.txt\""),
        "{e}"
    );
    for raw in ["", ".", "./", "a/./b/"] {
        RelPath::parse("main", raw).unwrap();
    }
    assert!(p(".").is_root() && p("").is_root() && !p("a").is_root());
}

#[test]
fn a_symlink_to_etc_is_refused_for_every_read() {
    let fx = Fixture::new();
    fx.link("/etc", "main/etc");
    let root = fx.root("main");
    assert_escape(read_file(root, &p("etc/passwd"), Window::default(), MAX));
    assert_escape(read::list_folder(root, &p("etc")));
    assert_escape(read::hash_file(root, &p("etc/passwd"), Algorithm::Sha256));
    assert_escape(read::permissions_file(root, &p("etc/passwd")));
    assert_escape(read::stat_file(root, &p("etc/passwd")));
    // The link itself can be described; what it leads to is not followed.
    let stat = read::stat_file(root, &p("etc")).unwrap();
    assert_eq!(stat["type"], "symlink");
    assert!(
        stat["target"]["error"]
            .as_str()
            .unwrap()
            .contains("outside the root"),
        "{stat}"
    );
}

#[test]
fn a_symlink_to_the_parent_folder_is_refused() {
    let fx = Fixture::new();
    fx.link("..", "main/up");
    let root = fx.root("main");
    assert_escape(read_file(
        root,
        &p("up/outside/secret.txt"),
        Window::default(),
        MAX,
    ));
    assert_escape(read::list_folder(root, &p("up")));
    assert_escape(write::write_file(
        root,
        &p("up/outside/new.txt"),
        "x",
        WriteMode::Overwrite,
    ));
    assert_escape(write::create_folder(root, &p("up/made")));
    assert!(!fx.host("made").exists() && !fx.host("outside/new.txt").exists());
}

#[test]
fn a_symlink_created_after_startup_is_refused() {
    let fx = Fixture::new();
    let before = fx.outside();
    // The sandbox is open; now someone plants links.
    fx.link(fx.host("outside"), "main/late");
    fx.link(fx.host("outside/secret.txt"), "main/late-file");
    let root = fx.root("main");
    assert_escape(read_file(
        root,
        &p("late/secret.txt"),
        Window::default(),
        MAX,
    ));
    assert_escape(read_file(root, &p("late-file"), Window::default(), MAX));
    assert_escape(write::write_file(
        root,
        &p("late/new.txt"),
        "x",
        WriteMode::Overwrite,
    ));
    assert_escape(write::write_file(
        root,
        &p("late/new.txt"),
        "x",
        WriteMode::Append,
    ));
    assert_escape(write::write_file(
        root,
        &p("late/new.txt"),
        "x",
        WriteMode::CreateOnly,
    ));
    assert_escape(write::remove_file(root, &p("late/secret.txt")));
    assert_escape(write::remove_folder(root, &p("late/sub")));
    assert_eq!(fx.outside(), before);
}

#[test]
fn a_dangling_symlink_to_outside_is_not_written_through() {
    let fx = Fixture::new();
    fx.link(fx.host("outside/created.txt"), "main/dangle");
    fx.link("../../outside/created2.txt", "main/dangle2");
    let root = fx.root("main");
    for link in ["dangle", "dangle2"] {
        for mode in [
            WriteMode::Overwrite,
            WriteMode::Append,
            WriteMode::CreateOnly,
        ] {
            let result = write::write_file(root, &p(link), "pwned", mode);
            assert!(result.is_err(), "{link} {mode:?}: {result:?}");
        }
        let patch = "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+pwned\n";
        assert!(write::patch_file(root, &p(link), patch, MAX).is_err());
        assert_escape(read_file(root, &p(link), Window::default(), MAX));
    }
    assert!(!fx.host("outside/created.txt").exists());
    assert!(!fx.host("outside/created2.txt").exists());
}

#[test]
fn writing_through_a_symlinked_folder_is_refused() {
    let fx = Fixture::new();
    let before = fx.outside();
    fx.link(fx.host("outside"), "main/outdir");
    let root = fx.root("main");
    assert_escape(write::write_file(
        root,
        &p("outdir/x.txt"),
        "x",
        WriteMode::Overwrite,
    ));
    assert_escape(write::write_file(
        root,
        &p("outdir/deep/x.txt"),
        "x",
        WriteMode::Overwrite,
    ));
    assert_escape(write::write_file(
        root,
        &p("outdir/secret.txt"),
        "x",
        WriteMode::Append,
    ));
    assert_escape(write::create_folder(root, &p("outdir/sub")));
    assert_escape(write::patch_file(
        root,
        &p("outdir/secret.txt"),
        "--- a\n+++ b\n@@ -1 +1 @@\n-TOP SECRET outside the root\n+gone\n",
        MAX,
    ));
    // remove_folder refuses the link (it is not a folder of this root)...
    let e = err(write::remove_folder(root, &p("outdir")));
    assert!(e.to_string().contains("is a symlink"), "{e}");
    assert_escape(write::remove_folder(root, &p("outdir/sub")));
    assert_eq!(fx.outside(), before);
    // ...and remove_file removes only the link.
    write::remove_file(root, &p("outdir")).unwrap();
    assert_eq!(fx.outside(), before);
}

#[test]
fn patch_and_write_through_a_file_symlink_to_outside_are_refused() {
    let fx = Fixture::new();
    fx.link("../outside/secret.txt", "main/secret-link");
    let root = fx.root("main");
    assert_escape(write::write_file(
        root,
        &p("secret-link"),
        "x",
        WriteMode::Overwrite,
    ));
    assert_escape(write::write_file(
        root,
        &p("secret-link"),
        "x",
        WriteMode::Append,
    ));
    let patch = "--- a/s\n+++ b/s\n@@ -1 +1 @@\n-TOP SECRET outside the root\n+changed\n";
    assert_escape(write::patch_file(root, &p("secret-link"), patch, MAX));
    assert_escape(read::hash_file(root, &p("secret-link"), Algorithm::Md5));
    assert_eq!(
        std::fs::read_to_string(fx.host("outside/secret.txt")).unwrap(),
        SECRET
    );
}

#[test]
fn a_symlink_inside_the_root_is_followed_and_kept() {
    let fx = Fixture::new();
    fx.put("main/real/a.txt", "one\n");
    fx.link("real/a.txt", "main/alias");
    let root = fx.root("main");
    write::write_file(root, &p("alias"), "two\n", WriteMode::Overwrite).unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.host("main/real/a.txt")).unwrap(),
        "two\n"
    );
    assert!(fx.host("main/alias").is_symlink());
    let read = read_file(root, &p("alias"), Window::default(), MAX).unwrap();
    assert_eq!(read["content"], "two\n");
}

#[test]
fn copy_and_move_refuse_an_escaping_source_or_destination() {
    let fx = Fixture::new();
    let before = fx.outside();
    fx.put("main/a.txt", "a\n");
    fx.link(fx.host("outside"), "main/outdir");
    fx.link(fx.host("outside/secret.txt"), "main/secret-link");
    let sandbox = &fx.sandbox;
    let end = |root: &str, path: &str| End {
        root: sandbox.root(root, "copy").unwrap(),
        path: p(path),
    };
    assert_escape(transfer::copy(
        end("main", "secret-link"),
        end("other", "stolen.txt"),
    ));
    assert_escape(transfer::copy(
        end("main", "outdir/secret.txt"),
        end("main", "s.txt"),
    ));
    assert_escape(transfer::copy(end("main", "outdir"), end("other", "tree")));
    assert_escape(transfer::copy(
        end("main", "a.txt"),
        end("main", "outdir/a.txt"),
    ));
    assert_escape(transfer::move_path(
        end("main", "a.txt"),
        end("main", "outdir/a.txt"),
    ));
    assert_escape(transfer::move_path(
        end("main", "outdir/secret.txt"),
        end("other", "s.txt"),
    ));
    let other = sandbox.root("other", "move").unwrap();
    assert!(other.path("../outside/a.txt").is_err() && other.path("/tmp/a.txt").is_err());
    assert!(!fx.host("other/stolen.txt").exists() && !fx.host("main/s.txt").exists());
    assert!(fx.host("main/a.txt").exists());
    assert_eq!(fx.outside(), before);
}

#[test]
fn the_root_itself_cannot_be_removed_or_moved() {
    let fx = Fixture::new();
    fx.put("main/keep.txt", "k");
    let root = fx.root("main");
    for raw in ["", ".", "./", "./."] {
        let e = err(write::remove_folder(root, &p(raw)));
        assert!(
            e.to_string().contains("the root itself cannot be removed"),
            "{e}"
        );
        assert!(write::remove_file(root, &p(raw)).is_err());
        assert!(write::write_file(root, &p(raw), "x", WriteMode::Overwrite).is_err());
    }
    fx.link(".", "main/self");
    let e = err(write::remove_folder(root, &p("self")));
    assert!(e.to_string().contains("is a symlink"), "{e}");
    let main = || End {
        root: fx.sandbox.root("main", "move").unwrap(),
        path: p(""),
    };
    let other = End {
        root: fx.sandbox.root("other", "move").unwrap(),
        path: p("moved"),
    };
    assert!(transfer::move_path(main(), other).is_err());
    assert!(fx.host("main/keep.txt").exists());
}

#[test]
fn searches_do_not_follow_links_outside() {
    let fx = Fixture::new();
    fx.put("main/inside.txt", "TOP SECRET? no, inside\n");
    fx.link(fx.host("outside"), "main/outdir");
    fx.link(fx.host("outside/secret.txt"), "main/secret-link");
    fx.link("/etc", "main/etc");
    let root = fx.root("main");
    let limits = Limits::new(None, None, None);
    let query = super::super::grep::Query::new("TOP SECRET", false, None, None).unwrap();
    let found = super::super::grep::grep(root, &p(""), &query, &limits);
    assert_eq!(found["count"], 1, "{found}");
    assert_eq!(found["matches"][0]["path"], "inside.txt");
    let matcher = Matcher::new(Some("**"), None).unwrap();
    let listed = glob_search(root, &p(""), &matcher, TypeFilter::All, &limits);
    let paths: Vec<&str> = listed["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["etc", "inside.txt", "outdir", "secret-link"],
        "{listed}"
    );
    assert!(
        listed["matches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["path"] == "inside.txt" || m["type"] == "symlink")
    );
    // Searching from a linked folder is an escape.
    assert_escape(
        super::super::search::base(root, Some("outdir")).map(|_| serde_json::Value::Null),
    );
}

#[test]
fn a_folder_swapped_for_a_symlink_during_writes_never_leaks() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.host("main/flip")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, flip, parked, outside) = (
            stop.clone(),
            fx.host("main/flip"),
            fx.host("main/parked"),
            fx.host("outside"),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // A real folder, then (atomically renamed in) a link outside.
                let _ = std::fs::rename(&flip, &parked);
                let _ = std::os::unix::fs::symlink(&outside, &flip);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&flip);
                let _ = std::fs::rename(&parked, &flip);
            }
        })
    };
    let root = fx.root("main");
    for i in 0..2000 {
        let name = format!("flip/x{}.txt", i % 7);
        let _ = write::write_file(root, &p(&name), "x", WriteMode::Overwrite);
        let _ = write::write_file(root, &p(&name), "y", WriteMode::Append);
        if let Ok(read) = read_file(root, &p("flip/secret.txt"), Window::default(), MAX) {
            panic!("read outside the root: {read}");
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    let leaked: Vec<_> = fx
        .outside()
        .into_iter()
        .filter(|(path, _)| !path.ends_with("secret.txt"))
        .collect();
    assert!(leaked.is_empty(), "written outside the root: {leaked:?}");
}

#[test]
fn a_tool_not_allowed_in_a_root_is_refused_for_that_root() {
    let fx = Fixture::new();
    let e = fx.sandbox.root("ro", "write_file").unwrap_err();
    assert_eq!(
        e.to_string(),
        "the tool write_file is not allowed in root \"ro\" (allowed there: list_roots, list_folder, read_file, grep, glob)"
    );
    fx.sandbox.root("ro", "read_file").unwrap();
    let e = fx.sandbox.root("nope", "read_file").unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown root \"nope\"; the roots are: main, other, ro"
    );
}
