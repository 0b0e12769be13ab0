//! Conversations on the offline model: TS-002, TS-003, TS-006, TS-015,
//! multi-turn, several calls in one step, the tool-step limit, and the
//! request log with its session id.

use asg_tests::{
    Agent, AgentOptions, approval_uuid, conversation_id, response_text, testdata, tool_calls,
    tool_messages,
};
use serde_json::{Value, json};

async fn start() -> Agent {
    Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await
}

fn roles(conversation: &Value) -> Vec<String> {
    conversation["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

/// The last tool call requested in a turn answer.
fn last_call(answer: &Value) -> Value {
    tool_calls(&answer["conversation"])
        .pop()
        .unwrap_or_else(|| panic!("no tool call in {answer}"))
}

#[tokio::test]
async fn ts002_create_without_and_with_a_message() {
    let agent = start().await;

    // No body at all.
    let (status, empty) = agent.post_with("/conversations", String::new(), &[]).await;
    assert_eq!(status, 201, "{empty}");
    let conversation = &empty["conversation"];
    assert_eq!(conversation["status"], "active");
    assert_eq!(roles(conversation), ["system"]);
    assert_eq!(
        conversation["messages"][0]["content"],
        "You are a resource manager."
    );
    assert!(empty["result"].is_null(), "no turn ran: {empty}");
    // It is stored and can be read back.
    let id = conversation_id(&empty);
    assert_eq!(
        agent.conversation(&id).await["messages"],
        conversation["messages"]
    );

    // An empty JSON object is the same.
    let (status, empty_object) = agent.post("/conversations", json!({})).await;
    assert_eq!(status, 201, "{empty_object}");
    assert_eq!(roles(&empty_object["conversation"]), ["system"]);

    // With a first message: prompt, user message, tool call, tool result, answer.
    let (status, answer) = agent.say_new("list resources").await;
    assert_eq!(status, 201, "{answer}");
    let conversation = &answer["conversation"];
    assert_eq!(conversation["status"], "active");
    assert_eq!(
        roles(conversation),
        ["system", "user", "assistant", "tool", "assistant"]
    );
    let messages = conversation["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], "You are a resource manager.");
    assert_eq!(messages[1]["content"], "list resources");
    assert_eq!(messages[2]["tool_call"]["name"], "resources_list");
    assert_eq!(
        messages[3]["tool_result"]["call_id"],
        messages[2]["tool_call"]["id"]
    );
    assert!(
        messages[3]["content"]
            .as_str()
            .unwrap()
            .contains("\"count\": 0"),
        "{answer}"
    );
    assert_eq!(answer["result"]["waiting_approval"], false);

    // Three conversations exist now.
    let (_, list) = agent.get("/conversations").await;
    assert_eq!(list["summary"]["total"], 3, "{list}");
}

#[tokio::test]
async fn ts003_list_runs_at_once_in_a_simple_agent() {
    // TS-015: this config has no `agent:` tree; it runs as one LLM agent.
    let config = std::fs::read_to_string(testdata("agent-resources.yaml")).unwrap();
    assert!(
        !config.lines().any(|l| l.starts_with("agent:")),
        "the config must be a simple one"
    );
    let agent = start().await;
    let (status, created) = agent.post("/conversations", json!({})).await;
    assert_eq!(status, 201);
    let id = conversation_id(&created);
    let (status, answer) = agent.say(&id, "list all resources").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], false);
    assert!(answer["result"]["approval"].is_null(), "{answer}");
    assert_eq!(answer["conversation"]["status"], "active");
    let text = response_text(&answer);
    assert!(
        text.contains("There are 0 resources") && text.contains("\"resources\": []"),
        "the response carries the tool result: {text}"
    );
    // Recorded: the call (not gated) and its result, linked by call id.
    let stored = agent.conversation(&id).await;
    let calls = tool_calls(&stored);
    assert_eq!(calls.len(), 1, "{stored}");
    assert_eq!(calls[0]["name"], "resources_list");
    assert_eq!(calls[0]["needs_approval"], false);
    let results = tool_messages(&stored);
    assert_eq!(results.len(), 1, "{stored}");
    assert_eq!(results[0]["tool_result"]["call_id"], calls[0]["id"]);
    assert_eq!(results[0]["tool_result"]["is_error"], false);
    assert_eq!(stored["status"], "active");
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(approvals["approvals"], json!([]));
}

#[tokio::test]
async fn ts006_phrasings_pick_the_right_tool_and_arguments() {
    let agent = start().await;
    let (_, created) = agent.post("/conversations", json!({})).await;
    let id = conversation_id(&created);

    for phrase in ["list", "show me all resources"] {
        let (status, answer) = agent.say(&id, phrase).await;
        assert_eq!(status, 200, "{phrase}: {answer}");
        let call = last_call(&answer);
        assert_eq!(call["name"], "resources_list", "{phrase}: {answer}");
        assert_eq!(answer["result"]["waiting_approval"], false, "{phrase}");
    }

    let gated = [
        (
            "create a server test-1 with value 10",
            "resources_add",
            json!({"name": "test-1", "value": 10}),
            vec!["test-1"],
        ),
        (
            "add resource test-2 value 20",
            "resources_add",
            json!({"name": "test-2", "value": 20}),
            vec!["test-1", "test-2"],
        ),
        (
            "remove test-1",
            "resources_remove",
            json!({"pattern": "test-1"}),
            vec!["test-2"],
        ),
        (
            "delete resource test-2",
            "resources_remove",
            json!({"pattern": "test-2"}),
            vec![],
        ),
    ];
    for (phrase, tool, args, names_after) in gated {
        let (status, answer) = agent.say(&id, phrase).await;
        assert_eq!(status, 200, "{phrase}: {answer}");
        assert_eq!(
            answer["result"]["waiting_approval"], true,
            "{phrase}: {answer}"
        );
        let approval = &answer["result"]["approval"];
        assert_eq!(approval["tool_name"], tool, "{phrase}");
        assert_eq!(approval["tool_args"], args, "{phrase}");
        let call = last_call(&answer);
        assert_eq!(call["name"], tool, "{phrase}");
        assert_eq!(call["arguments"], args, "{phrase}");
        assert_eq!(call["needs_approval"], true, "{phrase}");
        let (status, approved) = agent
            .decide(&approval_uuid(&answer), json!({"approved": true}))
            .await;
        assert_eq!(status, 200, "{phrase}: {approved}");
        let last = tool_messages(&approved["conversation"]).pop().unwrap();
        assert_eq!(last["tool_result"]["is_error"], false, "{phrase}: {last}");
        assert_eq!(agent.resource_names().await, names_after, "after {phrase}");
    }
}

#[tokio::test]
async fn multi_turn_conversation_keeps_one_history() {
    let agent = start().await;
    let (status, first) = agent.say_new("list resources").await;
    assert_eq!(status, 201);
    let id = conversation_id(&first);
    assert!(response_text(&first).contains("There are 0 resources"));

    let (status, second) = agent.say(&id, "add resource alpha with value 1").await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(conversation_id(&second), id);
    let (status, _) = agent
        .decide(&approval_uuid(&second), json!({"answer": "yes"}))
        .await;
    assert_eq!(status, 200);

    let (status, third) = agent.say(&id, "how many resources are there?").await;
    assert_eq!(status, 200, "{third}");
    let text = response_text(&third);
    assert!(
        text.contains("There is 1 resource:") && text.contains("\"alpha\""),
        "{text}"
    );

    let stored = agent.conversation(&id).await;
    let users: Vec<&str> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        users,
        [
            "list resources",
            "add resource alpha with value 1",
            "how many resources are there?"
        ]
    );
    let names: Vec<Value> = tool_calls(&stored)
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!("resources_list"),
            json!("resources_add"),
            json!("resources_list")
        ]
    );
    assert_eq!(tool_messages(&stored).len(), 3);
    assert_eq!(stored["status"], "active");
    let (_, list) = agent.get("/conversations").await;
    assert_eq!(list["summary"]["total"], 1, "one conversation: {list}");
    assert_eq!(
        list["conversations"][0]["message_count"],
        stored["messages"].as_array().unwrap().len()
    );
}

#[tokio::test]
async fn two_calls_in_one_step_run_the_safe_one_and_gate_the_other() {
    let agent = start().await;
    let (status, answer) = agent.say_new("list and add thing-1 with value 5").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true);
    assert_eq!(answer["result"]["approval"]["tool_name"], "resources_add");
    assert_eq!(
        answer["result"]["approval"]["tool_args"],
        json!({"name": "thing-1", "value": 5})
    );
    let conversation = &answer["conversation"];
    let calls = tool_calls(conversation);
    assert_eq!(calls.len(), 2, "{conversation}");
    assert_eq!(calls[0]["name"], "resources_list");
    assert_eq!(calls[1]["name"], "resources_add");
    // The list ran already; the add has no result yet.
    let results = tool_messages(conversation);
    assert_eq!(results.len(), 1, "{conversation}");
    assert_eq!(results[0]["tool_result"]["name"], "resources_list");
    assert_eq!(results[0]["tool_result"]["is_error"], false);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("\"count\": 0")
    );
    assert!(agent.resource_names().await.is_empty(), "nothing added yet");

    let (status, approved) = agent
        .decide(&approval_uuid(&answer), json!({"approved": true}))
        .await;
    assert_eq!(status, 200, "{approved}");
    assert!(response_text(&approved).contains("thing-1"), "{approved}");
    assert_eq!(agent.resource_names().await, ["thing-1"]);
}

#[tokio::test]
async fn tool_step_limit_stops_a_looping_turn() {
    let agent = start().await;
    let (status, answer) = agent.say_new("keep listing forever").await;
    assert_eq!(status, 201, "{answer}");
    let text = response_text(&answer);
    assert!(
        text.contains("Stopped after 10 tool steps"),
        "the answer says why it stopped: {text}"
    );
    assert_eq!(answer["conversation"]["status"], "active");
    let stored = agent.conversation(&conversation_id(&answer)).await;
    assert_eq!(tool_messages(&stored).len(), 10, "{stored}");
    assert_eq!(tool_calls(&stored).len(), 10);
    // The conversation still works afterwards.
    let (status, next) = agent.say(&conversation_id(&answer), "list").await;
    assert_eq!(status, 200, "{next}");
    assert!(response_text(&next).contains("There are 0 resources"));
}

#[tokio::test]
async fn every_request_is_logged_with_its_session_id() {
    let agent = start().await;
    let (status, answer) = agent
        .post_with(
            "/conversations",
            json!({"message": "list resources"}).to_string(),
            &[("x-session-id", "abcd1234")],
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let id = conversation_id(&answer);
    assert_eq!(answer["conversation"]["session_id"], "abcd1234");
    // Stored too.
    assert_eq!(agent.conversation(&id).await["session_id"], "abcd1234");

    // The line of the create request.
    let log = agent.wait_log("sid=abcd1234").await;
    let line = log
        .lines()
        .find(|l| l.contains("POST") && l.contains("status=201"))
        .unwrap_or_else(|| panic!("no log line for the create request:\n{log}"));
    for part in [
        "method=POST",
        "/conversations",
        "status=201",
        "latency_ms=",
        id.as_str(),
        "sid=abcd1234",
    ] {
        assert!(line.contains(part), "{part:?} missing from {line:?}");
    }

    // A later request about the conversation, without the header, is
    // logged with the conversation's session id; an unrelated one gets a
    // fresh 8-hex-char id.
    let (status, _) = agent.say(&id, "list").await;
    assert_eq!(status, 200);
    let (status, _) = agent.get("/tools").await;
    assert_eq!(status, 200);
    let log = agent.wait_log("/tools").await;
    let send_line = log
        .lines()
        .find(|l| l.contains(&format!("/conversations/{id}/messages")))
        .unwrap_or_else(|| panic!("no log line for the send request:\n{log}"));
    assert!(send_line.contains("status=200"), "{send_line}");
    assert!(send_line.contains("sid=abcd1234"), "{send_line}");
    let tools_line = log
        .lines()
        .find(|l| l.contains("/tools"))
        .unwrap_or_else(|| panic!("no log line for GET /tools:\n{log}"));
    let sid = tools_line
        .split("sid=")
        .nth(1)
        .unwrap_or_else(|| panic!("no sid= in {tools_line:?}"))
        .trim_matches(|c: char| c == '"' || c.is_whitespace());
    assert!(
        sid.len() == 8 && sid.chars().all(|c| c.is_ascii_hexdigit()),
        "fresh session id {sid:?} in {tools_line:?}"
    );
    assert!(tools_line.contains("method=GET") && tools_line.contains("status=200"));
}
