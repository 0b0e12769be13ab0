//! `a2a-rust-asker --port PORT --log FILE [--binding jsonrpc|http_json|both]`:
//! an "asking" sub-agent built on the official Rust SDK's server side
//! (`a2a-server-lf`: `DefaultRequestHandler`, its in-memory task store and
//! its JSON-RPC and HTTP+JSON routers), protocol v1.0 only.
//!
//! The contract (the same for the Python and JS askers):
//! - prints `READY` on stdout once it listens on 127.0.0.1:PORT; the card
//!   is at `/.well-known/agent-card.json` with one interface per binding
//!   served (JSON-RPC at `/jsonrpc`, HTTP+JSON under `/rest`), absolute
//!   URLs, `protocolVersion` "1.0";
//! - a new message with text T leaves its task in
//!   `TASK_STATE_INPUT_REQUIRED`; the status message has the text part
//!   `Approve delete_file for T?` and a data part `{"approval_uuid": fresh,
//!   "tool_name": "delete_file", "tool_args": {"path": T}, "description":
//!   "delete T"}`;
//! - a continuation carrying `{"approved": true, "approval_uuid": U}` with
//!   the matching U completes the task with an artifact `deleted T` and
//!   logs `executed delete_file T`; `approved: false` completes with `kept
//!   T` and logs `rejected delete_file T`; a wrong or missing uuid asks
//!   again (still input-required) and logs nothing; `CancelTask` cancels
//!   a waiting task (nothing logged); `GetTask`, `ListTasks` and the
//!   streaming methods are the SDK's own;
//! - every HTTP request logs `auth <Authorization header or ->`.
//!
//! The SDK's JSON-RPC router refuses a request without `A2A-Version: 1.0`
//! (an absent header means 0.3, which it does not serve).

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};

use a2a::{
    A2AError, AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Artifact, Message, Part,
    PartContent, Role, StreamResponse, TRANSPORT_PROTOCOL_HTTP_JSON, TRANSPORT_PROTOCOL_JSONRPC,
    Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::agent_card::agent_card_router;
use a2a_server::jsonrpc::jsonrpc_router;
use a2a_server::rest::rest_router;
use a2a_server::{
    AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore, StaticAgentCard,
};
use futures::stream::BoxStream;
use serde_json::{Value, json};

/// The log file, shared by the request layer and the executor.
#[derive(Clone)]
struct Log(Arc<Mutex<File>>);

impl Log {
    fn open(path: &str) -> std::io::Result<Log> {
        let file = File::options().create(true).append(true).open(path)?;
        Ok(Log(Arc::new(Mutex::new(file))))
    }

    /// Appends one line (a poisoned lock still writes: the file is fine).
    fn line(&self, text: &str) {
        let mut file = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let _ = writeln!(file, "{text}");
        let _ = file.flush();
    }
}

/// The command line.
struct Options {
    port: u16,
    log: String,
    jsonrpc: bool,
    http_json: bool,
}

fn options() -> Result<Options, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let port = value("--port")
        .ok_or("--port is required")?
        .parse()
        .map_err(|e| format!("--port: {e}"))?;
    let log = value("--log").ok_or("--log is required")?;
    let binding = value("--binding").unwrap_or_else(|| "both".into());
    let (jsonrpc, http_json) = match binding.as_str() {
        "jsonrpc" => (true, false),
        "http_json" => (false, true),
        "both" => (true, true),
        other => return Err(format!("--binding {other}: jsonrpc, http_json or both")),
    };
    Ok(Options {
        port,
        log,
        jsonrpc,
        http_json,
    })
}

/// The v1.0 card: one interface per binding served.
fn card(options: &Options) -> AgentCard {
    let base = format!("http://127.0.0.1:{}", options.port);
    let mut interfaces = Vec::new();
    if options.jsonrpc {
        interfaces.push(AgentInterface::new(
            format!("{base}/jsonrpc"),
            TRANSPORT_PROTOCOL_JSONRPC,
        ));
    }
    if options.http_json {
        interfaces.push(AgentInterface::new(
            format!("{base}/rest"),
            TRANSPORT_PROTOCOL_HTTP_JSON,
        ));
    }
    AgentCard {
        name: "rust-asker".into(),
        description: "Deletes a file after a human approved it (a2a-server-lf).".into(),
        version: "1.0.0".into(),
        supported_interfaces: interfaces,
        capabilities: capabilities(),
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: vec![AgentSkill {
            id: "delete_file".into(),
            name: "delete_file".into(),
            description: "Deletes the file named in the message, once approved.".into(),
            tags: vec!["files".into()],
            examples: None,
            input_modes: None,
            output_modes: None,
            security_requirements: None,
        }],
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes: None,
        security_requirements: None,
        signatures: None,
    }
}

fn capabilities() -> AgentCapabilities {
    AgentCapabilities {
        streaming: Some(true),
        push_notifications: Some(false),
        ..Default::default()
    }
}

/// The approval a task waits for: its uuid and the file's path.
struct Pending {
    uuid: String,
    path: String,
}

/// The data parts of a message, as JSON objects.
fn data_parts(message: &Message) -> impl Iterator<Item = &Value> {
    message.parts.iter().filter_map(|part| match &part.content {
        PartContent::Data(value) => Some(value),
        _ => None,
    })
}

/// The approval the stored task waits for, if it is input-required.
fn pending(task: Option<&Task>) -> Option<Pending> {
    let task = task.filter(|t| t.status.state == TaskState::InputRequired)?;
    let asked =
        data_parts(task.status.message.as_ref()?).find(|d| d.get("approval_uuid").is_some())?;
    Some(Pending {
        uuid: asked["approval_uuid"].as_str()?.to_string(),
        path: asked["tool_args"]["path"].as_str()?.to_string(),
    })
}

fn status(ctx: &ExecutorContext, state: TaskState, message: Option<Message>) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus {
            state,
            message,
            timestamp: None,
        },
        metadata: None,
    })
}

/// The agent's question: text and the approval data part.
fn question(ctx: &ExecutorContext, path: &str, uuid: &str) -> Message {
    let data = json!({"approval_uuid": uuid, "tool_name": "delete_file",
        "tool_args": {"path": path}, "description": format!("delete {path}")});
    let mut message = Message::new(
        Role::Agent,
        vec![
            Part::text(format!("Approve delete_file for {path}?")),
            Part::data(data),
        ],
    );
    message.task_id = Some(ctx.task_id.clone());
    message.context_id = Some(ctx.context_id.clone());
    message
}

/// A new task: the task itself, then the question.
fn ask(ctx: &ExecutorContext) -> Vec<StreamResponse> {
    let path: String = ctx
        .message
        .iter()
        .flat_map(|m| m.parts.iter().filter_map(Part::as_text))
        .collect::<Vec<_>>()
        .join(" ");
    let task = Task {
        id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: None,
        },
        artifacts: None,
        history: ctx.message.clone().map(|m| vec![m]),
        metadata: None,
    };
    let uuid = uuid::Uuid::new_v4().to_string();
    let question = question(ctx, &path, &uuid);
    vec![
        StreamResponse::Task(task),
        status(ctx, TaskState::InputRequired, Some(question)),
    ]
}

/// A continuation of a waiting task: decided (logged, completed) when it
/// carries a decision for the pending uuid, else asked again.
fn decide(log: &Log, ctx: &ExecutorContext, pending: Pending) -> Vec<StreamResponse> {
    let decision = ctx
        .message
        .as_ref()
        .and_then(|m| data_parts(m).find(|d| d.get("approved").is_some()).cloned());
    let approved = decision.as_ref().and_then(|d| {
        let uuid = d.get("approval_uuid").and_then(Value::as_str);
        (uuid == Some(pending.uuid.as_str()))
            .then(|| d["approved"].as_bool())
            .flatten()
    });
    let Some(approved) = approved else {
        let again = question(ctx, &pending.path, &pending.uuid);
        return vec![status(ctx, TaskState::InputRequired, Some(again))];
    };
    let (verb, answer) = if approved {
        ("executed", format!("deleted {}", pending.path))
    } else {
        ("rejected", format!("kept {}", pending.path))
    };
    log.line(&format!("{verb} delete_file {}", pending.path));
    let artifact = TaskArtifactUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        artifact: Artifact {
            artifact_id: a2a::new_artifact_id(),
            name: Some("result".into()),
            description: None,
            parts: vec![Part::text(answer)],
            metadata: None,
            extensions: None,
        },
        append: None,
        last_chunk: Some(true),
        metadata: None,
    };
    vec![
        StreamResponse::ArtifactUpdate(artifact),
        status(ctx, TaskState::Completed, None),
    ]
}

/// The executor behind `DefaultRequestHandler`.
struct Asker {
    log: Log,
}

impl AgentExecutor for Asker {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let continues = ctx.message.as_ref().is_some_and(|m| m.task_id.is_some());
        let events = match pending(ctx.stored_task.as_ref()) {
            Some(pending) if continues => decide(&self.log, &ctx, pending),
            _ => ask(&ctx),
        };
        Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let canceled = status(&ctx, TaskState::Canceled, None);
        Box::pin(futures::stream::iter([Ok(canceled)]))
    }
}

/// Logs `auth <Authorization or ->` for every request.
async fn log_auth(
    axum::extract::State(log): axum::extract::State<Log>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let auth = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_string();
    log.line(&format!("auth {auth}"));
    next.run(request).await
}

fn app(options: &Options, log: &Log) -> axum::Router {
    let handler = DefaultRequestHandler::new(Asker { log: log.clone() }, InMemoryTaskStore::new())
        .with_capabilities(capabilities());
    let handler = Arc::new(handler);
    let mut app = agent_card_router(Arc::new(StaticAgentCard::new(card(options))));
    if options.jsonrpc {
        app = app.nest("/jsonrpc", jsonrpc_router(handler.clone()));
    }
    if options.http_json {
        app = app.nest("/rest", rest_router(handler));
    }
    app.layer(axum::middleware::from_fn_with_state(log.clone(), log_auth))
}

#[tokio::main]
async fn main() {
    let options = options().unwrap_or_else(|why| {
        eprintln!("a2a-rust-asker: {why}");
        std::process::exit(2)
    });
    let log = Log::open(&options.log).unwrap_or_else(|e| {
        eprintln!("a2a-rust-asker: cannot open {}: {e}", options.log);
        std::process::exit(2)
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
        .await
        .unwrap_or_else(|e| {
            eprintln!(
                "a2a-rust-asker: cannot listen on port {}: {e}",
                options.port
            );
            std::process::exit(1)
        });
    let app = app(&options, &log);
    println!("READY");
    if let Err(e) = axum::serve(listener, app).await {
        eprintln!("a2a-rust-asker: {e}");
        std::process::exit(1);
    }
}
