//! Agent-tree scenarios (TS-016..TS-019, TS-022..TS-025): sequential data
//! flow, pause/resume across restarts, nested pauses, rejection, parallel
//! branches, loops with exit_loop and max_iterations.

use asg_tests::{Agent, AgentOptions, approval_uuid, conversation_id, node_order, testdata, trace};
use serde_json::json;

async fn resource_count(agent: &Agent) -> usize {
    // Ask the pipeline itself: "list" runs resources_list in the executor.
    let (_, answer) = agent.say_new("list all resources").await;
    let text = serde_json::to_string(&answer["conversation"]["messages"]).unwrap();
    let marker = "\\\"count\\\": ";
    let at = text.rfind(marker).expect("no list result in the trace");
    text[at + marker.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn ts016_ts022_sequential_passes_data_through_session_state() {
    let agent = Agent::start(&testdata("e2e-sequential.yaml"), AgentOptions::default()).await;
    let (status, answer) = agent.say_new("list all resources").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], false);
    assert_eq!(answer["conversation"]["status"], "active");
    let conversation = &answer["conversation"];
    assert_eq!(
        node_order(conversation),
        ["analyzer", "executor", "reporter"]
    );
    let trace = trace(conversation);
    // The executor received the analyzer's output through {analysis}.
    assert!(trace.iter().any(|(node, role, content)| node == "executor"
        && role == "system"
        && content == "Carry out this plan with the tools. Plan: PLAN list"));
    // The executor called the tool; the reporter saw its output.
    assert!(
        trace
            .iter()
            .any(|(node, role, _)| node == "executor" && role == "tool")
    );
    let response = answer["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with("REPORT: EXECUTED resources_list"),
        "{response}"
    );
    assert!(conversation.get("pipeline_state").is_none());
}

#[tokio::test]
async fn ts019_ts023_pipeline_pauses_survives_restart_and_resumes() {
    let data = tempfile::tempdir().unwrap();
    let options = AgentOptions {
        data_dir: Some(data.path().to_path_buf()),
        ..Default::default()
    };
    let mut agent = Agent::start(&testdata("e2e-sequential.yaml"), options.clone()).await;
    let (_, answer) = agent.say_new("add resource seq-test with value 55").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    assert_eq!(answer["result"]["approval"]["node"], "executor");
    let state = &answer["conversation"]["pipeline_state"];
    assert_eq!(state["paused_node_path"], json!([1]));
    assert_eq!(state["paused_node_output_key"], "execution");
    assert_eq!(
        state["session_state"]["analysis"],
        "PLAN add name=seq-test value=55"
    );
    assert_eq!(state["user_message"], "add resource seq-test with value 55");
    // The reporter has not run yet.
    assert!(!node_order(&answer["conversation"]).contains(&"reporter".to_string()));
    let uuid = approval_uuid(&answer);
    let id = conversation_id(&answer);

    agent.stop();
    let agent = Agent::start(&testdata("e2e-sequential.yaml"), options).await;
    let (status, approved) = agent
        .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["conversation"]["status"], "active");
    assert!(approved["conversation"].get("pipeline_state").is_none());
    let response = approved["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with("REPORT: EXECUTED resources_add"),
        "{response}"
    );
    assert!(response.contains("\"seq-test\""), "{response}");
    let (_, got) = agent.get(&format!("/conversations/{id}")).await;
    assert_eq!(
        node_order(&got["conversation"]),
        ["analyzer", "executor", "reporter"]
    );
    // The analyzer ran once: resuming did not start the pipeline over.
    let analyzer_answers = trace(&got["conversation"])
        .into_iter()
        .filter(|(node, role, _)| node == "analyzer" && role == "assistant")
        .count();
    assert_eq!(analyzer_answers, 1);
    assert_eq!(resource_count(&agent).await, 1);
}

#[tokio::test]
async fn rejection_cancels_the_pipeline() {
    let agent = Agent::start(&testdata("e2e-sequential.yaml"), AgentOptions::default()).await;
    let (_, answer) = agent.say_new("add resource nope with value 1").await;
    let uuid = approval_uuid(&answer);
    let (status, rejected) = agent
        .post(
            &format!("/approvals/{uuid}"),
            json!({"approved": false, "reason": "not today"}),
        )
        .await;
    assert_eq!(status, 200, "{rejected}");
    let response = rejected["result"]["response"].as_str().unwrap();
    assert!(response.contains("Pipeline cancelled"), "{response}");
    assert_eq!(rejected["conversation"]["status"], "active");
    assert!(rejected["conversation"].get("pipeline_state").is_none());
    let trace = trace(&rejected["conversation"]);
    assert!(
        trace
            .iter()
            .any(|(_, role, content)| role == "tool" && content.contains("not today"))
    );
    assert!(
        !trace.iter().any(|(node, _, _)| node == "reporter"),
        "remaining steps ran after a rejection"
    );
    assert_eq!(resource_count(&agent).await, 0);
}

#[tokio::test]
async fn nested_pause_resumes_inside_the_inner_sequence() {
    let agent = Agent::start(&testdata("e2e-nested.yaml"), AgentOptions::default()).await;
    let (_, answer) = agent.say_new("add resource deep with value 7").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    assert_eq!(
        answer["conversation"]["pipeline_state"]["paused_node_path"],
        json!([1, 0])
    );
    let uuid = approval_uuid(&answer);
    let (status, approved) = agent
        .post(&format!("/approvals/{uuid}"), json!({"action": "approve"}))
        .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(
        node_order(&approved["conversation"]),
        ["analyzer", "executor", "verifier", "reporter"]
    );
    let trace = trace(&approved["conversation"]);
    assert!(
        trace
            .iter()
            .any(|(node, _, content)| node == "verifier" && content == "VERIFIED: 1 resources now")
    );
    assert!(
        approved["result"]["response"]
            .as_str()
            .unwrap()
            .starts_with("REPORT: EXECUTED resources_add")
    );
}

#[tokio::test]
async fn ts017_ts024_parallel_branches_feed_the_summarizer() {
    let agent = Agent::start(&testdata("e2e-parallel.yaml"), AgentOptions::default()).await;
    let (status, answer) = agent.say_new("give me an overview of all resources").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], false);
    assert_eq!(answer["conversation"]["status"], "active");
    // Branch messages are recorded in configuration order.
    assert_eq!(
        node_order(&answer["conversation"]),
        ["list-all", "count-analysis", "summarizer"]
    );
    let response = answer["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with("SUMMARY: COUNT 0; LISTING"),
        "{response}"
    );
}

#[tokio::test]
async fn parallel_destructive_calls_run_unapproved_and_are_logged() {
    let agent = Agent::start(
        &testdata("e2e-parallel-destructive.yaml"),
        AgentOptions::default(),
    )
    .await;
    let (status, answer) = agent.say_new("add both").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], false);
    let response = answer["result"]["response"].as_str().unwrap();
    assert!(
        response.contains("[adder-a]\nADDED") && response.contains("[adder-b]\nADDED"),
        "{response}"
    );
    let log = agent.log();
    for node in ["adder-a", "adder-b"] {
        assert!(
            log.lines().any(|l| l.contains("WITHOUT approval")
                && l.contains(node)
                && l.contains("fan-out")),
            "no unapproved-run log line for {node}:\n{log}"
        );
    }
}

#[tokio::test]
async fn parallel_without_allow_destructive_refuses_destructive_calls() {
    let agent = Agent::start(
        &testdata("e2e-parallel-guarded.yaml"),
        AgentOptions::default(),
    )
    .await;
    let (status, answer) = agent.say_new("add both").await;
    assert_eq!(status, 201, "{answer}");
    let response = answer["result"]["response"].as_str().unwrap();
    assert!(response.contains("NOT ADDED: Refused"), "{response}");
    assert!(!response.contains("\"created\""), "{response}");
}

#[tokio::test]
async fn ts018_ts025_loop_adds_until_the_target_then_exits() {
    let agent = Agent::start(&testdata("e2e-loop.yaml"), AgentOptions::default()).await;
    let (status, answer) = agent.say_new("ensure we have at least 3 resources").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], false);
    assert_eq!(answer["conversation"]["status"], "active");
    assert_eq!(
        answer["result"]["response"],
        "ENOUGH: 3 resources (target 3)"
    );
    let trace = trace(&answer["conversation"]);
    let adds = trace
        .iter()
        .filter(|(_, role, content)| role == "tool" && content.contains("\"created\""))
        .count();
    assert_eq!(adds, 3);
    let exits = answer["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["tool_call"]["name"] == "exit_loop")
        .count();
    assert_eq!(exits, 1);
    // A second request finds the target met at once: no more adds.
    let (_, again) = agent.say_new("ensure we have at least 2 resources").await;
    assert_eq!(
        again["result"]["response"],
        "ENOUGH: 3 resources (target 2)"
    );
}

#[tokio::test]
async fn loop_never_exceeds_max_iterations() {
    let agent = Agent::start(&testdata("e2e-loop.yaml"), AgentOptions::default()).await;
    let (_, answer) = agent.say_new("ensure we have at least 50 resources").await;
    let adds = trace(&answer["conversation"])
        .iter()
        .filter(|(_, role, content)| role == "tool" && content.contains("\"created\""))
        .count();
    assert_eq!(adds, 5, "max_iterations is 5");
    let (_, again) = agent.say_new("ensure we have at least 1 resources").await;
    assert_eq!(
        again["result"]["response"],
        "ENOUGH: 5 resources (target 1)"
    );
}

#[tokio::test]
async fn loop_with_approvals_pauses_each_iteration_and_resumes_after_restart() {
    let data = tempfile::tempdir().unwrap();
    let options = AgentOptions {
        data_dir: Some(data.path().to_path_buf()),
        ..Default::default()
    };
    let config = testdata("e2e-loop-approval.yaml");
    let mut agent = Agent::start(&config, options.clone()).await;
    let (_, answer) = agent.say_new("ensure we have at least 2 resources").await;
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    assert_eq!(
        answer["conversation"]["pipeline_state"]["loop_iterations"],
        json!({"ensure": 0})
    );
    let first = approval_uuid(&answer);
    let (_, second) = agent
        .post(&format!("/approvals/{first}"), json!({"answer": "yes"}))
        .await;
    assert_eq!(second["result"]["waiting_approval"], true, "{second}");
    assert_eq!(
        second["conversation"]["pipeline_state"]["loop_iterations"],
        json!({"ensure": 1})
    );
    assert_eq!(
        second["result"]["approval"]["tool_args"],
        json!({"name": "auto-1", "value": 1})
    );
    let second_uuid = approval_uuid(&second);

    agent.stop();
    let agent = Agent::start(&config, options).await;
    let (status, done) = agent
        .post(
            &format!("/approvals/{second_uuid}"),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["result"]["waiting_approval"], false, "{done}");
    assert_eq!(done["result"]["response"], "ENOUGH: 2 resources (target 2)");
}

#[tokio::test]
async fn invalid_trees_stop_the_agent_at_startup_with_the_node_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "agent: { type: sequential, name: s, agents: [{ type: llm, name: a, prompt: \"use {nothing}\" }] }",
            "node \"a\": placeholder {nothing} is never set",
        ),
        (
            "agent: { type: sequential, name: s, agents: [] }",
            "needs at least one child",
        ),
        ("agent: { type: tree, name: s }", "unknown variant `tree`"),
        (
            "agent: { type: sequential, name: s, agents: [{ type: llm, name: s, prompt: p }] }",
            "duplicate node name",
        ),
        (
            "agent: { type: llm, name: a, prompt: p, tools: [no_such_tool] }\nmcp_servers: [{ name: resources, command: mcp-resources }]",
            "node \"a\": tool \"no_such_tool\" is not offered",
        ),
    ];
    for (i, (tree, needle)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad-{i}.yaml"));
        std::fs::write(
            &path,
            format!(
                "llm: {{ model: \"scripted:{}\" }}\n{tree}\n",
                testdata("scripted/pipelines.yaml").display()
            ),
        )
        .unwrap();
        let output = std::process::Command::new(asg_tests::binary("agent"))
            .arg("--config")
            .arg(&path)
            .args(["--port", "0", "--data-dir"])
            .arg(dir.path().join("data"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{tree} was accepted");
        assert!(
            stderr.contains(needle),
            "{tree}: stderr lacks {needle:?}:\n{stderr}"
        );
    }
}

#[tokio::test]
async fn the_documented_examples_run_offline() {
    let root = asg_tests::workspace_root().join("config/examples");
    for (file, message, expected) in [
        ("llm.yaml", "list resources", "There are 0 resources"),
        (
            "sequential.yaml",
            "list all resources",
            "REPORT: EXECUTED resources_list",
        ),
        ("parallel.yaml", "overview please", "SUMMARY: COUNT 0"),
        (
            "loop.yaml",
            "ensure we have at least 0 resources",
            "ENOUGH: 0 resources",
        ),
    ] {
        let agent = Agent::start(&root.join(file), AgentOptions::default()).await;
        let (status, answer) = agent.say_new(message).await;
        assert_eq!(status, 201, "{file}: {answer}");
        let response = answer["result"]["response"].as_str().unwrap_or_default();
        assert!(response.starts_with(expected), "{file}: {response}");
    }
}
