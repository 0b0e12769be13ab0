//! Email approvals (issue 22), end to end: the real agent on the offline
//! model mails each approval request to a real SMTP server
//! (`tests/smtp/sink.py`, aiosmtpd); the mail's links open a confirmation
//! page that decides nothing; its form decides once, as the recipient's
//! principal, judged by the gate; replayed, expired, tampered and
//! mismatched links are refused with a clear page and change nothing;
//! an SMTP server that is down at first gets the mail on a retry, and the
//! turn is not failed by it.
//!
//! aiosmtpd comes from the venv `scripts/smtp-venv.sh` makes (run by
//! `scripts/test.sh`); without it these tests are skipped on a developer
//! machine and fail in CI.

use std::time::Duration;

use asg_tests::smtp::{Mail, SmtpSink, sink_python};
use asg_tests::{
    Agent, AgentOptions, approval_uuid, config_with, conversation_id, poll, tool_messages,
};
use serde_json::{Value, json};

const LINK_SECRET: &str = "link-secret-0123456789abcdef0123456789";
const ALICE_KEY: &str = "alice-key-0123456789abcdef";
const BOB_KEY: &str = "bob-key-0123456789abcdef";
const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";
const MAIL_WAIT: Duration = Duration::from_secs(10);

/// The venv's Python, or `None` (skip) on a developer machine without it.
fn python() -> Option<std::path::PathBuf> {
    match sink_python() {
        Ok(python) => Some(python),
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED email: {why}");
            None
        }
        Err(why) => panic!("CI must run the email tests: {why}"),
    }
}

/// Alice and Bob are approvers with keys and mail addresses; Bob asks.
fn config(port: u16, link_ttl: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    config_routed(port, link_ttl, ("", "", ""))
}

/// [`config`] with approval rules and mail routes (YAML list items).
fn config_routed(
    port: u16,
    link_ttl: &str,
    (approval, rules, routes): (&str, &str, &str),
) -> (tempfile::TempDir, std::path::PathBuf) {
    let extra = format!(
        "auth:\n  api_keys:\n    - {{ name: alice, key_env: ALICE_KEY, roles: [approver], groups: [dba] }}\n    \
         - {{ name: bob, key_env: BOB_KEY, roles: [approver] }}\n\
         approval: {{ separate_approver: true, {approval}rules: [{rules}] }}\n\
         channels:\n  email:\n    smtp_host: 127.0.0.1\n    smtp_port: {port}\n    tls: none\n    \
         from: Agent <agent@example.com>\n    link_secret_env: LINK_SECRET\n    link_ttl: {link_ttl}\n    \
         to: {{ {ALICE}: 'key:alice', {BOB}: 'key:bob' }}\n    routes: [{routes}]\n"
    );
    config_with("agent-resources.yaml", &extra)
}

struct Setup {
    agent: Agent,
    sink: SmtpSink,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

async fn start(link_ttl: &str) -> Option<Setup> {
    start_routed(link_ttl, "", "").await
}

async fn start_routed(link_ttl: &str, rules: &str, routes: &str) -> Option<Setup> {
    start_with(link_ttl, ("", rules, routes)).await
}

/// An agent whose config has `approval` settings (ending in ", "),
/// `approval.rules` and `channels.email.routes` (YAML list items).
async fn start_with(link_ttl: &str, settings: (&str, &str, &str)) -> Option<Setup> {
    let python = python()?;
    let port = asg_tests::oidc::free_port();
    let sink = SmtpSink::start_on(&python, port).await;
    let (dir, path) = config_routed(port, link_ttl, settings);
    let env = [
        ("ALICE_KEY", ALICE_KEY),
        ("BOB_KEY", BOB_KEY),
        ("LINK_SECRET", LINK_SECRET),
    ];
    let agent = Agent::start(&path, AgentOptions::with_env(&env)).await;
    Some(Setup {
        agent,
        sink,
        http: reqwest::Client::new(),
        _dir: dir,
    })
}

/// Bob asks to add resource `name`: (conversation id, approval uuid).
async fn ask(agent: &Agent, name: &str) -> (String, String) {
    let body = json!({"message": format!("add resource {name} with value 1")}).to_string();
    let (status, answer) = agent
        .post_with("/conversations", body, &[("x-api-key", BOB_KEY)])
        .await;
    assert_eq!(status, 201, "{answer}");
    (conversation_id(&answer), approval_uuid(&answer))
}

/// The mail to `to` about approval `uuid` (waits for it).
async fn mail_for(sink: &SmtpSink, to: &str, uuid: &str) -> Mail {
    poll(
        &format!("the mail to {to} about {uuid}"),
        MAIL_WAIT,
        || async {
            sink.mails().into_iter().find(|m| {
                m.recipients() == [to] && m.part("text/plain").is_some_and(|t| t.contains(uuid))
            })
        },
    )
    .await
}

/// The link after `label` in the mail's text part.
fn link(mail: &Mail, label: &str) -> String {
    let text = mail.part("text/plain").expect("a text part");
    text.lines()
        .find_map(|line| line.strip_prefix(label))
        .map(|url| url.trim().to_string())
        .unwrap_or_else(|| panic!("no {label} link in {text}"))
}

/// A link's query fields.
fn fields(url: &str) -> Vec<(String, String)> {
    reqwest::Url::parse(url)
        .expect("a URL")
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

impl Setup {
    async fn page(&self, url: &str) -> (u16, String, reqwest::header::HeaderMap) {
        let response = self.http.get(url).send().await.expect("GET the link");
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        (status, response.text().await.unwrap_or_default(), headers)
    }

    /// POSTs the confirmation form of `url` (its query, the decision and
    /// extra fields) as a browser would.
    async fn confirm(&self, url: &str, decision: &str, extra: &[(&str, &str)]) -> (u16, String) {
        let mut form = fields(url);
        form.push(("decision".into(), decision.into()));
        form.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let body = form
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let response = self
            .http
            .post(format!("{}/channels/email/decide", self.agent.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("POST the form");
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }

    async fn conversation(&self, id: &str) -> Value {
        let path = format!("/conversations/{id}");
        let (status, body) = self
            .agent
            .get_with(&path, &[("x-api-key", ALICE_KEY)])
            .await;
        assert_eq!(status, 200, "{body}");
        body["conversation"].clone()
    }

    async fn still_pending(&self, id: &str, uuid: &str) {
        let conversation = self.conversation(id).await;
        assert_eq!(
            conversation["pending_approval"]["uuid"], uuid,
            "{conversation}"
        );
        assert!(
            conversation["decisions"]
                .as_array()
                .is_none_or(Vec::is_empty),
            "{conversation}"
        );
    }
}

fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn adds(conversation: &Value) -> usize {
    tool_messages(conversation)
        .iter()
        .filter(|m| m["tool_result"]["name"] == "resources_add")
        .count()
}

/// Checks a mail about adding `mailed-1` (both parts name the approval,
/// both links point here); its (Approve, Reject) links.
fn checked_links(mail: &Mail, agent_url: &str) -> (String, String) {
    let record = &mail.record;
    assert_eq!(record["content_type"], "multipart/alternative", "{record}");
    assert!(mail.subject().contains("resources_add"), "{record}");
    let text = mail.part("text/plain").expect("a text part");
    let html = mail.part("text/html").expect("an HTML part");
    let (approve, reject) = (link(mail, "Approve:"), link(mail, "Reject:"));
    for part in [&text, &html] {
        assert!(
            part.contains("resources_add") && part.contains("mailed-1"),
            "{part}"
        );
        assert!(part.contains("key:bob"), "requester named: {part}");
    }
    let here = format!("{agent_url}/channels/email/");
    assert!(approve.starts_with(&format!("{here}approve?")), "{approve}");
    assert!(reject.starts_with(&format!("{here}reject?")), "{reject}");
    assert!(html.contains(&approve.replace('&', "&amp;")), "{html}");
    assert!(html.contains(&reject.replace('&', "&amp;")), "{html}");
    (approve, reject)
}

/// The confirmation pages' security headers.
fn check_page_headers(headers: &reqwest::header::HeaderMap) {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    assert!(header("content-security-policy").contains("frame-ancestors 'none'"));
    assert!(header("content-security-policy").contains("default-src 'none'"));
    assert_eq!(header("x-frame-options"), "DENY");
    assert_eq!(header("cache-control"), "no-store");
    assert_eq!(header("referrer-policy"), "no-referrer");
    assert!(header("content-type").starts_with("text/html"));
}

#[tokio::test]
async fn a_mailed_link_confirms_first_and_decides_once_as_the_recipient() {
    let Some(setup) = start("1h").await else {
        return;
    };
    let sink = &setup.sink;
    let (id, uuid) = ask(&setup.agent, "mailed-1").await;
    let (approve, reject) = checked_links(&mail_for(sink, ALICE, &uuid).await, &setup.agent.url);
    mail_for(sink, BOB, &uuid).await;

    // Opening the link decides nothing.
    let (status, page, headers) = setup.page(&approve).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("resources_add") && page.contains("mailed-1"),
        "{page}"
    );
    assert!(page.contains("method=\"post\""), "{page}");
    check_page_headers(&headers);
    setup.page(&reject).await;
    setup.still_pending(&id, &uuid).await;

    // The form decides, as Alice.
    let (status, page) = setup.confirm(&approve, "approve", &[]).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Approved"), "{page}");
    let conversation = setup.conversation(&id).await;
    let decision = &conversation["decisions"][0];
    assert_eq!(decision["approved"], true, "{conversation}");
    assert_eq!(decision["decided_by"]["subject"], "key:alice", "{decision}");
    assert_eq!(decision["decided_by"]["via"], "email", "{decision}");
    assert_eq!(adds(&conversation), 1, "{conversation}");

    // Replayed, or the other link, or the link again: already decided.
    let (status, page) = setup.confirm(&approve, "approve", &[]).await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("already approved by"), "{page}");
    let (status, page) = setup.confirm(&reject, "reject", &[]).await;
    assert_eq!(status, 409, "{page}");
    let (status, page, _) = setup.page(&approve).await;
    assert_eq!(status, 409, "{page}");
    let conversation = setup.conversation(&id).await;
    assert_eq!(adds(&conversation), 1, "ran once: {conversation}");
    assert_eq!(conversation["decisions"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn tampered_and_mismatched_links_are_refused_and_change_nothing() {
    let Some(setup) = start("1h").await else {
        return;
    };
    let sink = &setup.sink;
    let (first_id, first) = ask(&setup.agent, "tamper-1").await;
    let (second_id, second) = ask(&setup.agent, "tamper-2").await;
    let approve = link(&mail_for(sink, ALICE, &first).await, "Approve:");
    let reject = link(&mail_for(sink, ALICE, &first).await, "Reject:");
    mail_for(sink, ALICE, &second).await;

    // One character of the token changed.
    let token = fields(&approve)
        .into_iter()
        .find(|(k, _)| k == "token")
        .unwrap()
        .1;
    let (payload, tag) = token.split_once('.').unwrap();
    let flipped = if tag.starts_with('A') { "B" } else { "A" };
    let forged = approve.replace(&token, &format!("{payload}.{flipped}{}", &tag[1..]));
    let (status, page, _) = setup.page(&forged).await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("signature does not match"), "{page}");
    let (status, page) = setup.confirm(&forged, "approve", &[]).await;
    assert_eq!(status, 403, "{page}");

    // The first approval's link aimed at the second approval.
    let other = approve.replace(&first, &second);
    let (status, page) = setup.confirm(&other, "approve", &[]).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("another approval"), "{page}");
    // The Reject link posted as an approval.
    let (status, page) = setup.confirm(&reject, "approve", &[]).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("other decision"), "{page}");
    // No token at all.
    let bare = format!(
        "{}/channels/email/approve?approval={first}",
        setup.agent.url
    );
    let (status, page, _) = setup.page(&bare).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("incomplete"), "{page}");

    setup.still_pending(&first_id, &first).await;
    setup.still_pending(&second_id, &second).await;
}

#[tokio::test]
async fn an_expired_link_is_refused() {
    let Some(setup) = start("1s").await else {
        return;
    };
    let sink = &setup.sink;
    let (id, uuid) = ask(&setup.agent, "expire-1").await;
    let approve = link(&mail_for(sink, ALICE, &uuid).await, "Approve:");
    let page = poll("the link to expire", Duration::from_secs(5), || async {
        let (status, page, _) = setup.page(&approve).await;
        (status == 410).then_some(page)
    })
    .await;
    assert!(page.contains("expired"), "{page}");
    let (status, page) = setup.confirm(&approve, "approve", &[]).await;
    assert_eq!(status, 410, "{page}");
    setup.still_pending(&id, &uuid).await;
}

#[tokio::test]
async fn the_requester_cannot_decide_their_own_request_by_mail() {
    let Some(setup) = start("1h").await else {
        return;
    };
    let sink = &setup.sink;
    let (id, uuid) = ask(&setup.agent, "four-eyes-1").await;
    let bobs = link(&mail_for(sink, BOB, &uuid).await, "Approve:");
    let (status, page) = setup.confirm(&bobs, "approve", &[]).await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("separate_approver"), "{page}");
    setup.still_pending(&id, &uuid).await;

    // Alice rejects, with a reason.
    let alices = link(&mail_for(sink, ALICE, &uuid).await, "Reject:");
    let (status, page) = setup
        .confirm(&alices, "reject", &[("reason", "not <today>")])
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Rejected"), "{page}");
    let conversation = setup.conversation(&id).await;
    let decision = &conversation["decisions"][0];
    assert_eq!(decision["approved"], false, "{decision}");
    assert_eq!(decision["reason"], "not <today>", "{decision}");
    assert_eq!(decision["decided_by"]["subject"], "key:alice", "{decision}");
    assert_eq!(
        adds(&conversation),
        1,
        "the rejection is recorded as the result"
    );
}

#[tokio::test]
async fn a_mail_is_sent_once_the_smtp_server_is_back_and_the_turn_goes_on() {
    let Some(python) = python() else { return };
    let port = asg_tests::oidc::free_port();
    let (_dir, path) = config(port, "1h");
    let env = [
        ("ALICE_KEY", ALICE_KEY),
        ("BOB_KEY", BOB_KEY),
        ("LINK_SECRET", LINK_SECRET),
    ];
    let agent = Agent::start(&path, AgentOptions::with_env(&env)).await;
    // Nothing listens on the port yet: the first attempts fail.
    let (_, uuid) = ask(&agent, "retry-1").await;
    poll(
        "a failed attempt in the log",
        Duration::from_secs(10),
        || async { agent.log().contains("will retry").then_some(()) },
    )
    .await;
    assert!(!agent.log().contains(LINK_SECRET));
    let sink = SmtpSink::start_on(&python, port).await;
    let mail = poll(
        "the mail after a retry",
        Duration::from_secs(20),
        || async { sink.mails().into_iter().find(|m| m.recipients() == [ALICE]) },
    )
    .await;
    assert!(mail.part("text/plain").is_some_and(|t| t.contains(&uuid)));
    assert!(mail.part("text/html").is_some());
    // The agent still works: the turn was not failed.
    let (status, answer) = agent
        .get_with("/approvals", &[("x-api-key", ALICE_KEY)])
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["approvals"][0]["uuid"], uuid.as_str(), "{answer}");
}

#[tokio::test]
async fn a_routed_rule_mails_its_recipients_only() {
    let rule = "{ tool: resources_add, when: { name: '^routed-' }, action: ask }";
    let route = format!("{{ rule: 0, to: [{ALICE}] }}");
    let Some(setup) = start_routed("1h", rule, &route).await else {
        return;
    };
    let (_, routed) = ask(&setup.agent, "routed-1").await;
    let (_, plain) = ask(&setup.agent, "plain-1").await;
    // One sender, in order: once the later approval's mails are in, so
    // are the earlier one's.
    mail_for(&setup.sink, ALICE, &plain).await;
    mail_for(&setup.sink, BOB, &plain).await;
    let about_routed: Vec<Vec<String>> = setup
        .sink
        .mails()
        .iter()
        .filter(|m| m.part("text/plain").is_some_and(|t| t.contains(&routed)))
        .map(Mail::recipients)
        .collect();
    assert_eq!(about_routed, [[ALICE]], "routed to Alice only");
    let mail = mail_for(&setup.sink, ALICE, &routed).await;
    let text = mail.part("text/plain").unwrap_or_default();
    assert!(
        text.contains("approval.rules[0]"),
        "the rule is named: {text}"
    );
}

#[tokio::test]
async fn a_rules_named_approvers_are_mailed_and_reminded() {
    let rule = "{ tool: resources_add, when: { name: '^dba-' }, action: ask, approvers: [dba] }";
    let approval = "remind_after: 1s, expires_after: 1h, ";
    let Some(setup) = start_with("1h", (approval, rule, "")).await else {
        return;
    };
    let (_, uuid) = ask(&setup.agent, "dba-1").await;
    let first = mail_for(&setup.sink, ALICE, &uuid).await;
    assert!(
        first.subject().contains("Approval needed"),
        "{:?}",
        first.subject()
    );
    // `approval.remind_after: 1s`: a second mail, saying so.
    let reminder = poll("the reminder mail", MAIL_WAIT, || async {
        setup.sink.mails().into_iter().find(|m| {
            m.subject().contains("Reminder")
                && m.part("text/plain").is_some_and(|t| t.contains(&uuid))
        })
    })
    .await;
    assert_eq!(reminder.recipients(), [ALICE]);
    // Bob is not in `dba`: the gate would refuse him, so he gets no mail.
    let to_bob = setup.sink.mails().iter().any(|m| {
        m.recipients() == [BOB] && m.part("text/plain").is_some_and(|t| t.contains(&uuid))
    });
    assert!(
        !to_bob,
        "a recipient outside the rule's approvers was mailed"
    );
}

#[test]
fn a_missing_or_short_link_secret_stops_the_startup_naming_the_variable() {
    // No SMTP server is needed: the agent stops before it would mail.
    let (dir, config) = config(asg_tests::oidc::free_port(), "1h");
    let startup = |secret: Option<&str>| {
        let mut command = std::process::Command::new(asg_tests::binary("agent"));
        command
            .arg("--config")
            .arg(&config)
            .args(["--port", "0", "--data-dir"])
            .arg(dir.path())
            .env("ALICE_KEY", ALICE_KEY)
            .env("BOB_KEY", BOB_KEY)
            .env_remove("LINK_SECRET")
            .stdin(std::process::Stdio::null());
        if let Some(secret) = secret {
            command.env("LINK_SECRET", secret);
        }
        let output = command.output().expect("run the agent");
        assert!(!output.status.success(), "the agent started");
        String::from_utf8_lossy(&output.stderr).to_string()
    };
    let unset = startup(None);
    assert!(
        unset.contains("channels.email.link_secret_env") && unset.contains("LINK_SECRET"),
        "{unset}"
    );
    let short = startup(Some("too-short"));
    assert!(
        short.contains("LINK_SECRET") && short.contains("at least 32"),
        "{short}"
    );
}
