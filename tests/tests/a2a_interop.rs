//! Interop with the official A2A Python SDK: starts the real agent with
//! `testdata/agent-resources.yaml` and runs `tests/interop/a2a_sdk_client.py`
//! against it (card resolution, message/send, tasks/get, approval
//! continuations, tasks/cancel, errors, streaming; see the script).
//!
//! The client SDK (1.3.0) is looked up in the venv `scripts/test.sh`
//! makes, `target/a2a-sdk-v1`, then in `python3` from `PATH`. Without it
//! the test is skipped on a developer machine, but fails in CI (`CI`
//! set): `scripts/test.sh` installs the pinned SDKs before the tests run.

use std::process::Stdio;
use std::time::Duration;

use asg_tests::a2a::{client_sdk_python, sdk_version};
use asg_tests::{Agent, AgentOptions, testdata, workspace_root};

#[tokio::test]
async fn the_official_python_sdk_talks_to_the_server() {
    let version = match sdk_version().await {
        Ok(version) => version,
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!(
                "SKIPPED a2a_interop: the A2A Python SDK is not installed ({why}); \
                 run scripts/test.sh (it makes the venv target/a2a-sdk-v1)"
            );
            return;
        }
        Err(why) => panic!("CI must run the A2A SDK interop test, but the SDK is missing: {why}"),
    };
    eprintln!("a2a-sdk {version}");
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let script = workspace_root().join("tests/interop/a2a_sdk_client.py");
    let run = tokio::process::Command::new(client_sdk_python())
        .arg(&script)
        .arg(&agent.url)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("the interop script did not finish within 180 s")
        .expect("cannot run python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the A2A SDK interop script failed ({}):\n{stdout}\n{stderr}\nagent log:\n{}",
        output.status,
        agent.log()
    );
    assert!(stdout.contains("interop OK"), "{stdout}\n{stderr}");
}

/// Python of the venv with the v0.3 server SDK (`scripts/test.sh` makes
/// it), if there is one.
fn server_sdk_python() -> Option<std::path::PathBuf> {
    let python = workspace_root().join("target/a2a-sdk-v03/bin/python");
    python.is_file().then_some(python)
}

#[tokio::test]
async fn our_client_delegates_to_a_server_built_with_the_official_sdk() {
    let Some(python) = server_sdk_python() else {
        if std::env::var_os("CI").is_none() {
            eprintln!(
                "SKIPPED: no target/a2a-sdk-v03 venv with the v0.3 server SDK; run scripts/test.sh"
            );
            return;
        }
        panic!("CI must run the SDK server interop test, but target/a2a-sdk-v03 is missing");
    };
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let _server = tokio::process::Command::new(python)
        .arg(workspace_root().join("tests/interop/a2a_sdk_server.py"))
        .arg(port.to_string())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("cannot start the SDK server");
    let card_url = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while reqwest::get(&card_url).await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the SDK server did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let agent = Agent::start(
        &testdata("agent-delegator.yaml"),
        AgentOptions {
            env: vec![("DOWNSTREAM_URL".into(), format!("http://127.0.0.1:{port}"))],
            ..Default::default()
        },
    )
    .await;
    let (status, answer) = agent
        .post_with(
            "/conversations",
            serde_json::json!({"message": "hello sdk"}).to_string(),
            &[
                ("Authorization", "Bearer interop-token"),
                ("X-Session-ID", "cafe1234"),
            ],
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        answer["result"]["response"],
        "Downstream answered: sdk-echo: hello sdk | auth=Bearer interop-token | sid=cafe1234"
    );
}
