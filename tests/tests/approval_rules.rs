//! `approval.rules` (issue 9) against the real binaries: each action
//! (allow, ask, deny) and condition type decides a call as configured,
//! the model and the audit log see the rule that decided, bad rules stop
//! the agent at startup, and `approvers` limits who may decide — checked
//! with tokens of a real OpenID Connect provider.

use std::process::{Command, Stdio};

use asg_tests::oidc::OidcProvider;
use asg_tests::{
    Agent, AgentOptions, approval_uuid, binary, config_with, conversation_id, response_text,
    tool_messages,
};
use serde_json::{Value, json};

const RULES: &str = r#"approval:
  rules:
    - { tool: resources_remove, when: { pattern: "^tmp-" }, action: allow }
    - { tool: resources_add, when: { value: { gt: 1000 } }, action: ask, approvers: [sre] }
    - { tool: resources_add, when: { name: { in: [prod, live] } }, action: deny }
    - { tool: resources_add, when: { value: { lt: 10 }, name: { regex: "^small-" } }, action: allow }
    - { tool: resources_add, when: { value: 42 }, action: ask }
"#;

/// The text of the tool result of `tool` in the conversation `answer`
/// belongs to.
async fn tool_result(agent: &Agent, answer: &Value, tool: &str) -> String {
    let conversation = agent.conversation(&conversation_id(answer)).await;
    tool_messages(&conversation)
        .iter()
        .filter(|m| m["tool_result"]["name"] == tool)
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .next_back()
        .unwrap_or_else(|| panic!("no {tool} result in {conversation}"))
}

#[tokio::test]
async fn each_action_and_condition_decides_as_configured() {
    let (_dir, config) = config_with("agent-resources.yaml", RULES);
    let agent = Agent::start(&config, AgentOptions::default()).await;

    // allow (lt + regex, both must hold): runs at once.
    let (_, answer) = agent.say_new("add resource small-1 with value 5").await;
    assert_eq!(answer["result"]["waiting_approval"], false, "{answer}");
    assert!(response_text(&answer).contains("Created"), "{answer}");
    // Only one of the two conditions: no rule, the hint asks.
    let (_, answer) = agent.say_new("add resource big-1 with value 5").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    assert!(
        answer["result"]["approval"].get("rule").is_none(),
        "{answer}"
    );

    // deny (in): refused, the model is told which rule, nothing runs.
    let (_, answer) = agent.say_new("add resource live with value 50").await;
    assert_eq!(answer["result"]["waiting_approval"], false, "{answer}");
    let refusal = tool_result(&agent, &answer, "resources_add").await;
    assert!(
        refusal.contains("denied by approval.rules[2] (deny resources_add)")
            && refusal.contains("not run"),
        "{refusal}"
    );

    // ask (equals): the approval names the rule that asked.
    let (_, answer) = agent.say_new("add resource answer with value 42").await;
    let approval = &answer["result"]["approval"];
    assert_eq!(
        approval["rule"], "approval.rules[4] (ask resources_add)",
        "{answer}"
    );
    assert!(approval.get("approvers").is_none(), "{answer}");

    // allow (bare-string regex) on a destructive tool: runs unasked.
    let (_, answer) = agent.say_new("remove tmp-old").await;
    assert_eq!(answer["result"]["waiting_approval"], false, "{answer}");
    assert!(response_text(&answer).starts_with("Removed"), "{answer}");
    // The same tool without the match still asks.
    let (_, answer) = agent.say_new("remove web-1").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");

    assert_eq!(agent.resource_names().await, ["small-1"]);
    let policy: Vec<(String, String)> = agent
        .audit_lines()
        .iter()
        .filter(|line| line["event"] == "policy")
        .map(|line| {
            (
                line["rule"].as_str().unwrap().to_string(),
                line["decision"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        policy,
        [
            (
                "approval.rules[3] (allow resources_add)".into(),
                "allowed".into()
            ),
            (
                "approval.rules[2] (deny resources_add)".into(),
                "denied".into()
            ),
            (
                "approval.rules[0] (allow resources_remove)".into(),
                "allowed".into()
            ),
        ]
    );
}

/// Starts `agent --config` with `rules` and returns what it printed; it
/// must exit with an error.
fn startup_error(rules: &str) -> String {
    let (dir, config) = config_with("agent-resources.yaml", rules);
    let output = Command::new(binary("agent"))
        .arg("--config")
        .arg(&config)
        .args(["--port", "0", "--data-dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success(), "the agent started with {rules}");
    String::from_utf8_lossy(&output.stderr).to_string()
}

#[test]
fn bad_rules_stop_the_agent_with_a_clear_error() {
    let typo =
        startup_error("approval:\n  rules:\n    - { tool: resources_remov, action: deny }\n");
    assert!(
        typo.contains("approval.rules[0]")
            && typo.contains("\"resources_remov\" matches no tool")
            && typo.contains("resources_remove"),
        "{typo}"
    );
    let regex = startup_error(
        "approval:\n  rules:\n    - { tool: resources_add, when: { name: \"(\" }, action: deny }\n",
    );
    assert!(
        regex.contains("approval.rules[0].when.name") && regex.contains("invalid regex"),
        "{regex}"
    );
}

#[tokio::test]
async fn only_the_listed_approvers_decide_what_a_rule_reserves() {
    let provider = OidcProvider::start().await;
    let auth = format!(
        "auth:\n  oidc: {{ issuer: \"{}\", audience: agent-stop-and-go, clock_skew_secs: 0 }}\n  \
         role_map: {{ approver: [approver, sre] }}\n",
        provider.issuer
    );
    let (_dir, config) = config_with("agent-resources.yaml", &format!("{RULES}{auth}"));
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let bob = format!("Bearer {}", provider.token("bob").await);
    let (status, answer) = agent
        .post_with(
            "/conversations",
            json!({"message": "add resource huge with value 5000"}).to_string(),
            &[("authorization", &bob)],
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let approval = &answer["result"]["approval"];
    assert_eq!(approval["approvers"], json!(["sre"]), "{answer}");
    let uuid = approval_uuid(&answer);

    let decide = |token: String| {
        let agent = &agent;
        let uuid = uuid.clone();
        async move {
            agent
                .post_with(
                    &format!("/approvals/{uuid}"),
                    json!({"approved": true}).to_string(),
                    &[("authorization", &format!("Bearer {token}"))],
                )
                .await
        }
    };
    // alice is an approver, but not in sre.
    let (status, refused) = decide(provider.token("alice").await).await;
    assert_eq!(status, 403, "{refused}");
    let message = refused["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("alice")
            && message.contains("sre")
            && message.contains("approval.rules[1]"),
        "{refused}"
    );
    // frank is an approver in sre.
    let (status, approved) = decide(provider.token("frank").await).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(
        approved["conversation"]["decisions"][0]["decided_by"]["subject"],
        provider.subject("frank")
    );
    let names: Vec<String> = tool_messages(&approved["conversation"])
        .iter()
        .filter_map(|m| m["tool_result"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(names, ["resources_add"]);
}
