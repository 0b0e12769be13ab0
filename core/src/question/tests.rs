use asg_shared::fixtures;
use serde_json::json;

use super::*;
use crate::cast::who;

fn asked(arguments: serde_json::Value) -> Result<Question, String> {
    from_arguments(arguments.as_object().expect("an object"))
}

fn accept(answer: serde_json::Value) -> QuestionReply {
    QuestionReply::Accept { answer }
}

#[test]
fn the_models_arguments_become_a_checked_question() {
    let plain = asked(json!({"question": " Which environment? "})).expect("plain");
    assert_eq!(plain.text, "Which environment?");
    let choices = asked(json!({"question": "Which?", "choices": ["staging", "prod"]}));
    assert_eq!(choices.expect("choices").choices, ["staging", "prod"]);
    let table = [
        (json!({}), "non-empty string `question`"),
        (json!({"question": "  "}), "non-empty string `question`"),
        (json!({"question": 3}), "non-empty string `question`"),
        (json!({"question": "q", "choices": "a"}), "array of strings"),
        (
            json!({"question": "q", "choices": [1]}),
            "non-empty strings",
        ),
        (
            json!({"question": "q", "schema": {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}}),
            "schema.properties.a",
        ),
        (
            json!({"question": "q", "schema": {"type": "array"}}),
            "flat object schema",
        ),
        (
            json!({"question": "q", "schema": {"type": "object", "properties": {"a": {"type": "string", "pattern": "(a+)+$"}}}}),
            "schema.properties.a.pattern` is not allowed",
        ),
        (
            json!({"question": "q", "choices": ["a"], "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}),
            "not both",
        ),
        (
            json!({"question": "x".repeat(MAX_QUESTION_BYTES + 1)}),
            "shorter",
        ),
    ];
    for (arguments, expected) in table {
        let error = asked(arguments.clone()).expect_err(&arguments.to_string());
        assert!(error.contains(expected), "{arguments}: {error}");
    }
}

#[test]
fn a_reply_must_fit_the_question() {
    let free = asked(json!({"question": "Name?"})).expect("free");
    let choices = asked(json!({"question": "Which?", "choices": ["staging", "prod"]})).expect("c");
    let form = asked(json!({"question": "Size?", "schema": {"type": "object",
        "properties": {"count": {"type": "integer", "minimum": 1}, "env": {"type": "string", "enum": ["a", "b"]}},
        "required": ["count"]}}))
    .expect("form");
    let url = Question {
        url: Some("https://example.test/consent".into()),
        ..free.clone()
    };
    let ok = [
        (&free, accept(json!("web-1"))),
        (&choices, accept(json!("prod"))),
        (&form, accept(json!({"count": 2, "env": "a"}))),
        (&url, accept(json!("done"))),
        (&form, QuestionReply::Decline),
        (&url, QuestionReply::Cancel),
    ];
    for (question, reply) in ok {
        assert_eq!(check_reply(question, &reply), Ok(()), "{reply:?}");
    }
    let refused = [
        (&free, accept(json!("  ")), "not be empty"),
        (&free, accept(json!({"a": 1})), "must be a string"),
        (
            &choices,
            accept(json!("dev")),
            "one of \"staging\", \"prod\"",
        ),
        (&form, accept(json!({"count": 0})), "answer.count"),
        (
            &form,
            accept(json!({"env": "a"})),
            "\"count\" is a required property",
        ),
        (&form, accept(json!({"count": 1, "env": "c"})), "answer.env"),
        (&form, accept(json!("2")), "must be an object"),
        (&url, accept(json!("yes")), "answer \"done\""),
        (
            &free,
            accept(json!("x".repeat(MAX_ANSWER_BYTES))),
            "longer than",
        ),
    ];
    for (question, reply, expected) in refused {
        let error = check_reply(question, &reply).expect_err(&format!("{reply:?}"));
        assert!(error.contains(expected), "{reply:?}: {error}");
    }
}

#[test]
fn the_owner_answers_unless_answerers_or_approvers_are_named() {
    let mut conversation = fixtures::conversation();
    conversation.owner = Some("carol".into());
    let pending = fixtures::pending_approval(ASK_HUMAN_TOOL);
    let question = asked(json!({"question": "q"})).expect("q");
    let carol = who("carol", &[], &[]);
    let bob = who("bob", &[Role::Approver], &[]);
    let ops = who("olga", &[], &["ops"]);
    assert_eq!(
        can_answer(&carol, &conversation, &pending, &question, false),
        Ok(None)
    );
    let error = can_answer(&bob, &conversation, &pending, &question, false).unwrap_err();
    assert!(error.contains("only the principal that started"), "{error}");

    let named = Question {
        answerers: vec!["ops".into()],
        ..question.clone()
    };
    assert!(names_answerer(&ops, &named));
    assert_eq!(
        can_answer(&ops, &conversation, &pending, &named, false),
        Ok(None)
    );
    let error = can_answer(&carol, &conversation, &pending, &named, false).unwrap_err();
    assert!(error.contains("only ops may"), "{error}");

    let during_approval = Question {
        approvers_answer: true,
        ..question
    };
    assert_eq!(
        can_answer(&bob, &conversation, &pending, &during_approval, false),
        Ok(Some(Role::Approver))
    );
    let error = can_answer(&carol, &conversation, &pending, &during_approval, false).unwrap_err();
    assert!(error.contains("approver role"), "{error}");

    let asked_by_ops = PendingApproval {
        requested_by: Some(crate::access::actor(&ops, None, "rest")),
        ..pending
    };
    let four_eyes = Question {
        separate: true,
        ..named
    };
    let error = can_answer(&ops, &conversation, &asked_by_ops, &four_eyes, false).unwrap_err();
    assert!(error.contains("questions.separate_answerer"), "{error}");
    let olga_too = who("oleg", &[], &["ops"]);
    assert_eq!(
        can_answer(&olga_too, &conversation, &asked_by_ops, &four_eyes, false),
        Ok(None)
    );
}

#[test]
fn the_asker_is_told_the_reply_in_plain_words() {
    assert_eq!(reply_text(&accept(json!("prod"))), "prod");
    assert_eq!(reply_text(&accept(json!({"count": 2}))), r#"{"count":2}"#);
    assert!(reply_text(&QuestionReply::Decline).contains("declined"));
    assert!(reply_text(&QuestionReply::Cancel).contains("without answering"));
}
