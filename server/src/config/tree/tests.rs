use std::path::Path;

use super::*;
use crate::config::AgentConfig;

fn parse(text: &str) -> Result<AgentConfig, String> {
    AgentConfig::parse(text, Path::new("tree.yaml")).map_err(|e| e.to_string())
}

const SEQUENTIAL: &str = r#"
agent:
  type: sequential
  name: pipeline
  agents:
    - type: llm
      name: analyzer
      prompt: "Analyze: {user_message}"
      output_key: analysis
    - type: llm
      name: executor
      prompt: "Act on: {analysis}. Notes: {notes?}"
"#;

#[test]
fn a_valid_tree_parses() {
    let config = parse(SEQUENTIAL).unwrap();
    let root = config.agent.unwrap();
    assert_eq!(root.kind, NodeKind::Sequential);
    assert_eq!(root.agents.len(), 2);
    assert_eq!(root.agents[1].name, "executor");
}

#[test]
fn every_validation_error_names_the_node_and_the_problem() {
    let cases = [
        ("agent: { type: swarm, name: x }", "unknown variant `swarm`"),
        (
            "agent: { type: sequential, name: s, agents: [] }",
            "node \"s\": a sequential node needs at least one child",
        ),
        (
            "agent: { type: sequential, name: s, agents: [{type: llm, name: a, prompt: p}, {type: llm, name: a, prompt: q}] }",
            "agent.agents[1].name: node \"a\": duplicate node name",
        ),
        (
            "agent: { type: llm, name: a }",
            "node \"a\": an llm node needs a prompt",
        ),
        (
            "agent: { type: llm, name: a, prompt: \"use {missing}\" }",
            "agent.prompt: node \"a\": placeholder {missing} is never set",
        ),
        (
            "agent: { type: sequential, name: s, agents: [{type: llm, name: a, prompt: p, max_iterations: 3}] }",
            "`max_iterations` does not apply to llm nodes",
        ),
        (
            "agent: { type: parallel, name: p, agents: [{type: llm, name: a, prompt: p, output_key: k}, {type: llm, name: b, prompt: \"{k}\"}] }",
            "node \"b\": placeholder {k} is never set",
        ),
        (
            "agent: { type: llm, name: a, prompt: p, can_exit_loop: true }",
            "only a node inside a loop can exit it",
        ),
        (
            "agent: { type: loop, name: l, max_iterations: 0, agents: [{type: llm, name: a, prompt: p}] }",
            "must be at least 1",
        ),
        (
            "agent: { type: llm, name: a, prompt: p, tpye: x }",
            "unknown field `tpye`",
        ),
    ];
    for (yaml, needle) in cases {
        let err = parse(yaml).expect_err(yaml);
        assert!(
            err.contains(needle),
            "{yaml}\n  -> {err}\n  lacks {needle:?}"
        );
        assert!(err.starts_with("tree.yaml: "), "{err}");
    }
}

#[test]
fn keys_flow_forward_through_sequences_loops_and_parallel_joins() {
    parse(
        r#"
agent:
  type: sequential
  name: root
  agents:
    - type: parallel
      name: fan
      agents:
        - { type: llm, name: a, prompt: "x", output_key: ka }
        - { type: llm, name: b, prompt: "y", output_key: kb }
    - type: loop
      name: l
      agents:
        - { type: llm, name: c, prompt: "{ka} {kb} {kc?}", output_key: kc, can_exit_loop: true }
    - { type: llm, name: d, prompt: "{kc}" }
"#,
    )
    .unwrap();
}

#[test]
fn placeholders_are_found_resolved_and_escaped() {
    let found = placeholders("a {x} b {y?} {{literal}} {not a key} {}");
    assert_eq!(
        found,
        vec![
            Placeholder {
                name: "x".into(),
                optional: false
            },
            Placeholder {
                name: "y".into(),
                optional: true
            },
        ]
    );
    let lookup = |k: &str| (k == "x").then(|| "X".to_string());
    assert_eq!(
        resolve("a {x} b {y?} {{literal}} {not a key} {}", &lookup),
        "a X b  {literal} {not a key} {}"
    );
}

#[test]
fn a2a_nodes_and_sub_agents_are_checked() {
    let ok = parse(
        r#"
a2a:
  - { name: resources, url: "http://b:8082", destructiveHint: true }
agent:
  type: sequential
  name: s
  agents:
    - { type: a2a, name: delegate, agent: resources, prompt: "Do: {user_message}", output_key: out }
    - { type: llm, name: report, prompt: "Report {out}" }
"#,
    )
    .unwrap();
    assert!(ok.a2a[0].destructive_hint);
    let cases = [
        ("agent: { type: a2a, name: d }", "an a2a node needs `agent`"),
        (
            "a2a: [{ name: x, url: \"http://x\" }]\nagent: { type: a2a, name: d, agent: y }",
            "agent.agent: node \"d\": no sub-agent named \"y\"",
        ),
        (
            "a2a: [{ name: x, url: \"http://x\" }, { name: x, url: \"http://y\" }]",
            "a2a[1].name: duplicate sub-agent name",
        ),
        (
            "a2a: [{ name: x, url: \"ftp://x\" }]",
            "a2a[0].url: must be an http(s) URL",
        ),
        (
            "agent: { type: llm, name: a, prompt: p, agent: x }",
            "`agent` does not apply to llm nodes",
        ),
        (
            "max_delegation_depth: 0",
            "max_delegation_depth: must be at least 1",
        ),
    ];
    for (yaml, needle) in cases {
        let err = parse(yaml).expect_err(yaml);
        assert!(
            err.contains(needle),
            "{yaml}\n  -> {err}\n  lacks {needle:?}"
        );
    }
}

#[test]
fn an_a2a_node_may_declare_its_peer_inline() {
    let config = parse(
        r#"
agent:
  type: sequential
  name: chain
  agents:
    - { type: llm, name: analyzer, prompt: "Plan: {user_message}", output_key: plan, tools: [] }
    - type: a2a
      name: resource_agent
      url: http://localhost:9092/a2a
      description: Manages resources.
      destructiveHint: true
      prompt: "{user_message}"
      output_key: delegated
"#,
    )
    .unwrap();
    assert_eq!(config.a2a.len(), 1);
    let peer = &config.a2a[0];
    assert_eq!(peer.name, "resource_agent");
    assert_eq!(peer.url, "http://localhost:9092/a2a");
    assert_eq!(peer.description.as_deref(), Some("Manages resources."));
    assert!(peer.destructive_hint);
    let node = &config.agent.as_ref().unwrap().agents[1];
    assert_eq!(node.agent.as_deref(), Some("resource_agent"));
    // Offered to no llm node: only the a2a node reaches it.
    assert_eq!(
        config
            .sub_agent_scopes
            .get("resource_agent")
            .map(String::as_str),
        Some("resource_agent")
    );
}

#[test]
fn an_llm_node_may_carry_its_own_sub_agents() {
    let config = parse(
        r#"
a2a:
  - { name: everyone, url: "http://a:1" }
agent:
  type: sequential
  name: s
  agents:
    - type: llm
      name: planner
      prompt: p
      a2a:
        - { name: fs-agent, url: "http://c:8080/a2a", description: Files, destructiveHint: true }
    - { type: llm, name: other, prompt: q }
"#,
    )
    .unwrap();
    let names: Vec<&str> = config.a2a.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["everyone", "fs-agent"]);
    assert!(config.a2a[1].destructive_hint);
    assert_eq!(
        config.sub_agent_scopes.get("fs-agent").map(String::as_str),
        Some("planner")
    );
    assert!(!config.sub_agent_scopes.contains_key("everyone"));
}

#[test]
fn an_a2a_node_has_exactly_one_of_agent_and_url_and_names_do_not_clash() {
    let cases = [
        (
            "a2a: [{ name: x, url: \"http://x\" }]\nagent: { type: a2a, name: d, agent: x, url: \"http://y\" }",
            "agent.url: node \"d\": set either `agent`",
        ),
        (
            "agent: { type: a2a, name: d }",
            "agent.agent: node \"d\": an a2a node needs `agent`",
        ),
        (
            "agent: { type: a2a, name: d, url: \"ftp://y\" }",
            "agent.url: node \"d\": must be an http(s) URL",
        ),
        (
            "a2a: [{ name: x, url: \"http://x\" }]\nagent: { type: a2a, name: d, agent: x, destructiveHint: true }",
            "node \"d\": applies to an inline peer",
        ),
        (
            "agent: { type: llm, name: a, prompt: p, url: \"http://x\" }",
            "`url` does not apply to llm nodes",
        ),
        (
            "agent: { type: a2a, name: d, url: \"http://x\", a2a: [{ name: y, url: \"http://y\" }] }",
            "`a2a` does not apply to a2a nodes",
        ),
        // The inline peer is named after its node: no other sub-agent may
        // have that name.
        (
            "a2a: [{ name: d, url: \"http://x\" }]\nagent: { type: a2a, name: d, url: \"http://y\" }",
            "agent.name: node \"d\": its inline peer is a sub-agent named after the node",
        ),
        (
            "a2a: [{ name: x, url: \"http://x\" }]\nagent: { type: llm, name: a, prompt: p, a2a: [{ name: x, url: \"http://y\" }] }",
            "agent.a2a[0].name: duplicate sub-agent name \"x\"",
        ),
    ];
    for (yaml, needle) in cases {
        let err = parse(yaml).expect_err(yaml);
        assert!(
            err.contains(needle),
            "{yaml}\n  -> {err}\n  lacks {needle:?}"
        );
    }
}
