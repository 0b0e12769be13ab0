//! Pure parts of push notifications: field checks, what is notable, the
//! request a callback gets.

use asg_shared::a2a::{PushNotificationAuthenticationInfo, TaskStatus};
use serde_json::Value;

use super::*;

fn config(token: Option<&str>, auth: Option<(&[&str], Option<&str>)>) -> PushNotificationConfig {
    PushNotificationConfig {
        id: Some("cfg-1".into()),
        url: "https://client.example.com/a2a/callback".into(),
        token: token.map(String::from),
        authentication: auth.map(
            |(schemes, credentials)| PushNotificationAuthenticationInfo {
                schemes: schemes.iter().map(|s| s.to_string()).collect(),
                credentials: credentials.map(String::from),
            },
        ),
        notify_as: None,
    }
}

fn task(state: TaskState) -> Task {
    Task {
        id: "t-1".into(),
        context_id: "c-1".into(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: None,
        },
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
        kind: "task".into(),
    }
}

fn header(job: &Outgoing, name: &str) -> Option<String> {
    job.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
}

#[test]
fn a_callback_gets_the_task_with_its_token_and_bearer() {
    let policy = Arc::new(ssrf::Policy::default());
    let cfg = config(Some("tok-123"), Some((&["bearer"], Some("cred-456"))));
    let job = outgoing(&cfg, &task(TaskState::InputRequired), &policy);
    assert_eq!(job.url, cfg.url);
    assert_eq!(header(&job, "X-A2A-Notification-Token").unwrap(), "tok-123");
    assert_eq!(header(&job, "Authorization").unwrap(), "Bearer cred-456");
    assert!(
        job.ssrf.is_some(),
        "a caller's URL is checked before each send"
    );
    let body: Value = serde_json::from_slice(&job.body).unwrap();
    assert_eq!(body["kind"], "task");
    assert_eq!(body["id"], "t-1");
    assert_eq!(body["status"]["state"], "input-required");
    assert!(!job.label.contains("tok-123") && !job.label.contains("cred-456"));
    let bare = outgoing(&config(None, None), &task(TaskState::Completed), &policy);
    assert!(bare.headers.is_empty());
    let basic = outgoing(
        &config(None, Some((&["Basic"], Some("x")))),
        &task(TaskState::Completed),
        &policy,
    );
    assert_eq!(header(&basic, "Authorization"), None);
}

#[test]
fn fields_are_checked_and_credentials_are_write_only() {
    assert!(check_fields(&config(Some("t"), Some((&["Bearer"], Some("c"))))).is_ok());
    assert!(check_fields(&config(None, Some((&["Basic"], None)))).is_ok());
    let basic = check_fields(&config(None, Some((&["Basic"], Some("c"))))).unwrap_err();
    assert!(basic.contains("only Bearer"), "{basic}");
    let mut long = config(None, None);
    long.url = format!("https://x/{}", "a".repeat(3000));
    assert!(check_fields(&long).unwrap_err().contains("url"));
    let mut empty = config(None, None);
    empty.id = Some(" ".into());
    assert!(check_fields(&empty).is_err());
    let shown = public(&config(Some("t"), Some((&["Bearer"], Some("c")))));
    assert_eq!(shown.token.as_deref(), Some("t"));
    assert_eq!(shown.authentication.unwrap().credentials, None);
    let debug = format!(
        "{:?}",
        config(Some("tok-9"), Some((&["Bearer"], Some("cred-9"))))
    );
    assert!(
        !debug.contains("tok-9") && !debug.contains("cred-9"),
        "{debug}"
    );
}

#[test]
fn only_states_that_need_the_client_are_notable() {
    for state in [
        TaskState::InputRequired,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
    ] {
        assert!(notable(state), "{state:?}");
    }
    for state in [TaskState::Submitted, TaskState::Working, TaskState::Unknown] {
        assert!(!notable(state), "{state:?}");
    }
}

#[test]
fn a_config_created_over_v1_is_notified_with_a_v1_stream_response() {
    let policy = Arc::new(ssrf::Policy::default());
    let v03 = outgoing(&config(None, None), &task(TaskState::Completed), &policy);
    let body: Value = serde_json::from_slice(&v03.body).unwrap();
    assert_eq!(body["kind"], "task", "{body}");
    assert_eq!(body["status"]["state"], "completed", "{body}");
    let v1_config = PushNotificationConfig {
        notify_as: Some(NOTIFY_AS_V1.into()),
        ..config(None, None)
    };
    let v1 = outgoing(&v1_config, &task(TaskState::InputRequired), &policy);
    let body: Value = serde_json::from_slice(&v1.body).unwrap();
    assert_eq!(body["task"]["id"], "t-1", "{body}");
    assert_eq!(
        body["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{body}"
    );
    assert!(body["task"].get("kind").is_none(), "{body}");
    // Never shown back to a client.
    assert_eq!(public(&v1_config).notify_as, None);
}
