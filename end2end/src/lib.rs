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

    /// How many elements match `css` now.
    pub async fn count(&self, css: &str) -> usize {
        self.client
            .find_all(Locator::Css(css))
            .await
            .map(|found| found.len())
            .unwrap_or(0)
    }

    /// Waits until exactly `expected` elements match `css`.
    pub async fn wait_count(&self, css: &str, expected: usize) {
        let deadline = Instant::now() + PAGE_TIMEOUT;
        let mut seen = self.count(css).await;
        while seen != expected {
            assert!(
                Instant::now() < deadline,
                "{css}: {seen} shown, expected {expected}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
            seen = self.count(css).await;
        }
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

/// Sign-in set-ups: a real OpenID Connect provider
/// ([`asg_tests::oidc::OidcProvider`]), an agent that requires its tokens
/// (`auth.oidc`) and the `web` binary with `oidc:` in its `web.yaml`.
pub mod login {
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use asg_tests::oidc::{AUDIENCE, OidcOptions, OidcProvider, WEB_CLIENT_ID, free_port};
    use asg_tests::{Agent, AgentOptions, binary, listening_port, testdata};

    /// The environment variable the test `web.yaml` names for the client
    /// secret.
    pub const SECRET_ENV: &str = "ASG_E2E_WEB_CLIENT_SECRET";

    /// Provider, agent and web server, with their config files.
    pub struct LoginStack {
        /// The OpenID Connect provider.
        pub provider: OidcProvider,
        /// The agent (`auth.oidc` pointing at the provider).
        pub agent: Agent,
        /// The web server (`oidc:` pointing at the provider).
        pub web: LoginWeb,
        _dir: tempfile::TempDir,
    }

    /// Options of [`LoginStack::start_with`].
    #[derive(Debug, Clone, Default)]
    pub struct LoginOptions {
        /// Lifetime of the web client's access tokens (default 300 s).
        pub access_token_ttl: Option<u64>,
        /// The web server with the reference implementation's `oauth2:`
        /// block (the provider's endpoints from its discovery document)
        /// instead of `oidc:`.
        pub oauth2: bool,
    }

    impl LoginStack {
        /// Starts the three with default options.
        pub async fn start(dist: &Path) -> LoginStack {
            LoginStack::start_with(dist, LoginOptions::default()).await
        }

        /// Starts the provider (the web server's exact redirect and
        /// post-logout URIs registered), the agent and the web server.
        pub async fn start_with(dist: &Path, options: LoginOptions) -> LoginStack {
            let dir = tempfile::tempdir().expect("temp dir");
            let web_port = free_port();
            let web_url = format!("http://127.0.0.1:{web_port}");
            let provider = OidcProvider::start_with(OidcOptions {
                redirect_uris: vec![format!("{web_url}/auth/callback")],
                post_logout_redirect_uris: vec![format!("{web_url}/")],
                web_access_token_ttl: options.access_token_ttl,
                ..OidcOptions::default()
            })
            .await;
            let agent_config = dir.path().join("agent.yaml");
            std::fs::write(&agent_config, agent_yaml(&provider.issuer)).expect("agent.yaml");
            let agent = Agent::start(&agent_config, AgentOptions::default()).await;
            let web_config = dir.path().join("web.yaml");
            let yaml = if options.oauth2 {
                web_yaml_oauth2(&agent.url, &provider.discovery().await, &web_url, dist)
            } else {
                web_yaml(&agent.url, &provider.issuer, &web_url, dist)
            };
            std::fs::write(&web_config, yaml).expect("web.yaml");
            let web = LoginWeb::start(&web_config, web_port, &provider.web_client_secret);
            LoginStack {
                provider,
                agent,
                web,
                _dir: dir,
            }
        }
    }

    /// The agent's configuration: the scenario tests' resource manager
    /// with `auth.oidc`.
    pub fn agent_yaml(issuer: &str) -> String {
        let rules = testdata("scripted/resources.yaml");
        format!(
            "name: resource-manager\n\
             description: Resource manager behind OpenID Connect.\n\
             prompt: You are a resource manager.\n\
             host: 127.0.0.1\n\
             llm:\n  model: scripted:{}\n\
             mcp_servers:\n  - name: resources\n    command: mcp-resources\n    timeout_secs: 5\n\
             auth:\n  oidc:\n    issuer: {issuer}\n    audience: {AUDIENCE}\n    roles_claim: roles\n",
            rules.display()
        )
    }

    /// The web server's configuration with `oidc:`.
    pub fn web_yaml(agent_url: &str, issuer: &str, web_url: &str, dist: &Path) -> String {
        format!(
            "agent_url: {agent_url}\n\
             host: 127.0.0.1\n\
             dist_dir: {}\n\
             oidc:\n  issuer: {issuer}\n  client_id: {WEB_CLIENT_ID}\n  client_secret_env: {SECRET_ENV}\n  \
             redirect_url: {web_url}/auth/callback\n  post_logout_redirect_url: {web_url}/\n  \
             scopes: [openid, profile, email, offline_access]\n",
            dist.display()
        )
    }

    /// The web server's configuration with `oauth2:` (the reference
    /// implementation's block): the endpoints from the provider's
    /// discovery document `discovery`, no ID token used.
    pub fn web_yaml_oauth2(
        agent_url: &str,
        discovery: &serde_json::Value,
        web_url: &str,
        dist: &Path,
    ) -> String {
        let endpoint = |name: &str| {
            discovery[name]
                .as_str()
                .unwrap_or_else(|| panic!("no {name} in {discovery}"))
                .to_string()
        };
        format!(
            "agent_url: {agent_url}\n\
             host: 127.0.0.1\n\
             dist_dir: {}\n\
             oauth2:\n  client_id: {WEB_CLIENT_ID}\n  client_secret_env: {SECRET_ENV}\n  \
             auth_url: {}\n  token_url: {}\n  revoke_url: {}\n  \
             redirect_url: {web_url}/auth/callback\n  \
             scopes: [openid, profile, email, offline_access]\n",
            dist.display(),
            endpoint("authorization_endpoint"),
            endpoint("token_endpoint"),
            endpoint("revocation_endpoint"),
        )
    }

    /// A `web` process started with a given `web.yaml`; its log is kept.
    pub struct LoginWeb {
        child: Child,
        /// `http://127.0.0.1:PORT`.
        pub url: String,
        log: Arc<Mutex<String>>,
    }

    impl LoginWeb {
        /// Starts `web --config <config> --port <port>` with the client
        /// secret in [`SECRET_ENV`].
        pub fn start(config: &Path, port: u16, secret: &str) -> LoginWeb {
            let mut child = Command::new(binary("web"))
                .arg("--config")
                .arg(config)
                .args(["--port", &port.to_string()])
                .env(SECRET_ENV, secret)
                .env("RUST_LOG", "info")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("cannot start the web binary");
            let log = Arc::new(Mutex::new(String::new()));
            let rx = asg_tests::capture_output(&mut child, &log, listening_port);
            let port = match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(port) => port,
                Err(_) => {
                    let _ = child.kill();
                    std::thread::sleep(Duration::from_millis(200));
                    panic!(
                        "the web binary did not start; its output:\n{}",
                        log.lock().map(|l| l.clone()).unwrap_or_default()
                    );
                }
            };
            LoginWeb {
                child,
                url: format!("http://127.0.0.1:{port}"),
                log,
            }
        }

        /// Everything it printed so far.
        pub fn log(&self) -> String {
            self.log.lock().map(|l| l.clone()).unwrap_or_default()
        }
    }

    impl Drop for LoginWeb {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// The built bundle, or a directory without one (HTTP-only tests).
    pub fn dist_or_empty() -> PathBuf {
        let dist = asg_tests::workspace_root().join("web/dist");
        if dist.join("index.html").is_file() {
            dist
        } else {
            std::env::temp_dir()
        }
    }
}
