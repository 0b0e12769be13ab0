//! Block Kit building: what a pending and a decided message show, long
//! values collapsed, escaping, question buttons, the modals.

use asg_shared::fixtures::{at, pending_approval};
use asg_shared::{Actor, ApprovalDecision, PendingApproval, Question, QuestionReply};
use serde_json::{Value, json};
use uuid::Uuid;

use super::*;

fn approval() -> PendingApproval {
    let mut approval = pending_approval("resources_add");
    approval.tool_args = json!({"name": "web-1", "value": 42})
        .as_object()
        .cloned()
        .unwrap_or_default();
    approval.requested_by = Some(Actor {
        subject: "key:alice".into(),
        name: Some("Alice".into()),
        role: None,
        via: Some("rest".into()),
    });
    approval.rule = Some("approval.rules[0] (ask resources_add)".into());
    approval.expires_at = Some(at(3600));
    approval
}

/// Every text of a message, in order.
fn texts(blocks: &Value) -> String {
    let mut out = String::new();
    collect(blocks, &mut out);
    out
}

fn collect(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            if let Some(Value::String(text)) = fields.get("text") {
                out.push_str(text);
                out.push('\n');
            }
            fields.values().for_each(|v| collect(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        _ => {}
    }
}

fn actions(blocks: &Value) -> Vec<(String, String)> {
    blocks
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            let id = e["action_id"].as_str().unwrap_or_default().to_string();
            (id, e["value"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

#[test]
fn a_request_shows_tool_arguments_requester_rule_expiry_and_three_buttons() {
    let approval = approval();
    let shown = Presentation {
        mention: Some("S0OPS".into()),
        link: Some("http://chat/?c=1".into()),
    };
    let message = request_message(&approval, &shown);
    let text = texts(&message.blocks);
    for expected in [
        "Approval needed: resources_add",
        "<!subteam^S0OPS>",
        "`resources_add`",
        "Alice",
        "approval.rules[0] (ask resources_add)",
        &format!("<!date^{}^", at(3600).timestamp()),
        "\"name\": \"web-1\"",
        "\"value\": 42",
        "<http://chat/?c=1|open the conversation>",
    ] {
        assert!(text.contains(expected), "{expected:?} missing in {text}");
    }
    assert!(
        message.text.contains("requested by Alice"),
        "{}",
        message.text
    );
    let uuid = approval.uuid.to_string();
    assert_eq!(
        actions(&message.blocks),
        vec![
            (action::APPROVE.to_string(), uuid.clone()),
            (action::REJECT.to_string(), uuid.clone()),
            (action::EDIT.to_string(), uuid),
        ]
    );
}

#[test]
fn no_edit_button_when_editing_is_not_allowed() {
    let approval = PendingApproval {
        no_edit: true,
        ..approval()
    };
    let message = request_message(&approval, &Presentation::default());
    let ids: Vec<String> = actions(&message.blocks)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(ids, [action::APPROVE, action::REJECT]);
}

#[test]
fn long_values_are_collapsed_and_the_whole_is_capped() {
    let long = "x".repeat(5_000);
    let mut approval = approval();
    approval.tool_args.insert("content".into(), json!(long));
    approval
        .tool_args
        .insert("nested".into(), json!({"deep": ["y".repeat(300)]}));
    let message = request_message(&approval, &Presentation::default());
    let text = texts(&message.blocks);
    assert!(
        !text.contains(&"x".repeat(MAX_VALUE_CHARS + 1)),
        "not collapsed"
    );
    assert!(text.contains(&format!(
        "{}… (4800 more characters)",
        "x".repeat(MAX_VALUE_CHARS)
    )));
    assert!(
        text.contains("… (100 more characters)"),
        "nested value not collapsed"
    );
    for block in message.blocks.as_array().unwrap() {
        let section = block["text"]["text"].as_str().unwrap_or_default();
        assert!(
            section.chars().count() <= 3_000,
            "a section over Slack's limit"
        );
    }
    let many: serde_json::Map<String, Value> = (0..200)
        .map(|i| (format!("field_{i}"), json!("v".repeat(100))))
        .collect();
    let collapsed = collapse(&many);
    assert!(collapsed.chars().count() < MAX_ARGUMENTS_CHARS + 200);
    assert!(collapsed.contains("more characters; the full arguments are in the conversation"));
}

#[test]
fn arguments_are_escaped_for_mrkdwn() {
    let mut approval = approval();
    approval
        .tool_args
        .insert("html".into(), json!("<!channel> & <b>"));
    let text = texts(&request_message(&approval, &Presentation::default()).blocks);
    assert!(text.contains("&lt;!channel&gt; &amp; &lt;b&gt;"), "{text}");
    assert!(!text.contains("<!channel>"));
}

fn question(text: &str, choices: &[&str]) -> Question {
    Question {
        text: text.into(),
        choices: choices.iter().map(|c| c.to_string()).collect(),
        schema: None,
        url: None,
        server: None,
        answerers: Vec::new(),
        approvers_answer: false,
        separate: false,
    }
}

#[test]
fn a_question_gets_a_button_per_choice_or_an_answer_button_and_decline() {
    let mut approval = pending_approval("ask_human");
    approval.question = Some(Box::new(question("Which colour?", &["red", "blue"])));
    let message = request_message(&approval, &Presentation::default());
    let uuid = approval.uuid;
    assert!(texts(&message.blocks).contains("Which colour?"));
    assert_eq!(
        actions(&message.blocks),
        vec![
            ("asg_choose_0".to_string(), format!("{uuid}:red")),
            ("asg_choose_1".to_string(), format!("{uuid}:blue")),
            (action::DECLINE.to_string(), uuid.to_string()),
        ]
    );
    approval.question = Some(Box::new(question("Which value?", &[])));
    let ids: Vec<String> = actions(&request_message(&approval, &Presentation::default()).blocks)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(ids, [action::ANSWER, action::DECLINE]);
}

fn decision(approved: bool, edited: Option<Value>) -> ApprovalDecision {
    ApprovalDecision {
        approval_uuid: Uuid::nil(),
        tool_name: "resources_add".into(),
        approved,
        decided_by: Actor {
            subject: "key:bob".into(),
            name: None,
            role: Some("approver".into()),
            via: Some("slack".into()),
        },
        decided_at: at(60),
        reason: None,
        edited_arguments: edited.and_then(|v| v.as_object().cloned()),
        remembered: None,
        question: false,
        reply: None,
    }
}

#[test]
fn a_decided_message_names_the_decider_and_the_outcome_without_buttons() {
    let approval = approval();
    let approved = decided_message(
        Some(&approval),
        Some(&decision(true, None)),
        &Presentation::default(),
    );
    let text = texts(&approved.blocks);
    assert!(text.contains("Approved by *key:bob* (via slack)"), "{text}");
    assert!(text.contains("\"value\": 42"), "the call is still shown");
    assert!(actions(&approved.blocks).is_empty(), "buttons left");
    assert_eq!(
        approved.text.split(" <!date").next(),
        Some("Approved by key:bob (via slack)")
    );

    let rejected = decided_message(
        Some(&approval),
        Some(&decision(false, None)),
        &Presentation::default(),
    );
    assert!(texts(&rejected.blocks).contains(":x: Rejected by *key:bob*"));

    let edited = decision(true, Some(json!({"name": "web-1", "value": 7})));
    let edited =
        texts(&decided_message(Some(&approval), Some(&edited), &Presentation::default()).blocks);
    assert!(
        edited.contains("Approved with edited arguments by *key:bob*"),
        "{edited}"
    );
    assert!(edited.contains("\"value\": 7"), "{edited}");

    let mut expired = decision(false, None);
    expired.decided_by.subject = EXPIRY_SUBJECT.into();
    expired.decided_by.role = Some(EXPIRY_ROLE.into());
    let expired =
        texts(&decided_message(Some(&approval), Some(&expired), &Presentation::default()).blocks);
    assert!(expired.contains("Expired"), "{expired}");

    let gone = texts(&decided_message(None, None, &Presentation::default()).blocks);
    assert!(gone.contains("No longer waiting"), "{gone}");
}

#[test]
fn an_answered_question_shows_the_answer() {
    let mut answered = decision(true, None);
    answered.question = true;
    answered.reply = Some(QuestionReply::Accept {
        answer: json!("blue"),
    });
    let text = texts(&decided_message(None, Some(&answered), &Presentation::default()).blocks);
    assert!(text.contains("Answered by *key:bob* (via slack)"), "{text}");
    assert!(text.contains("`blue`"), "{text}");
}

#[test]
fn the_edit_modal_holds_the_arguments_and_remembers_the_approval() {
    let approval = approval();
    let context = ModalContext {
        approval: approval.uuid,
        channel: "C1".into(),
        json: false,
    };
    let view = edit_modal(&approval, &context).unwrap();
    assert_eq!(view["callback_id"], modal::EDIT);
    let input = &view["blocks"][1]["element"];
    assert_eq!(input["type"], "plain_text_input");
    assert_eq!(input["multiline"], true);
    let initial: Value = serde_json::from_str(input["initial_value"].as_str().unwrap()).unwrap();
    assert_eq!(initial, json!({"name": "web-1", "value": 42}));
    let metadata: ModalContext =
        serde_json::from_str(view["private_metadata"].as_str().unwrap()).unwrap();
    assert_eq!(metadata, context);

    let mut huge = approval;
    huge.tool_args
        .insert("content".into(), json!("z".repeat(MAX_EDIT_CHARS)));
    assert!(edit_modal(&huge, &context).is_none());
}

#[test]
fn a_reminder_mentions_the_group_and_the_expiry() {
    let shown = Presentation {
        mention: Some("S0OPS".into()),
        link: None,
    };
    let text = reminder_text(&approval(), &shown);
    assert!(text.starts_with("<!subteam^S0OPS> "), "{text}");
    assert!(text.contains("still waits for a decision"), "{text}");
    assert!(text.contains("expires <!date^"), "{text}");
}
