//! Helpers for the browser tests: chromedriver, a headless Chromium
//! session (fantoccini over WebDriver, no npm), waiting on the page, and
//! screenshots saved under `end2end/artifacts/` for reviewers.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// How long the page may take to show something.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(20);

/// The built chat bundle (`web/dist`); panics with the command that
/// builds it when missing.
pub fn web_dist() -> PathBuf {
    let dist = asg_tests::workspace_root().join("web/dist");
    assert!(
        dist.join("index.html").is_file(),
        "the web bundle is not built: run ./scripts/build-web.sh first"
    );
    dist
}

/// Where screenshots go.
pub fn artifacts_dir() -> PathBuf {
    let dir = asg_tests::workspace_root().join("end2end/artifacts");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

fn find_program(candidates: &[&str]) -> PathBuf {
    for candidate in candidates {
        let path = Path::new(candidate);
        if path.is_file() {
            return path.to_path_buf();
        }
    }
    panic!(
        "none of {candidates:?} exists: install Debian's chromium and chromium-driver \
         (apt-get install -y chromium chromium-driver; scripts/test.sh does it)"
    );
}

/// A chromedriver process and a browser session.
pub struct Browser {
    driver: Child,
    /// The WebDriver client.
    pub client: Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session.
    pub async fn start() -> Browser {
        let chromedriver =
            find_program(&["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]);
        let chromium = find_program(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]);
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
            listener.local_addr().expect("address").port()
        };
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while reqwest::get(format!("{url}/status")).await.is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().expect("profile dir");
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.path().display()),
                ]
            }),
        );
        let client = ClientBuilder::rustls()
            .expect("TLS set-up")
            .capabilities(capabilities)
            .connect(&url)
            .await
            .expect("cannot open a browser session");
        Browser {
            driver,
            client,
            _profile: profile,
        }
    }

    /// Opens a URL.
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("navigation failed");
    }

    /// The first element matching `css`, waiting for it.
    pub async fn wait_for(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(PAGE_TIMEOUT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css} never appeared: {e}"))
    }

    /// Waits until an element matching `css` contains `needle`; returns its text.
    pub async fn wait_text(&self, css: &str, needle: &str) -> String {
        let deadline = Instant::now() + PAGE_TIMEOUT;
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            seen.clear();
            if let Ok(elements) = self.client.find_all(Locator::Css(css)).await {
                for element in elements {
                    let text = element.text().await.unwrap_or_default();
                    if text.contains(needle) {
                        return text;
                    }
                    seen.push(text);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no {css} contains {needle:?}; saw {seen:?}");
    }

    /// Waits until nothing matches `css` (or it is hidden).
    pub async fn wait_gone(&self, css: &str) {
        let deadline = Instant::now() + PAGE_TIMEOUT;
        while Instant::now() < deadline {
            match self.client.find(Locator::Css(css)).await {
                Err(_) => return,
                Ok(element) if !element.is_displayed().await.unwrap_or(false) => return,
                Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("{css} is still shown");
    }

    /// Types into the composer and sends with Enter.
    pub async fn send_message(&self, text: &str) {
        let composer = self.wait_for("#composer").await;
        composer.click().await.expect("focus composer");
        composer.send_keys(text).await.expect("type");
        composer.send_keys("\u{E007}").await.expect("press Enter");
    }

    /// Saves a screenshot as `end2end/artifacts/<name>.png`.
    pub async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.expect("screenshot");
        std::fs::write(artifacts_dir().join(format!("{name}.png")), png).expect("save screenshot");
    }

    /// Ends the session and chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
    }
}
