//! MCP elicitation (issue 21), against the real agent and a real stdio
//! MCP server written for the test (`mcp-asker`): a server's question
//! during a call becomes a pending question (`GET /questions`), is
//! answered over REST (form mode checked against its schema, URL mode
//! answered "done", decline and cancel), and the call goes on with the
//! answer while the turn that made it is still running; the call's own
//! timeout does not run while the question waits. A question during an
//! approved call is answered by an approver; one nobody answers in time
//! is canceled and the call recorded as interrupted.

use std::time::Duration;

use asg_tests::{Agent, AgentOptions, assert_error, config_with, poll};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

async fn agent(extra: &str, env: &[(&str, &str)]) -> (tempfile::TempDir, Agent) {
    let (dir, config) = config_with("agent-elicit.yaml", extra);
    let agent = Agent::start(&config, AgentOptions::with_env(env)).await;
    (dir, agent)
}

/// Starts a turn in the background (it waits for the answer), as `key`.
fn start_turn(agent: &Agent, message: &str, key: Option<&str>) -> JoinHandle<(u16, Value)> {
    let (url, body) = (agent.url.clone(), json!({"message": message}));
    let key = key.map(str::to_string);
    tokio::spawn(async move {
        let mut request = reqwest::Client::new()
            .post(format!("{url}/conversations"))
            .json(&body);
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        let response = request.send().await.expect("the turn's request");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    })
}

/// The one question waiting, as `headers` see it.
async fn asked(agent: &Agent, headers: &[(&str, &str)]) -> Value {
    poll("a question waits", Duration::from_secs(15), || async {
        let (_, listed) = agent.get_with("/questions", headers).await;
        listed["questions"].as_array()?.first().cloned()
    })
    .await
}

async fn answer(agent: &Agent, uuid: &str, body: Value, headers: &[(&str, &str)]) -> (u16, Value) {
    agent
        .post_with(&format!("/questions/{uuid}"), body.to_string(), headers)
        .await
}

fn message(got: &(u16, Value), status: u16) -> String {
    assert_error(got, status);
    got.1["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn finished(turn: JoinHandle<(u16, Value)>) -> String {
    let (status, body) = tokio::time::timeout(Duration::from_secs(20), turn)
        .await
        .expect("the turn ends")
        .expect("the turn's task");
    assert_eq!(status, 201, "{body}");
    body["result"]["response"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_question_mid_call_is_answered_and_the_call_goes_on() {
    let (_dir, agent) = agent("", &[]).await;
    let turn = start_turn(&agent, "configure it", None);
    let question = asked(&agent, &[]).await;
    let uuid = question["uuid"].as_str().unwrap().to_string();
    assert_eq!(question["question"]["server"], "asker", "{question}");
    assert_eq!(question["question"]["text"], "Which region and size?");
    assert_eq!(
        question["question"]["schema"]["properties"]["region"]["enum"],
        json!(["eu", "us"])
    );
    // Longer than the server's 2 s call timeout: a waiting question
    // holds it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let wrong = answer(
        &agent,
        &uuid,
        json!({"answer": {"region": "eu", "size": 20}}),
        &[],
    )
    .await;
    assert!(message(&wrong, 422).contains("answer.size"), "{wrong:?}");
    let (status, answered) = answer(
        &agent,
        &uuid,
        json!({"answer": {"region": "eu", "size": 2}}),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(
        finished(turn).await,
        r#"Result: configure: accept {"region":"eu","size":2}"#
    );
    let again = answer(&agent, &uuid, json!({"answer": {"region": "us"}}), &[]).await;
    assert_error(&again, 404);
    let (_, listed) = agent.get("/conversations").await;
    let id = listed["conversations"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let decisions = agent.conversation(&id).await["decisions"].clone();
    assert_eq!(decisions[0]["approval_uuid"], uuid.as_str(), "{decisions}");
    assert_eq!(decisions[0]["question"], true);
    assert_eq!(
        decisions[0]["reply"],
        json!({"action": "accept", "answer": {"region": "eu", "size": 2}})
    );
    let audit = agent.audit_lines();
    assert!(
        audit
            .iter()
            .any(|l| l["approval"] == uuid.as_str() && l["decision"] == "answered"),
        "{audit:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decline_cancel_and_the_url_mode_reach_the_server() {
    let (_dir, agent) = agent("", &[]).await;
    for (body, told) in [
        (json!({"action": "decline"}), "Result: configure: decline"),
        (json!({"action": "cancel"}), "Result: configure: cancel"),
    ] {
        let turn = start_turn(&agent, "configure", None);
        let uuid = asked(&agent, &[]).await["uuid"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(answer(&agent, &uuid, body, &[]).await.0, 200);
        assert_eq!(finished(turn).await, told);
    }

    let turn = start_turn(&agent, "consent please", None);
    let question = asked(&agent, &[]).await;
    assert_eq!(
        question["question"]["url"],
        "https://auth.example.test/consent?state=abc"
    );
    let uuid = question["uuid"].as_str().unwrap().to_string();
    let wrong = answer(&agent, &uuid, json!({"answer": "yes"}), &[]).await;
    assert!(message(&wrong, 422).contains("\"done\""), "{wrong:?}");
    assert_eq!(
        answer(&agent, &uuid, json!({"answer": "done"}), &[])
            .await
            .0,
        200
    );
    assert_eq!(finished(turn).await, "Result: consent: accept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_during_an_approved_call_is_answered_by_an_approver() {
    let keys = "auth:\n  api_keys:\n    - { name: alice, key_env: ALICE_KEY }\n    \
                - { name: bob, key_env: BOB_KEY }\n    \
                - { name: ops, key_env: OPS_KEY, roles: [approver] }\n";
    let env = [
        ("ALICE_KEY", "alice-key-0123456789"),
        ("BOB_KEY", "bob-key-0123456789"),
        ("OPS_KEY", "ops-key-0123456789"),
    ];
    let (_dir, agent) = agent(keys, &env).await;
    let (alice, bob, ops) = (
        [("x-api-key", "alice-key-0123456789")],
        [("x-api-key", "bob-key-0123456789")],
        [("x-api-key", "ops-key-0123456789")],
    );
    let (status, waiting) = agent
        .post_with(
            "/conversations",
            json!({"message": "purge"}).to_string(),
            &alice,
        )
        .await;
    assert_eq!(status, 201, "{waiting}");
    let approval = waiting["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let url = agent.url.clone();
    let decision = tokio::spawn(async move {
        let response = reqwest::Client::new()
            .post(format!("{url}/approvals/{approval}"))
            .header("x-api-key", "ops-key-0123456789")
            .json(&json!({"approved": true}))
            .send()
            .await
            .expect("the decision");
        let status = response.status().as_u16();
        (
            status,
            response.json::<Value>().await.unwrap_or(Value::Null),
        )
    });
    let question = asked(&agent, &ops).await;
    assert_eq!(question["question"]["approvers_answer"], true, "{question}");
    let uuid = question["uuid"].as_str().unwrap().to_string();
    let body = json!({"answer": {"confirm": "cache"}});
    assert_error(&answer(&agent, &uuid, body.clone(), &bob).await, 404);
    let owner = answer(&agent, &uuid, body.clone(), &alice).await;
    assert!(message(&owner, 403).contains("approver role"), "{owner:?}");
    assert_eq!(answer(&agent, &uuid, body, &ops).await.0, 200);
    let (status, decided) = tokio::time::timeout(Duration::from_secs(20), decision)
        .await
        .expect("the decision ends")
        .expect("its task");
    assert_eq!(status, 200, "{decided}");
    assert_eq!(
        decided["result"]["response"],
        r#"Result: purge: accept {"confirm":"cache"}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nobody_answers_is_canceled_and_the_call_interrupted() {
    let (_dir, agent) = agent("questions:\n  elicitation_timeout: 2s\n", &[]).await;
    let turn = start_turn(&agent, "configure", None);
    let uuid = asked(&agent, &[]).await["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let told = finished(turn).await;
    assert!(
        told.starts_with(
            "Failed: Interrupted: the tool server asked a person and nobody answered within 2s"
        ),
        "{told}"
    );
    let (_, listed) = agent.get("/questions").await;
    assert_eq!(listed["questions"], json!([]), "{listed}");
    assert_error(
        &answer(&agent, &uuid, json!({"answer": {"region": "eu"}}), &[]).await,
        404,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_while_a_question_waits_records_the_call_as_interrupted() {
    let (dir, config) = config_with("agent-elicit.yaml", "");
    let options = AgentOptions {
        data_dir: Some(dir.path().join("data")),
        ..AgentOptions::default()
    };
    let mut first = Agent::start(&config, options.clone()).await;
    let turn = start_turn(&first, "configure", None);
    let uuid = asked(&first, &[]).await["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    first.kill();
    let _ = turn.await;
    let second = Agent::start(&config, options).await;
    let (_, listed) = second.get("/conversations").await;
    let id = listed["conversations"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let conversation = poll("the turn is settled", Duration::from_secs(15), || async {
        let conversation = second.conversation(&id).await;
        let last = conversation["messages"].as_array()?.last()?.clone();
        last["content"]
            .as_str()?
            .contains("Interrupted")
            .then_some(conversation)
    })
    .await;
    assert_eq!(conversation["status"], "active", "{conversation}");
    assert_error(
        &answer(&second, &uuid, json!({"answer": {"region": "eu"}}), &[]).await,
        404,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_server_that_dies_while_its_question_waits_interrupts_the_call() {
    let (dir, config) = config_with("agent-elicit.yaml", "");
    let data = dir.path().join("data");
    let options = AgentOptions {
        data_dir: Some(data.clone()),
        ..AgentOptions::default()
    };
    let agent = Agent::start(&config, options).await;
    let turn = start_turn(&agent, "configure", None);
    let uuid = asked(&agent, &[]).await["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let servers = asg_tests::children_named(&data, "mcp-asker");
    assert_eq!(servers.len(), 1, "one mcp-asker: {servers:?}");
    std::process::Command::new("kill")
        .args(["-9", &servers[0].to_string()])
        .status()
        .expect("kill the tool server");
    let told = finished(turn).await;
    assert!(
        told.starts_with(
            "Failed: Interrupted: the call ended while the tool server's question waited"
        ),
        "{told}"
    );
    let (_, listed) = agent.get("/questions").await;
    assert_eq!(listed["questions"], json!([]), "{listed}");
    assert_error(
        &answer(&agent, &uuid, json!({"answer": {"region": "eu"}}), &[]).await,
        404,
    );
}
