//! An MCP server over HTTP that answers 401: the tool error says sign-in is
//! needed, the chat offers "Sign in and send again", and after the sign-in
//! the message is sent again. The MCP server is `end2end/testdata/mcp_secure.py`
//! (python3, stdlib only; `secure_echo` needs a bearer token); the agent has
//! no `auth:` section; the web server signs in with the real OpenID Connect
//! test provider.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use asg_end2end::login::{LoginWeb, web_yaml};
use asg_end2end::{Browser, web_dist};
use asg_tests::oidc::{
    LOGIN_PASSWORD_INPUT, LOGIN_USER_INPUT, OidcOptions, OidcProvider, SUBMIT_BUTTON, free_port,
};
use asg_tests::{Agent, AgentOptions, listening_port, workspace_root};
use fantoccini::Locator;
use serde_json::{Value, json};

/// The fake MCP server process; killed on drop.
struct SecureMcp {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl SecureMcp {
    fn start(reject_first_token: bool) -> SecureMcp {
        let script = workspace_root().join("end2end/testdata/mcp_secure.py");
        let mut command = Command::new("python3");
        command.arg(script);
        if reject_first_token {
            command.arg("--reject-first-token");
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot run python3");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let stderr_log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut log) = stderr_log.lock() {
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .expect("mcp_secure.py output");
        let port = listening_port(&first)
            .unwrap_or_else(|| panic!("mcp_secure.py did not start: {first:?}"));
        SecureMcp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            log,
        }
    }

    fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for SecureMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The agent: no `auth:` (no login wall), the scripted model, the secure
/// MCP server.
async fn start_agent(dir: &std::path::Path, mcp: &SecureMcp) -> Agent {
    let rules = workspace_root().join("end2end/testdata/scripted/mcp-secure.yaml");
    let config = dir.join("agent.yaml");
    std::fs::write(
        &config,
        format!(
            "name: secure-echo\n\
             description: Echoes through an MCP server that needs a signed-in user.\n\
             prompt: You echo.\n\
             host: 127.0.0.1\n\
             llm:\n  model: scripted:{}\n\
             mcp_servers:\n  - name: secure\n    url: {}\n    timeout_secs: 10\n",
            rules.display(),
            mcp.url
        ),
    )
    .expect("agent.yaml");
    Agent::start(&config, AgentOptions::default()).await
}

/// POST /conversations on the agent; the answer.
async fn converse(agent: &Agent, token: Option<&str>, message: &str) -> Value {
    let mut request = reqwest::Client::new()
        .post(format!("{}/conversations", agent.url))
        .json(&json!({ "message": message }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert!(status.is_success(), "{status}: {body}");
    body
}

/// The (lower-cased) text of the conversation's tool error.
fn tool_error(answer: &Value) -> String {
    let error = answer["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result: {answer}"));
    assert_eq!(error["is_error"], true, "{error}");
    error["content"].as_str().unwrap().to_ascii_lowercase()
}

#[tokio::test]
async fn the_agent_says_sign_in_is_required_when_the_mcp_server_answers_401() {
    let provider = OidcProvider::start().await;
    let mcp = SecureMcp::start(false);
    let dir = tempfile::tempdir().unwrap();
    let agent = start_agent(dir.path(), &mcp).await;

    // Without a token the call goes over the connection opened at
    // startup; the agent says sign-in is required (the phrase the chat
    // recognizes, web/src/logic/auth.rs).
    let anonymous = converse(&agent, None, "echo secret-1").await;
    let text = tool_error(&anonymous);
    assert!(text.contains("sign-in required"), "{text}\n{}", mcp.log());
    // Twice: the shared connection is not retired for a 401.
    let again = converse(&agent, None, "echo secret-1").await;
    let text = tool_error(&again);
    assert!(text.contains("sign-in required"), "{text}\n{}", mcp.log());

    let token = provider.token("alice").await;
    let signed_in = converse(&agent, Some(&token), "echo secret-2").await;
    let text = signed_in.to_string();
    assert!(
        text.contains("secure_echo: secret-2 (for alice)"),
        "{text}\n{}",
        mcp.log()
    );
}

#[tokio::test]
async fn a_refused_token_is_reported_as_sign_in_required() {
    // A token the MCP server refuses (401 at `initialize` on the call's
    // own connection): the error says so in words the chat recognizes.
    let provider = OidcProvider::start().await;
    let mcp = SecureMcp::start(true);
    let dir = tempfile::tempdir().unwrap();
    let agent = start_agent(dir.path(), &mcp).await;
    let refused = provider.token("alice").await;
    let answer = converse(&agent, Some(&refused), "echo secret-3").await;
    let text = tool_error(&answer);
    assert!(text.contains("sign-in required"), "{text}\n{}", mcp.log());
    let fresh = provider.token("alice").await;
    let answer = converse(&agent, Some(&fresh), "echo secret-4").await;
    let text = answer.to_string();
    assert!(text.contains("secure_echo: secret-4 (for alice)"), "{text}");
}

/// Signs in through the provider's pages (login, consent, or neither when
/// the provider still has a session) until the browser is back on the chat.
async fn provider_sign_in(browser: &Browser, provider: &OidcProvider, web_url: &str, user: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let url = browser.client.current_url().await.unwrap().to_string();
        if url.starts_with(web_url) && !url.contains("/auth/") {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still at {url}; provider log:\n{}",
            provider.log()
        );
        if let Ok(login) = browser.client.find(Locator::Css(LOGIN_USER_INPUT)).await {
            let _ = login.send_keys(user).await;
            if let Ok(password) = browser
                .client
                .find(Locator::Css(LOGIN_PASSWORD_INPUT))
                .await
            {
                let _ = password.send_keys("test").await;
            }
        }
        if let Ok(button) = browser.client.find(Locator::Css(SUBMIT_BUTTON)).await {
            let _ = button.click().await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test]
async fn the_chat_signs_in_again_and_resends_when_the_mcp_server_answers_401() {
    let dir = tempfile::tempdir().unwrap();
    let web_port = free_port();
    let web_url = format!("http://127.0.0.1:{web_port}");
    let provider = OidcProvider::start_with(OidcOptions {
        redirect_uris: vec![format!("{web_url}/auth/callback")],
        post_logout_redirect_uris: vec![format!("{web_url}/")],
        ..OidcOptions::default()
    })
    .await;
    // The MCP server refuses the first token it sees (as one it no longer
    // accepts); the token of the next sign-in works.
    let mcp = SecureMcp::start(true);
    let agent = start_agent(dir.path(), &mcp).await;
    let web_config = dir.path().join("web.yaml");
    std::fs::write(
        &web_config,
        web_yaml(&agent.url, &provider.issuer, &web_url, &web_dist()),
    )
    .unwrap();
    let web = LoginWeb::start(&web_config, web_port, &provider.web_client_secret);

    let browser = Browser::start().await;
    browser.goto(&web.url).await;
    browser.wait_for("#sign-in").await.click().await.unwrap();
    provider_sign_in(&browser, &provider, &web.url, "alice").await;
    // The agent has no `auth:`, so its /me (behind /auth/me) names no one.
    browser.wait_for("#sign-out").await;

    browser.send_message("echo secret-1").await;
    browser
        .wait_text(".tool-sign-in", "The tool server needs you to sign in.")
        .await;
    let retry = browser.wait_for(".sign-in-retry").await;
    browser.screenshot("mcp-login-sign-in-needed").await;
    retry.click().await.unwrap();
    provider_sign_in(&browser, &provider, &web.url, "alice").await;

    // Back in the chat, the message is sent again by itself.
    let answer = browser
        .wait_text(
            "#messages .message.assistant",
            "secure_echo: secret-1 (for alice)",
        )
        .await;
    assert!(answer.contains("The secure server says"), "{answer}");
    browser.screenshot("mcp-login-sent-again").await;
    let log = mcp.log();
    assert!(log.contains("refused a rejected token"), "{log}");
    browser.close().await;
}
