//! Questions for a human (issue 21), against the real binary: the
//! scripted model asks with the built-in `ask_human` tool, the turn
//! waits with a pending question, and the answer (REST or A2A) becomes
//! the tool's result, once; a wrong answer is refused and the question
//! stays; only the owner (or the configured answerers) may answer; a
//! question expires and survives a kill -9.

use std::time::Duration;

use asg_tests::{Agent, AgentOptions, a2a, assert_error, config_with, conversation_id, poll};
use serde_json::{Value, json};

async fn asker(extra: &str) -> (tempfile::TempDir, Agent) {
    let (dir, config) = config_with("agent-questions.yaml", extra);
    let agent = Agent::start(&config, AgentOptions::default()).await;
    (dir, agent)
}

fn question_uuid(answer: &Value) -> String {
    answer["result"]["question"]["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("no pending question in {answer}"))
        .to_string()
}

/// The message of an error answer with `status`.
fn refused(got: &(u16, Value), status: u16) -> String {
    assert_error(got, status);
    got.1["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn answer(agent: &Agent, uuid: &str, body: Value) -> (u16, Value) {
    agent.post(&format!("/questions/{uuid}"), body).await
}

#[tokio::test]
async fn the_model_asks_and_goes_on_with_the_answer_once() {
    let (_dir, agent) = asker("").await;
    let (status, asked) = agent.say_new("deploy the app").await;
    assert_eq!(status, 201, "{asked}");
    let uuid = question_uuid(&asked);
    let result = &asked["result"];
    assert_eq!(result["waiting_approval"], true);
    assert!(
        result["approval"].is_null(),
        "a question is not an approval: {asked}"
    );
    assert_eq!(result["question"]["question"]["text"], "Which environment?");
    assert_eq!(
        result["question"]["question"]["choices"],
        json!(["staging", "prod"])
    );

    let (_, listed) = agent.get("/questions").await;
    assert_eq!(listed["questions"][0]["uuid"], uuid.as_str(), "{listed}");
    let (_, approvals) = agent.get("/approvals").await;
    assert_eq!(approvals["approvals"], json!([]), "{approvals}");

    let dev = answer(&agent, &uuid, json!({"answer": "dev"})).await;
    let message = refused(&dev, 422);
    assert!(
        message.contains("one of \"staging\", \"prod\""),
        "{message}"
    );
    let as_approval = agent.decide(&uuid, json!({"approved": true})).await;
    let message = refused(&as_approval, 422);
    assert!(message.contains("is a question"), "{message}");
    let (_, still) = agent.get("/questions").await;
    assert_eq!(still["questions"].as_array().map(Vec::len), Some(1));

    let (status, answered) = answer(&agent, &uuid, json!({"answer": "prod"})).await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["result"]["response"], "Going on with: prod");
    let conversation = &answered["conversation"];
    assert_eq!(conversation["status"], "active");
    assert_eq!(conversation["decisions"][0]["question"], true);
    assert_eq!(
        conversation["decisions"][0]["reply"],
        json!({"action": "accept", "answer": "prod"})
    );
    let again = answer(&agent, &uuid, json!({"answer": "staging"})).await;
    assert_error(&again, 409);
    let (_, none) = agent.get("/questions").await;
    assert_eq!(none["questions"], json!([]));

    let audit = agent.audit_lines();
    let line = audit
        .iter()
        .find(|l| l["approval"] == uuid.as_str() && l["decision"] == "answered")
        .unwrap_or_else(|| panic!("no audit line of the answer in {audit:?}"));
    assert_eq!(line["by"]["via"], "rest", "{line}");
}

#[tokio::test]
async fn a_form_answer_is_checked_against_the_schema() {
    let (_dir, agent) = asker("").await;
    let (_, asked) = agent.say_new("scale it").await;
    let uuid = question_uuid(&asked);
    let cases = [
        (
            json!({"answer": {"replicas": 0, "environment": "prod"}}),
            "answer.replicas",
        ),
        (
            json!({"answer": {"replicas": 2, "environment": "dev"}}),
            "answer.environment",
        ),
        (
            json!({"answer": {"replicas": 2}}),
            "\"environment\" is a required property",
        ),
        (json!({"answer": "two"}), "must be an object"),
        (json!({}), "must carry"),
        (json!({"action": "maybe"}), "decline"),
        (json!({"answer": "x", "action": "decline"}), "not both"),
    ];
    for (body, expected) in cases {
        let got = answer(&agent, &uuid, body.clone()).await;
        let message = refused(&got, 422);
        assert!(message.contains(expected), "{body}: {message}");
    }
    let (status, answered) = answer(
        &agent,
        &uuid,
        json!({"answer": {"replicas": 3, "environment": "staging", "confirm": true}}),
    )
    .await;
    assert_eq!(status, 200, "{answered}");
    let response = answered["result"]["response"].as_str().unwrap();
    let told: Value = serde_json::from_str(response.trim_start_matches("Going on with: "))
        .unwrap_or_else(|e| panic!("{response}: {e}"));
    assert_eq!(
        told,
        json!({"replicas": 3, "environment": "staging", "confirm": true})
    );
}

#[tokio::test]
async fn a_declined_question_and_a_malformed_one_are_told_to_the_model() {
    let (_dir, agent) = asker("").await;
    let (_, asked) = agent.say_new("name it").await;
    let uuid = question_uuid(&asked);
    let (status, declined) = answer(&agent, &uuid, json!({"action": "decline"})).await;
    assert_eq!(status, 200, "{declined}");
    assert_eq!(
        declined["result"]["response"],
        "Going on with: The human declined to answer."
    );

    let (status, broken) = agent.say_new("a broken question").await;
    assert_eq!(status, 201, "{broken}");
    assert!(broken["result"]["question"].is_null(), "{broken}");
    let text = broken["result"]["response"].as_str().unwrap();
    assert!(
        text.starts_with("I could not ask: Not asked: ask_human needs"),
        "{text}"
    );
}

#[tokio::test]
async fn only_the_owner_or_the_named_answerers_may_answer() {
    let keys = "auth:\n  api_keys:\n    - { name: alice, key_env: ALICE_KEY }\n    \
                - { name: bob, key_env: BOB_KEY }\n    \
                - { name: ops, key_env: OPS_KEY, roles: [approver] }\n";
    let env = [
        ("ALICE_KEY", "alice-key-0123456789"),
        ("BOB_KEY", "bob-key-0123456789"),
        ("OPS_KEY", "ops-key-0123456789"),
    ];
    let as_who = |key: &'static str| [("x-api-key", key)];
    let (_dir, config) = config_with("agent-questions.yaml", keys);
    let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
    let post_as = |key: &'static str, path: String, body: Value| {
        let agent = &agent;
        async move { agent.post_with(&path, body.to_string(), &as_who(key)).await }
    };
    let (_, asked) = post_as(
        "alice-key-0123456789",
        "/conversations".into(),
        json!({"message": "deploy"}),
    )
    .await;
    let uuid = question_uuid(&asked);
    let path = format!("/questions/{uuid}");
    let body = json!({"answer": "prod"});
    let bob = post_as("bob-key-0123456789", path.clone(), body.clone()).await;
    assert_error(&bob, 404);
    let ops = post_as("ops-key-0123456789", path.clone(), body.clone()).await;
    let message = refused(&ops, 403);
    assert!(
        message.contains("only the principal that started"),
        "{message}"
    );
    let (_, bobs) = agent
        .get_with("/questions", &as_who("bob-key-0123456789"))
        .await;
    assert_eq!(
        bobs["questions"],
        json!([]),
        "bob sees no one else's question"
    );
    let (status, answered) = post_as("alice-key-0123456789", path, body).await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(
        answered["conversation"]["decisions"][0]["decided_by"]["subject"],
        "key:alice"
    );

    // `questions.answerers` names who answers instead of the owner.
    drop(agent);
    let named = format!("{keys}questions:\n  enabled: true\n  answerers: [approver]\n");
    let (_dir2, config) = config_with("agent-questions.yaml", "");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("questions:\n  enabled: true\n", &named);
    std::fs::write(&config, text).unwrap();
    let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
    let (_, asked) = agent
        .post_with(
            "/conversations",
            json!({"message": "deploy"}).to_string(),
            &as_who("alice-key-0123456789"),
        )
        .await;
    let path = format!("/questions/{}", question_uuid(&asked));
    let owner = agent
        .post_with(
            &path,
            json!({"answer": "prod"}).to_string(),
            &as_who("alice-key-0123456789"),
        )
        .await;
    let message = refused(&owner, 403);
    assert!(message.contains("only approver may"), "{message}");
    let (status, answered) = agent
        .post_with(
            &path,
            json!({"answer": "prod"}).to_string(),
            &as_who("ops-key-0123456789"),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
}

#[tokio::test]
async fn an_unanswered_question_expires_and_the_model_is_told() {
    let (_dir, config) = config_with("agent-questions.yaml", "");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("enabled: true\n", "enabled: true\n  expires_after: 1s\n");
    std::fs::write(&config, text).unwrap();
    let agent = Agent::start(&config, AgentOptions::default()).await;
    let (_, asked) = agent.say_new("deploy").await;
    let id = conversation_id(&asked);
    let uuid = question_uuid(&asked);
    // The expiry records the tool's result (the conversation is active
    // again), then the model's reply follows: wait for that reply.
    let conversation = poll(
        "the model answers the expiry",
        Duration::from_secs(15),
        || async {
            let conversation = agent.conversation(&id).await;
            let replied = conversation["messages"]
                .as_array()
                .and_then(|messages| messages.last())
                .is_some_and(|last| last["role"] == "assistant");
            (conversation["status"] == "active" && replied).then_some(conversation)
        },
    )
    .await;
    let last = conversation["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .starts_with("Nobody answered: The question expired after 1s"),
        "{last}"
    );
    assert_eq!(
        conversation["decisions"][0]["decided_by"]["subject"],
        "system:expiry"
    );
    assert_error(&answer(&agent, &uuid, json!({"answer": "prod"})).await, 409);
}

#[tokio::test]
async fn a_question_survives_a_kill_and_is_answered_after_the_restart() {
    let (dir, config) = config_with("agent-questions.yaml", "");
    let data = dir.path().join("data");
    let options = AgentOptions {
        data_dir: Some(data.clone()),
        ..AgentOptions::default()
    };
    let mut first = Agent::start(&config, options.clone()).await;
    let (_, asked) = first.say_new("deploy").await;
    let uuid = question_uuid(&asked);
    first.kill();
    let second = Agent::start(&config, options).await;
    let (_, listed) = second.get("/questions").await;
    assert_eq!(listed["questions"][0]["uuid"], uuid.as_str(), "{listed}");
    let (status, answered) = answer(&second, &uuid, json!({"answer": "staging"})).await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["result"]["response"], "Going on with: staging");
}

#[tokio::test]
async fn a_question_is_answered_over_a2a() {
    let (_dir, agent) = asker("").await;
    let task = a2a::rpc(&agent, "message/send", a2a::send_params("deploy", None)).await;
    let task = &task["result"];
    assert_eq!(task["status"]["state"], "input-required", "{task}");
    let parts = task["status"]["message"]["parts"].as_array().unwrap();
    let data = parts
        .iter()
        .find(|p| p["kind"] == "data")
        .unwrap_or_else(|| panic!("no data part in {task}"));
    assert_eq!(data["data"]["question"]["text"], "Which environment?");
    let id = task["id"].as_str().unwrap();

    let mut bad = a2a::send_params("", Some(id));
    bad["message"]["parts"] = json!([{"kind": "data", "data": {"answer": "dev"}}]);
    let wrong = a2a::rpc(&agent, "message/send", bad).await;
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    assert!(
        wrong["error"]["message"]
            .as_str()
            .unwrap()
            .contains("one of"),
        "{wrong}"
    );

    let mut good = a2a::send_params("", Some(id));
    good["message"]["parts"] = json!([{"kind": "data", "data": {"answer": "staging"}}]);
    let done = a2a::rpc(&agent, "message/send", good).await;
    let done = &done["result"];
    assert_eq!(done["status"]["state"], "completed", "{done}");
    assert!(
        done.to_string().contains("Going on with: staging"),
        "{done}"
    );

    // A plain text continuation answers a waiting question too.
    let task = a2a::rpc(&agent, "message/send", a2a::send_params("deploy", None)).await;
    let id = task["result"]["id"].as_str().unwrap().to_string();
    let done = a2a::rpc(&agent, "message/send", a2a::send_params("prod", Some(&id))).await;
    assert_eq!(done["result"]["status"]["state"], "completed", "{done}");
}

#[tokio::test]
async fn a_sub_agents_question_is_answered_on_the_first_agent_and_forwarded() {
    let b = Agent::start(
        &asg_tests::testdata("agent-questions.yaml"),
        AgentOptions::default(),
    )
    .await;
    let a = Agent::start(
        &asg_tests::testdata("agent-delegator.yaml"),
        AgentOptions::with_env(&[("DOWNSTREAM_URL", &b.url)]),
    )
    .await;
    let (_, asked) = a.say_new("deploy").await;
    let uuid = question_uuid(&asked);
    let question = &asked["result"]["question"];
    assert_eq!(question["remote_agent_name"], "downstream", "{asked}");
    assert_eq!(question["question"]["text"], "Which environment?");
    assert_eq!(
        question["description"],
        "downstream asks: Which environment?"
    );

    let wrong = answer(&a, &uuid, json!({"answer": "dev"})).await;
    assert!(refused(&wrong, 422).contains("one of"), "checked on A too");
    let (status, answered) = answer(&a, &uuid, json!({"answer": "prod"})).await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(
        answered["result"]["response"],
        "Downstream answered: Going on with: prod"
    );
    let (_, on_b) = b.get("/conversations").await;
    let id = on_b["conversations"][0]["id"].as_str().unwrap().to_string();
    let conversation = b.conversation(&id).await;
    assert_eq!(conversation["status"], "active", "{conversation}");
    assert_eq!(
        conversation["decisions"][0]["reply"],
        json!({"action": "accept", "answer": "prod"}),
        "answered once on B"
    );
    assert_eq!(conversation["decisions"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn webhooks_tell_a_question_asked_and_answered() {
    use asg_tests::fake_http::{FakeHttp, Reply};
    let fake = FakeHttp::start(vec![Reply::status(204, "")]).await;
    let extra = format!(
        "approval:\n  webhooks:\n    - url: {}/hooks\n      secret_env: HOOK_SECRET\n",
        fake.url
    );
    let (_dir, config) = config_with("agent-questions.yaml", &extra);
    let env = [("HOOK_SECRET", "hook-secret-0123456789")];
    let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
    let (_, asked) = agent.say_new("deploy").await;
    let uuid = question_uuid(&asked);
    assert_eq!(
        answer(&agent, &uuid, json!({"answer": "prod"})).await.0,
        200
    );
    let events = poll("two deliveries", Duration::from_secs(10), || async {
        let bodies: Vec<Value> = fake
            .requests()
            .iter()
            .filter_map(|r| serde_json::from_str(&r.body).ok())
            .collect();
        (bodies.len() >= 2).then_some(bodies)
    })
    .await;
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(names, ["question.asked", "question.answered"], "{events:?}");
    assert_eq!(
        events[0]["approval"]["question"]["text"],
        "Which environment?"
    );
    assert_eq!(events[1]["approval"]["decision"]["reply"]["answer"], "prod");
}

#[tokio::test]
async fn parallel_branches_each_ask_and_each_question_is_answered_on_its_own() {
    let agent = Agent::start(
        &asg_tests::testdata("agent-parallel-questions.yaml"),
        AgentOptions::default(),
    )
    .await;
    let (status, asked) = agent.say_new("go").await;
    assert_eq!(status, 201, "{asked}");
    let pending = asked["conversation"]["pending_approvals"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let by_text = |text: &str| {
        pending
            .iter()
            .find(|p| p["question"]["text"] == text)
            .and_then(|p| p["uuid"].as_str())
            .unwrap_or_else(|| panic!("no question {text:?} in {pending:?}"))
            .to_string()
    };
    let (a, b) = (by_text("Name for A?"), by_text("Name for B?"));
    let (status, first) = answer(&agent, &b, json!({"answer": "bee"})).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(
        first["conversation"]["status"], "waiting_approval",
        "{first}"
    );
    assert_eq!(answer(&agent, &b, json!({"answer": "again"})).await.0, 409);
    let (status, done) = answer(&agent, &a, json!({"answer": "ay"})).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["result"]["response"], "TALLY A=ay B=bee");
}

#[tokio::test]
async fn a_question_is_answered_once_whichever_replica_the_answers_hit() {
    let db = asg_tests::pg::TestDb::create().await;
    let config = asg_tests::testdata("agent-questions.yaml");
    let options = AgentOptions::with_env(&[("DATABASE_URL", db.url.as_str())]);
    let (first, second) = tokio::join!(
        Agent::start(&config, options.clone()),
        Agent::start(&config, options)
    );
    let (_, asked) = first.say_new("deploy").await;
    let uuid = question_uuid(&asked);
    let (_, listed) = second.get("/questions").await;
    assert_eq!(listed["questions"][0]["uuid"], uuid.as_str(), "{listed}");
    let (on_first, on_second) = tokio::join!(
        answer(&first, &uuid, json!({"answer": "prod"})),
        answer(&second, &uuid, json!({"answer": "staging"}))
    );
    let mut statuses = [on_first.0, on_second.0];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{on_first:?} {on_second:?}");
    let id = conversation_id(&asked);
    let conversation = second.conversation(&id).await;
    assert_eq!(
        conversation["decisions"].as_array().map(Vec::len),
        Some(1),
        "{conversation}"
    );
}

#[tokio::test]
async fn with_separate_answerer_the_asker_may_not_answer_its_own_question() {
    let extra = "auth:\n  api_keys:\n    - { name: ops, key_env: OPS_KEY, roles: [approver] }\n    \
                 - { name: olga, key_env: OLGA_KEY, roles: [approver] }\n";
    let (_dir, config) = config_with("agent-questions.yaml", extra);
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "enabled: true\n",
        "enabled: true\n  answerers: [approver]\n  separate_answerer: true\n",
    );
    std::fs::write(&config, text).unwrap();
    let env = [
        ("OPS_KEY", "ops-key-0123456789"),
        ("OLGA_KEY", "olga-key-0123456789"),
    ];
    let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
    let (ops, olga) = (
        [("x-api-key", "ops-key-0123456789")],
        [("x-api-key", "olga-key-0123456789")],
    );
    let (_, asked) = agent
        .post_with(
            "/conversations",
            json!({"message": "deploy"}).to_string(),
            &ops,
        )
        .await;
    let path = format!("/questions/{}", question_uuid(&asked));
    let body = json!({"answer": "prod"}).to_string();
    let own = agent.post_with(&path, body.clone(), &ops).await;
    assert!(refused(&own, 403).contains("separate_answerer"), "{own:?}");
    let (status, answered) = agent.post_with(&path, body, &olga).await;
    assert_eq!(status, 200, "{answered}");
}

#[tokio::test]
async fn the_demo_asks_for_a_missing_value_then_stops_for_approval() {
    let agent = Agent::start(
        &asg_tests::workspace_root().join("config/demo.yaml"),
        AgentOptions::default(),
    )
    .await;
    let (_, asked) = agent.say_new("add resource web-9").await;
    let uuid = question_uuid(&asked);
    assert_eq!(
        asked["result"]["question"]["question"]["text"],
        "Which value should web-9 have?"
    );
    let (status, answered) = answer(&agent, &uuid, json!({"answer": {"value": 5}})).await;
    assert_eq!(status, 200, "{answered}");
    let approval = &answered["result"]["approval"];
    assert_eq!(
        approval["tool_args"],
        json!({"name": "web-9", "value": 5}),
        "{answered}"
    );
}
