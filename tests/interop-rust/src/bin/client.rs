//! `a2a-rust-client BASE_URL API_KEY`: the official Rust SDK's client
//! (`a2a-client-lf`, protocol v1.0 only) against a running agent with
//! `testdata/agent-resources.yaml` (the resource manager on the scripted
//! model), as the principal whose key is API_KEY (sent as `X-API-Key`).
//!
//! It resolves the card, then on each binding the SDK supports (JSON-RPC
//! and HTTP+JSON, chosen by the SDK's own factory from
//! `supportedInterfaces`) sends, gets, lists, asks for and decides
//! approvals, cancels, streams and subscribes. It reports what it saw and
//! judges nothing: one JSON object per line, `{"binding", "step", ...}`,
//! with the task's state, texts and data parts, or `"error": {"code",
//! "message"}` when the SDK returned an error. The Rust test
//! (`tests/tests/a2a_v1_rust_sdk.rs`) asserts on the lines. A step whose
//! result the next ones need ends that binding with a line `"step":
//! "aborted"`; the last line is `{"step": "done"}`. Exit status 2 only for
//! bad arguments or an unreadable card.

use a2a::{
    A2AError, AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part,
    PartContent, Role, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, TRANSPORT_PROTOCOL_HTTP_JSON, TRANSPORT_PROTOCOL_JSONRPC, Task,
};
use a2a_client::agent_card::AgentCardResolver;
use a2a_client::auth::AuthInterceptor;
use a2a_client::{A2AClient, A2AClientFactory, Transport};
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;

type Client = A2AClient<Box<dyn Transport>>;

/// One binding's run: its name in the output and the resource names it uses.
struct Run {
    binding: &'static str,
    name: &'static str,
    client: Client,
}

impl Run {
    /// Prints one line: `fields` with the binding and the step.
    fn report(&self, step: &str, mut fields: Value) {
        fields["binding"] = json!(self.binding);
        fields["step"] = json!(step);
        println!("{fields}");
    }
}

fn error_json(error: &A2AError) -> Value {
    json!({"error": {"code": error.code, "message": error.message}})
}

fn texts(parts: &[Part]) -> Vec<String> {
    parts
        .iter()
        .filter_map(|p| p.as_text().map(str::to_string))
        .collect()
}

fn data(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|p| match &p.content {
            PartContent::Data(value) => Some(value.clone()),
            _ => None,
        })
        .collect()
}

fn state(state: &a2a::TaskState) -> Value {
    serde_json::to_value(state).unwrap_or(Value::Null)
}

/// What a test needs of a task.
fn task_json(task: &Task) -> Value {
    let message = task.status.message.as_ref();
    let artifacts: Vec<String> = task
        .artifacts
        .iter()
        .flatten()
        .flat_map(|a| texts(&a.parts))
        .collect();
    let history = task.history.as_ref();
    json!({
        "task": task.id,
        "contextId": task.context_id,
        "state": state(&task.status.state),
        "statusText": message.map(|m| texts(&m.parts)).unwrap_or_default(),
        "statusData": message.map(|m| data(&m.parts)).unwrap_or_default(),
        "artifact": artifacts.join("\n"),
        "historyRoles": history.map(|h| h.iter().map(|m| json!(m.role)).collect::<Vec<_>>()),
    })
}

/// A user message, continuing `task` when given.
fn message(parts: Vec<Part>, task: Option<&Task>) -> SendMessageRequest {
    let mut message = Message::new(Role::User, parts);
    message.task_id = task.map(|t| t.id.clone());
    message.context_id = task.map(|t| t.context_id.clone());
    SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

fn text(text: &str) -> Vec<Part> {
    vec![Part::text(text)]
}

fn decision(approved: bool, uuid: &Value) -> Vec<Part> {
    vec![Part::data(
        json!({"approved": approved, "approval_uuid": uuid, "reason": "rust sdk test"}),
    )]
}

/// SendMessage; reports the task (or the error) under `step`.
async fn send(run: &Run, step: &str, parts: Vec<Part>, task: Option<&Task>) -> Option<Task> {
    match run.client.send_message(&message(parts, task)).await {
        Ok(SendMessageResponse::Task(task)) => {
            run.report(step, task_json(&task));
            Some(task)
        }
        Ok(SendMessageResponse::Message(m)) => {
            run.report(step, json!({"message": texts(&m.parts)}));
            None
        }
        Err(error) => {
            run.report(step, error_json(&error));
            None
        }
    }
}

/// GetTask; reports the task or the error under `step`.
async fn get(run: &Run, step: &str, id: &str, history_length: Option<i32>) {
    let request = GetTaskRequest {
        id: id.to_string(),
        history_length,
        tenant: None,
    };
    match run.client.get_task(&request).await {
        Ok(task) => run.report(step, task_json(&task)),
        Err(error) => run.report(step, error_json(&error)),
    }
}

/// The approval data part's uuid of a waiting task (null if none).
fn approval_uuid(task: &Task) -> Value {
    task_json(task)["statusData"][0]["approval_uuid"].clone()
}

/// Send and get; an approval asked, nudged, approved (twice) and rejected.
async fn approvals(run: &Run) -> Option<()> {
    let listed = send(run, "send", text("list all resources"), None).await?;
    get(run, "get", &listed.id, Some(1)).await;
    let add = format!("add resource {} with value 7", run.name);
    let asked = send(run, "ask", text(&add), None).await?;
    let uuid = approval_uuid(&asked);
    send(run, "nudge", text("what happens now?"), Some(&asked)).await?;
    send(run, "approve", decision(true, &uuid), Some(&asked)).await?;
    send(run, "approve_again", decision(true, &uuid), Some(&asked)).await;
    get(run, "get_approved", &asked.id, None).await;
    let add = format!("add resource {}-refused with value 8", run.name);
    let refused = send(run, "ask_refused", text(&add), None).await?;
    let uuid = approval_uuid(&refused);
    send(run, "reject", decision(false, &uuid), Some(&refused)).await?;
    let add = format!("add resource {}-wrong with value 9", run.name);
    let wrong = send(run, "ask_wrong", text(&add), None).await?;
    let other = json!(uuid::Uuid::new_v4().to_string());
    send(run, "wrong_uuid", decision(true, &other), Some(&wrong)).await;
    get(run, "get_wrong", &wrong.id, None).await;
    Some(())
}

/// Two pages of ListTasks.
async fn listing(run: &Run) -> Option<()> {
    let mut token = None;
    for step in ["list_page1", "list_page2"] {
        let request = ListTasksRequest {
            context_id: None,
            status: None,
            page_size: Some(2),
            page_token: token.take(),
            history_length: None,
            status_timestamp_after: None,
            include_artifacts: None,
            tenant: None,
        };
        match run.client.list_tasks(&request).await {
            Ok(page) => {
                let ids: Vec<&str> = page.tasks.iter().map(|t| t.id.as_str()).collect();
                run.report(
                    step,
                    json!({"ids": ids, "nextPageToken": page.next_page_token,
                    "totalSize": page.total_size, "pageSize": page.page_size}),
                );
                token = Some(page.next_page_token).filter(|t| !t.is_empty());
            }
            Err(error) => {
                run.report(step, error_json(&error));
                return None;
            }
        }
    }
    Some(())
}

/// CancelTask on a waiting task, twice; GetTask of an unknown task.
async fn cancel(run: &Run) -> Option<()> {
    let add = format!("add resource {}-canceled with value 9", run.name);
    let asked = send(run, "ask_canceled", text(&add), None).await?;
    for step in ["cancel", "cancel_again"] {
        let request = CancelTaskRequest {
            id: asked.id.clone(),
            metadata: None,
            tenant: None,
        };
        match run.client.cancel_task(&request).await {
            Ok(task) => run.report(step, task_json(&task)),
            Err(error) => run.report(step, error_json(&error)),
        }
    }
    get(run, "get_canceled", &asked.id, None).await;
    get(run, "get_unknown", &uuid::Uuid::new_v4().to_string(), None).await;
    Some(())
}

/// Reads a stream to its end: the event kinds, the states, the last
/// status message's data, the artifact texts and the task id.
async fn drain(
    run: &Run,
    step: &str,
    stream: Result<a2a_client::BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError>,
) -> Option<Value> {
    let mut stream = match stream {
        Ok(stream) => stream,
        Err(error) => {
            run.report(step, error_json(&error));
            return None;
        }
    };
    let (mut kinds, mut states, mut artifact, mut task, mut status_data) =
        (vec![], vec![], vec![], Value::Null, json!([]));
    let mut failure = Value::Null;
    while let Some(event) = stream.next().await {
        match event {
            Ok(StreamResponse::Task(t)) => {
                kinds.push("task");
                states.push(state(&t.status.state));
                task = json!(t.id);
            }
            Ok(StreamResponse::Message(_)) => kinds.push("message"),
            Ok(StreamResponse::StatusUpdate(u)) => {
                kinds.push("statusUpdate");
                states.push(state(&u.status.state));
                task = json!(u.task_id);
                if let Some(m) = &u.status.message {
                    status_data = json!(data(&m.parts));
                }
            }
            Ok(StreamResponse::ArtifactUpdate(u)) => {
                kinds.push("artifactUpdate");
                artifact.extend(texts(&u.artifact.parts));
            }
            Err(error) => {
                failure = error_json(&error)["error"].clone();
                break;
            }
        }
    }
    let seen = json!({"kinds": kinds, "states": states, "task": task, "statusData": status_data,
        "artifact": artifact.join("\n"), "error": failure});
    run.report(step, seen.clone());
    Some(seen)
}

/// SendStreamingMessage: a listing, an approval asked and approved in
/// streams, then SubscribeToTask on the finished listing (refused since
/// it is finished; the test checks the error).
async fn streaming(run: &Run) -> Option<()> {
    let request = message(text("list all resources"), None);
    let listed = drain(
        run,
        "stream",
        run.client.send_streaming_message(&request).await,
    )
    .await?;
    let add = format!("add resource {}-streamed with value 5", run.name);
    let request = message(text(&add), None);
    let asked = drain(
        run,
        "stream_ask",
        run.client.send_streaming_message(&request).await,
    )
    .await?;
    let id = asked["task"].as_str()?.to_string();
    let uuid = asked["statusData"][0]["approval_uuid"].clone();
    let mut request = message(decision(true, &uuid), None);
    request.message.task_id = Some(id);
    let stream = run.client.send_streaming_message(&request).await;
    drain(run, "stream_approve", stream).await?;
    let request = SubscribeToTaskRequest {
        id: listed["task"].as_str()?.to_string(),
        tenant: None,
    };
    drain(
        run,
        "subscribe",
        run.client.subscribe_to_task(&request).await,
    )
    .await;
    send(run, "list_final", text("list all resources"), None).await?;
    Some(())
}

/// A client for `binding` from the SDK's factory (that binding preferred,
/// the key on every call); reports the interface it chose.
async fn connect(
    card: &AgentCard,
    key: &str,
    binding: &'static str,
    name: &'static str,
) -> Option<Run> {
    let factory = A2AClientFactory::builder()
        .preferred_bindings(vec![binding.to_string()])
        .with_interceptor(Arc::new(AuthInterceptor::custom("X-API-Key", key)))
        .build();
    let created = factory.create_from_card_with_interface(card).await;
    let report = |fields: Value| {
        let mut fields = fields;
        fields["binding"] = json!(binding);
        fields["step"] = json!("connect");
        println!("{fields}");
    };
    match created {
        Ok((client, iface)) => {
            report(
                json!({"url": iface.url, "protocolBinding": iface.protocol_binding,
                "protocolVersion": iface.protocol_version}),
            );
            Some(Run {
                binding,
                name,
                client,
            })
        }
        Err(error) => {
            report(error_json(&error));
            None
        }
    }
}

async fn run_binding(card: &AgentCard, key: &str, binding: &'static str, name: &'static str) {
    let Some(run) = connect(card, key, binding, name).await else {
        return;
    };
    let done = async {
        approvals(&run).await?;
        listing(&run).await?;
        cancel(&run).await?;
        streaming(&run).await
    }
    .await;
    if done.is_none() {
        run.report("aborted", json!({}));
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, key] = args.as_slice() else {
        eprintln!("usage: a2a-rust-client BASE_URL API_KEY");
        std::process::exit(2)
    };
    let card = match AgentCardResolver::new(None).resolve(base).await {
        Ok(card) => card,
        Err(error) => {
            println!(
                "{}",
                json!({"step": "card", "error": {"code": error.code, "message": error.message}})
            );
            std::process::exit(2)
        }
    };
    let interfaces: Vec<Value> = card
        .supported_interfaces
        .iter()
        .map(|i| json!([i.protocol_binding, i.protocol_version, i.url]))
        .collect();
    println!(
        "{}",
        json!({"step": "card", "name": card.name, "interfaces": interfaces,
            "streaming": card.capabilities.streaming})
    );
    run_binding(&card, key, TRANSPORT_PROTOCOL_JSONRPC, "rsrpc").await;
    run_binding(&card, key, TRANSPORT_PROTOCOL_HTTP_JSON, "rsrest").await;
    println!("{}", json!({"step": "done"}));
}
