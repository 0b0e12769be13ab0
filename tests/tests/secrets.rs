//! NFR-005: the model key and the caller's bearer token never show up where
//! they do not belong: not in the log, not on disk, and the token is not
//! sent to the model provider.

use asg_tests::fake_http::{FakeHttp, Reply};
use asg_tests::{Agent, AgentOptions, conversation_id, files_under, testdata};
use serde_json::json;

fn gemini_text(text: &str) -> Reply {
    Reply::json(json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP"
        }]
    }))
}

#[tokio::test]
async fn secrets_stay_out_of_logs_disk_and_the_provider() {
    let random = uuid::Uuid::new_v4().simple().to_string();
    let key = format!("sk-test-SECRET-{random}");
    let token = format!("tok-SECRET-{random}");
    let call = Reply::json(json!({
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"functionCall": {"name": "resources_list", "args": {}}}
            ]},
            "finishReason": "STOP"
        }]
    }));
    // First a tool call (so a tool runs under the caller's token), then text.
    let fake = FakeHttp::start(vec![call, gemini_text("All done, no resources.")]).await;
    let agent = Agent::start(
        &testdata("agent-gemini.yaml"),
        AgentOptions {
            env: vec![
                ("GEMINI_API_KEY".into(), key.clone()),
                ("GEMINI_BASE_URL".into(), fake.url.clone()),
            ],
            ..AgentOptions::default()
        },
    )
    .await;
    let bearer = format!("Bearer {token}");
    let headers = [("authorization", bearer.as_str())];
    let (status, answer) = agent
        .post_with(
            "/conversations",
            json!({"message": "list resources"}).to_string(),
            &headers,
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["response"], "All done, no resources.");
    let id = conversation_id(&answer);
    assert!(
        answer["conversation"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["tool_result"]["name"] == "resources_list"),
        "the tool ran: {answer}"
    );
    let (status, second) = agent
        .post_with(
            &format!("/conversations/{id}/messages"),
            json!({"message": "thanks"}).to_string(),
            &headers,
        )
        .await;
    assert_eq!(status, 200, "{second}");
    let (_, shown) = agent.get(&format!("/conversations/{id}")).await;

    // Sanity: the provider got the key, in the header.
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    for request in &requests {
        assert!(
            request
                .uri
                .ends_with("/v1beta/models/gemini-2.5-flash:generateContent"),
            "{}",
            request.uri
        );
        assert!(
            request
                .headers
                .iter()
                .any(|(name, value)| name == "x-goog-api-key" && *value == key),
            "the key travels in x-goog-api-key: {:?}",
            request.headers
        );
        assert!(!request.uri.contains(&key), "not in the URL");
        // The caller's token is not the provider's business.
        assert!(
            !request.headers.iter().any(|(_, v)| v.contains(&token)),
            "token sent to the provider in a header: {:?}",
            request.headers
        );
        assert!(!request.body.contains(&token), "token in the provider body");
        assert!(!request.body.contains(&key), "key in the provider body");
    }

    // Not in any answer, not in the log, not on disk.
    for body in [&answer, &second, &shown] {
        let text = body.to_string();
        assert!(!text.contains(&key) && !text.contains(&token), "{text}");
    }
    let log = agent.wait_log("/messages").await;
    assert!(!log.contains(&key), "key in the log:\n{log}");
    assert!(!log.contains(&token), "token in the log:\n{log}");
    assert!(!log.contains(&random), "a secret's random part in the log");
    asg_tests::json_files_settled(&agent.data_dir);
    let files = files_under(&agent.data_dir);
    assert!(
        files
            .iter()
            .any(|(p, _)| p.extension().is_some_and(|e| e == "json")),
        "the conversation was saved"
    );
    for (path, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains(&random),
            "a secret was written to {}",
            path.display()
        );
    }
}
