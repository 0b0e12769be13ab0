use std::path::Path;

use super::*;

fn parse(text: &str) -> Result<AgentConfig, String> {
    AgentConfig::parse(text, Path::new("agent.yaml")).map_err(|e| e.to_string())
}

#[test]
fn an_empty_file_gets_every_default() {
    let config = parse("{}").unwrap();
    assert_eq!(config.port, 8080);
    assert_eq!(config.host, "0.0.0.0");
    assert_eq!(config.llm.model, "gemini-2.5-flash");
    assert_eq!(config.llm.timeout_secs, 60);
    assert_eq!(config.max_tool_steps, 10);
    assert_eq!(config.data_dir, PathBuf::from("./data"));
    assert_eq!(config.public_base_url(8080), "http://localhost:8080");
}

#[test]
fn full_config_with_both_mcp_forms() {
    let config = parse(
        r#"
name: resource-agent
description: Manages resources
prompt: You manage resources.
port: 9000
public_url: https://agent.example.com/
llm: { model: claude-sonnet-4-5, temperature: 0.2, max_tokens: 1000 }
mcp: { command: mcp-resources }
mcp_servers:
  - { name: web, url: "http://localhost:9999/mcp" }
approval: { always: [resources_list] }
"#,
    )
    .unwrap();
    assert_eq!(config.mcp_servers.len(), 2);
    assert_eq!(config.mcp_servers[0].name, "mcp");
    assert_eq!(
        config.mcp_servers[0].command.as_deref(),
        Some("mcp-resources")
    );
    assert_eq!(config.mcp_servers[1].name, "web");
    assert_eq!(config.public_base_url(9000), "https://agent.example.com");
    assert_eq!(config.approval.always, vec!["resources_list".to_string()]);
}

#[test]
fn errors_name_the_file_the_field_and_the_problem() {
    let err = parse("llm:\n  modle: x\n").unwrap_err();
    assert!(
        err.starts_with("agent.yaml: llm.modle: unknown field `modle`"),
        "{err}"
    );
    let err = parse("port: eighty\n").unwrap_err();
    assert!(err.starts_with("agent.yaml: port: invalid type"), "{err}");
    let err = parse("agnet: {}\n").unwrap_err();
    assert!(err.contains("unknown field `agnet`"), "{err}");
    let err = parse("mcp_servers:\n  - { name: a }\n").unwrap_err();
    assert!(err.contains("mcp_servers[0]: needs `command`"), "{err}");
    let err = parse("mcp_servers:\n  - { name: a, command: x }\n  - { name: a, command: y }\n")
        .unwrap_err();
    assert!(err.contains("mcp_servers[1].name: duplicate"), "{err}");
    let err = parse("llm: { temperature: 7 }\n").unwrap_err();
    assert!(err.contains("llm.temperature"), "{err}");
    let err = parse("public_url: agent:8080\n").unwrap_err();
    assert!(err.contains("public_url"), "{err}");
    for bad in [
        "javascript:alert(1)",
        "/chat",
        "http://",
        "ftp://chat.example.com/",
    ] {
        let err = parse(&format!("web_chat_url: {bad:?}\n")).unwrap_err();
        assert!(
            err.contains("web_chat_url") && err.contains("http(s) URL"),
            "{bad}: {err}"
        );
    }
    let err = parse("name: [\n").unwrap_err();
    assert!(err.starts_with("agent.yaml: "), "{err}");
}

/// Every `*.yaml` under `dir` (recursively), with the scripted-model
/// rule files left out.
fn yaml_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("scripted") && !path.ends_with("mcp") {
            found.extend(yaml_files(&path));
        } else if path.extension().is_some_and(|e| e == "yaml") {
            found.push(path);
        }
    }
    found
}

#[test]
fn every_shipped_and_test_config_is_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut agents = 0;
    for dir in ["config", "testdata"] {
        for path in yaml_files(&root.join(dir)) {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            // The tool servers' and the web server's files are checked by
            // their own crates (tools/, webserver/).
            if !name.starts_with("mcp-") && !name.starts_with("web") {
                AgentConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
                agents += 1;
            }
        }
    }
    assert!(agents >= 20, "only {agents} agent configs found");
}

#[test]
fn allowed_hosts_are_host_names() {
    let config = parse("allowed_hosts: [agent.example.com, \"Box:8080\"]").unwrap();
    assert_eq!(config.allowed_hosts, ["agent.example.com", "Box:8080"]);
    assert!(parse("{}").unwrap().allowed_hosts.is_empty());
    let error = parse("allowed_hosts: [\"http://agent.example.com/\"]").unwrap_err();
    assert!(error.contains("allowed_hosts[0]"), "{error}");
    assert!(error.contains("host name"), "{error}");
}

#[test]
fn model_names_expand_from_the_environment() {
    let text = r#"
llm: { model: "${ASG_MODEL:-scripted:rules.yaml}" }
agent:
  type: sequential
  name: pipeline
  agents:
    - { type: llm, name: first, prompt: "p", model: "${FIRST_MODEL:-claude-sonnet-4-5}" }
    - { type: llm, name: second, prompt: "p", model: "${SECOND_MODEL}" }
"#;
    let path = Path::new("agent.yaml");
    let nothing = |_: &str| None;
    let config = AgentConfig::parse_with_env(text, path, &nothing).unwrap();
    assert_eq!(config.llm.model, "scripted:rules.yaml");
    let nodes = &config.agent.as_ref().unwrap().agents;
    assert_eq!(nodes[0].model.as_deref(), Some("claude-sonnet-4-5"));
    // Expanded to nothing: the node uses llm.model.
    assert_eq!(nodes[1].model, None);

    let env = |name: &str| match name {
        "ASG_MODEL" => Some("google:gemini-2.5-flash".to_string()),
        "SECOND_MODEL" => Some("openai:gpt-4o".to_string()),
        _ => None,
    };
    let config = AgentConfig::parse_with_env(text, path, &env).unwrap();
    assert_eq!(config.llm.model, "google:gemini-2.5-flash");
    let nodes = &config.agent.as_ref().unwrap().agents;
    assert_eq!(nodes[1].model.as_deref(), Some("openai:gpt-4o"));

    // Set but empty counts as unset; an empty result is still an error.
    let empty = |_: &str| Some(String::new());
    let config = AgentConfig::parse_with_env(text, path, &empty).unwrap();
    assert_eq!(config.llm.model, "scripted:rules.yaml");
    let err = AgentConfig::parse_with_env("llm: { model: \"${NOPE}\" }", path, &nothing)
        .unwrap_err()
        .to_string();
    assert!(err.contains("llm.model: must not be empty"), "{err}");
}

/// The compose stack's agent configs (`config/compose/agent-*.yaml`) are
/// valid, and on their default (offline) model their rules files load.
#[test]
fn compose_agent_configs_are_valid_and_offline_by_default() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/compose");
    let mut checked = 0;
    for name in ["agent-a.yaml", "agent-b.yaml", "agent-c.yaml"] {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let config =
            AgentConfig::parse_with_env(&text, &path, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            config.llm.model.starts_with("scripted:"),
            "{name}: {}",
            config.llm.model
        );
        crate::llm::provider::build_client(&config.llm, &dir, &|_| None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let gemini = |var: &str| (var == "AGENT_MODEL").then(|| "gemini-2.5-flash".to_string());
        let config = AgentConfig::parse_with_env(&text, &path, &gemini).unwrap();
        assert_eq!(config.llm.model, "gemini-2.5-flash", "{name}");
        checked += 1;
    }
    assert_eq!(checked, 3);
}

#[test]
fn the_store_url_is_postgres_or_absent_never_a_silent_fall_back() {
    let store = |url: Option<&str>| super::StoreConfig {
        url: url.map(str::to_string),
        ..Default::default()
    };
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let none = env(&[]);
    assert_eq!(store(None).database_url(&none), Ok(None));
    let empty = env(&[("DATABASE_URL", "")]);
    assert_eq!(store(None).database_url(&empty), Ok(None));
    let db = env(&[("DATABASE_URL", "postgres://a@h/db")]);
    assert_eq!(
        store(None).database_url(&db),
        Ok(Some("postgres://a@h/db".into()))
    );
    let from_var = store(Some("${PG_URL}")).database_url(&env(&[("PG_URL", "postgresql://h/x")]));
    assert_eq!(from_var, Ok(Some("postgresql://h/x".into())));
    let unset = store(Some("${PG_URL}")).database_url(&none).unwrap_err();
    assert!(
        unset.contains("PG_URL") && unset.contains("expands to nothing"),
        "{unset}"
    );
    let wrong = store(None)
        .database_url(&env(&[("DATABASE_URL", "mysql://u:secret@h/db")]))
        .unwrap_err();
    assert!(
        wrong.contains("postgres://") && !wrong.contains("secret"),
        "{wrong}"
    );
    // The Debug form never shows a password.
    let shown = format!("{:?}", store(Some("postgres://u:hunter2@h:5432/db")));
    assert!(
        shown.contains("h:5432/db") && !shown.contains("hunter2"),
        "{shown}"
    );
}

#[test]
fn bad_rules_are_startup_errors_naming_the_field() {
    let error = |yaml: &str| {
        AgentConfig::parse(
            &format!("approval:\n  rules:\n{yaml}"),
            std::path::Path::new("agent.yaml"),
        )
        .unwrap_err()
    };
    let cases = [
        (
            "    - { tool: t, when: { name: \"(\" }, action: deny }\n",
            "approval.rules[0].when.name: invalid regex",
        ),
        (
            "    - { tool: t, when: { name: { regex: \"[\" } }, action: deny }\n",
            "approval.rules[0].when.name: invalid regex",
        ),
        (
            "    - { tool: t, when: { value: { gte: 3 } }, action: deny }\n",
            "approval.rules[0].when.value: an object condition takes only",
        ),
        (
            "    - { tool: t, when: { value: {} }, action: deny }\n",
            "approval.rules[0].when.value: needs at least one",
        ),
        (
            "    - { tool: t, action: deny, approvers: [sre] }\n",
            "approval.rules[0].approvers: only applies to `action: ask`",
        ),
        (
            "    - { tool: t, action: maybe }\n",
            "approval.rules[0].action",
        ),
        (
            "    - { tool: \"\", action: ask }\n",
            "approval.rules[0].tool: must name a tool",
        ),
    ];
    for (yaml, expected) in cases {
        let message = error(yaml);
        let message = message.to_string();
        assert!(message.contains(expected), "{yaml}: {message}");
    }
}

#[test]
fn auth_token_env_is_for_http_servers_only() {
    let config =
        parse("mcp_servers:\n  - {name: fs, url: http://fs:8091/mcp, auth_token_env: FS_TOKEN}\n")
            .unwrap();
    assert_eq!(
        config.mcp_servers[0].auth_token_env.as_deref(),
        Some("FS_TOKEN")
    );
    let error =
        parse("mcp_servers:\n  - {name: r, command: mcp-resources, auth_token_env: R_TOKEN}\n")
            .unwrap_err();
    assert!(
        error.contains("mcp_servers[0].auth_token_env") && error.contains("url"),
        "{error}"
    );
    let error = parse("mcp_servers:\n  - {url: http://x/mcp, auth_token_env: \"\"}\n").unwrap_err();
    assert!(
        error.contains("must name an environment variable"),
        "{error}"
    );
}

/// The compose stack names every service in its own `allowed_hosts`, and
/// agents B and C send the service token their tool server requires (the
/// tool servers' and the web server's crates check their side).
#[test]
fn compose_services_answer_their_names_and_send_the_tool_tokens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/compose");
    for (name, token) in [
        ("agent-a", None),
        ("agent-b", Some("MCP_RESOURCES_TOKEN")),
        ("agent-c", Some("MCP_FILESYSTEM_TOKEN")),
    ] {
        let path = dir.join(format!("{name}.yaml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let config = AgentConfig::parse_with_env(&text, &path, &|_| None).unwrap();
        assert_eq!(config.allowed_hosts, [name]);
        let tokens: Vec<_> = config
            .mcp_servers
            .iter()
            .map(|s| s.auth_token_env.as_deref())
            .collect();
        assert_eq!(
            tokens,
            token.map(Some).into_iter().collect::<Vec<_>>(),
            "{name}"
        );
    }
}

#[test]
fn load_limits_have_defaults_and_zero_places_are_refused() {
    let limits = parse("{}").unwrap().limits;
    assert_eq!(
        limits.storage_threads,
        crate::config::DEFAULT_STORAGE_THREADS
    );
    assert_eq!(limits.read_cache_bytes, 32 << 20);
    assert_eq!(
        limits.read_cache_idle(),
        Some(std::time::Duration::from_secs(10))
    );
    let never = parse("limits: { read_cache_idle_secs: 0 }").unwrap();
    assert_eq!(never.limits.read_cache_idle(), None, "0: never");
    assert_eq!(
        (limits.max_running_turns, limits.max_queued_turns),
        (256, 4096)
    );
    let queued_none = parse("limits: { max_queued_turns: 0, read_cache_bytes: 0 }").unwrap();
    assert_eq!(
        queued_none.limits.max_queued_turns, 0,
        "no queue: refuse at once"
    );
    for field in ["storage_threads", "max_running_turns"] {
        let yaml = format!("limits: {{ {field}: 0 }}");
        let error = AgentConfig::parse(&yaml, std::path::Path::new("agent.yaml"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(&format!("limits.{field}")) && error.contains("at least 1"),
            "{error}"
        );
    }
}
