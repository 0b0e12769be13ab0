//! The A2A server: the agent card routes and `POST /a2a`, a JSON-RPC 2.0
//! endpoint over the same engine as the REST API, so both views of a
//! conversation always agree (task id = conversation id). `/a2a` serves
//! A2A v0.3 (`message/send`, …) and, by method name, v1.0 (`SendMessage`,
//! …: [`v1`], which also holds the v1.0 HTTP+JSON binding). The
//! `A2A-Version` request header is checked (0.3 or 1.0, else -32009) and
//! every answer names the version it served.
//!
//! The body is parsed by hand so every failure gets its JSON-RPC code
//! (HTTP status stays 200): -32700 not JSON, -32600 not a request,
//! -32601 unknown method, -32602 bad params, -32001 unknown task (also
//! for an id that is not a UUID: nothing else reaches the store),
//! -32002 not cancelable, -32003 push notifications not enabled (a
//! router without a push service), -32005 unsupported
//! content, -32603 internal. A model failure is not an error: the task
//! comes back `failed` with the reason in its status message.
//!
//! Context ids: a task's `contextId` is the client's when it sent one,
//! else the conversation id. The client's id is kept with the
//! conversation (`a2a_context_id`, saved by the turn), so every replica
//! reports it, also after a restart.

use std::sync::Arc;

use asg_shared::a2a::{A2aMessage, JsonRpcResponse, Part, Task, TaskState, error_codes};
use asg_shared::{ApprovalState, Conversation, ConversationStatus, PendingApproval, QuestionReply};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::Value;
use uuid::Uuid;

use crate::a2a::mapping;
use crate::api::AppState;
use crate::api::extract::{Ctx, session_from_headers};
use crate::api::logging::ConversationTag;
use crate::context::RequestContext;
use crate::engine::{Command, Engine, EngineError, MAX_MESSAGE_BYTES, TurnOutcome};
pub mod card;
mod push;
mod rpc;
pub mod stream;
pub mod v1;

pub(crate) use rpc::{
    Decision, RpcError, error_response, parse_envelope, parse_query, parse_send, result_response,
    typed,
};

/// Longest context id accepted.
const MAX_CONTEXT_ID: usize = 256;

/// The card routes and the JSON-RPC endpoint.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(card::agent_card_handler),
        )
        .route("/.well-known/agent.json", get(card::agent_card_handler))
        .route(card::RPC_PATH, post(rpc))
        .merge(v1::rest::routes())
}

/// Which wire a call answers on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    /// A2A v0.3 JSON-RPC.
    V03,
    /// A2A v1.0 JSON-RPC.
    V1Rpc,
    /// A2A v1.0 HTTP+JSON.
    V1Rest,
}

/// What a JSON-RPC call needs besides its params.
#[derive(Clone)]
pub(crate) struct Call {
    pub state: AppState,
    pub ctx: RequestContext,
    /// The request carried its own `X-Session-ID`.
    pub has_session: bool,
    /// The request id, echoed in every response.
    pub id: Value,
    /// Push notification configs (absent in routers built without one).
    pub push: Option<crate::notify::a2a_push::PushService>,
    /// The wire to answer on.
    pub wire: Wire,
}

async fn rpc(
    State(state): State<AppState>,
    push: Option<Extension<crate::notify::a2a_push::PushService>>,
    Ctx(ctx): Ctx,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (id, method, params) = match parse_envelope(&body) {
        Ok(request) => request,
        Err((id, error)) => {
            let response = error_answer(id, error);
            return counted("invalid", "0.3", response);
        }
    };
    let v1 = v1::is_method(&method);
    let version = if v1 { v1::PROTOCOL_VERSION } else { "0.3" };
    if let Err(error) = v1::check_version(&headers) {
        let response = error_answer(id, error);
        return v1::versioned(counted("invalid", version, response), version);
    }
    let label = method_label(&method);
    // Boxed: the methods' futures are large, and a connection's task
    // must not carry them on its stack.
    let response = if v1 {
        let call = call_for(state, push, ctx, &headers, id, Wire::V1Rpc);
        Box::pin(v1::dispatch(call, &method, params)).await
    } else {
        Box::pin(dispatch(state, push, ctx, &headers, id, method, params)).await
    };
    v1::versioned(counted(label, version, response), version)
}

/// The call a request makes, on `wire`.
pub(crate) fn call_for(
    state: AppState,
    push: Option<Extension<crate::notify::a2a_push::PushService>>,
    ctx: RequestContext,
    headers: &HeaderMap,
    id: Value,
    wire: Wire,
) -> Call {
    Call {
        state,
        ctx: RequestContext { via: "a2a", ..ctx },
        has_session: session_from_headers(headers).is_some(),
        id,
        push: push.map(|Extension(push)| push),
        wire,
    }
}

/// The v0.3 JSON-RPC method names (the v1.0 ones are [`v1::METHODS`]).
const V03_METHODS: [&str; 9] = [
    "message/send",
    "message/stream",
    "tasks/resubscribe",
    "tasks/get",
    "tasks/cancel",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
];

/// The metrics label of a method: its name when this server answers it
/// (v1.0 or v0.3), else `unknown` (a caller chooses the method name: it
/// never becomes a label by itself).
fn method_label(method: &str) -> &'static str {
    v1::METHODS
        .iter()
        .chain(V03_METHODS.iter())
        .find(|known| **known == method)
        .copied()
        .unwrap_or("unknown")
}

/// Whether a JSON-RPC answer was an error (streams carry none).
#[derive(Clone, Copy)]
pub(crate) struct RpcOutcome {
    pub error: bool,
}

/// Counts the request in the metrics by method and result.
pub(crate) fn counted(method: &'static str, version: &'static str, response: Response) -> Response {
    let result = match response.extensions().get::<RpcOutcome>() {
        Some(RpcOutcome { error: true }) => "error",
        Some(RpcOutcome { error: false }) => "ok",
        None => "stream",
    };
    crate::metrics::metrics().a2a_request(method, version, result);
    response
}

async fn dispatch(
    state: AppState,
    push: Option<Extension<crate::notify::a2a_push::PushService>>,
    ctx: RequestContext,
    headers: &HeaderMap,
    id: Value,
    method: String,
    params: Option<Value>,
) -> Response {
    let call = call_for(state, push, ctx, headers, id.clone(), Wire::V03);
    // Each method's future on the heap: held inline, the largest (about
    // 30 KB) made this one as large, and every move of it copied that.
    let result = match method.as_str() {
        "message/send" => Box::pin(message_send(&call, params)).await,
        "message/stream" => return Box::pin(stream::message_stream(call, params)).await,
        "tasks/resubscribe" => return Box::pin(stream::resubscribe(call, params)).await,
        "tasks/get" => Box::pin(tasks_get(&call, params)).await,
        "tasks/cancel" => Box::pin(tasks_cancel(&call, params)).await,
        "tasks/pushNotificationConfig/set"
        | "tasks/pushNotificationConfig/get"
        | "tasks/pushNotificationConfig/list"
        | "tasks/pushNotificationConfig/delete" => {
            return match Box::pin(push::dispatch(&call, &method, params)).await {
                Ok((conversation, result)) => {
                    json_response(result_response(id, &result), Some(tag(&conversation)))
                }
                Err(error) => error_answer(id, error),
            };
        }
        other => Err(RpcError::new(
            error_codes::METHOD_NOT_FOUND,
            format!(
                "method {other:?} not found; supported: {}",
                V03_METHODS.join(", ")
            ),
        )),
    };
    match result {
        Ok(conversation) => {
            let tag = tag(&conversation.0);
            json_response(result_response(id, &conversation.1), Some(tag))
        }
        Err(error) => error_answer(id, error),
    }
}

pub(crate) type Answer = Result<(Arc<Conversation>, Task), RpcError>;

/// What a `message/send` asks for.
pub(crate) enum Action {
    /// A new conversation with this first message.
    Create(String),
    /// A new user turn in a conversation.
    Send(Uuid, String),
    /// A decision on the pending approval (second) of a conversation.
    Decide(Uuid, Uuid, Decision),
    /// An answer to the pending question (second) of a conversation.
    Answer(Uuid, Uuid, QuestionReply),
    /// Text for a conversation that waits for this decision: not
    /// processed.
    StillWaiting(Box<PendingApproval>),
}

impl Action {
    /// The conversation it continues, if any.
    pub(crate) fn task(&self) -> Option<Uuid> {
        match self {
            Action::Create(_) => None,
            Action::Send(id, _) | Action::Decide(id, _, _) | Action::Answer(id, _, _) => Some(*id),
            Action::StillWaiting(pending) => Some(pending.conversation_id),
        }
    }
}

/// Decides what a message means; `call.ctx` takes the conversation's
/// session id when the request brought none.
pub(crate) async fn prepare(
    call: &mut Call,
    message: &A2aMessage,
) -> Result<(Action, Option<String>), RpcError> {
    let client_context = client_context(message)?;
    // A turn keeps it with the conversation (if it has none yet).
    call.ctx.a2a_context = client_context.clone();
    let text = checked_text(message)?;
    let decision = rpc::decision(message)
        .map_err(|e| RpcError::invalid_params(format!("params.message: {e}")))?;
    let reply = rpc::reply(message)
        .map_err(|e| RpcError::invalid_params(format!("params.message: {e}")))?;
    let Some(raw) = &message.task_id else {
        if text.trim().is_empty() {
            return Err(no_text(message));
        }
        return Ok((Action::Create(text), client_context));
    };
    let id = Uuid::parse_str(raw).map_err(|_| RpcError::task_not_found(raw))?;
    let conversation = stored_task(call, id).await?;
    let known = mapping::context_of(&conversation);
    check_context(client_context.as_deref(), &known, id)?;
    if !call.has_session {
        call.ctx.session_id = conversation.session_id.clone();
    }
    let said = Said {
        text,
        decision,
        reply,
    };
    let action = continue_action(&conversation, id, message, said)?;
    Ok((action, client_context.or(Some(known))))
}

/// The client's context id, if it sent a usable one.
fn client_context(message: &A2aMessage) -> Result<Option<String>, RpcError> {
    match &message.context_id {
        Some(c) if c.trim().is_empty() || c.len() > MAX_CONTEXT_ID => {
            Err(RpcError::invalid_params(format!(
                "params.message.contextId must be 1 to {MAX_CONTEXT_ID} characters"
            )))
        }
        other => Ok(other.clone()),
    }
}

/// The message's text, within the size limit.
fn checked_text(message: &A2aMessage) -> Result<String, RpcError> {
    let text = message.text();
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(RpcError::invalid_params(format!(
            "params.message text is {} bytes; the limit is {MAX_MESSAGE_BYTES}",
            text.len()
        )));
    }
    Ok(text)
}

/// The error for a message without text: unsupported content when it
/// only carries files, bad params otherwise.
fn no_text(message: &A2aMessage) -> RpcError {
    let only_files = message.parts.iter().all(|p| matches!(p, Part::File { .. }));
    if only_files {
        RpcError::new(
            error_codes::CONTENT_TYPE_NOT_SUPPORTED,
            "file parts are not supported; send a text part",
        )
    } else {
        RpcError::invalid_params(
            "params.message has no text: send a text part (or an approval data part to a waiting task)",
        )
    }
}

/// Refuses a client context id that differs from the one already known
/// for the task.
fn check_context(client_context: Option<&str>, known: &str, id: Uuid) -> Result<(), RpcError> {
    if let Some(context) = client_context
        && context != known
        && known != id.to_string()
    {
        return Err(RpcError::invalid_params(format!(
            "params.message.contextId {context:?} is not the context of task {id} ({known:?})"
        )));
    }
    Ok(())
}

/// What a continuation says: its text, and the decision or answer its
/// parts (or its whole text) carry.
struct Said {
    text: String,
    decision: Option<Decision>,
    reply: Option<rpc::Reply>,
}

/// What a message to an existing task asks for, given the task's state.
fn continue_action(
    conversation: &Conversation,
    id: Uuid,
    message: &A2aMessage,
    said: Said,
) -> Result<Action, RpcError> {
    let pending: Vec<&PendingApproval> = conversation.pending().iter().collect();
    let waiting = pending.iter().any(|p| p.state == ApprovalState::Pending);
    if waiting
        && conversation.status == ConversationStatus::WaitingApproval
        && let Some(action) = question_action(id, &pending, &said)?
    {
        return Ok(action);
    }
    if said.reply.is_some() {
        return Err(RpcError::invalid_params(format!(
            "task {id} is not waiting for an answer to a question; an approval is decided with a data part {{\"approved\": true|false}}"
        )));
    }
    let Said { text, decision, .. } = said;
    match (conversation.status, !waiting, decision) {
        (ConversationStatus::Completed | ConversationStatus::Canceled, _, _) => {
            Err(RpcError::invalid_params(format!(
                "task {id} is {} and takes no more messages; send a message without taskId to start a new task",
                mapping::task_state(conversation).as_str()
            )))
        }
        (ConversationStatus::WaitingApproval, false, decision) => {
            pending_action(id, &pending, decision)
        }
        (_, _, decision) if text.trim().is_empty() => Err(match decision {
            Some(_) => {
                RpcError::invalid_params(format!("task {id} is not waiting for an approval"))
            }
            None => no_text(message),
        }),
        _ => Ok(Action::Send(id, text)),
    }
}

/// The answer a continuation gives to a waiting question: the one it
/// names, else the only pending item (or the only question, for an
/// explicit answer). An answer is its data part, else its whole text;
/// `None` when the target is an approval.
fn question_action(
    id: Uuid,
    pending: &[&PendingApproval],
    said: &Said,
) -> Result<Option<Action>, RpcError> {
    let named = said
        .reply
        .as_ref()
        .and_then(|r| r.uuid.clone())
        .or_else(|| said.decision.as_ref().and_then(|d| d.approval_uuid.clone()));
    let questions: Vec<&&PendingApproval> = pending.iter().filter(|p| p.is_question()).collect();
    let target = match named {
        Some(named) => pending
            .iter()
            .find(|p| Uuid::parse_str(named.trim()).is_ok_and(|u| u == p.uuid)),
        None if pending.len() == 1 => pending.first(),
        None if said.reply.is_some() && questions.len() == 1 => questions.first().copied(),
        None if said.reply.is_some() => {
            return Err(RpcError::invalid_params(format!(
                "task {id} waits for {} questions; name the one you answer with approval_uuid in the data part",
                questions.len()
            )));
        }
        None => None,
    };
    let Some(question) = target.filter(|p| p.is_question()) else {
        return Ok(None);
    };
    let reply = match (&said.reply, said.text.trim()) {
        (Some(reply), _) => reply.reply.clone(),
        (None, "") => return Ok(Some(Action::StillWaiting(Box::new((*question).clone())))),
        (None, text) => QuestionReply::Accept {
            answer: Value::from(text),
        },
    };
    Ok(Some(Action::Answer(id, question.uuid, reply)))
}

/// What a message to a task waiting for decisions asks for: the decision
/// on the approval it names (or on the only one), or nothing (its text is
/// not processed).
fn pending_action(
    id: Uuid,
    pending: &[&PendingApproval],
    decision: Option<Decision>,
) -> Result<Action, RpcError> {
    let Some(d) = decision else {
        return match pending.first() {
            Some(first) => Ok(Action::StillWaiting(Box::new((*first).clone()))),
            None => Err(RpcError::invalid_params(format!(
                "task {id} is not waiting for an approval"
            ))),
        };
    };
    let listed = || {
        pending
            .iter()
            .map(|p| p.uuid.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let chosen = match d.approval_uuid.as_deref() {
        Some(named) => pending
            .iter()
            .find(|p| uuid::Uuid::parse_str(named.trim()).is_ok_and(|u| u == p.uuid))
            .ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "approval_uuid {named:?} is not a pending approval of task {id} ({})",
                    listed()
                ))
            })?,
        // Counting approvals being executed: a decision that names none
        // must never land on another than the client saw.
        None if pending.len() > 1 => {
            return Err(RpcError::invalid_params(format!(
                "task {id} has {} approvals ({}); name the one you decide with approval_uuid in a data part",
                pending.len(),
                listed()
            )));
        }
        None => pending.first().ok_or_else(|| {
            RpcError::invalid_params(format!("task {id} is not waiting for an approval"))
        })?,
    };
    Ok(Action::Decide(id, chosen.uuid, d))
}

/// Runs an action that needs the engine.
pub(crate) async fn execute(
    engine: &Engine,
    ctx: &RequestContext,
    action: Action,
) -> Result<TurnOutcome, EngineError> {
    match action {
        Action::Create(text) => engine.create(ctx, Some(text)).await,
        Action::Send(id, text) => engine.send(id, ctx, text).await,
        Action::Decide(_, uuid, d) => {
            engine
                .resolve_approval(uuid, ctx, d.approve, d.reason)
                .await
        }
        Action::Answer(_, uuid, reply) => engine.answer_question(uuid, ctx, reply).await,
        Action::StillWaiting(pending) => Err(EngineError::WaitingApproval(pending)),
    }
}

/// The conversation a finished turn left behind (and whether the message
/// was left unprocessed because a decision is awaited), or the error to
/// answer. A failed model is a `failed` task, not an error.
pub(crate) async fn settled(
    engine: &Engine,
    result: Result<TurnOutcome, EngineError>,
) -> Result<(Arc<Conversation>, bool), RpcError> {
    match result {
        Ok(outcome) => Ok((outcome.conversation, false)),
        Err(EngineError::Llm { conversation, .. } | EngineError::SubAgent { conversation, .. }) => {
            Ok((conversation, false))
        }
        Err(EngineError::WaitingApproval(pending)) => engine
            .get(pending.conversation_id)
            .await
            .map_err(|e| engine_error(&e))?
            .map(|c| (c, true))
            .ok_or_else(|| RpcError::task_not_found(&pending.conversation_id.to_string())),
        Err(error) => Err(engine_error(&error)),
    }
}

/// The JSON-RPC error for an engine error.
pub(crate) fn engine_error(error: &EngineError) -> RpcError {
    match error {
        EngineError::ConversationNotFound(id) => RpcError::task_not_found(&id.to_string()),
        EngineError::ApprovalNotFound(_)
        | EngineError::QuestionNotFound(_)
        | EngineError::InvalidInput(_)
        | EngineError::GrantNotFound { .. }
        | EngineError::Completed(_) => RpcError::invalid_params(error.to_string()),
        EngineError::AlreadyResolved { uuid, conversation } => RpcError::invalid_params(format!(
            "approval {uuid} was already decided; the task is now {}",
            mapping::task_state(conversation).as_str()
        )),
        EngineError::NotCancelable(_) => {
            RpcError::new(error_codes::TASK_NOT_CANCELABLE, error.to_string())
        }
        EngineError::Forbidden(why) => forbidden(why.clone()),
        EngineError::Overloaded { retry_after_secs } => {
            RpcError::overloaded(error.to_string(), *retry_after_secs)
        }
        EngineError::ShuttingDown | EngineError::TooManySubscribers(_) | EngineError::Busy(_) => {
            RpcError::new(error_codes::INTERNAL_ERROR, error.to_string())
        }
        // The details (file paths, causes) go to the log only.
        other => {
            tracing::error!(error = %other, "A2A request failed");
            RpcError::new(
                error_codes::INTERNAL_ERROR,
                "internal error: the request could not be completed; the agent's log has the details",
            )
        }
    }
}

/// The task to answer with, plus the note for text sent while waiting.
pub(crate) fn answer_task(
    conversation: &Conversation,
    context: &str,
    history_length: Option<usize>,
    not_processed: bool,
) -> Task {
    let mut task = mapping::to_task(conversation, context, history_length);
    if not_processed
        && let Some(Part::Text { text, .. }) = task
            .status
            .message
            .as_mut()
            .and_then(|m| m.parts.first_mut())
    {
        *text = format!(
            "Your message was not processed: this task is waiting for an approval decision. {text}"
        );
    }
    task
}

pub(crate) async fn message_send(call: &Call, params: Option<Value>) -> Answer {
    let request = parse_send(params)?;
    let mut call = call.clone();
    let (action, context) = prepare(&mut call, &request.message).await?;
    if let Some(config) = &request.push {
        let service = push::service(&call)?;
        service.check(config).await.map_err(push::refused)?;
    }
    let engine = &call.state.engine;
    let (conversation, not_processed) =
        settled(engine, execute(engine, &call.ctx, action).await).await?;
    let context = context.unwrap_or_else(|| mapping::context_of(&conversation));
    // Asked only when the message brought a push config.
    if let (Some(config), Ok(service)) = (request.push, push::service(&call))
        && engine
            .authorized(conversation.id, &call.ctx, Command::ManagePush)
            .await
            .is_ok()
    {
        // Boxed: the store's future (about 9 KiB) would size every
        // message/send's future, copied at each send.
        Box::pin(service.set(conversation.id, &context, config))
            .await
            .map_err(push::refused)?;
    }
    let task = answer_task(
        &conversation,
        &context,
        request.history_length,
        not_processed,
    );
    Ok((conversation, task))
}

pub(crate) async fn tasks_get(call: &Call, params: Option<Value>) -> Answer {
    let (id, history_length) = parse_query(params)?;
    let conversation = stored_task(call, id).await?;
    let mut task = mapping::to_task(
        &conversation,
        &mapping::context_of(&conversation),
        history_length,
    );
    mark_running(&mut task, call.state.engine.is_running(id).await);
    Ok((conversation, task))
}

/// The conversation behind a task id the caller may read, or -32001
/// (another principal's task is not revealed).
pub(crate) async fn stored_task(
    call: &Call,
    id: uuid::Uuid,
) -> Result<std::sync::Arc<Conversation>, RpcError> {
    call.state
        .engine
        .authorized(id, &call.ctx, Command::Read)
        .await
        .map_err(|e| engine_error(&e))
}

/// -32010: the caller may not do this.
pub(crate) fn forbidden(message: String) -> RpcError {
    RpcError::new(error_codes::FORBIDDEN, format!("forbidden: {message}"))
}

/// A turn in progress is `working`, whatever the last saved step says
/// (between two pipeline steps the snapshot looks answered).
pub(crate) fn mark_running(task: &mut asg_shared::a2a::Task, running: bool) {
    if running && task.status.state != TaskState::InputRequired {
        task.status.state = TaskState::Working;
        task.status.message = None;
    }
}

pub(crate) async fn tasks_cancel(call: &Call, params: Option<Value>) -> Answer {
    let (id, history_length) = parse_query(params)?;
    let conversation = stored_task(call, id).await?;
    // Who may cancel is the engine's (the core's) decision.
    let state = mapping::task_state(&conversation);
    let not_cancelable = |state: TaskState| {
        RpcError::new(
            error_codes::TASK_NOT_CANCELABLE,
            format!(
                "task {id} is {} and cannot be canceled; only a task waiting for an approval (input-required) can be",
                state.as_str()
            ),
        )
    };
    if state.is_terminal() {
        return Err(not_cancelable(state));
    }
    let reason = Some("canceled by the A2A client (tasks/cancel)".to_string());
    let conversation = match call.state.engine.cancel(id, &call.ctx, reason).await {
        Ok(outcome) => outcome.conversation,
        Err(EngineError::NotCancelable(_)) => {
            let now = match call.state.engine.get(id).await {
                Ok(Some(c)) => mapping::task_state(&c),
                _ => state,
            };
            return Err(not_cancelable(now));
        }
        Err(error) => return Err(engine_error(&error)),
    };
    let task = mapping::to_task(
        &conversation,
        &mapping::context_of(&conversation),
        history_length,
    );
    Ok((conversation, task))
}

/// Names the conversation in the request log.
pub(crate) fn tag(conversation: &Conversation) -> ConversationTag {
    ConversationTag {
        id: conversation.id,
        session_id: conversation.session_id.clone(),
    }
}

/// A JSON-RPC error answer: HTTP 200, except an overloaded agent's 503
/// with `Retry-After` (the body is the JSON-RPC error either way).
pub(crate) fn error_answer(id: Value, error: RpcError) -> Response {
    let retry_after = error.retry_after_secs;
    let mut response = json_response(error_response(id, error), None);
    if let Some(secs) = retry_after {
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

pub(crate) fn json_response(body: JsonRpcResponse, tag: Option<ConversationTag>) -> Response {
    let outcome = RpcOutcome {
        error: body.error.is_some(),
    };
    let mut response = Json(body).into_response();
    response.extensions_mut().insert(outcome);
    if let Some(tag) = tag {
        response.extensions_mut().insert(tag);
    }
    response
}

#[cfg(test)]
mod tests;
