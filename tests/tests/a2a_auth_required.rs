//! A sub-agent that wants a credential the caller did not send (HTTP 401):
//! the task our agent answers with is `auth-required` (v0.3) /
//! `TASK_STATE_AUTH_REQUIRED` (v1.0), its status message naming the
//! sub-agent; sent again on the same task with an `Authorization: Bearer`
//! the sub-agent accepts (forwarded to it), the task completes.

use asg_tests::a2a::{delegator_with, rpc_with, send_params};
use asg_tests::{Agent, AgentOptions};
use serde_json::{Value, json};

/// B's API key; the client sends it as its bearer, A forwards it.
const B_KEY: &str = "b-key-0123456789abcdef0123";
const WRONG_KEY: &str = "wrong-key-0123456789abcdef";

/// B with an API key, and A delegating to it without a service token.
async fn chain() -> (Vec<tempfile::TempDir>, Agent, Agent) {
    let keys = "auth:\n  api_keys:\n    - { name: a-caller, key_env: B_KEY }\n";
    let (dir_b, config) = asg_tests::config_with("agent-resources.yaml", keys);
    let b = Agent::start(&config, AgentOptions::with_env(&[("B_KEY", B_KEY)])).await;
    let (dir_a, a) = delegator_with(&b.url, "", &[]).await;
    (vec![dir_b, dir_a], b, a)
}

/// A v1.0 `SendMessage` to A with `headers`; the task.
async fn send_v1(a: &Agent, headers: &[(&str, &str)], text: &str, task: Option<&str>) -> Value {
    let mut message = json!({"messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    let headers = [&[("A2A-Version", "1.0")], headers].concat();
    let body = rpc_with(a, &headers, "SendMessage", json!({"message": message})).await;
    body["result"]["task"].clone()
}

/// A v0.3 `message/send` to A with `headers`; the task.
async fn send_v03(a: &Agent, headers: &[(&str, &str)], text: &str, task: Option<&str>) -> Value {
    let body = rpc_with(a, headers, "message/send", send_params(text, task)).await;
    body["result"].clone()
}

fn status_text(task: &Value) -> String {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn id(task: &Value) -> String {
    task["id"].as_str().expect("a task id").to_string()
}

#[tokio::test]
async fn a_sub_agent_wanting_a_credential_makes_the_v1_task_auth_required_until_one_is_sent() {
    let (_dirs, _b, a) = chain().await;

    let task = send_v1(&a, &[], "list all resources", None).await;
    assert_eq!(
        task["status"]["state"], "TASK_STATE_AUTH_REQUIRED",
        "{task}"
    );
    let text = status_text(&task);
    assert!(
        text.contains("sub-agent \"downstream\" needs a credential (HTTP 401)")
            && text.contains("the caller sent none"),
        "{text}"
    );
    assert!(
        task["artifacts"].as_array().is_none_or(Vec::is_empty),
        "{task}"
    );

    // A bearer B refuses: still auth-required, the token never echoed.
    let wrong = format!("Bearer {WRONG_KEY}");
    let again = [("Authorization", wrong.as_str())];
    let task = send_v1(&a, &again, "list all resources", Some(&id(&task))).await;
    assert_eq!(
        task["status"]["state"], "TASK_STATE_AUTH_REQUIRED",
        "{task}"
    );
    let text = status_text(&task);
    assert!(text.contains("refused the credential"), "{text}");
    assert!(!task.to_string().contains(WRONG_KEY), "{task}");

    // B's key, forwarded by A: the same task completes.
    let bearer = format!("Bearer {B_KEY}");
    let with_key = [("Authorization", bearer.as_str())];
    let done = send_v1(&a, &with_key, "list all resources", Some(&id(&task))).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(id(&done), id(&task));
    let answer = done["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(answer.starts_with("Downstream answered:"), "{done}");
    assert!(!done.to_string().contains(B_KEY), "{done}");
}

#[tokio::test]
async fn a_sub_agent_wanting_a_credential_makes_the_v03_task_auth_required_until_one_is_sent() {
    let (_dirs, _b, a) = chain().await;

    let task = send_v03(&a, &[], "list all resources", None).await;
    assert_eq!(task["status"]["state"], "auth-required", "{task}");
    let text = status_text(&task);
    assert!(text.contains("\"downstream\" needs a credential"), "{text}");
    let got = rpc_with(&a, &[], "tasks/get", json!({"id": id(&task)})).await;
    assert_eq!(got["result"]["status"]["state"], "auth-required", "{got}");

    let bearer = format!("Bearer {B_KEY}");
    let with_key = [("Authorization", bearer.as_str())];
    let done = send_v03(&a, &with_key, "list all resources", Some(&id(&task))).await;
    assert_eq!(done["status"]["state"], "completed", "{done}");
    let answer = done["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(answer.starts_with("Downstream answered:"), "{done}");
}
