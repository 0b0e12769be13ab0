//! The Slack channel (issue 22), end to end: the real agent on the
//! offline model posts its approvals to a stand-in of Slack's Web API
//! (`asg_tests::slack`) and takes decisions from signed interactivity
//! requests, as a Slack app would send them. Approve, edit and refuse
//! from Slack; a decision made elsewhere updates the message; forged,
//! replayed and unmapped requests change nothing; Slack down never fails
//! a turn and the post arrives later; a reminder in the thread;
//! questions answered with a choice button and through the answer modal.

use asg_tests::slack::{Call, SlackStandIn, click, now, send, send_signed, submission};
use asg_tests::{
    Agent, AgentOptions, approval_uuid, binary, config_with, conversation_id, poll, tool_messages,
};
use serde_json::{Value, json};
use std::time::Duration;

const SECRET: &str = "slack-signing-secret-for-tests";
const TOKEN: &str = "xoxb-test-token";
const ALICE_KEY: &str = "alice-key-0123456789abcdef";
const BOB_KEY: &str = "bob-key-0123456789abcdef";
const CHANNEL: &str = "C0APPROVALS";
/// Mapped by id to key:bob.
const BOB: &str = "U0BOB";
/// Mapped through `users.info` and the email to key:alice.
const ALICE: &str = "U0ALICE";
/// Known to Slack, mapped to nobody.
const EVE: &str = "U0EVE";

struct Setup {
    agent: Agent,
    slack: SlackStandIn,
    _config: tempfile::TempDir,
}

async fn setup(approval: &str) -> Setup {
    setup_on("agent-resources.yaml", approval).await
}

async fn setup_on(base: &str, approval: &str) -> Setup {
    setup_with(base, approval, "").await
}

/// The `channels:` and `auth:` blocks (with `slack` appended to
/// `channels.slack`).
fn slack_yaml(api_url: &str, approval: &str, slack: &str) -> String {
    format!(
        "auth:\n  api_keys:\n    - {{ name: alice, key_env: ALICE_KEY, roles: [approver] }}\n    \
         - {{ name: bob, key_env: BOB_KEY, roles: [approver] }}\n\
         approval: {{ {approval} }}\n\
         channels:\n  slack:\n    bot_token_env: SLACK_BOT_TOKEN\n    signing_secret_env: SLACK_SIGNING_SECRET\n    \
         channel: {CHANNEL}\n    api_url: {api_url}\n    user_map:\n      {BOB}: key:bob\n      alice@example.com: key:alice\n{slack}"
    )
}

async fn setup_with(base: &str, approval: &str, slack_extra: &str) -> Setup {
    let slack = SlackStandIn::start().await;
    slack.add_user(ALICE, "alice@example.com");
    slack.add_user(EVE, "eve@example.com");
    let extra = slack_yaml(&slack.api_url, approval, slack_extra);
    let (dir, config) = config_with(base, &extra);
    let env = [
        ("ALICE_KEY", ALICE_KEY),
        ("BOB_KEY", BOB_KEY),
        ("SLACK_BOT_TOKEN", TOKEN),
        ("SLACK_SIGNING_SECRET", SECRET),
    ];
    let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
    Setup {
        agent,
        slack,
        _config: dir,
    }
}

/// Alice asks to add a resource; the conversation and approval ids.
async fn alice_adds(agent: &Agent, name: &str, value: i64) -> (String, String) {
    let message = json!({"message": format!("add resource {name} with value {value}")});
    let (status, answer) = agent
        .post_with(
            "/conversations",
            message.to_string(),
            &[("x-api-key", ALICE_KEY)],
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    (conversation_id(&answer), approval_uuid(&answer))
}

async fn conversation(agent: &Agent, id: &str) -> Value {
    let (status, body) = agent
        .get_with(&format!("/conversations/{id}"), &[("x-api-key", ALICE_KEY)])
        .await;
    assert_eq!(status, 200, "{body}");
    body["conversation"].clone()
}

async fn assert_still_pending(agent: &Agent, id: &str) {
    let conversation = conversation(agent, id).await;
    assert_eq!(conversation["status"], "waiting_approval", "{conversation}");
    assert!(
        tool_messages(&conversation).is_empty(),
        "a tool ran: {conversation}"
    );
}

/// The conversation once its call ran: its tool results.
async fn ran(agent: &Agent, id: &str) -> Vec<Value> {
    poll(
        "the approved call to run",
        Duration::from_secs(15),
        || async {
            let conversation = conversation(agent, id).await;
            let results = tool_messages(&conversation);
            (conversation["status"] == "active" && !results.is_empty()).then_some(results)
        },
    )
    .await
}

/// Every text in a message's blocks, joined.
fn texts(value: &Value) -> String {
    match value {
        Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("text", Value::String(text)) => format!("{text}\n"),
                _ => texts(v),
            })
            .collect(),
        Value::Array(items) => items.iter().map(texts).collect(),
        _ => String::new(),
    }
}

fn has_buttons(call: &Call) -> bool {
    call.body["blocks"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "actions"))
}

/// The ephemeral messages `user` got so far.
async fn ephemeral_to(slack: &SlackStandIn, user: &str) -> String {
    let calls = poll(
        &format!("an ephemeral message to {user}"),
        Duration::from_secs(15),
        || async {
            let calls: Vec<Call> = slack
                .answered("chat.postEphemeral")
                .into_iter()
                .filter(|c| c.body["user"] == user)
                .collect();
            (!calls.is_empty()).then_some(calls)
        },
    )
    .await;
    assert!(
        calls.iter().all(|c| c.body["channel"] == CHANNEL),
        "{calls:?}"
    );
    calls
        .iter()
        .map(|c| c.body["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn approving_in_slack_runs_the_call_once_and_updates_the_message() {
    let Setup { agent, slack, .. } = setup("").await;
    let (id, uuid) = alice_adds(&agent, "web-1", 42).await;
    let posted = slack.wait_for("chat.postMessage", 1).await.remove(0);
    assert_eq!(posted.body["channel"], CHANNEL);
    assert_eq!(
        posted.authorization.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    let shown = texts(&posted.body["blocks"]);
    for expected in ["resources_add", "\"value\": 42", "key:alice", &uuid] {
        assert!(shown.contains(expected), "{expected:?} not in {shown}");
    }
    assert!(has_buttons(&posted));

    let (status, body) = send_signed(
        &agent,
        SECRET,
        now(),
        &click(BOB, "asg_approve", &uuid, CHANNEL),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let results = ran(&agent, &id).await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["tool_result"]["name"], "resources_add");
    assert_eq!(results[0]["tool_result"]["is_error"], false, "{results:?}");
    let decision = &conversation(&agent, &id).await["decisions"];
    assert!(
        decision.to_string().contains("\"via\":\"slack\""),
        "{decision}"
    );

    let updated = slack.wait_for("chat.update", 1).await.remove(0);
    assert_eq!(updated.body["ts"].as_str(), posted.ts.as_deref());
    assert_eq!(updated.body["channel"], CHANNEL);
    let outcome = texts(&updated.body["blocks"]);
    assert!(
        outcome.contains("Approved by *key:bob* (via slack)"),
        "{outcome}"
    );
    assert!(!has_buttons(&updated), "buttons left: {outcome}");

    // A second click changes nothing: the call ran once.
    send_signed(
        &agent,
        SECRET,
        now(),
        &click(BOB, "asg_approve", &uuid, CHANNEL),
    )
    .await;
    assert!(ephemeral_to(&slack, BOB).await.contains("already decided"));
    assert_eq!(tool_messages(&conversation(&agent, &id).await).len(), 1);
}

#[tokio::test]
async fn a_decision_made_over_rest_updates_the_slack_message() {
    let Setup { agent, slack, .. } = setup("").await;
    let (_id, uuid) = alice_adds(&agent, "web-2", 1).await;
    let posted = slack.wait_for("chat.postMessage", 1).await.remove(0);
    let (status, answer) = agent
        .post_with(
            &format!("/approvals/{uuid}"),
            json!({"approved": false, "reason": "not today"}).to_string(),
            &[("x-api-key", BOB_KEY)],
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let updated = slack.wait_for("chat.update", 1).await.remove(0);
    assert_eq!(updated.body["ts"].as_str(), posted.ts.as_deref());
    let outcome = texts(&updated.body["blocks"]);
    assert!(
        outcome.contains("Rejected by *key:bob* (via rest)"),
        "{outcome}"
    );
    assert!(outcome.contains("not today"), "{outcome}");
    assert!(!has_buttons(&updated));
}

#[tokio::test]
async fn forged_replayed_and_unmapped_requests_change_nothing() {
    let Setup { agent, slack, .. } = setup("").await;
    let (id, uuid) = alice_adds(&agent, "web-3", 3).await;
    slack.wait_for("chat.postMessage", 1).await;
    let approve = click(BOB, "asg_approve", &uuid, CHANNEL);

    let (status, body) = send_signed(&agent, "not-the-secret", now(), &approve).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body.to_string().contains("signature does not match"),
        "{body}"
    );
    let (status, body) = send_signed(&agent, SECRET, now() - 6 * 60, &approve).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body.to_string().contains("more than 5 minutes old"),
        "{body}"
    );
    let (status, body) = send(&agent, &asg_tests::slack::form(&approve), &[]).await;
    assert_eq!(status, 401, "{body}");

    let (status, _) = send_signed(
        &agent,
        SECRET,
        now(),
        &click(EVE, "asg_approve", &uuid, CHANNEL),
    )
    .await;
    assert_eq!(status, 200);
    let told = ephemeral_to(&slack, EVE).await;
    assert!(told.contains("not allowed"), "{told}");
    assert_eq!(
        slack.answered("users.info").len(),
        1,
        "Eve was looked up by email"
    );
    assert_still_pending(&agent, &id).await;
    assert!(slack.calls("chat.update").is_empty());
}

#[tokio::test]
async fn four_eyes_refuses_the_requester_in_slack() {
    let Setup { agent, slack, .. } = setup("separate_approver: true").await;
    let (id, uuid) = alice_adds(&agent, "web-4", 4).await;
    slack.wait_for("chat.postMessage", 1).await;
    let (status, _) = send_signed(
        &agent,
        SECRET,
        now(),
        &click(ALICE, "asg_approve", &uuid, CHANNEL),
    )
    .await;
    assert_eq!(status, 200);
    let told = ephemeral_to(&slack, ALICE).await;
    assert!(told.starts_with("not allowed: "), "{told}");
    assert!(told.contains("separate_approver"), "{told}");
    assert_still_pending(&agent, &id).await;

    send_signed(
        &agent,
        SECRET,
        now(),
        &click(BOB, "asg_approve", &uuid, CHANNEL),
    )
    .await;
    assert_eq!(ran(&agent, &id).await.len(), 1);
}

#[tokio::test]
async fn an_edit_through_the_modal_runs_the_edited_arguments() {
    let Setup { agent, slack, .. } = setup("").await;
    let (id, uuid) = alice_adds(&agent, "web-5", 42).await;
    slack.wait_for("chat.postMessage", 1).await;
    let (status, _) = send_signed(
        &agent,
        SECRET,
        now(),
        &click(BOB, "asg_edit", &uuid, CHANNEL),
    )
    .await;
    assert_eq!(status, 200);
    let opened = slack.wait_for("views.open", 1).await.remove(0);
    assert_eq!(opened.body["trigger_id"], format!("trigger-{BOB}-asg_edit"));
    let view = &opened.body["view"];
    let initial = view["blocks"][1]["element"]["initial_value"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        serde_json::from_str::<Value>(initial).ok(),
        Some(json!({"name": "web-5", "value": 42}))
    );

    let (status, answer) =
        send_signed(&agent, SECRET, now(), &submission(BOB, view, "{not json")).await;
    assert_eq!(status, 200);
    assert_eq!(answer["response_action"], "errors", "{answer}");
    assert!(
        answer["errors"]["asg_input"]
            .as_str()
            .unwrap_or_default()
            .contains("not valid JSON")
    );
    assert_still_pending(&agent, &id).await;

    let edited = json!({"name": "web-5", "value": 7}).to_string();
    let (status, answer) =
        send_signed(&agent, SECRET, now(), &submission(BOB, view, &edited)).await;
    assert_eq!((status, answer), (200, Value::String(String::new())));
    let results = ran(&agent, &id).await;
    let output = results[0]["content"].as_str().unwrap_or_default();
    assert!(
        output.contains("\"value\":7") || output.contains("\"value\": 7"),
        "{output}"
    );
    let updated = slack.wait_for("chat.update", 1).await.remove(0);
    let outcome = texts(&updated.body["blocks"]);
    assert!(
        outcome.contains("Approved with edited arguments by *key:bob*"),
        "{outcome}"
    );
}

#[tokio::test]
async fn slack_down_does_not_fail_the_turn_and_the_post_arrives_later() {
    let Setup { agent, slack, .. } = setup("").await;
    slack.set_down(true);
    let (id, uuid) = alice_adds(&agent, "web-6", 6).await;
    poll("two failed posts", Duration::from_secs(10), || async {
        (slack.calls("chat.postMessage").len() >= 2).then_some(())
    })
    .await;
    assert!(slack.answered("chat.postMessage").is_empty());
    slack.set_down(false);
    let posted = slack.wait_for("chat.postMessage", 1).await.remove(0);
    assert!(texts(&posted.body["blocks"]).contains(&uuid));
    assert_eq!(slack.answered("chat.postMessage").len(), 1, "posted once");

    send_signed(
        &agent,
        SECRET,
        now(),
        &click(BOB, "asg_approve", &uuid, CHANNEL),
    )
    .await;
    assert_eq!(ran(&agent, &id).await.len(), 1);
    let updated = slack.wait_for("chat.update", 1).await.remove(0);
    assert_eq!(updated.body["ts"].as_str(), posted.ts.as_deref());
}

#[tokio::test]
async fn a_reminder_is_posted_in_the_thread() {
    let Setup { agent, slack, .. } = setup("remind_after: 1s, expires_after: 1h").await;
    let (_id, _uuid) = alice_adds(&agent, "web-7", 7).await;
    let posted = slack.wait_for("chat.postMessage", 1).await.remove(0);
    let reminder = slack.wait_for("chat.postMessage", 2).await.remove(1);
    assert_eq!(reminder.body["thread_ts"].as_str(), posted.ts.as_deref());
    assert_eq!(reminder.body["channel"], CHANNEL);
    let text = reminder.body["text"].as_str().unwrap_or_default();
    assert!(text.contains("still waits for a decision"), "{text}");
}

/// Alice says `message` to the asker; the conversation and question ids.
async fn alice_asks(agent: &Agent, message: &str) -> (String, String) {
    let (status, answer) = agent
        .post_with(
            "/conversations",
            json!({"message": message}).to_string(),
            &[("x-api-key", ALICE_KEY)],
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let uuid = answer["result"]["question"]["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("no question in {answer}"));
    (conversation_id(&answer), uuid.to_string())
}

/// The conversation's last assistant message, once its turn went on.
async fn went_on(agent: &Agent, id: &str) -> String {
    poll("the turn to go on", Duration::from_secs(15), || async {
        let conversation = conversation(agent, id).await;
        let last = conversation["messages"].as_array()?.last()?.clone();
        let text = last["content"].as_str().unwrap_or_default().to_string();
        (conversation["status"] == "active" && text.starts_with("Going on with")).then_some(text)
    })
    .await
}

#[tokio::test]
async fn a_question_is_answered_with_a_choice_button() {
    let Setup { agent, slack, .. } = setup_on("agent-questions.yaml", "").await;
    let (id, uuid) = alice_asks(&agent, "deploy the app").await;
    let posted = slack.wait_for("chat.postMessage", 1).await.remove(0);
    assert!(texts(&posted.body["blocks"]).contains("Which environment?"));
    let buttons: Vec<Value> = posted.body["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
        .map(|e| e["value"].clone())
        .collect();
    assert_eq!(
        buttons,
        [
            json!(format!("{uuid}:staging")),
            json!(format!("{uuid}:prod")),
            json!(uuid)
        ]
    );
    // Bob is not the owner (questions.answerers is empty); Alice, mapped
    // by email, is.
    send_signed(
        &agent,
        SECRET,
        now(),
        &click(BOB, "asg_choose_1", &format!("{uuid}:prod"), CHANNEL),
    )
    .await;
    let told = ephemeral_to(&slack, BOB).await;
    assert!(
        told.starts_with("not allowed") || told.starts_with("not found"),
        "{told}"
    );
    assert_eq!(
        conversation(&agent, &id).await["status"],
        "waiting_approval"
    );
    send_signed(
        &agent,
        SECRET,
        now(),
        &click(ALICE, "asg_choose_1", &format!("{uuid}:prod"), CHANNEL),
    )
    .await;
    assert!(went_on(&agent, &id).await.contains("prod"));
    let updated = slack.wait_for("chat.update", 1).await.remove(0);
    let outcome = texts(&updated.body["blocks"]);
    assert!(
        outcome.contains("Answered by *key:alice* (via slack)"),
        "{outcome}"
    );
    assert!(outcome.contains("`prod`"), "{outcome}");
}

#[tokio::test]
async fn a_question_is_answered_through_the_answer_modal() {
    let Setup { agent, slack, .. } = setup_on("agent-questions.yaml", "").await;
    let (id, uuid) = alice_asks(&agent, "name it").await;
    slack.wait_for("chat.postMessage", 1).await;
    send_signed(
        &agent,
        SECRET,
        now(),
        &click(ALICE, "asg_answer", &uuid, CHANNEL),
    )
    .await;
    let opened = slack.wait_for("views.open", 1).await.remove(0);
    assert_eq!(opened.body["view"]["callback_id"], "asg_answer");
    send_signed(
        &agent,
        SECRET,
        now(),
        &submission(ALICE, &opened.body["view"], "web-blue"),
    )
    .await;
    assert!(went_on(&agent, &id).await.contains("web-blue"));
}

#[tokio::test]
async fn a_rule_route_posts_to_its_channel_and_mentions_its_group() {
    let rules = "rules: [{ tool: resources_add, when: { value: { gt: 100 } }, action: ask }]";
    let route = "    routes:\n      - { rule: 0, channel: C0SRE, mention: S0SRE }\n";
    let Setup { agent, slack, .. } = setup_with("agent-resources.yaml", rules, route).await;
    alice_adds(&agent, "big-1", 500).await;
    let routed = slack.wait_for("chat.postMessage", 1).await.remove(0);
    assert_eq!(routed.body["channel"], "C0SRE");
    let shown = texts(&routed.body["blocks"]);
    assert!(shown.contains("<!subteam^S0SRE>"), "{shown}");
    assert!(
        shown.contains("approval.rules[0] (ask resources_add)"),
        "{shown}"
    );
    // Not raised by the rule (the tool's own gate): the default channel.
    alice_adds(&agent, "small-1", 5).await;
    let default = slack.wait_for("chat.postMessage", 2).await.remove(1);
    assert_eq!(default.body["channel"], CHANNEL);
    assert!(!texts(&default.body["blocks"]).contains("subteam"));
}

#[test]
fn a_missing_secret_stops_the_start_naming_its_variable() {
    let (_dir, config) = config_with(
        "agent-resources.yaml",
        &slack_yaml("http://127.0.0.1:9/api", "", ""),
    );
    let data = tempfile::tempdir().expect("temp dir");
    let output = std::process::Command::new(binary("agent"))
        .arg("--config")
        .arg(&config)
        .args(["--port", "0", "--data-dir"])
        .arg(data.path())
        .env("ALICE_KEY", ALICE_KEY)
        .env("BOB_KEY", BOB_KEY)
        .env("SLACK_BOT_TOKEN", TOKEN)
        .env_remove("SLACK_SIGNING_SECRET")
        .output()
        .expect("run agent");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("channels.slack.signing_secret_env"), "{said}");
    assert!(said.contains("SLACK_SIGNING_SECRET is not set"), "{said}");
    assert!(!said.contains(TOKEN), "the token was shown: {said}");
}
