//! Approval webhooks: every approval requested, reminded, decided or
//! expired, and every question asked, reminded, answered or expired
//! (`question.*`), from the engine's operator inbox, becomes one signed
//! JSON POST per configured webhook that wants it.
//!
//! Body: `{"event", "delivery", "time", "agent", "approval", "link"}`;
//! headers `X-ASG-Event`, `X-ASG-Delivery` and `X-ASG-Signature:
//! sha256=<hex HMAC-SHA256(secret, body)>`. The approval is the
//! `PendingApproval` (requested, reminded) or `{uuid, conversation_id,
//! decision}` (decided, expired): tool, arguments and the actors' names,
//! never a token, key or cookie.

use std::sync::Arc;

use asg_shared::events::InboxEvent;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use uuid::Uuid;

use super::deliver::{Deliveries, Outgoing};
use super::sign::{SIGNATURE_HEADER, signature};
use crate::config::notify::{MIN_SECRET_BYTES, WebhookConfig};

pub use asg_core::lifecycle::{EXPIRY_ROLE, EXPIRY_SUBJECT};

/// A webhook with its secret (read from the environment at startup; no
/// `Debug`, never logged).
pub struct Webhook {
    config: WebhookConfig,
    secret: Vec<u8>,
}

impl Webhook {
    /// Where its events go.
    pub fn url(&self) -> &str {
        &self.config.url
    }

    /// The webhooks of `approval.webhooks`, each with its secret from
    /// `env`; an unset or short secret is a startup error naming it.
    pub fn load(
        configs: &[WebhookConfig],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<Webhook>, String> {
        configs
            .iter()
            .enumerate()
            .map(|(i, config)| {
                let field = format!("approval.webhooks[{i}].secret_env");
                let secret = env(&config.secret_env).ok_or_else(|| {
                    format!(
                        "{field}: environment variable {} is not set (the webhook's signing secret)",
                        config.secret_env
                    )
                })?;
                if secret.len() < MIN_SECRET_BYTES {
                    return Err(format!(
                        "{field}: the secret in {} is {} bytes; at least {MIN_SECRET_BYTES} are needed",
                        config.secret_env,
                        secret.len()
                    ));
                }
                Ok(Webhook {
                    config: config.clone(),
                    secret: secret.into_bytes(),
                })
            })
            .collect()
    }
}

/// An inbox event worth a webhook.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `approval.requested`, ...
    pub name: &'static str,
    /// The conversation it happened in.
    pub conversation: Uuid,
    /// The `approval` member of the body.
    pub approval: Value,
}

/// The webhook event of an inbox event, if it is one: a resolution
/// without a decision (found interrupted at startup) is not.
pub fn event_of(inbox: &InboxEvent) -> Option<Event> {
    let (name, conversation, approval) = match inbox {
        InboxEvent::ApprovalRequested { approval } => (
            pick(
                approval.is_question(),
                "question.asked",
                "approval.requested",
            ),
            approval.conversation_id,
            serde_json::to_value(approval).ok()?,
        ),
        InboxEvent::ApprovalReminder { approval } => (
            pick(
                approval.is_question(),
                "question.reminded",
                "approval.reminded",
            ),
            approval.conversation_id,
            serde_json::to_value(approval).ok()?,
        ),
        InboxEvent::ApprovalResolved {
            uuid,
            conversation_id,
            decision: Some(decision),
        } => {
            let by = &decision.decided_by;
            let expired = by.subject == EXPIRY_SUBJECT && by.role.as_deref() == Some(EXPIRY_ROLE);
            let name = match (decision.question, expired) {
                (true, true) => "question.expired",
                (true, false) => "question.answered",
                (false, true) => "approval.expired",
                (false, false) => "approval.decided",
            };
            let approval =
                json!({"uuid": uuid, "conversation_id": conversation_id, "decision": decision});
            (name, *conversation_id, approval)
        }
        _ => return None,
    };
    Some(Event {
        name,
        conversation,
        approval,
    })
}

/// A question's event name, or an approval's.
fn pick(question: bool, asked: &'static str, approval: &'static str) -> &'static str {
    match question {
        true => asked,
        false => approval,
    }
}

/// The web chat's URL of a conversation: the chat selects the
/// conversation named by its `c` query parameter.
pub fn link(base: &str, conversation: Uuid) -> String {
    format!("{}/?c={conversation}", base.trim_end_matches('/'))
}

/// The JSON body of one delivery.
pub fn payload(
    event: &Event,
    delivery: Uuid,
    time: DateTime<Utc>,
    agent: &str,
    link_base: &str,
) -> Value {
    json!({
        "event": event.name,
        "delivery": delivery,
        "time": time.to_rfc3339_opts(SecondsFormat::Millis, true),
        "agent": agent,
        "approval": event.approval,
        "link": link(link_base, event.conversation),
    })
}

/// Who the events are from and where their links point.
#[derive(Clone)]
pub struct Source {
    /// The agent's name.
    pub agent: String,
    /// The web chat's base URL.
    pub link_base: String,
}

/// The signed delivery of `event` to `hook`.
fn outgoing(hook: &Webhook, event: &Event, source: &Source) -> Outgoing {
    let delivery = Uuid::new_v4();
    let body = payload(
        event,
        delivery,
        Utc::now(),
        &source.agent,
        &source.link_base,
    );
    let body = serde_json::to_vec(&body).unwrap_or_default();
    Outgoing {
        url: hook.config.url.clone(),
        headers: vec![
            (SIGNATURE_HEADER, signature(&hook.secret, &body)),
            ("X-ASG-Event", event.name.to_string()),
            ("X-ASG-Delivery", delivery.to_string()),
        ],
        body,
        label: format!("webhook {} delivery {delivery}", event.name),
        kind: "webhook",
        ssrf: None,
    }
}

/// Follows the inbox until shutdown, queueing one delivery per event and
/// webhook; after shutdown starts, what the inbox still holds is queued
/// too (the decisions recorded by the engine's own shutdown).
pub async fn dispatch(
    mut inbox: broadcast::Receiver<InboxEvent>,
    hooks: Arc<Vec<Webhook>>,
    deliveries: Deliveries,
    source: Source,
) {
    loop {
        let received = tokio::select! {
            received = inbox.recv() => received,
            () = deliveries.closing() => inbox.try_recv().map_err(|_| broadcast::error::RecvError::Closed),
        };
        let event = match received {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "webhooks fell behind the approval events; some were not sent"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(event) = event_of(&event) else {
            continue;
        };
        for hook in hooks.iter().filter(|h| h.config.wants(event.name)) {
            deliveries.enqueue(outgoing(hook, &event, &source));
        }
    }
}

#[cfg(test)]
mod tests {
    use asg_shared::{ApprovalDecision, PendingApproval, fixtures};

    use super::*;

    fn pending() -> PendingApproval {
        PendingApproval {
            uuid: Uuid::from_u128(2),
            conversation_id: Uuid::from_u128(1),
            tool_args: json!({"name": "x", "value": 1})
                .as_object()
                .cloned()
                .unwrap(),
            description: "add x".into(),
            created_at: "2026-01-02T03:04:05Z".parse().unwrap(),
            call_id: "c1".into(),
            ..fixtures::pending_approval("resources_add")
        }
    }

    fn resolved(subject: &str, role: &str) -> InboxEvent {
        let decision: ApprovalDecision = serde_json::from_value(json!({
            "approval_uuid": Uuid::from_u128(2),
            "tool_name": "resources_add",
            "approved": false,
            "decided_by": {"subject": subject, "role": role, "via": "rest"},
            "decided_at": "2026-01-02T03:04:06Z",
        }))
        .unwrap();
        InboxEvent::ApprovalResolved {
            uuid: Uuid::from_u128(2),
            conversation_id: Uuid::from_u128(1),
            decision: Some(Box::new(decision)),
        }
    }

    #[test]
    fn inbox_events_map_to_webhook_events() {
        let requested = event_of(&InboxEvent::ApprovalRequested {
            approval: pending(),
        })
        .unwrap();
        assert_eq!(requested.name, "approval.requested");
        assert_eq!(requested.approval["tool_args"]["name"], "x");
        let reminded = event_of(&InboxEvent::ApprovalReminder {
            approval: pending(),
        });
        assert_eq!(reminded.unwrap().name, "approval.reminded");
        let decided = event_of(&resolved("alice", "approver")).unwrap();
        assert_eq!(decided.name, "approval.decided");
        assert_eq!(
            decided.approval["decision"]["decided_by"]["subject"],
            "alice"
        );
        assert_eq!(decided.approval["uuid"], Uuid::from_u128(2).to_string());
        assert_eq!(
            event_of(&resolved(EXPIRY_SUBJECT, "expiry")).unwrap().name,
            "approval.expired"
        );
        let interrupted = InboxEvent::ApprovalResolved {
            uuid: Uuid::from_u128(2),
            conversation_id: Uuid::from_u128(1),
            decision: None,
        };
        assert_eq!(event_of(&interrupted), None);
        let status = InboxEvent::Status {
            conversation_id: Uuid::from_u128(1),
            status: asg_shared::ConversationStatus::Active,
        };
        assert_eq!(event_of(&status), None);
    }

    #[test]
    fn questions_have_their_own_event_names() {
        let mut question = pending();
        question.question = Some(Box::new(
            serde_json::from_value(json!({"text": "Which?"})).unwrap(),
        ));
        let asked = InboxEvent::ApprovalRequested {
            approval: question.clone(),
        };
        assert_eq!(event_of(&asked).unwrap().name, "question.asked");
        let reminded = InboxEvent::ApprovalReminder { approval: question };
        assert_eq!(event_of(&reminded).unwrap().name, "question.reminded");
        for (subject, role, name) in [
            ("alice", "approver", "question.answered"),
            (EXPIRY_SUBJECT, "expiry", "question.expired"),
        ] {
            let InboxEvent::ApprovalResolved {
                uuid,
                conversation_id,
                decision: Some(mut decision),
            } = resolved(subject, role)
            else {
                panic!("a resolution")
            };
            decision.question = true;
            let event = InboxEvent::ApprovalResolved {
                uuid,
                conversation_id,
                decision: Some(decision),
            };
            assert_eq!(event_of(&event).unwrap().name, name);
        }
    }

    #[test]
    fn the_payload_has_the_documented_shape() {
        let event = event_of(&InboxEvent::ApprovalRequested {
            approval: pending(),
        })
        .unwrap();
        let time = DateTime::parse_from_rfc3339("2026-01-02T03:04:05.678Z")
            .unwrap()
            .into();
        let body = payload(&event, Uuid::from_u128(9), time, "ops", "http://chat:8081/");
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 6, "{keys:?}");
        assert_eq!(body["event"], "approval.requested");
        assert_eq!(body["delivery"], Uuid::from_u128(9).to_string());
        assert_eq!(body["time"], "2026-01-02T03:04:05.678Z");
        assert_eq!(body["agent"], "ops");
        assert_eq!(body["approval"]["uuid"], Uuid::from_u128(2).to_string());
        assert_eq!(
            body["link"],
            format!("http://chat:8081/?c={}", Uuid::from_u128(1))
        );
    }

    #[test]
    fn secrets_come_from_the_environment_and_are_long_enough() {
        let config = |env: &str| WebhookConfig {
            url: "http://x".into(),
            secret_env: env.into(),
            events: None,
        };
        let env = |name: &str| match name {
            "LONG" => Some("0123456789abcdef".to_string()),
            "SHORT" => Some("short".to_string()),
            _ => None,
        };
        assert_eq!(Webhook::load(&[config("LONG")], &env).unwrap().len(), 1);
        let unset = Webhook::load(&[config("LONG"), config("UNSET")], &env)
            .err()
            .unwrap();
        assert!(
            unset.starts_with("approval.webhooks[1].secret_env"),
            "{unset}"
        );
        assert!(unset.contains("UNSET is not set"), "{unset}");
        let short = Webhook::load(&[config("SHORT")], &env).err().unwrap();
        assert!(short.contains("at least 16"), "{short}");
        assert!(
            !short.contains("short\""),
            "the secret is not echoed: {short}"
        );
    }

    #[test]
    fn a_delivery_is_signed_over_its_exact_body() {
        let hook = Webhook {
            config: WebhookConfig {
                url: "http://x".into(),
                secret_env: "S".into(),
                events: None,
            },
            secret: b"0123456789abcdef".to_vec(),
        };
        let event = event_of(&resolved("alice", "approver")).unwrap();
        let source = Source {
            agent: "ops".into(),
            link_base: "http://chat".into(),
        };
        let job = outgoing(&hook, &event, &source);
        let header = |name: &str| {
            job.headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert!(super::super::sign::verify(
            b"0123456789abcdef",
            &job.body,
            &header(SIGNATURE_HEADER)
        ));
        assert_eq!(header("X-ASG-Event"), "approval.decided");
        let body: Value = serde_json::from_slice(&job.body).unwrap();
        assert_eq!(body["delivery"], header("X-ASG-Delivery"));
        assert!(!String::from_utf8_lossy(&job.body).contains("0123456789abcdef"));
    }
}
