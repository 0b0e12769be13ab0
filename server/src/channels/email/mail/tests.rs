//! Mail layout: every model-given string escaped in the HTML, long
//! arguments cut, both links in both parts, a subject without line
//! breaks.

use asg_shared::{Actor, fixtures};
use serde_json::json;
use uuid::Uuid;

use super::*;

fn approval(tool: &str, args: serde_json::Value) -> PendingApproval {
    PendingApproval {
        uuid: Uuid::from_u128(2),
        conversation_id: Uuid::from_u128(1),
        tool_args: args.as_object().cloned().unwrap(),
        requested_by: Some(Actor {
            subject: "key:bob".into(),
            name: Some("<b>Bob</b>".into()),
            role: None,
            via: None,
        }),
        rule: Some("approval.rules[0] (ask resources_*)".into()),
        expires_at: Some("2026-01-02T03:04:05Z".parse().unwrap()),
        ..fixtures::pending_approval(tool)
    }
}

fn lay_out(approval: &PendingApproval) -> MailBody {
    lay_out_as(approval, false)
}

fn lay_out_as(approval: &PendingApproval, reminder: bool) -> MailBody {
    body(&MailContent {
        agent: "ops-agent",
        approval,
        approve_url: "https://agent.example/channels/email/approve?approval=x&token=a.b",
        reject_url: "https://agent.example/channels/email/reject?approval=x&token=c.d",
        links_expire: "2026-01-03T00:00:00Z".parse().unwrap(),
        reminder,
    })
}

#[test]
fn a_reminder_says_so_in_its_subject() {
    let waiting = approval("resources_delete", json!({"name": "web-1"}));
    assert_eq!(
        lay_out(&waiting).subject,
        "[ops-agent] Approval needed: resources_delete"
    );
    assert_eq!(
        lay_out_as(&waiting, true).subject,
        "[ops-agent] Reminder: approval still waiting: resources_delete"
    );
}

#[test]
fn html_escapes_what_the_model_and_requester_wrote() {
    let evil = approval(
        "drop<script>alert(1)</script>",
        json!({"name": "\"><img src=x onerror=alert(2)>", "q": "a & b"}),
    );
    let mail = lay_out(&evil);
    assert!(!mail.html.contains("<script>"), "{}", mail.html);
    assert!(!mail.html.contains("<img"), "{}", mail.html);
    assert!(!mail.html.contains("<b>Bob"), "{}", mail.html);
    assert!(
        mail.html
            .contains("drop&lt;script&gt;alert(1)&lt;/script&gt;")
    );
    assert!(mail.html.contains("&lt;img src=x onerror=alert(2)&gt;"));
    assert!(mail.html.contains("a &amp; b"));
    assert!(mail.html.contains("&lt;b&gt;Bob&lt;/b&gt; (key:bob)"));
    // Links keep their query, escaped as attribute values.
    assert!(mail.html.contains(
        "href=\"https://agent.example/channels/email/approve?approval=x&amp;token=a.b\""
    ));
    // The text part is shown as text: no escaping needed, nothing lost.
    assert!(mail.text.contains("drop<script>alert(1)</script>"));
}

#[test]
fn both_parts_name_the_approval_and_carry_both_links() {
    let mail = lay_out(&approval(
        "resources_add",
        json!({"name": "web-1", "value": 42}),
    ));
    for part in [&mail.text, &mail.html] {
        assert!(part.contains("resources_add"), "{part}");
        assert!(part.contains("web-1"), "{part}");
        assert!(
            part.contains("approval.rules[0] (ask resources_*)"),
            "{part}"
        );
        assert!(part.contains("2026-01-02T03:04:05Z"), "{part}");
        assert!(part.contains("key:bob"), "{part}");
        assert!(
            part.contains("/channels/email/approve?approval=x"),
            "{part}"
        );
        assert!(part.contains("/channels/email/reject?approval=x"), "{part}");
    }
    assert_eq!(mail.subject, "[ops-agent] Approval needed: resources_add");
}

#[test]
fn long_arguments_are_truncated_with_a_note() {
    let long = "x".repeat(5_000);
    let mail = lay_out(&approval("t", json!({ "blob": long })));
    assert!(mail.text.contains("(truncated: 5"), "{}", &mail.text[..200]);
    assert!(!mail.text.contains(&"x".repeat(MAX_ARGUMENT_CHARS + 1)));
    assert_eq!(truncate("héllo", 2), "hé… (truncated: 5 characters in all)");
    assert_eq!(truncate("héllo", 5), "héllo");
}

#[test]
fn the_subject_has_no_line_breaks_and_a_bounded_tool_name() {
    let mail = lay_out(&approval("evil\r\nBcc: victim@example.com", json!({})));
    assert!(!mail.subject.contains(['\r', '\n']), "{}", mail.subject);
    let long = lay_out(&approval(&"t".repeat(500), json!({})));
    assert!(long.subject.len() < 200, "{}", long.subject);
}

#[test]
fn the_message_is_multipart_alternative_with_both_parts() {
    let from: Mailbox = "Agent <agent@example.com>".parse().unwrap();
    let mail = lay_out(&approval("resources_add", json!({"name": "web-1"})));
    let built = message(&from, "alice@example.com", mail).unwrap();
    let raw = String::from_utf8(built.formatted()).unwrap();
    assert!(raw.contains("multipart/alternative"), "{raw}");
    assert!(
        raw.contains("text/plain") && raw.contains("text/html"),
        "{raw}"
    );
    assert!(raw.contains("To: alice@example.com"), "{raw}");
    assert!(message(&from, "not an address", lay_out(&approval("t", json!({})))).is_err());
}
