//! A real OpenID Connect provider for the tests: `tests/oidc/provider.js`
//! (the `oidc-provider` npm package, OpenID Certified) on a loopback port.
//!
//! Users (`alice`, `bob`, ...; see [`USERS`]) are confidential clients with
//! the client_credentials grant, so a test gets a signed JWT access token
//! with one POST to the token endpoint ([`OidcProvider::token`]). The
//! browser client [`WEB_CLIENT_ID`] signs users in through the provider's
//! development login pages (any user name, any password).
//!
//! `scripts/test.sh` installs the npm packages (`npm ci` in `tests/oidc`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{listening_port, workspace_root};

/// The audience of the default resource: the agent's `auth.oidc.audience`.
pub const AUDIENCE: &str = "agent-stop-and-go";
/// Another audience, for wrong-audience tests.
pub const OTHER_AUDIENCE: &str = "other-api";
/// The browser client (authorization code + PKCE, confidential).
pub const WEB_CLIENT_ID: &str = "asg-web";
/// The terminal client `asg` (public; the device authorization grant, see
/// [`OidcProvider::approve_device`]).
pub const CLI_CLIENT_ID: &str = "asg-cli";
/// Its secret unless [`OidcOptions::web_client_secret`] says otherwise.
pub const WEB_CLIENT_SECRET: &str = "asg-web-test-secret";
/// Scopes the browser client may request.
pub const WEB_SCOPES: &[&str] = &["openid", "profile", "email", "offline_access"];
/// Lifetime of [`OidcProvider::short_lived_token`] tokens, in seconds.
pub const SHORT_LIVED_TTL: u64 = 1;

/// CSS selectors of the development login page (`/interaction/:uid`):
/// the user name input (any name logs in)...
pub const LOGIN_USER_INPUT: &str = "input[name=login]";
/// ...the password input (any password)...
pub const LOGIN_PASSWORD_INPUT: &str = "input[name=password]";
/// ...and its "Sign-in" button; the consent page that follows has one
/// button of the same kind ("Continue").
pub const SUBMIT_BUTTON: &str = "button[type=submit]";
/// The "Yes, sign me out" button of the RP-initiated logout page.
pub const LOGOUT_CONFIRM_BUTTON: &str = "button[name=logout][value=yes]";

/// The test users: (name = `sub`, roles, display name = `name`), as in
/// `tests/oidc/provider.js`. Their `roles` (and `groups`) claim is a JSON
/// list, except `frank`'s: one space-separated string ("approver sre").
/// `erin`'s tokens are signed with ES256, everyone else's with RS256.
/// Any other name can sign in through the login page, with no roles.
pub const USERS: &[(&str, &[&str], &str)] = &[
    ("alice", &["approver"], "Alice Approver"),
    ("bob", &[], "Bob User"),
    ("carol", &["sre"], "Carol SRE"),
    ("dana", &["admin"], "Dana Admin"),
    ("erin", &["approver"], "Erin Approver"),
    ("frank", &["approver", "sre"], "Frank Spaced"),
    ("grace", &["approver"], "Grace Approver"),
];

/// The client secret of a test user's client.
pub fn user_secret(user: &str) -> String {
    format!("{user}-secret")
}

/// The resource indicator (RFC 8707) for tokens with `aud` = `audience`,
/// optionally signed with `alg` (RS256 or ES256) and living `ttl`
/// seconds. An argument already starting with `urn:` is taken as is.
pub fn resource(audience: &str, alg: Option<&str>, ttl: Option<u64>) -> String {
    if audience.starts_with("urn:") {
        return audience.to_string();
    }
    let mut query = Vec::new();
    if let Some(alg) = alg {
        query.push(format!("alg={alg}"));
    }
    if let Some(ttl) = ttl {
        query.push(format!("ttl={ttl}"));
    }
    if query.is_empty() {
        format!("urn:asg:{audience}")
    } else {
        format!("urn:asg:{audience}?{}", query.join("&"))
    }
}

/// Options for [`OidcProvider::start_with`].
#[derive(Debug, Clone, Default)]
pub struct OidcOptions {
    /// Port to listen on (0: any free port; see [`free_port`]).
    pub port: u16,
    /// Redirect URIs of the browser client [`WEB_CLIENT_ID`].
    pub redirect_uris: Vec<String>,
    /// Its post-logout redirect URIs (RP-initiated logout).
    pub post_logout_redirect_uris: Vec<String>,
    /// Register the browser client as an RFC 8252 native client, so a
    /// `http://127.0.0.1/...` redirect URI matches any port: for tests that
    /// start the web server after the provider.
    pub loopback_any_port: bool,
    /// Lifetime of the browser client's access tokens (default 300 s).
    pub web_access_token_ttl: Option<u64>,
    /// The browser client's secret (default [`WEB_CLIENT_SECRET`]).
    pub web_client_secret: Option<String>,
    /// The browser client's token endpoint auth method (default
    /// `client_secret_basic`; `client_secret_post` also works).
    pub web_token_endpoint_auth_method: Option<String>,
}

/// A free loopback port (bound, then released): to know a URL before its
/// server runs (the issuer while the provider is down, the web chat's
/// redirect URL registered with the provider).
///
/// Picked below the machine's ephemeral range, so no process binding port
/// 0 meanwhile (an agent, a tool server started between the pick and the
/// bind) can be given it; never the same port twice in one test process.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (low, high) = (10_000u16, ephemeral_low.saturating_sub(1));
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    if high > low {
        for _ in 0..1000 {
            let pick = low + (uuid::Uuid::new_v4().as_u128() % u128::from(high - low)) as u16;
            if !given.contains(&pick) && std::net::TcpListener::bind(("127.0.0.1", pick)).is_ok() {
                given.push(pick);
                return pick;
            }
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free loopback port")
}

/// A running `tests/oidc/provider.js`; killed on drop.
pub struct OidcProvider {
    /// `http://127.0.0.1:PORT`: the issuer (no trailing slash).
    pub issuer: String,
    /// Its port.
    pub port: u16,
    /// The browser client's secret.
    pub web_client_secret: String,
    options: OidcOptions,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    log: Arc<Mutex<String>>,
    keys_dir: tempfile::TempDir,
    http: reqwest::Client,
}

/// How long the provider may take to start listening (it takes about
/// 2 s, eight at once on 2 busy cores).
const PROVIDER_START: Duration = Duration::from_secs(60);

/// What a process is doing, for a log: its state and the kernel function
/// it waits in (`/proc/<pid>/stat`, `wchan`), and its threads' states.
fn process_state(pid: u32) -> String {
    let read = |path: String| std::fs::read_to_string(path).unwrap_or_default();
    let stat = read(format!("/proc/{pid}/stat"));
    let state = stat
        .rsplit(") ")
        .next()
        .and_then(|rest| rest.split(' ').next());
    let threads: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|task| {
            let path = task.path();
            let comm = read(format!("{}/comm", path.display()));
            let wchan = read(format!("{}/wchan", path.display()));
            let stat = read(format!("{}/stat", path.display()));
            let state = stat.rsplit(") ").next().and_then(|r| r.split(' ').next());
            format!("{} {} {}", comm.trim(), state.unwrap_or("?"), wchan.trim())
        })
        .collect();
    format!(
        "in state {}, waiting in {:?}; threads: {}",
        state.unwrap_or("?"),
        read(format!("/proc/{pid}/wchan")),
        threads.join(", ")
    )
}

impl OidcProvider {
    /// Starts the provider on a free port with default options.
    pub async fn start() -> OidcProvider {
        OidcProvider::start_with(OidcOptions::default()).await
    }

    /// Starts the provider and waits until its discovery document answers.
    /// Panics, saying to run `scripts/test.sh`, when Node.js or the npm
    /// packages are missing.
    pub async fn start_with(options: OidcOptions) -> OidcProvider {
        let keys_dir = tempfile::tempdir().expect("temp dir");
        let mut provider = OidcProvider {
            issuer: String::new(),
            port: options.port,
            web_client_secret: options
                .web_client_secret
                .clone()
                .unwrap_or_else(|| WEB_CLIENT_SECRET.to_string()),
            options,
            child: None,
            stdin: None,
            log: Arc::new(Mutex::new(String::new())),
            keys_dir,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("http client"),
        };
        provider.spawn().await;
        provider
    }

    fn keys_file(&self) -> PathBuf {
        self.keys_dir.path().join("jwks.json")
    }

    async fn spawn(&mut self) {
        let dir = workspace_root().join("tests").join("oidc");
        let script = dir.join("provider.js");
        if !dir.join("node_modules").join("oidc-provider").is_dir() {
            panic!(
                "the OpenID Connect test provider's npm packages are not installed \
                 ({}/node_modules/oidc-provider is missing): run scripts/test.sh \
                 (or `npm ci` in tests/oidc)",
                dir.display()
            );
        }
        // A provider has twice printed nothing after oidc-provider's
        // runtime warning and never listened (once with 30 s, once with
        // 90 s to start, both in a fresh machine's first test run): a
        // second process is started once, with the first's state kept in
        // the log.
        let mut port = self.spawn_once(&dir, &script);
        if port.is_none() {
            port = self.spawn_once(&dir, &script);
        }
        let Some(port) = port else {
            panic!(
                "the OpenID Connect test provider did not start, twice; its output:\n{}",
                self.log()
            );
        };
        self.port = port;
        self.issuer = format!("http://127.0.0.1:{port}");
        self.wait_for_discovery().await;
    }

    /// Starts `node provider.js` and waits for its listening line: the
    /// port, or `None` when it did not listen within [`PROVIDER_START`]
    /// (the process is then killed, and what it was doing logged).
    fn spawn_once(&mut self, dir: &Path, script: &Path) -> Option<u16> {
        let mut command = self.command(dir, script);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => panic!(
                "cannot run `node` for the OpenID Connect test provider ({e}): \
                 install Node.js >= 20.18 and run scripts/test.sh"
            ),
        };
        let port_rx = crate::capture_output(&mut child, &self.log, |line| {
            line.starts_with("oidc provider listening on")
                .then(|| listening_port(line))
                .flatten()
        });
        let pid = child.id();
        self.stdin = child.stdin.take();
        self.child = Some(child);
        // Generous: a test binary starts several providers at once, each
        // loading oidc-provider and making RSA keys, and on a loaded 2-core
        // machine one took over 30 s to listen (no error in its output).
        match port_rx.recv_timeout(PROVIDER_START) {
            Ok(port) => Some(port),
            Err(_) => {
                let state = process_state(pid);
                self.kill();
                std::thread::sleep(Duration::from_millis(200));
                if let Ok(mut log) = self.log.lock() {
                    log.push_str(&format!(
                        "(test harness: no listening line within {:?}; the process was {state}; killed)\n",
                        PROVIDER_START
                    ));
                }
                None
            }
        }
    }

    /// The `node provider.js` command with this provider's options.
    fn command(&self, dir: &Path, script: &Path) -> Command {
        let mut command = Command::new("node");
        command
            .arg(script)
            .args(["--port", &self.port.to_string()])
            .arg("--keys-file")
            .arg(self.keys_file())
            .current_dir(dir)
            .env("OIDC_EXIT_ON_STDIN_EOF", "1")
            .env("OIDC_WEB_CLIENT_SECRET", &self.web_client_secret)
            .env_remove("OIDC_PORT")
            .env_remove("OIDC_WEB_REDIRECT_URIS")
            .env_remove("OIDC_WEB_POST_LOGOUT_REDIRECT_URIS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for uri in &self.options.redirect_uris {
            command.args(["--redirect-uri", uri]);
        }
        for uri in &self.options.post_logout_redirect_uris {
            command.args(["--post-logout-redirect-uri", uri]);
        }
        if self.options.loopback_any_port {
            command.arg("--loopback-any-port");
        }
        if let Some(ttl) = self.options.web_access_token_ttl {
            command.env("OIDC_WEB_ACCESS_TOKEN_TTL", ttl.to_string());
        }
        if let Some(method) = &self.options.web_token_endpoint_auth_method {
            command.env("OIDC_WEB_TOKEN_ENDPOINT_AUTH_METHOD", method);
        }
        command
    }

    /// Waits until the discovery document answers (30 s at most).
    async fn wait_for_discovery(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = self.http.get(self.discovery_url()).send().await
                && r.status().is_success()
            {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "the OpenID Connect test provider's discovery document never answered; log:\n{}",
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the process (SIGKILL); the port is free afterwards.
    pub fn kill(&mut self) {
        self.stdin = None;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Restarts on the same port (and issuer). With `keep_keys` the signing
    /// keys stay (tokens issued before remain valid); without, new keys with
    /// new `kid`s replace them, as in a key rotation.
    pub async fn restart(&mut self, keep_keys: bool) {
        self.kill();
        if !keep_keys {
            let _ = std::fs::remove_file(self.keys_file());
        }
        self.spawn().await;
    }

    /// Everything the process printed so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The subject the agent records for `user`'s tokens:
    /// `oidc:<issuer>#<user>` (subjects are namespaced by credential).
    pub fn subject(&self, user: &str) -> String {
        format!("oidc:{}#{user}", self.issuer)
    }

    /// `{issuer}/.well-known/openid-configuration`.
    pub fn discovery_url(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.issuer)
    }

    /// The discovery document.
    pub async fn discovery(&self) -> Value {
        self.get_json(&self.discovery_url()).await
    }

    /// The public key set (from the discovery document's `jwks_uri`).
    pub async fn jwks(&self) -> Value {
        let discovery = self.discovery().await;
        let uri = discovery["jwks_uri"]
            .as_str()
            .unwrap_or_else(|| panic!("no jwks_uri in {discovery}"));
        self.get_json(uri).await
    }

    async fn get_json(&self, url: &str) -> Value {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        assert!(response.status().is_success(), "GET {url}: {response:?}");
        response
            .json()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: not JSON: {e}"))
    }

    /// `{issuer}/token`.
    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.issuer)
    }

    /// An access token for `user` with `aud` = [`AUDIENCE`] (RS256, or
    /// ES256 for `erin`; 300 s).
    pub async fn token(&self, user: &str) -> String {
        self.token_for_resource(user, AUDIENCE).await
    }

    /// An access token for `user` with `aud` = `audience` (e.g.
    /// [`OTHER_AUDIENCE`]), or for a full resource indicator from
    /// [`resource`].
    pub async fn token_for_resource(&self, user: &str, audience: &str) -> String {
        self.token_with(user, &resource(audience, None, None)).await
    }

    /// An access token for `user` (aud [`AUDIENCE`]) that expires
    /// [`SHORT_LIVED_TTL`] seconds after it is issued.
    pub async fn short_lived_token(&self, user: &str) -> String {
        self.token_with(user, &resource(AUDIENCE, None, Some(SHORT_LIVED_TTL)))
            .await
    }

    /// An access token for `user` (aud [`AUDIENCE`]) signed with `alg`
    /// (RS256 or ES256).
    pub async fn token_signed_with(&self, user: &str, alg: &str) -> String {
        self.token_with(user, &resource(AUDIENCE, Some(alg), None))
            .await
    }

    /// An access token for `user` for a resource indicator (see
    /// [`resource`]); panics unless the provider issues one.
    pub async fn token_with(&self, user: &str, resource: &str) -> String {
        let (status, body) = self
            .token_request(user, &user_secret(user), Some(resource))
            .await;
        assert_eq!(status, 200, "token for {user} ({resource}): {body}");
        body["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access_token in {body}"))
            .to_string()
    }

    /// The raw client_credentials token request: status and JSON answer.
    pub async fn token_request(
        &self,
        client_id: &str,
        secret: &str,
        resource: Option<&str>,
    ) -> (u16, Value) {
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(resource) = resource {
            form.push(("resource", resource));
        }
        self.post_token(client_id, secret, &form).await
    }

    /// POSTs a form to the token endpoint with HTTP Basic client auth.
    pub async fn post_token(
        &self,
        client_id: &str,
        secret: &str,
        form: &[(&str, &str)],
    ) -> (u16, Value) {
        let response = self
            .http
            .post(self.token_endpoint())
            .basic_auth(form_encode(client_id), Some(form_encode(secret)))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_body(form))
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {}: {e}", self.token_endpoint()));
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// An authorization request URL for the browser client, with PKCE
    /// (S256), `state` and `nonce`.
    pub fn authorize_url(&self, redirect_uri: &str, challenge: &str, state: &str) -> String {
        format!(
            "{}/auth?{}",
            self.issuer,
            form_body(&[
                ("client_id", WEB_CLIENT_ID),
                ("response_type", "code"),
                ("scope", &WEB_SCOPES.join(" ")),
                ("redirect_uri", redirect_uri),
                ("state", state),
                ("nonce", &format!("nonce-{state}")),
                ("code_challenge", challenge),
                ("code_challenge_method", "S256"),
            ])
        )
    }

    /// Signs `user` in through the development login and consent pages
    /// without a browser, following redirects from `authorize_url` (any
    /// authorization request, e.g. the one the web server redirects to)
    /// until they leave the provider. Returns that URL: the client's
    /// redirect URI with `code`, `state` and `iss` (or an `error`).
    pub async fn sign_in(&self, authorize_url: &str, user: &str) -> String {
        match self.walk(authorize_url, user).await {
            Walked::Left(url) => url,
            Walked::Page(body) => panic!("sign-in from {authorize_url}: unexpected page:\n{body}"),
        }
    }

    /// Approves a device authorization (RFC 8628, `asg login`) as `user`,
    /// as a person would in a browser: the verification page with
    /// `user_code`, its confirmation, the login and consent pages; returns
    /// at the provider's "Sign-in Success" page.
    pub async fn approve_device(&self, user_code: &str, user: &str) {
        let url = format!(
            "{}/device?user_code={}",
            self.issuer,
            form_encode(user_code)
        );
        match self.walk(&url, user).await {
            Walked::Page(body) if body.contains("Sign-in Success") => {}
            Walked::Page(body) => panic!("device sign-in: unexpected page:\n{body}"),
            Walked::Left(url) => panic!("device sign-in: left the provider for {url}"),
        }
    }

    /// Follows the provider's pages from `start` with one cookie jar:
    /// redirects, the login page (as `user`, any password), the consent
    /// page, and forms of hidden fields with an `xsrf` (the device flow's
    /// pages). Ends at a redirect away from the provider or at any other
    /// page.
    async fn walk(&self, start: &str, user: &str) -> Walked {
        let mut cookies: BTreeMap<String, String> = BTreeMap::new();
        let mut url = start.to_string();
        let mut form: Option<Vec<(String, String)>> = None;
        for _ in 0..20 {
            let request = match form.take() {
                Some(form) => {
                    let pairs: Vec<(&str, &str)> =
                        form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                    self.http
                        .post(&url)
                        .header("content-type", "application/x-www-form-urlencoded")
                        .body(form_body(&pairs))
                }
                None => self.http.get(&url),
            };
            let response = request
                .header("cookie", cookie_header(&cookies))
                .send()
                .await
                .unwrap_or_else(|e| panic!("sign-in at {url}: {e}"));
            keep_cookies(&mut cookies, &response);
            let status = response.status();
            if status.is_redirection() {
                let next = self.absolute(response.headers().get("location"));
                if !next.starts_with(&format!("{}/", self.issuer)) {
                    return Walked::Left(next);
                }
                url = next;
                continue;
            }
            let body = response.text().await.unwrap_or_default();
            assert!(
                status.is_success(),
                "sign-in at {url}: {status}: {body}\nprovider log:\n{}",
                self.log()
            );
            let owned = |pairs: &[(&str, &str)]| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<Vec<_>>()
            };
            if body.contains(r#"name="prompt" value="login""#) {
                form = Some(owned(&[
                    ("prompt", "login"),
                    ("login", user),
                    ("password", "test"),
                ]));
            } else if body.contains(r#"name="prompt" value="consent""#) {
                form = Some(owned(&[("prompt", "consent")]));
            } else if body.contains(r#"name="xsrf""#) {
                url = self
                    .absolute_text(&attribute_after(&body, "<form", "action").unwrap_or_default());
                form = Some(hidden_inputs(&body));
            } else {
                return Walked::Page(body);
            }
        }
        panic!("sign-in from {start}: too many redirects");
    }

    /// A `Location` (or form action) as an absolute URL at the provider.
    fn absolute(&self, location: Option<&reqwest::header::HeaderValue>) -> String {
        self.absolute_text(location.and_then(|l| l.to_str().ok()).unwrap_or_default())
    }

    fn absolute_text(&self, location: &str) -> String {
        if location.starts_with('/') {
            format!("{}{location}", self.issuer)
        } else {
            location.to_string()
        }
    }

    /// Exchanges an authorization code of the browser client (with the
    /// PKCE verifier); the token response.
    pub async fn exchange_code(&self, code: &str, redirect_uri: &str, verifier: &str) -> Value {
        let (status, body) = self
            .post_token(
                WEB_CLIENT_ID,
                &self.web_client_secret,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", redirect_uri),
                    ("code_verifier", verifier),
                ],
            )
            .await;
        assert_eq!(status, 200, "code exchange: {body}");
        body
    }

    /// Uses a refresh token of the browser client; status and answer.
    pub async fn refresh(&self, refresh_token: &str) -> (u16, Value) {
        self.post_token(
            WEB_CLIENT_ID,
            &self.web_client_secret,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
            ],
        )
        .await
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A PKCE pair (verifier, S256 challenge). The challenge is computed by
/// Node.js, which the provider needs anyway.
pub fn pkce_pair() -> (String, String) {
    let verifier = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let output = Command::new("node")
        .args([
            "-e",
            "process.stdout.write(require('crypto').createHash('sha256')\
             .update(process.argv[1]).digest('base64url'))",
            &verifier,
        ])
        .output()
        .expect("cannot run node for the PKCE challenge");
    assert!(output.status.success(), "node: {output:?}");
    (
        verifier,
        String::from_utf8(output.stdout).expect("challenge is text"),
    )
}

/// A query parameter of a URL (percent-decoded).
pub fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or_default();
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (form_decode(k) == name).then(|| form_decode(v))
    })
}

/// The decoded header of a JWT (no signature check).
pub fn jwt_header(token: &str) -> Value {
    jwt_part(token, 0)
}

/// The decoded claims of a JWT (no signature check).
pub fn jwt_claims(token: &str) -> Value {
    jwt_part(token, 1)
}

fn jwt_part(token: &str, index: usize) -> Value {
    let part = token
        .split('.')
        .nth(index)
        .unwrap_or_else(|| panic!("not a JWT: {token}"));
    let bytes = base64url_decode(part).unwrap_or_else(|| panic!("not base64url: {part}"));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("JWT part {index} is not JSON: {e}"))
}

/// Decodes unpadded (or padded) base64url.
pub fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for c in text.trim_end_matches('=').bytes() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Where [`OidcProvider::walk`] ended.
enum Walked {
    /// A redirect away from the provider, to this URL.
    Left(String),
    /// A page it has no form for (its HTML).
    Page(String),
}

/// Takes the `Set-Cookie`s of a response into the jar.
fn keep_cookies(cookies: &mut BTreeMap<String, String>, response: &reqwest::Response) {
    for value in response.headers().get_all("set-cookie") {
        let value = value.to_str().unwrap_or_default();
        let pair = value.split(';').next().unwrap_or_default();
        if let Some((name, value)) = pair.split_once('=') {
            cookies.insert(name.trim().to_string(), value.trim().to_string());
        }
    }
}

/// The value of `attribute="…"` in the first `tag` of `html`.
fn attribute_after(html: &str, tag: &str, attribute: &str) -> Option<String> {
    let rest = &html[html.find(tag)?..];
    let needle = format!("{attribute}=\"");
    let start = rest.find(&needle)? + needle.len();
    let end = rest[start..].find('"')?;
    Some(rest[start..start + end].to_string())
}

/// Every `<input type="hidden" name=… value=…>` of `html`, in order.
fn hidden_inputs(html: &str) -> Vec<(String, String)> {
    html.split(r#"<input type="hidden" "#)
        .skip(1)
        .filter_map(|input| {
            let name = attribute_after(input, "name", "name")?;
            let value = attribute_after(input, "value", "value")?;
            Some((name, value))
        })
        .collect()
}

fn cookie_header(cookies: &BTreeMap<String, String>) -> String {
    cookies
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `application/x-www-form-urlencoded` encoding of one value.
pub fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn form_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn form_body(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}
