//! The `agent` binary's command line, run for real: `agent check`
//! validates a config without starting anything, a bad config or a bad
//! `--web-chat-url` stops the start with a message naming the problem, and
//! `--version` names the binary.

use std::process::{Command, Output};

use asg_tests::{Agent, AgentOptions, binary, config_with, testdata};

fn agent(args: &[&str]) -> Output {
    Command::new(binary("agent"))
        .args(args)
        .env_remove("AGENT_CONFIG")
        .output()
        .expect("run agent")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn check_accepts_a_valid_config_and_summarizes_it() {
    let config = testdata("agent-resources.yaml");
    let output = agent(&["check", "--config", config.to_str().unwrap()]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("valid"), "{said}");
    assert!(said.contains("1 MCP server(s)"), "{said}");
    assert!(said.contains("store: JSON files"), "{said}");
}

#[test]
fn check_refuses_a_bad_config_naming_the_file_and_the_field() {
    let (_dir, config) = config_with("agent-resources.yaml", "max_tool_steps: 0");
    let output = agent(&["check", "--config", config.to_str().unwrap()]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("agent.yaml"), "{said}");
    assert!(said.contains("max_tool_steps"), "{said}");
    assert!(!said.contains("valid."), "{said}");
}

#[test]
fn a_bad_web_chat_url_stops_the_start() {
    let config = testdata("agent-resources.yaml");
    let output = agent(&[
        "--config",
        config.to_str().unwrap(),
        "--port",
        "0",
        "--web-chat-url",
        "javascript:alert(1)",
    ]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("--web-chat-url"), "{said}");
    assert!(said.contains("http(s) URL"), "{said}");
}

/// (`--web-chat-url` sets the same field; the packaging test's stack
/// passes it to agent A and checks the link.)
#[tokio::test]
async fn the_index_page_links_the_configured_web_chat() {
    let (_dir, config) = config_with(
        "agent-resources.yaml",
        "web_chat_url: http://127.0.0.1:3999/",
    );
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let page = reqwest::get(format!("{}/", agent.url))
        .await
        .expect("GET /")
        .text()
        .await
        .expect("body");
    assert!(
        page.contains(r#"<a href="http://127.0.0.1:3999/">"#),
        "{page}"
    );
}

#[test]
fn version_names_the_binary() {
    for name in ["agent", "web", "mcp-resources", "mcp-filesystem"] {
        let output = Command::new(binary(name))
            .arg("--version")
            .output()
            .expect("run --version");
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(
            said.starts_with(&format!("{name} ")),
            "{name} --version said {said:?}"
        );
    }
}
