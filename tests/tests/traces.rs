//! OpenTelemetry traces from the real agents to an OTLP receiver
//! (`asg_tests::otlp`): one trace from the caller through agent A, its
//! sub-agent B and B's MCP tool, over HTTP/protobuf; the approval's
//! events and recorded arguments over gRPC; the trace context to an MCP
//! server over HTTP (header and `_meta`); JSON log lines with the trace
//! id; an unsupported protocol refused at start.

use asg_tests::otlp::{OtlpReceiver, ReceivedSpan};
use asg_tests::recording_proxy::RecordingProxy;
use asg_tests::tool_server::ToolServer;
use asg_tests::{Agent, AgentOptions, approval_uuid, config_with, response_text, testdata};
use serde_json::{Value, json};

/// The caller's trace: `traceparent` sent with the first request.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const KEY: &str = "trace-test-key-0123456789abcdef";

fn exporting_to(receiver: &OtlpReceiver, extra: &[(&str, &str)]) -> AgentOptions {
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
        // Small batches, sent soon.
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    env.extend_from_slice(extra);
    AgentOptions::with_env(&env)
}

fn by_name<'a>(spans: &'a [ReceivedSpan], service: &str, name: &str) -> Vec<&'a ReceivedSpan> {
    spans
        .iter()
        .filter(|s| s.service == service && s.name == name)
        .collect()
}

fn one<'a>(spans: &'a [ReceivedSpan], service: &str, name: &str) -> &'a ReceivedSpan {
    let found = by_name(spans, service, name);
    assert_eq!(found.len(), 1, "one {service} span {name:?} in {spans:#?}");
    found[0]
}

/// The span holding the event `name`, and the event's attributes.
fn with_event<'a>(
    spans: &'a [ReceivedSpan],
    name: &str,
) -> (
    &'a ReceivedSpan,
    &'a std::collections::BTreeMap<String, String>,
) {
    spans
        .iter()
        .find_map(|span| {
            let (_, attributes) = span.events.iter().find(|(event, _)| event == name)?;
            Some((span, attributes))
        })
        .unwrap_or_else(|| panic!("no {name} event in {spans:#?}"))
}

/// Whether `span` descends from `ancestor` through parent links.
fn descends(spans: &[ReceivedSpan], span: &ReceivedSpan, ancestor: &ReceivedSpan) -> bool {
    let mut parent = span.parent_span_id.clone();
    for _ in 0..32 {
        if parent == ancestor.span_id {
            return true;
        }
        match spans.iter().find(|s| s.span_id == parent) {
            Some(next) => parent = next.parent_span_id.clone(),
            None => return false,
        }
    }
    false
}

#[tokio::test]
async fn one_trace_spans_the_caller_agent_a_sub_agent_b_and_its_mcp_tool() {
    let receiver = OtlpReceiver::start_http().await;
    let b = Agent::start(&testdata("e2e-chain-b.yaml"), exporting_to(&receiver, &[])).await;
    let (_dir, a_config) = config_with(
        "agent-delegator.yaml",
        "auth:\n  api_keys:\n    - { name: ops, key_env: OPS_KEY }\n",
    );
    let a = Agent::start(
        &a_config,
        exporting_to(
            &receiver,
            &[
                ("DOWNSTREAM_URL", b.url.as_str()),
                ("OPS_KEY", KEY),
                ("LOG_FORMAT", "json"),
            ],
        ),
    )
    .await;
    let (status, answer) = a
        .post_with(
            "/conversations",
            json!({"message": "list resources"}).to_string(),
            &[
                ("authorization", &format!("Bearer {KEY}")),
                ("traceparent", &format!("00-{TRACE}-{CALLER_SPAN}-01")),
            ],
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    assert!(
        response_text(&answer).starts_with("Downstream answered: There are 0 resources"),
        "{answer}"
    );

    let spans = receiver
        .wait_for("spans of A and B with B's tool call", |spans| {
            // Each agent exports in its own batches: B's request span ends
            // after its children and may come in a later one than A's.
            spans
                .iter()
                .any(|s| s.name == "execute_tool resources_list")
                && spans
                    .iter()
                    .any(|s| s.service == "delegator" && s.name == "POST /conversations")
                && spans
                    .iter()
                    .any(|s| s.service == "resource-agent" && s.kind == 2 && s.name == "POST /a2a")
        })
        .await;
    let ours: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.trace_id == TRACE).collect();
    assert!(
        ours.len() >= 8,
        "the caller's trace holds A's and B's spans: {spans:#?}"
    );

    // A: the request span is the caller's child; the turn, the model, the
    // tool call and the A2A call hang below it.
    let a_request = one(&spans, "delegator", "POST /conversations");
    assert_eq!(a_request.trace_id, TRACE);
    assert_eq!(a_request.parent_span_id, CALLER_SPAN);
    assert_eq!(a_request.kind, 2, "server");
    assert_eq!(a_request.attr("http.route"), Some("/conversations"));
    assert_eq!(a_request.attr("http.response.status_code"), Some("201"));
    let a_chat = spans
        .iter()
        .find(|s| s.service == "delegator" && s.name.starts_with("chat "))
        .expect("A's model call");
    assert_eq!(a_chat.attr("gen_ai.operation.name"), Some("chat"));
    assert_eq!(a_chat.attr("gen_ai.provider.name"), Some("scripted"));
    assert!(
        a_chat
            .attr("gen_ai.request.model")
            .is_some_and(|m| m.ends_with("delegator.yaml")),
        "{a_chat:?}"
    );
    assert_eq!(a_chat.kind, 3, "client");
    assert!(descends(&spans, a_chat, a_request));
    let a_tool = one(&spans, "delegator", "execute_tool downstream");
    assert_eq!(a_tool.attr("mcp.server.name"), Some("a2a"));
    assert!(descends(&spans, a_tool, a_request));
    // Our card lists A2A v1.0 JSON-RPC first: A speaks it to B.
    let a2a_call = one(&spans, "delegator", "a2a SendMessage");
    assert_eq!(a2a_call.kind, 3, "client");
    assert_eq!(a2a_call.parent_span_id, a_tool.span_id);

    // B: its request span is the child of A's A2A call; its MCP tool call
    // below it, with the MCP attributes.
    let b_request = spans
        .iter()
        .find(|s| s.service == "resource-agent" && s.kind == 2 && s.name == "POST /a2a")
        .unwrap_or_else(|| panic!("no server span of B in {spans:#?}"));
    assert_eq!(b_request.trace_id, TRACE);
    assert_eq!(b_request.parent_span_id, a2a_call.span_id);
    let b_tool = one(&spans, "resource-agent", "execute_tool resources_list");
    assert_eq!(b_tool.trace_id, TRACE);
    assert_eq!(b_tool.attr("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(b_tool.attr("gen_ai.tool.name"), Some("resources_list"));
    assert_eq!(b_tool.attr("mcp.method.name"), Some("tools/call"));
    assert_eq!(b_tool.attr("mcp.server.name"), Some("resources"));
    assert!(descends(&spans, b_tool, b_request));
    let b_chat = spans
        .iter()
        .find(|s| s.service == "resource-agent" && s.name.starts_with("chat "))
        .expect("B's model call");
    assert!(descends(&spans, b_chat, b_request));

    // No secret and, without telemetry.record_arguments, no argument in
    // any attribute.
    for span in &spans {
        let all = span
            .attributes
            .iter()
            .chain(span.events.iter().flat_map(|(_, a)| a.iter()));
        for (key, value) in all {
            assert!(!value.contains(KEY), "the key in {key} of {span:?}");
            assert!(
                !value.contains("list resources"),
                "an argument in {key} of {span:?}"
            );
        }
        assert!(span.attr("gen_ai.tool.call.arguments").is_none());
    }

    // A's log lines are JSON, the request's line with the caller's trace
    // (request lines are written in batches: waited for).
    let log = a.wait_log(r#""message":"request""#).await;
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let request_line = lines
        .iter()
        .find(|l| l["message"] == "request" && l["path"] == "/conversations")
        .unwrap_or_else(|| panic!("no request line in {log}"));
    assert_eq!(request_line["trace_id"], TRACE, "{request_line}");
    assert_eq!(request_line["status"], 201);
    assert!(
        request_line["session_id"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    assert!(!log.contains(KEY), "the key in A's log");
}

#[tokio::test]
async fn over_grpc_the_approval_is_in_both_traces_with_who_decided() {
    let receiver = OtlpReceiver::start_grpc().await;
    let (_dir, config) = config_with(
        "agent-resources.yaml",
        "telemetry:\n  record_arguments: true\n",
    );
    let agent = Agent::start(
        &config,
        exporting_to(
            &receiver,
            &[
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_SERVICE_NAME", "resources-under-test"),
            ],
        ),
    )
    .await;
    let (status, answer) = agent
        .post(
            "/conversations",
            json!({"message": "add resource traced with value 5"}),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let uuid = approval_uuid(&answer);
    let (status, decided) = agent.decide(&uuid, json!({"approved": true})).await;
    assert_eq!(status, 200, "{decided}");

    let spans = receiver
        .wait_for(
            "the approved call's span and both approval events",
            |spans| {
                let has_event = |name: &str| {
                    spans
                        .iter()
                        .any(|s| s.events.iter().any(|(event, _)| event == name))
                };
                // The decision's request span ends after the call's span, and
                // the batch exporter may send them in different exports.
                spans.iter().any(|s| s.name == "execute_tool resources_add")
                    && has_event("approval.requested")
                    && has_event("approval.decided")
            },
        )
        .await;
    assert!(spans.iter().all(|s| s.service == "resources-under-test"));
    let (requested, event) = with_event(&spans, "approval.requested");
    assert_eq!(event.get("approval.uuid"), Some(&uuid));
    assert_eq!(
        event.get("gen_ai.tool.name").map(String::as_str),
        Some("resources_add")
    );
    let (decided_in, event) = with_event(&spans, "approval.decided");
    assert_eq!(event.get("approval.uuid"), Some(&uuid));
    assert_eq!(
        event.get("approval.outcome").map(String::as_str),
        Some("approved")
    );
    assert_eq!(
        event.get("approval.channel").map(String::as_str),
        Some("rest")
    );
    assert!(
        event
            .get("approval.decided_by")
            .is_some_and(|by| !by.is_empty())
    );
    // The decision's request is a trace of its own, where the call ran.
    assert_ne!(decided_in.trace_id, requested.trace_id);
    let call = spans
        .iter()
        .find(|s| s.name == "execute_tool resources_add")
        .unwrap();
    assert_eq!(call.trace_id, decided_in.trace_id);
    // telemetry.record_arguments: the stored arguments are an attribute.
    let arguments: Value =
        serde_json::from_str(call.attr("gen_ai.tool.call.arguments").expect("arguments")).unwrap();
    assert_eq!(arguments, json!({"name": "traced", "value": 5}));
}

#[tokio::test]
async fn an_unsupported_protocol_stops_the_start_with_its_name() {
    let output = std::process::Command::new(asg_tests::binary("agent"))
        .args(["--config"])
        .arg(testdata("agent-resources.yaml"))
        .args(["--port", "0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .output()
        .expect("run the agent");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL=\"http/json\""),
        "{stderr}"
    );
}

/// An MCP server over HTTP gets the tool span's `traceparent` twice: as
/// the HTTP header and in the call's `_meta` (SEP-414). Multi-threaded:
/// the proxy answers while `Agent::start` blocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_mcp_server_gets_the_trace_as_a_header_and_in_meta() {
    let receiver = OtlpReceiver::start_http().await;
    let dir = tempfile::tempdir().unwrap();
    let tools_config = dir.path().join("mcp-resources.yaml");
    std::fs::write(
        &tools_config,
        format!(
            "host: 127.0.0.1\nport: 8090\ndb_path: {}\n",
            dir.path().join("resources.db").display()
        ),
    )
    .unwrap();
    let tools = ToolServer::start("mcp-resources", &tools_config, 0);
    let proxy = RecordingProxy::start(&tools.url).await;
    let config = dir.path().join("agent.yaml");
    std::fs::write(
        &config,
        format!(
            "name: http-tools\nprompt: You are a resource manager.\nhost: 127.0.0.1\n\
             llm:\n  model: scripted:{}\nmcp_servers:\n  - name: resources\n    url: {}/mcp\n",
            testdata("scripted/resources.yaml").display(),
            proxy.url
        ),
    )
    .unwrap();
    let agent = Agent::start(&config, exporting_to(&receiver, &[])).await;
    let (status, answer) = agent
        .post_with(
            "/conversations",
            json!({"message": "list resources"}).to_string(),
            &[("traceparent", &format!("00-{TRACE}-{CALLER_SPAN}-01"))],
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let spans = receiver
        .wait_for("the tool call's span", |spans| {
            spans
                .iter()
                .any(|s| s.name == "execute_tool resources_list")
        })
        .await;
    let tool_span = one(&spans, "http-tools", "execute_tool resources_list");
    assert_eq!(tool_span.trace_id, TRACE);
    let expected = format!("00-{TRACE}-{}-01", tool_span.span_id);
    let calls: Vec<_> = proxy
        .requests()
        .into_iter()
        .filter(|r| r.body.contains("\"tools/call\""))
        .collect();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let header = calls[0]
        .headers
        .iter()
        .find(|(name, _)| name == "traceparent")
        .map(|(_, value)| value.clone());
    assert_eq!(header.as_deref(), Some(expected.as_str()), "{:?}", calls[0]);
    let body: Value = serde_json::from_str(&calls[0].body).unwrap();
    assert_eq!(body["params"]["_meta"]["traceparent"], expected, "{body}");
}
