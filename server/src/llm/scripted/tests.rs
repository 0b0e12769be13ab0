use serde_json::json;

use super::*;

const RULES: &str = r#"
rules:
  - when: { user: "(?i)\\b(list|show)\\b" }
    call: { tool: resources_list, args: {} }
  - when: { user: "(?i)add .*?(?P<name>[\\w-]+) with value (?P<value>-?\\d+)" }
    call: { tool: resources_add, args: { name: "{name}", value: "{value:int}" } }
  - when: { after_tool: resources_list, result: "\"count\":\\s*(?P<count>\\d+)" }
    reply: "There are {count} resources."
  - when: { after_tool: "*", tool_error: true }
    reply: "The tool {tool} failed: {result}"
  - when: { after_tool: "*" }
    reply: "Done: {result}"
  - when: { node: boom }
    fail: "scripted failure for {user}"
  - reply: "I did not understand {user}; {unknown} stays."
"#;

fn request(messages: Vec<LlmMessage>) -> LlmRequest {
    LlmRequest {
        node: "root".into(),
        system: "sys".into(),
        messages,
        tools: vec![].into(),
    }
}

fn user(text: &str) -> LlmMessage {
    LlmMessage::User { text: text.into() }
}

fn model() -> ScriptedModel {
    ScriptedModel::parse(RULES, "test").unwrap()
}

#[test]
fn user_text_selects_a_tool_with_typed_arguments() {
    let reply = model()
        .answer(&request(vec![user(
            "please add server web-1 with value 42",
        )]))
        .unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    let call = &reply.tool_calls[0];
    assert_eq!(call.name, "resources_add");
    assert_eq!(call.id, "call_1");
    assert_eq!(json!(call.arguments), json!({"name": "web-1", "value": 42}));
}

#[test]
fn tool_results_are_answered_by_after_tool_rules_with_captures() {
    let history = vec![
        user("list all"),
        LlmMessage::Assistant {
            text: None,
            tool_calls: vec![LlmToolCall {
                id: "call_1".into(),
                name: "resources_list".into(),
                arguments: Map::new(),
                signature: None,
            }],
        },
        LlmMessage::Tool {
            call_id: "call_1".into(),
            name: "resources_list".into(),
            content: r#"{"resources": [], "count": 3}"#.into(),
            is_error: false,
        },
    ];
    let reply = model().answer(&request(history.clone())).unwrap();
    assert_eq!(reply.text.as_deref(), Some("There are 3 resources."));
    assert!(reply.tool_calls.is_empty());

    let mut failed = history;
    failed[2] = LlmMessage::Tool {
        call_id: "call_1".into(),
        name: "resources_list".into(),
        content: "server crashed".into(),
        is_error: true,
    };
    let reply = model().answer(&request(failed)).unwrap();
    assert_eq!(
        reply.text.as_deref(),
        Some("The tool resources_list failed: server crashed")
    );
}

#[test]
fn fallback_fail_and_unknown_placeholders() {
    let reply = model().answer(&request(vec![user("hello")])).unwrap();
    assert_eq!(
        reply.text.as_deref(),
        Some("I did not understand hello; {unknown} stays.")
    );
    let mut req = request(vec![user("x")]);
    req.node = "boom".into();
    assert_eq!(
        model().answer(&req),
        Err(LlmError::Script("scripted failure for x".into()))
    );
}

#[test]
fn invalid_rules_are_rejected_with_their_position() {
    let err = ScriptedModel::parse(
        "rules:\n  - when: { user: \"(\" }\n    reply: x\n",
        "f.yaml",
    )
    .unwrap_err();
    assert!(err.contains("rules[0].when.user"), "{err}");
    let err = ScriptedModel::parse("rules:\n  - when: {}\n", "f.yaml").unwrap_err();
    assert!(err.contains("exactly one"), "{err}");
    let err = ScriptedModel::parse("rules:\n  - bogus: 1\n", "f.yaml").unwrap_err();
    assert!(err.contains("bogus"), "{err}");
}

#[test]
fn check_compares_captures_numerically() {
    let rules = r#"
rules:
  - when: { user: "at least (?P<n>\\d+)", after_tool: resources_list, result: "count.: (?P<count>\\d+)", check: "{count} >= {n}" }
    call: { tool: exit_loop }
  - when: { after_tool: resources_list, result: "count.: (?P<count>\\d+)" }
    call: { tool: resources_add, args: { name: "auto-{count}", value: "{count:int}" } }
"#;
    let model = ScriptedModel::parse(rules, "t").unwrap();
    let history = |count: u32| {
        vec![
            user("ensure at least 10"),
            LlmMessage::Tool {
                call_id: "c".into(),
                name: "resources_list".into(),
                content: format!("count\": {count}"),
                is_error: false,
            },
        ]
    };
    let below = model.answer(&request(history(9))).unwrap();
    assert_eq!(below.tool_calls[0].name, "resources_add");
    assert_eq!(
        json!(below.tool_calls[0].arguments),
        json!({"name": "auto-9", "value": 9})
    );
    let reached = model.answer(&request(history(10))).unwrap();
    assert_eq!(reached.tool_calls[0].name, "exit_loop");
    assert!(
        ScriptedModel::parse(
            "rules:\n  - when: { check: \"a ~ b\" }\n    reply: x\n",
            "t"
        )
        .is_err()
    );
}
