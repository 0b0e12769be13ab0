//! `GET /conversations` and `GET /approvals` one page at a time:
//! `?limit=` (default 50, at most 500), `?cursor=` (the previous page's
//! `next_cursor`), `?status=`; bad values are 400s that name them.

use asg_tests::{Agent, AgentOptions, conversation_id, testdata};
use serde_json::Value;

async fn agent() -> Agent {
    Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await
}

/// Every page of `path` (with `query`), following `next_cursor`.
async fn pages(agent: &Agent, path: &str, query: &str, items: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}?{query}&cursor={c}"),
            None => format!("{path}?{query}"),
        };
        let (status, body) = agent.get(&url).await;
        assert_eq!(status, 200, "{url}: {body}");
        let ids = body[items]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                let id = item.get("id").or_else(|| item.get("uuid")).unwrap();
                id.as_str().unwrap().to_string()
            })
            .collect();
        pages.push(ids);
        match body.get("next_cursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_string()),
            None => return pages,
        }
        assert!(pages.len() < 50, "next_cursor never ends");
    }
}

/// Creates a conversation: waiting for an approval when `add`.
async fn create(agent: &Agent, n: usize, add: bool) -> (String, Option<String>) {
    let text = match add {
        true => format!("add resource page-{n} with value {n}"),
        false => format!("list resources {n}"),
    };
    let (status, body) = agent.say_new(&text).await;
    assert_eq!(status, 201, "{body}");
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .map(str::to_string);
    assert_eq!(uuid.is_some(), add, "{body}");
    (conversation_id(&body), uuid)
}

#[tokio::test]
async fn conversations_page_newest_first_and_approvals_oldest_first() {
    let agent = agent().await;
    let mut made = Vec::new();
    let mut approvals = Vec::new();
    for n in 0..7 {
        let (id, uuid) = create(&agent, n, n % 2 == 0).await;
        made.push(id);
        approvals.extend(uuid);
    }

    let walked = pages(&agent, "/conversations", "limit=3", "conversations").await;
    assert_eq!(walked.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 1]);
    let newest_first: Vec<String> = made.iter().rev().cloned().collect();
    assert_eq!(walked.concat(), newest_first);

    // The filter pages too; the counts stay those of every conversation.
    let waiting = pages(
        &agent,
        "/conversations",
        "limit=2&status=waiting_approval",
        "conversations",
    )
    .await;
    let expected: Vec<String> = made.iter().step_by(2).rev().cloned().collect();
    assert_eq!(waiting.concat(), expected);
    let (_, body) = agent.get("/conversations?status=active&limit=1").await;
    assert_eq!(body["summary"]["total"], 7, "{body}");
    assert_eq!(body["summary"]["waiting_approval"], 4, "{body}");
    assert_eq!(body["conversations"].as_array().unwrap().len(), 1);
    assert_eq!(body["conversations"][0]["status"], "active");

    let approvals_walked = pages(&agent, "/approvals", "limit=3", "approvals").await;
    assert_eq!(
        approvals_walked.iter().map(Vec::len).collect::<Vec<_>>(),
        [3, 1]
    );
    assert_eq!(approvals_walked.concat(), approvals, "oldest first");

    // A page after a decided approval goes on where it was.
    let (_, first) = agent.get("/approvals?limit=2").await;
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let (status, _) = agent
        .decide(&approvals[1], serde_json::json!({"approved": true}))
        .await;
    assert_eq!(status, 200);
    let (_, rest) = agent
        .get(&format!("/approvals?limit=2&cursor={cursor}"))
        .await;
    let rest: Vec<&str> = rest["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(rest, [approvals[2].as_str(), approvals[3].as_str()]);
}

#[tokio::test]
async fn without_a_limit_a_page_holds_fifty_and_a_last_page_has_no_cursor() {
    let agent = agent().await;
    for n in 0..51 {
        create(&agent, n, false).await;
    }
    let (_, body) = agent.get("/conversations").await;
    assert_eq!(body["conversations"].as_array().unwrap().len(), 50);
    let next = body["next_cursor"].as_str().unwrap();
    let (_, last) = agent.get(&format!("/conversations?cursor={next}")).await;
    assert_eq!(last["conversations"].as_array().unwrap().len(), 1);
    assert!(last.get("next_cursor").is_none(), "{last}");
    let (_, body) = agent.get("/conversations?limit=500").await;
    assert_eq!(body["conversations"].as_array().unwrap().len(), 51);
    assert!(body.get("next_cursor").is_none(), "{body}");
}

#[tokio::test]
async fn bad_listing_queries_are_400s_that_name_the_problem() {
    let agent = agent().await;
    create(&agent, 1, true).await;
    let cases = [
        ("/conversations?limit=0", "limit"),
        ("/conversations?limit=501", "500"),
        ("/conversations?limit=ten", "limit"),
        ("/approvals?limit=-1", "limit"),
        ("/conversations?cursor=not-a-cursor", "cursor"),
        ("/approvals?cursor=djE6MTow", "cursor"),
        ("/conversations?cursor=Li4vLi4vZXRjL3Bhc3N3ZA", "cursor"),
        ("/conversations?status=sleeping", "waiting_approval"),
        ("/approvals?status=completed", "executing"),
        ("/conversations?sort=asc", "sort"),
        ("/approvals?limit=1&limit=2", "twice"),
    ];
    for (url, named) in cases {
        let (status, body) = agent.get(url).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(body["error"]["code"], "bad_request", "{url}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{url}: {message}");
    }
}

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789ab";
const OPS: &str = "ops-key-0123456789ab";

/// Every page of `/conversations?limit=2` as the holder of `key`: the ids
/// and the summary's total of each page.
async fn pages_as(agent: &Agent, key: &str, first_cursor: Option<&str>) -> (Vec<String>, Vec<u64>) {
    let bearer = format!("Bearer {key}");
    let (mut ids, mut totals) = (Vec::new(), Vec::new());
    let mut cursor = first_cursor.map(str::to_string);
    loop {
        let url = match &cursor {
            Some(c) => format!("/conversations?limit=2&cursor={c}"),
            None => "/conversations?limit=2".to_string(),
        };
        let (status, body) = agent.get_with(&url, &[("authorization", &bearer)]).await;
        assert_eq!(status, 200, "{body}");
        for c in body["conversations"].as_array().unwrap() {
            ids.push(c["id"].as_str().unwrap().to_string());
        }
        totals.push(body["summary"]["total"].as_u64().unwrap());
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return (ids, totals),
        }
    }
}

async fn create_as(agent: &Agent, key: &str, text: &str) -> String {
    let bearer = format!("Bearer {key}");
    let body = serde_json::json!({ "message": text }).to_string();
    let (status, answer) = agent
        .post_with("/conversations", body, &[("authorization", &bearer)])
        .await;
    assert_eq!(status, 201, "{answer}");
    conversation_id(&answer)
}

#[tokio::test]
async fn each_principal_pages_through_only_what_it_may_read_on_both_stores() {
    let keys = "auth:\n  api_keys:\n    - { name: alice, key_env: ALICE_KEY }\n    \
                - { name: bob, key_env: BOB_KEY }\n    \
                - { name: ops, key_env: OPS_KEY, roles: [approver] }\n";
    let (_dir, config) = asg_tests::config_with("agent-resources.yaml", keys);
    let db = asg_tests::pg::TestDb::create().await;
    for database in [None, Some(db.url.as_str())] {
        let mut env = vec![("ALICE_KEY", ALICE), ("BOB_KEY", BOB), ("OPS_KEY", OPS)];
        env.extend(database.map(|url| ("DATABASE_URL", url)));
        let agent = Agent::start(&config, AgentOptions::with_env(&env)).await;
        let store = if database.is_some() {
            "postgres"
        } else {
            "json"
        };
        let waiting = create_as(&agent, ALICE, "add resource mine-1 with value 1").await;
        let mut alices = vec![waiting.clone()];
        for n in 0..2 {
            alices.push(create_as(&agent, ALICE, &format!("list resources {n}")).await);
        }
        let mut bobs = Vec::new();
        for n in 0..3 {
            bobs.push(create_as(&agent, BOB, &format!("list resources bob {n}")).await);
        }
        // Each sees its own, newest first, page after page, counted alone.
        let (seen, totals) = pages_as(&agent, ALICE, None).await;
        assert_eq!(
            seen,
            alices.iter().rev().cloned().collect::<Vec<_>>(),
            "{store}"
        );
        assert!(totals.iter().all(|t| *t == 3), "{store}: {totals:?}");
        let (seen, totals) = pages_as(&agent, BOB, None).await;
        assert_eq!(
            seen,
            bobs.iter().rev().cloned().collect::<Vec<_>>(),
            "{store}"
        );
        assert!(totals.iter().all(|t| *t == 3), "{store}: {totals:?}");
        // The approver reads the conversation that had an approval only.
        let (seen, totals) = pages_as(&agent, OPS, None).await;
        assert_eq!(seen, std::slice::from_ref(&waiting), "{store}");
        assert_eq!(totals, [1], "{store}");
        // A cursor from another principal's listing reveals nothing more.
        let (_, body) = agent
            .get_with(
                "/conversations?limit=1",
                &[("authorization", &format!("Bearer {BOB}"))],
            )
            .await;
        let bobs_cursor = body["next_cursor"].as_str().unwrap().to_string();
        let (seen, _) = pages_as(&agent, ALICE, Some(&bobs_cursor)).await;
        assert!(
            seen.iter().all(|id| alices.contains(id)),
            "{store}: {seen:?}"
        );
        // And without a credential, nothing at all.
        let (status, _) = agent.get("/conversations").await;
        assert_eq!(status, 401, "{store}");
    }
}
