//! A2A on `POST /a2a` for the scenario tests: one request shape, one
//! call helper, the `message/send` parameters most tests send, where the
//! official Python client SDK is (its venv under `target/`), and the
//! SDK-built "asking" sub-agents ([`AskingAgent`], in `a2a/asking.rs`)
//! that our A2A client is tested against.

mod asking;

pub use asking::{AskingAgent, Binding, js_dir, js_sdk_version, sdk_present};

use asg_shared::a2a::JsonRpcResponse;
use serde_json::{Value, json};

use crate::Agent;

/// The JSON-RPC request every helper sends (id 1).
pub fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// One JSON-RPC call with extra headers (credentials); status and body as
/// they came, for tests about refusals.
pub async fn call_with(
    agent: &Agent,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> (u16, Value) {
    agent
        .post_with("/a2a", request(method, params).to_string(), headers)
        .await
}

/// One JSON-RPC call with extra headers; the whole response, which must
/// be HTTP 200 and a JSON-RPC 2.0 response to this request (its id, a
/// `result` or an `error`).
pub async fn rpc_with(
    agent: &Agent,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> Value {
    let (status, body) = call_with(agent, headers, method, params).await;
    assert_eq!(status, 200, "{method}: {body}");
    let response: JsonRpcResponse = serde_json::from_value(body.clone())
        .unwrap_or_else(|e| panic!("{method}: not a JSON-RPC response ({e}): {body}"));
    assert_eq!(response.jsonrpc, "2.0", "{method}: {body}");
    assert_eq!(response.id, json!(1), "{method}: {body}");
    // `result` may be null (a delete), so the keys are what count.
    assert!(
        body.get("result").is_some() != response.error.is_some(),
        "{method}: neither or both of result and error: {body}"
    );
    body
}

/// One JSON-RPC call; the whole response (see [`rpc_with`]).
pub async fn rpc(agent: &Agent, method: &str, params: Value) -> Value {
    rpc_with(agent, &[], method, params).await
}

/// `message/send` parameters: a user message with one text part, a new
/// message id, and `taskId` when it continues `task`.
pub fn send_params(text: &str, task: Option<&str>) -> Value {
    let mut message = json!({"role": "user", "kind": "message",
        "messageId": uuid::Uuid::new_v4().to_string(),
        "parts": [{"kind": "text", "text": text}]});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({ "message": message })
}

/// Python of the venv with the 1.x client SDK (`scripts/test.sh` makes
/// it under target/), else `python3` from `PATH`.
pub fn client_sdk_python() -> std::path::PathBuf {
    let venv = crate::workspace_root().join("target/a2a-sdk-v1/bin/python");
    if venv.is_file() {
        venv
    } else {
        std::path::PathBuf::from("python3")
    }
}

/// The installed client SDK's version, or why there is none.
pub async fn sdk_version() -> Result<String, String> {
    let probe = "import importlib.metadata as m, a2a; print(m.version('a2a-sdk'))";
    let output = tokio::process::Command::new(client_sdk_python())
        .args(["-c", probe])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
    }
}

/// A delegator agent (`testdata/agent-delegator.yaml`: every message goes
/// to its one sub-agent `downstream`, at `downstream`) whose `a2a:` entry
/// gets `entry_lines` (e.g. `"    protocol: v0.3\n"`), with `env` set.
/// Keep the returned directory while the agent runs.
pub async fn delegator_with(
    downstream: &str,
    entry_lines: &str,
    env: &[(&str, &str)],
) -> (tempfile::TempDir, Agent) {
    let text = std::fs::read_to_string(crate::testdata("agent-delegator.yaml"))
        .expect("read agent-delegator.yaml");
    let text = text
        .replace(
            "scripted:scripted/",
            &format!("scripted:{}/", crate::testdata("scripted").display()),
        )
        .replace(
            "    timeout_secs: 5\n",
            &format!("    timeout_secs: 5\n{entry_lines}"),
        );
    assert!(text.contains(entry_lines), "the a2a: entry was not found");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("agent.yaml");
    std::fs::write(&path, text).expect("write the config");
    let mut all = vec![("DOWNSTREAM_URL", downstream)];
    all.extend_from_slice(env);
    let agent = Agent::start(&path, crate::AgentOptions::with_env(&all)).await;
    (dir, agent)
}

/// Runs `tests/interop/<script>` with `python` and `args` (stdin closed,
/// killed when dropped); its output, or a panic naming the script when it
/// does not end within `secs` seconds or cannot start.
pub async fn run_interop_script(
    python: &std::path::Path,
    script: &str,
    args: &[&str],
    secs: u64,
) -> std::process::Output {
    let path = crate::workspace_root().join("tests/interop").join(script);
    let run = tokio::process::Command::new(python)
        .arg(&path)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(std::time::Duration::from_secs(secs), run)
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish within {secs} s"))
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()))
}
