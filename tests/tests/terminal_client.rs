//! The terminal client `asg` (issue 22) against the real agent: chat,
//! approvals decided at the prompt (approve, reject with a reason, edit in
//! `$EDITOR`), the live inbox decided by key — all through a
//! pseudo-terminal (expectrl) — plus plain piped output, API keys and
//! errors, and `asg login`'s device flow against the repository's real
//! OpenID Connect provider (and a fake one for the edge cases).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use asg_tests::oidc::{CLI_CLIENT_ID, OidcProvider};
use asg_tests::{Agent, AgentOptions, binary, config_with, testdata};
use expectrl::Expect;
use expectrl::session::OsSession as Session;
use serde_json::{Value, json};

/// How long one expected text may take (the agent's turns take
/// milliseconds; this only bounds a failure).
const EXPECT_TIMEOUT: Duration = Duration::from_secs(20);

/// `asg ARGS` against `url`, with its own home (config, history) and no
/// credential from the test's environment. `TERM=dumb`: reedline then
/// asks the terminal nothing (no cursor position query to answer).
/// `NO_COLOR=1`, so texts are matched without colour codes; the tests of
/// colour itself remove it.
fn asg(url: &str, home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(binary("asg"));
    command
        .args(args)
        .env("ASG_URL", url)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("TERM", "dumb")
        .env_remove("ASG_API_KEY")
        .env_remove("ASG_TOKEN")
        .env("NO_COLOR", "1")
        .env_remove("EDITOR")
        .env_remove("VISUAL");
    command
}

/// Starts `command` on a pseudo-terminal.
fn on_terminal(command: Command) -> Session {
    let mut session = expectrl::Session::spawn(command).expect("spawn asg on a pty");
    session.set_expect_timeout(Some(EXPECT_TIMEOUT));
    session
}

/// Waits for `text` on the terminal, naming it on failure.
fn expect(session: &mut Session, text: &str) {
    if let Err(error) = session.expect(text) {
        panic!("expected {text:?} on the terminal: {error}");
    }
}

/// Types a line (Enter is `\r` on a terminal in raw mode).
fn type_line(session: &mut Session, line: &str) {
    session.send(format!("{line}\r")).expect("type a line");
}

fn press(session: &mut Session, keys: &str) {
    session.send(keys).expect("press keys");
}

async fn resources_agent() -> Agent {
    Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await
}

/// The only conversation's decisions (the chat tests start one).
async fn decisions(agent: &Agent, conversation: &str) -> Vec<Value> {
    agent.conversation(conversation).await["decisions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The id `asg chat` printed as "conversation <id>".
fn conversation_shown(session: &mut Session) -> String {
    let found = session
        .expect(expectrl::Regex("conversation ([0-9a-f-]{36})"))
        .expect("the chat names its conversation");
    let id = found.get(1).expect("the id");
    String::from_utf8_lossy(id).into_owned()
}

/// Waits for `asg` to end; it must end with status 0.
fn exits_with_success(session: &Session) {
    let status = format!("{:?}", session.get_process().wait().expect("asg exits"));
    assert!(
        status.starts_with("Exited(") && status.ends_with(", 0)"),
        "{status}"
    );
}

/// Runs `asg` with stdout and stderr as pipes.
fn run_piped(command: &mut Command) -> (bool, String, String) {
    let output = command.output().expect("run asg");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn chat_sends_a_message_and_shows_the_reply() {
    let agent = resources_agent().await;
    let home = tempfile::tempdir().expect("home");
    let mut command = asg(&agent.url, home.path(), &["chat"]);
    command.env_remove("NO_COLOR");
    let mut chat = on_terminal(command);
    expect(&mut chat, "you>");
    type_line(&mut chat, "list resources");
    let id = conversation_shown(&mut chat);
    // At a terminal without NO_COLOR, the agent's words are coloured.
    expect(&mut chat, "\x1b[36mThere are 0 resources");
    expect(&mut chat, "you>");
    press(&mut chat, "\x04");
    exits_with_success(&chat);
    let history = std::fs::read_to_string(home.path().join("state/asg/history"))
        .expect("the history is kept in the XDG state dir");
    assert!(history.contains("list resources"), "{history}");
    assert_eq!(agent.conversation(&id).await["status"], "active");
}

#[tokio::test]
async fn an_approval_prompt_approved_runs_the_call_once() {
    let agent = resources_agent().await;
    let home = tempfile::tempdir().expect("home");
    let mut chat = on_terminal(asg(&agent.url, home.path(), &["chat"]));
    expect(&mut chat, "you>");
    type_line(&mut chat, "add resource web-1 with value 42");
    let id = conversation_shown(&mut chat);
    expect(&mut chat, "Approval needed: resources_add");
    expect(&mut chat, "\"name\": \"web-1\"");
    expect(&mut chat, "[a]pprove");
    press(&mut chat, "d");
    expect(&mut chat, "\"call_id\"");
    press(&mut chat, "a");
    expect(&mut chat, "Created the resource");
    expect(&mut chat, "you>");
    assert_eq!(agent.resource_names().await, ["web-1"]);
    let conversation = agent.conversation(&id).await;
    let ran = asg_tests::tool_messages(&conversation)
        .iter()
        .filter(|m| m["tool_result"]["name"] == "resources_add")
        .count();
    assert_eq!(ran, 1, "{conversation}");
    assert_eq!(decisions(&agent, &id).await[0]["approved"], true);
}

#[tokio::test]
async fn an_approval_rejected_records_the_reason() {
    let agent = resources_agent().await;
    let home = tempfile::tempdir().expect("home");
    let mut chat = on_terminal(asg(&agent.url, home.path(), &["chat"]));
    expect(&mut chat, "you>");
    type_line(&mut chat, "add resource web-2 with value 1");
    let id = conversation_shown(&mut chat);
    expect(&mut chat, "[a]pprove");
    press(&mut chat, "r");
    expect(&mut chat, "reason");
    type_line(&mut chat, "too risky today");
    expect(&mut chat, "Cancelled");
    let decisions = decisions(&agent, &id).await;
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["approved"], false);
    assert_eq!(decisions[0]["reason"], "too risky today");
    assert!(
        agent.resource_names().await.is_empty(),
        "the add did not run"
    );
}

#[tokio::test]
async fn an_approval_edited_in_the_editor_runs_with_the_edit() {
    let agent = resources_agent().await;
    let home = tempfile::tempdir().expect("home");
    let editor = home.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/\"value\": 7/\"value\": 8/' \"$1\"\n",
    )
    .expect("write the fake editor");
    let mut command = asg(&agent.url, home.path(), &["chat"]);
    command.env("EDITOR", format!("sh {}", editor.display()));
    let mut chat = on_terminal(command);
    expect(&mut chat, "you>");
    type_line(&mut chat, "add resource web-3 with value 7");
    let id = conversation_shown(&mut chat);
    expect(&mut chat, "[e]dit");
    press(&mut chat, "e");
    expect(&mut chat, "approving with");
    expect(&mut chat, "Created the resource");
    let decisions = decisions(&agent, &id).await;
    assert_eq!(
        decisions[0]["edited_arguments"]["value"], 8,
        "{decisions:?}"
    );
    let resources = agent.list_resources().await;
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(
        (&resources[0]["name"], &resources[0]["value"]),
        (&json!("web-3"), &json!(8))
    );
}

#[tokio::test]
async fn questions_are_asked_in_place_with_numbered_choices() {
    let agent = Agent::start(&testdata("agent-questions.yaml"), AgentOptions::default()).await;
    let home = tempfile::tempdir().expect("home");
    let mut chat = on_terminal(asg(&agent.url, home.path(), &["chat"]));
    expect(&mut chat, "you>");
    type_line(&mut chat, "deploy please");
    let id = conversation_shown(&mut chat);
    expect(&mut chat, "Question: Which environment?");
    expect(&mut chat, "1. staging");
    expect(&mut chat, "2. prod");
    expect(&mut chat, "answer");
    type_line(&mut chat, "2");
    expect(&mut chat, "Going on with:");
    expect(&mut chat, "you>");
    type_line(&mut chat, "deploy again");
    expect(&mut chat, "Question: Which environment?");
    expect(&mut chat, "answer");
    type_line(&mut chat, "");
    expect(&mut chat, "you>");
    let decisions = decisions(&agent, &id).await;
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert_eq!(
        decisions[0]["reply"],
        json!({"action": "accept", "answer": "prod"})
    );
    assert_eq!(decisions[1]["reply"]["action"], "decline", "{decisions:?}");
}

#[tokio::test]
async fn the_piped_inbox_prints_one_line_per_event() {
    use std::io::BufRead;
    let agent = resources_agent().await;
    let (_, answer) = agent.say_new("add resource pi-1 with value 2").await;
    let uuid = asg_tests::approval_uuid(&answer);
    let home = tempfile::tempdir().expect("home");
    let mut child = asg(&agent.url, home.path(), &["inbox"])
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start asg inbox");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut next = || lines.next().expect("a line").expect("text");
    assert_eq!(next(), "1 pending");
    let line = next();
    assert!(
        line.starts_with(&format!("#1 {uuid} resources_add")),
        "{line}"
    );
    assert!(!line.contains('\x1b'), "{line:?}");
    let (status, _) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200);
    let line = next();
    assert!(
        line.starts_with(&format!("resolved #1 {uuid}: resources_add approved")),
        "{line}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn the_inbox_shows_new_approvals_and_decides_them_by_key() {
    let agent = resources_agent().await;
    let home = tempfile::tempdir().expect("home");
    let mut inbox = on_terminal(asg(&agent.url, home.path(), &["inbox"]));
    expect(&mut inbox, "0 pending");
    let (status, first) = agent.say_new("add resource in-1 with value 5").await;
    assert_eq!(status, 201, "{first}");
    expect(&mut inbox, "new #1 ");
    press(&mut inbox, "1");
    expect(&mut inbox, "#1: [a]pprove");
    press(&mut inbox, "a");
    expect(&mut inbox, "#1 decided.");
    assert_eq!(agent.resource_names().await, ["in-1"]);

    let (_, second) = agent.say_new("add resource in-2 with value 6").await;
    expect(&mut inbox, "new #2 ");
    press(&mut inbox, "2r");
    expect(&mut inbox, "reason");
    type_line(&mut inbox, "not now");
    expect(&mut inbox, "#2 decided.");
    let id = asg_tests::conversation_id(&second);
    assert_eq!(decisions(&agent, &id).await[0]["reason"], "not now");
    press(&mut inbox, "q");
    exits_with_success(&inbox);
    assert_eq!(agent.resource_names().await, ["in-1"]);
}

#[tokio::test]
async fn piped_output_is_plain_and_decisions_work_from_the_command_line() {
    let agent = resources_agent().await;
    let home = tempfile::tempdir().expect("home");
    let (_, answer) = agent.say_new("add resource p-1 with value 3").await;
    let uuid = asg_tests::approval_uuid(&answer);
    let id = asg_tests::conversation_id(&answer);
    let listing = [
        vec!["approvals", "list"],
        vec!["conversations", "list"],
        vec!["conversations", "show", id.as_str()],
    ];
    for args in listing {
        let mut command = asg(&agent.url, home.path(), &args);
        command.env_remove("NO_COLOR");
        let (ok, stdout, stderr) = run_piped(&mut command);
        assert!(ok, "{args:?}: {stderr}");
        assert!(
            !stdout.contains('\x1b'),
            "{args:?} wrote escapes: {stdout:?}"
        );
        assert!(
            stdout.contains("resources_add") || stdout.contains(&id),
            "{args:?}: {stdout}"
        );
    }
    let (ok, _, stderr) = run_piped(&mut asg(
        &agent.url,
        home.path(),
        &["approvals", "approve", "nope"],
    ));
    assert!(!ok);
    assert!(stderr.contains("\"nope\" is not a UUID"), "{stderr}");
    let reject = ["approvals", "reject", uuid.as_str(), "--reason", "piped no"];
    let (ok, stdout, stderr) = run_piped(&mut asg(&agent.url, home.path(), &reject));
    assert!(ok, "{stderr}");
    assert!(stdout.contains("rejected"), "{stdout}");
    assert_eq!(decisions(&agent, &id).await[0]["reason"], "piped no");
    let (ok, _, stderr) = run_piped(&mut asg(&agent.url, home.path(), &reject[..3]));
    assert!(!ok, "a second decision is refused");
    assert!(
        stderr.starts_with("asg: ") && stderr.contains("HTTP 409"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[tokio::test]
async fn an_api_key_from_the_environment_is_sent_and_a_wrong_one_is_named() {
    const KEY: &str = "ops-bot-key-0123456789";
    let auth =
        "auth:\n  api_keys:\n    - { name: ops-bot, key_env: OPS_BOT_KEY, roles: [approver] }\n";
    let (_dir, config) = config_with("agent-resources.yaml", auth);
    let agent = Agent::start(&config, AgentOptions::with_env(&[("OPS_BOT_KEY", KEY)])).await;
    let home = tempfile::tempdir().expect("home");
    let list = ["conversations", "list"];
    let (ok, stdout, stderr) =
        run_piped(asg(&agent.url, home.path(), &list).env("ASG_API_KEY", KEY));
    assert!(ok, "{stderr}");
    assert!(stdout.contains("0 conversations"), "{stdout}");
    let wrong = "wrong-key-0123456789abc";
    let (ok, stdout, stderr) =
        run_piped(asg(&agent.url, home.path(), &list).env("ASG_API_KEY", wrong));
    assert!(!ok, "{stdout}");
    assert!(
        stderr.contains("HTTP 401") && stderr.contains("ASG_API_KEY"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(wrong) && !stdout.contains(wrong),
        "the key is never printed"
    );
    let (ok, _, stderr) = run_piped(&mut asg("http://127.0.0.1:9", home.path(), &list));
    assert!(!ok);
    assert!(
        stderr.contains("cannot reach the agent at http://127.0.0.1:9"),
        "{stderr}"
    );
}

/// A provider with (or without) the device flow, which also answers
/// `GET /conversations` as an agent would, recording the `Authorization`
/// it gets.
struct FakeProvider {
    url: String,
    authorizations: Arc<Mutex<Vec<String>>>,
}

const FAKE_TOKEN: &str = "fake-access-token-from-the-device-flow";

async fn fake_provider(device_flow: bool) -> FakeProvider {
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let polls = Arc::new(Mutex::new(0_u32));
    let authorizations = Arc::new(Mutex::new(Vec::new()));
    let mut discovery = json!({"issuer": url, "token_endpoint": format!("{url}/token")});
    if device_flow {
        discovery["device_authorization_endpoint"] = json!(format!("{url}/device"));
    }
    let seen = authorizations.clone();
    let app = axum::Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || async move { axum::Json(discovery) }),
        )
        .route(
            "/device",
            post(|| async {
                axum::Json(json!({"device_code": "dev-1", "user_code": "WDJB-MJHT",
                    "verification_uri": "https://idp.example/device", "expires_in": 60, "interval": 1}))
            }),
        )
        .route(
            "/token",
            post(move |body: String| async move {
                assert!(body.contains("device_code=dev-1"), "{body}");
                let mut polls = polls.lock().expect("lock");
                *polls += 1;
                if *polls == 1 {
                    let pending = json!({"error": "authorization_pending"});
                    return (axum::http::StatusCode::BAD_REQUEST, axum::Json(pending));
                }
                let token = json!({"access_token": FAKE_TOKEN, "token_type": "Bearer", "expires_in": 300});
                (axum::http::StatusCode::OK, axum::Json(token))
            }),
        )
        .route(
            "/conversations",
            get(move |headers: axum::http::HeaderMap| async move {
                let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
                seen.lock().expect("lock").push(auth.unwrap_or("").to_string());
                axum::Json(json!({"conversations": [], "summary": {"total": 0, "active": 0,
                    "waiting_approval": 0, "completed": 0, "canceled": 0}}))
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    FakeProvider {
        url,
        authorizations,
    }
}

async fn run_async(mut command: Command) -> (bool, String, String) {
    tokio::task::spawn_blocking(move || run_piped(&mut command))
        .await
        .expect("asg ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_through_the_device_flow_stores_the_token_privately() {
    use std::os::unix::fs::PermissionsExt;
    let provider = fake_provider(true).await;
    let home = tempfile::tempdir().expect("home");
    let login = [
        "login",
        "--issuer",
        provider.url.as_str(),
        "--client-id",
        "asg-cli",
    ];
    let (ok, stdout, stderr) = run_async(asg(&provider.url, home.path(), &login)).await;
    assert!(ok, "{stdout}{stderr}");
    assert!(
        stdout.contains("https://idp.example/device") && stdout.contains("WDJB-MJHT"),
        "{stdout}"
    );
    assert!(
        !stdout.contains(FAKE_TOKEN) && !stderr.contains(FAKE_TOKEN),
        "never printed"
    );
    let file: PathBuf = home.path().join("config/asg/token.json");
    let mode = std::fs::metadata(&file)
        .expect("token file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let (ok, _, stderr) =
        run_async(asg(&provider.url, home.path(), &["conversations", "list"])).await;
    assert!(ok, "{stderr}");
    let sent = provider.authorizations.lock().expect("lock").clone();
    assert_eq!(sent, [format!("Bearer {FAKE_TOKEN}")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_without_a_device_endpoint_says_so() {
    let provider = fake_provider(false).await;
    let home = tempfile::tempdir().expect("home");
    let login = ["login", "--issuer", provider.url.as_str()];
    let (ok, _, stderr) = run_async(asg(&provider.url, home.path(), &login)).await;
    assert!(!ok);
    assert!(
        stderr.contains("does not offer the device authorization flow"),
        "{stderr}"
    );
    assert!(stderr.contains("device_authorization_endpoint"), "{stderr}");
    assert!(!home.path().join("config/asg/token.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_at_the_real_provider_signs_asg_in_to_the_agent() {
    use std::io::BufRead;
    let provider = OidcProvider::start().await;
    let auth = format!(
        "auth:\n  oidc: {{ issuer: \"{}\", audience: agent-stop-and-go }}\n",
        provider.issuer
    );
    let (_dir, config) = config_with("agent-resources.yaml", &auth);
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let home = tempfile::tempdir().expect("home");
    let list = ["conversations", "list"];
    let (ok, _, stderr) = run_async(asg(&agent.url, home.path(), &list)).await;
    assert!(
        !ok && stderr.contains("HTTP 401"),
        "no credential yet: {stderr}"
    );

    let login = [
        "login",
        "--issuer",
        &provider.issuer,
        "--client-id",
        CLI_CLIENT_ID,
    ];
    let mut child = asg(&agent.url, home.path(), &login)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start asg login");
    let stdout = child.stdout.take().expect("stdout");
    // The reader stays open (asg prints more after the code).
    let (first, _reader) = tokio::task::spawn_blocking(move || {
        let mut reader = std::io::BufReader::new(stdout);
        let mut line = String::new();
        reader.read_line(&mut line).expect("the first line");
        (line, reader)
    })
    .await
    .expect("read");
    assert!(
        first.starts_with(&format!("Open {}/device", provider.issuer)),
        "{first}"
    );
    let user_code = first.trim().rsplit(' ').next().expect("the code");
    provider.approve_device(user_code, "alice").await;
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("wait")
        .expect("asg login ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{stderr}\nprovider log:\n{}",
        provider.log()
    );

    let (ok, stdout, stderr) = run_async(asg(&agent.url, home.path(), &list)).await;
    assert!(ok, "the stored token is sent: {stderr}");
    assert!(stdout.contains("0 conversations"), "{stdout}");
    let mut chat = asg(&agent.url, home.path(), &["chat"]);
    chat.stdin(std::process::Stdio::piped());
    let (ok, stdout, stderr) = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = chat
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start asg chat");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"list resources\n").expect("type");
        drop(stdin);
        let output = child.wait_with_output().expect("asg chat ends");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    })
    .await
    .expect("chat ran");
    assert!(
        ok && stdout.contains("There are 0 resources"),
        "{stdout}{stderr}"
    );
    let id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("conversation "))
        .expect("the chat names its conversation");
    let admin = provider.token("dana").await;
    let bearer = format!("Bearer {admin}");
    let (status, body) = agent
        .get_with(
            &format!("/conversations/{id}"),
            &[("authorization", &bearer)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["conversation"]["owner"],
        provider.subject("alice"),
        "{body}"
    );
}
