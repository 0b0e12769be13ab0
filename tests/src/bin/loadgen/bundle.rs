//! The web chat bundle's size: the `.wasm` trunk wrote to `web/dist/`
//! (the largest, when several), raw, compressed as `gzip -9` does, and
//! as browsers are sent it: the `.gz` and `.br` that
//! `scripts/build-web.sh` writes beside it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// The sizes of the compressed copies the web server sends (None: no
/// such file beside the wasm).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Sent {
    pub gzip: Option<u64>,
    pub brotli: Option<u64>,
}

impl Sent {
    fn beside(wasm: &Path) -> Sent {
        let size = |suffix: &str| {
            let mut name = wasm.as_os_str().to_owned();
            name.push(suffix);
            Some(Path::new(&name).metadata().ok()?.len())
        };
        Sent {
            gzip: size(".gz"),
            brotli: size(".br"),
        }
    }

    /// ` (sent: 205 KiB gzip, 170 KiB brotli)`, or nothing.
    fn text(&self) -> String {
        let sizes: Vec<String> = [(self.gzip, "gzip"), (self.brotli, "brotli")]
            .into_iter()
            .filter_map(|(size, name)| Some(format!("{} KiB {name}", kib(size?))))
            .collect();
        if sizes.is_empty() {
            String::new()
        } else {
            format!(" (sent: {})", sizes.join(", "))
        }
    }
}

/// What `web/dist/` holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Bundle {
    /// The wasm file, its size and its `gzip -9` size (None without gzip).
    Built {
        path: PathBuf,
        bytes: u64,
        gzipped: Option<u64>,
        sent: Sent,
    },
    /// No wasm in this directory.
    Missing(PathBuf),
}

impl Bundle {
    /// Looks at `dist` (e.g. `web/dist`).
    pub fn measure(dist: &Path) -> Bundle {
        let Some((path, bytes)) = largest_wasm(dist) else {
            return Bundle::Missing(dist.to_path_buf());
        };
        let gzipped = gzip_size(&path);
        let sent = Sent::beside(&path);
        Bundle::Built {
            path,
            bytes,
            gzipped,
            sent,
        }
    }

    /// `917 KiB wasm, 358 KiB gzipped (sent: ...)`, or `not built (...)`.
    pub fn text(&self) -> String {
        match self {
            Bundle::Built {
                bytes,
                gzipped,
                sent,
                ..
            } => format!(
                "{} KiB wasm, {} gzipped{}",
                kib(*bytes),
                gzipped.map_or_else(
                    || "? KiB (no gzip command)".into(),
                    |g| format!("{} KiB", kib(g))
                ),
                sent.text()
            ),
            Bundle::Missing(_) => "not built (run scripts/build-web.sh)".into(),
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Bundle::Built {
                path,
                bytes,
                gzipped,
                sent,
            } => json!({
                "wasm": path.display().to_string(),
                "bytes": bytes,
                "gzip_9_bytes": gzipped,
                "sent_gzip_bytes": sent.gzip,
                "sent_brotli_bytes": sent.brotli,
            }),
            Bundle::Missing(dist) => json!({
                "missing": format!("no .wasm in {} (run scripts/build-web.sh)", dist.display()),
            }),
        }
    }
}

/// KiB, rounded.
fn kib(bytes: u64) -> u64 {
    (bytes + 512) / 1024
}

/// The largest `*.wasm` directly in `dist`, with its size.
fn largest_wasm(dist: &Path) -> Option<(PathBuf, u64)> {
    std::fs::read_dir(dist)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "wasm"))
        .filter_map(|path| Some((path.metadata().ok()?.len(), path)))
        .max()
        .map(|(bytes, path)| (path, bytes))
}

/// Bytes `gzip -9 -c <path>` writes; None when gzip is missing or fails.
fn gzip_size(path: &Path) -> Option<u64> {
    let output = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then_some(output.stdout.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_wasm_is_measured_raw_and_gzipped() {
        let dist = tempfile::tempdir().unwrap();
        std::fs::write(dist.path().join("small_bg.wasm"), b"\0asm").unwrap();
        std::fs::write(dist.path().join("index.html"), vec![b'x'; 100_000]).unwrap();
        let big = dist.path().join("web-1234_bg.wasm");
        std::fs::write(&big, vec![b'a'; 50_000]).unwrap();
        let Bundle::Built {
            path,
            bytes,
            gzipped,
            sent,
        } = Bundle::measure(dist.path())
        else {
            panic!("the wasm was not found");
        };
        assert_eq!((path, bytes), (big, 50_000));
        assert_eq!(sent, Sent::default(), "no compressed copies were written");
        // gzip is on every machine this runs on; 50,000 equal bytes shrink.
        let gzipped = gzipped.expect("gzip -9 measured the file");
        assert!(gzipped > 0 && gzipped < 1_000, "{gzipped}");
        let bundle = Bundle::Built {
            path: "x.wasm".into(),
            bytes: 917 * 1024,
            gzipped: Some(358 * 1024 + 100),
            sent: Sent::default(),
        };
        assert_eq!(bundle.text(), "917 KiB wasm, 358 KiB gzipped");
    }

    #[test]
    fn the_copies_sent_to_browsers_are_measured_beside_the_wasm() {
        let dist = tempfile::tempdir().unwrap();
        std::fs::write(dist.path().join("web_bg.wasm"), vec![b'a'; 9_000]).unwrap();
        std::fs::write(dist.path().join("web_bg.wasm.gz"), vec![b'g'; 3_000]).unwrap();
        let Bundle::Built { sent, .. } = Bundle::measure(dist.path()) else {
            panic!("the wasm was not found");
        };
        assert_eq!(
            sent,
            Sent {
                gzip: Some(3_000),
                brotli: None
            }
        );
        std::fs::write(dist.path().join("web_bg.wasm.br"), vec![b'b'; 2_048]).unwrap();
        let bundle = Bundle::measure(dist.path());
        assert!(
            bundle
                .text()
                .ends_with("gzipped (sent: 3 KiB gzip, 2 KiB brotli)"),
            "{}",
            bundle.text()
        );
        assert_eq!(bundle.to_json()["sent_gzip_bytes"], 3_000);
        assert_eq!(bundle.to_json()["sent_brotli_bytes"], 2_048);
    }

    #[test]
    fn without_a_wasm_it_says_how_to_build_it() {
        let dist = tempfile::tempdir().unwrap();
        for missing in [dist.path().join("dist"), dist.path().to_path_buf()] {
            let bundle = Bundle::measure(&missing);
            assert_eq!(bundle, Bundle::Missing(missing));
            assert_eq!(bundle.text(), "not built (run scripts/build-web.sh)");
        }
    }
}
