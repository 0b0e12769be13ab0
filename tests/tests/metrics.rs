//! `GET /metrics` on the real agent: what an approval does to the
//! counters, the gauge and the histograms, labels that never carry an id,
//! the same auth as the API, and a real Prometheus (Debian's package,
//! installed by scripts/test.sh) scraping it and answering queries.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use asg_tests::fake_gemini::{
    FAKE_OUTPUT_TOKENS, FAKE_PROMPT_TOKENS, FakeGemini, GeminiCall, GeminiReply,
};
use asg_tests::fake_http::{FakeHttp, Reply};
use asg_tests::{
    Agent, AgentOptions, approval_uuid, config_with, conversation_id, sample, testdata,
};
use serde_json::{Value, json};

/// `GET /metrics`, with `bearer` as `Authorization: Bearer` when given.
async fn get_metrics(agent: &Agent, bearer: Option<&str>) -> reqwest::Response {
    let mut request = agent.http.get(format!("{}/metrics", agent.url));
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    request.send().await.expect("GET /metrics")
}

/// The metrics text of an agent without `auth:`.
async fn scrape(agent: &Agent) -> String {
    agent.metrics().await
}

#[tokio::test]
async fn an_approval_moves_the_counters_gauge_and_histograms() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let before = scrape(&agent).await;
    assert!(
        sample(&before, "process_resident_memory_bytes").is_some_and(|v| v > 0.0),
        "{before}"
    );
    assert!(
        before.contains("# TYPE asg_http_requests counter"),
        "{before}"
    );
    assert!(
        before.ends_with("# EOF\n"),
        "OpenMetrics ends with # EOF:\n{before}"
    );

    let (status, answer) = agent
        .post(
            "/conversations",
            json!({"message": "add resource m-1 with value 1"}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let uuid = approval_uuid(&answer);
    let id = conversation_id(&answer);
    let waiting = scrape(&agent).await;
    let pending = r#"asg_approvals_pending{tool="resources_add"}"#;
    assert_eq!(sample(&waiting, pending), Some(1.0), "{waiting}");
    assert_eq!(
        sample(
            &waiting,
            r#"asg_approvals_requested_total{tool="resources_add"}"#
        ),
        Some(1.0),
        "{waiting}"
    );

    let (status, decided) = agent
        .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
        .await;
    assert_eq!(status, 200, "{decided}");
    let after = scrape(&agent).await;
    assert_eq!(
        sample(&after, pending),
        None,
        "nothing waits any more:\n{after}"
    );
    assert_eq!(
        sample(
            &after,
            r#"asg_approvals_decided_total{outcome="approved",channel="rest"}"#
        ),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "asg_approval_wait_seconds_count"),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(
            &after,
            r#"asg_tool_call_duration_seconds_count{tool="resources_add",server="resources",result="ok"}"#
        ),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(
            &after,
            r#"asg_approved_calls_total{tool="resources_add",result="ok"}"#
        ),
        Some(1.0),
        "{after}"
    );
    assert!(
        sample(
            &after,
            r#"asg_store_save_duration_seconds_count{result="ok"}"#
        )
        .is_some_and(|v| v >= 2.0),
        "{after}"
    );
    assert!(
        sample(&after, "asg_turns_total").is_some_and(|v| v >= 2.0),
        "{after}"
    );
    assert_eq!(
        sample(
            &after,
            r#"asg_http_requests_total{method="POST",route="/approvals/{uuid}",status="2xx"}"#
        ),
        Some(1.0),
        "{after}"
    );
    for id in [&uuid, &id] {
        assert!(
            !after.contains(id.as_str()),
            "an id is in a label:\n{after}"
        );
    }
}

/// A2A requests by method and result; a method or path a caller makes up
/// never becomes a label.
#[tokio::test]
async fn a2a_requests_are_counted_by_known_method_only() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m1", "role": "user",
        "parts": [{"kind": "text", "text": "list resources"}]}}});
    let invented = "tasks/steal-0d2c7d1e";
    for body in [
        send,
        json!({"jsonrpc": "2.0", "id": 2, "method": invented, "params": {}}),
    ] {
        let (status, answer) = agent.post("/a2a", body).await;
        assert_eq!(status, 200, "{answer}");
    }
    let (status, _) = agent.get("/made-up-path-7f3a").await;
    assert_eq!(status, 404);
    let text = scrape(&agent).await;
    for (series, want) in [
        (
            r#"asg_a2a_requests_total{method="message/send",version="0.3",result="ok"}"#,
            1.0,
        ),
        (
            r#"asg_a2a_requests_total{method="unknown",version="0.3",result="error"}"#,
            1.0,
        ),
        (
            r#"asg_http_requests_total{method="GET",route="unmatched",status="4xx"}"#,
            1.0,
        ),
    ] {
        assert_eq!(sample(&text, series), Some(want), "{series}\n{text}");
    }
    for made_up in [invented, "made-up-path"] {
        assert!(!text.contains(made_up), "{made_up} became a label:\n{text}");
    }
}

#[tokio::test]
async fn metrics_need_the_same_credential_as_the_api() {
    let (_dir, config) = config_with(
        "agent-resources.yaml",
        "auth:\n  api_keys:\n    - { name: ops, key_env: OPS_KEY }\n",
    );
    let key = "metrics-test-key-0123456789abcdef";
    let agent = Agent::start(&config, AgentOptions::with_env(&[("OPS_KEY", key)])).await;
    assert_eq!(get_metrics(&agent, None).await.status(), 401);
    let signed = get_metrics(&agent, Some(key)).await;
    assert_eq!(signed.status(), 200);
    let text = signed.text().await.unwrap();
    assert!(text.contains("asg_http_requests_total"), "{text}");
    assert!(!text.contains(key), "the key is in the metrics");
}

/// `metrics_listen`: the metrics alone on their own address, for a
/// scraper without the API's credential; the API's own stays guarded.
#[tokio::test]
async fn metrics_listen_serves_the_metrics_alone_without_a_credential() {
    let (_dir, config) = config_with(
        "agent-resources.yaml",
        "metrics_listen: 127.0.0.1:0
auth:
  api_keys:
    - { name: ops, key_env: OPS_KEY }
",
    );
    let agent = Agent::start(
        &config,
        AgentOptions::with_env(&[("OPS_KEY", "metrics-listen-key-0123456789")]),
    )
    .await;
    let line = agent.wait_log("metrics on http://").await;
    let url = line
        .split("metrics on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no metrics URL in {line}"))
        .to_string();
    let response = agent.http.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(
        text.contains("asg_http_requests_total{method=\"GET\",route=\"/health\""),
        "{text}"
    );
    assert!(text.contains("process_resident_memory_bytes"), "{text}");
    let other = url.replace("/metrics", "/conversations");
    let response = agent.http.get(&other).send().await.unwrap();
    assert_eq!(response.status(), 404, "only /metrics on metrics_listen");
    assert_eq!(get_metrics(&agent, None).await.status(), 401);
}

/// A bad `metrics_listen` stops the start with the field named.
#[tokio::test]
async fn a_metrics_listen_without_a_port_is_refused() {
    let (_dir, config) = config_with("agent-resources.yaml", "metrics_listen: localhost\n");
    let output = Command::new(asg_tests::binary("agent"))
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("metrics_listen"), "{stderr}");
}

/// Tokens the provider counted, by model and direction (a fake Gemini
/// that reports fixed counts).
#[tokio::test]
async fn model_tokens_are_counted_from_the_providers_usage() {
    let fake = FakeGemini::start(|_call: &GeminiCall| GeminiReply::text("Hello.")).await;
    let options = AgentOptions {
        env: fake.env(),
        ..AgentOptions::default()
    };
    let agent = Agent::start(&testdata("agent-gemini.yaml"), options).await;
    for _ in 0..2 {
        let (status, answer) = agent.say_new("hi").await;
        assert_eq!(status, 201, "{answer}");
    }
    let text = scrape(&agent).await;
    let model = "gemini:gemini-2.5-flash";
    for (direction, each) in [
        ("input", FAKE_PROMPT_TOKENS),
        ("output", FAKE_OUTPUT_TOKENS),
    ] {
        let series =
            format!(r#"asg_model_tokens_total{{model="{model}",direction="{direction}"}}"#);
        assert_eq!(
            sample(&text, &series),
            Some(2.0 * each as f64),
            "{series}\n{text}"
        );
    }
    let calls = format!(r#"asg_model_call_duration_seconds_count{{model="{model}",result="ok"}}"#);
    assert_eq!(sample(&text, &calls), Some(2.0), "{text}");
}

/// Sub-agent calls by result, on the delegating agent.
#[tokio::test]
async fn sub_agent_calls_are_counted_by_result() {
    let b = Agent::start(&testdata("e2e-chain-b.yaml"), AgentOptions::default()).await;
    let a = Agent::start(
        &testdata("agent-delegator.yaml"),
        AgentOptions::with_env(&[("DOWNSTREAM_URL", &b.url)]),
    )
    .await;
    let (status, answer) = a.say_new("list resources").await;
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = a.say_new("add resource sub-1 with value 1").await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["result"]["waiting_approval"], true, "{answer}");
    let text = scrape(&a).await;
    for result in ["answered", "proxy_approval"] {
        let series = format!(r#"asg_subagent_calls_total{{agent="downstream",result="{result}"}}"#);
        assert_eq!(sample(&text, &series), Some(1.0), "{series}\n{text}");
    }
    assert_eq!(
        sample(
            &text,
            r#"asg_tool_call_duration_seconds_count{tool="downstream",server="a2a",result="ok"}"#
        ),
        Some(2.0),
        "{text}"
    );
}

/// Webhook deliveries by result.
#[tokio::test]
async fn webhook_deliveries_are_counted() {
    let fake = FakeHttp::start(vec![Reply::status(204, "")]).await;
    let (_dir, config) = config_with(
        "agent-resources.yaml",
        &format!(
            "approval:\n  webhooks:\n    - url: {}/hooks\n      secret_env: HOOK_SECRET\n",
            fake.url
        ),
    );
    let agent = Agent::start(
        &config,
        AgentOptions::with_env(&[("HOOK_SECRET", "hook-secret-0123456789")]),
    )
    .await;
    let (status, answer) = agent
        .post(
            "/conversations",
            json!({"message": "add resource w-1 with value 1"}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let series = r#"asg_notifications_total{kind="webhook",result="delivered"}"#;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = scrape(&agent).await;
        if sample(&text, series).is_some_and(|v| v >= 1.0) {
            break;
        }
        assert!(Instant::now() < deadline, "{series} never counted:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A Prometheus server scraping `target` every second, on a free port.
struct Prometheus {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: &str) -> Prometheus {
        let binary = Path::new("/usr/bin/prometheus");
        assert!(
            binary.is_file(),
            "Prometheus is missing: apt-get install -y prometheus (scripts/test.sh does it)"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
                 scrape_configs:\n  - job_name: agent\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        Prometheus {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    /// The instant vector of `query`, once it has `want` series (60 s).
    async fn wait_for(&self, query: &str, want: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let client = reqwest::Client::new();
        let mut last = Value::Null;
        while Instant::now() < deadline {
            let url = reqwest::Url::parse_with_params(
                &format!("{}/api/v1/query", self.url),
                [("query", query)],
            )
            .expect("query URL");
            if let Ok(response) = client.get(url).send().await
                && let Ok(body) = response.json::<Value>().await
            {
                if let Some(result) = body["data"]["result"].as_array()
                    && want(result)
                {
                    return result.to_vec();
                }
                last = body;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        panic!("Prometheus never answered {query} as expected; last: {last}");
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn value(series: &Value) -> f64 {
    series["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

#[tokio::test]
async fn prometheus_scrapes_the_approval_metrics() {
    let agent = Agent::start(&testdata("agent-resources.yaml"), AgentOptions::default()).await;
    let target = agent.url.trim_start_matches("http://").to_string();
    let prometheus = Prometheus::start(&target);
    prometheus
        .wait_for("up{job=\"agent\"}", |r| {
            r.first().is_some_and(|s| value(s) == 1.0)
        })
        .await;

    let (_, answer) = agent
        .post(
            "/conversations",
            json!({"message": "add resource p-1 with value 2"}),
        )
        .await;
    let uuid = approval_uuid(&answer);
    let pending = prometheus
        .wait_for("asg_approvals_pending", |r| {
            r.iter().any(|s| value(s) == 1.0)
        })
        .await;
    assert_eq!(pending[0]["metric"]["tool"], "resources_add", "{pending:?}");

    agent
        .post(&format!("/approvals/{uuid}"), json!({"approved": true}))
        .await;
    let decided = prometheus
        .wait_for("asg_approvals_decided_total", |r| {
            r.iter().any(|s| value(s) == 1.0)
        })
        .await;
    assert_eq!(decided[0]["metric"]["outcome"], "approved", "{decided:?}");
    assert_eq!(decided[0]["metric"]["channel"], "rest", "{decided:?}");
    let waits = prometheus
        .wait_for("asg_approval_wait_seconds_count", |r| {
            r.iter().any(|s| value(s) == 1.0)
        })
        .await;
    assert_eq!(waits.len(), 1, "{waits:?}");
    prometheus
        .wait_for("sum(asg_approvals_pending)", |r| {
            r.is_empty() || r.iter().all(|s| value(s) == 0.0)
        })
        .await;

    dashboard_queries_run(&prometheus).await;
}

/// Every query of the Grafana dashboard (deploy/grafana) is valid PromQL
/// for the real Prometheus, and the approval and tool panels have data
/// after an approval.
async fn dashboard_queries_run(prometheus: &Prometheus) {
    let path = asg_tests::workspace_root().join("deploy/grafana/dashboards/agent-stop-and-go.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 10, "{dashboard}");
    let client = reqwest::Client::new();
    for panel in panels {
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().expect("expr");
            let url = reqwest::Url::parse_with_params(
                &format!("{}/api/v1/query", prometheus.url),
                [("query", expr)],
            )
            .unwrap();
            let body: Value = client.get(url).send().await.unwrap().json().await.unwrap();
            assert_eq!(body["status"], "success", "{expr}: {body}");
        }
    }
    for title in [
        "Decisions per minute, by outcome",
        "Tool call latency p95, by tool",
    ] {
        let panel = panels.iter().find(|p| p["title"] == title).expect(title);
        let expr = panel["targets"][0]["expr"].as_str().unwrap();
        prometheus.wait_for(expr, |r| !r.is_empty()).await;
    }
}

/// `promtool` (Debian's prometheus package) accepts the compose stack's
/// Prometheus configuration.
#[test]
fn the_compose_prometheus_config_is_valid() {
    let config = asg_tests::workspace_root().join("deploy/prometheus/prometheus.yml");
    let output = Command::new("/usr/bin/promtool")
        .args(["check", "config", "--syntax-only"])
        .arg(&config)
        .output()
        .expect("promtool (scripts/test.sh installs the prometheus package)");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
