//! `message/stream` and `tasks/resubscribe`: server-sent events whose
//! every `data:` is a whole JSON-RPC response. The first result is the
//! task, then `working` status updates (turn started, tool call started
//! or finished), then for a completed turn an artifact update with the
//! answer, and last a status update with `final: true` (`completed`,
//! `input-required` with the approval parts, `failed` or `canceled`).
//!
//! `message/stream` subscribes to the conversation before the turn starts
//! and runs the turn in its own task, so a client that goes away never
//! interrupts it. Errors found after the method is known are sent as one
//! SSE event carrying the JSON-RPC error, as SSE clients expect.
//!
//! The same streams serve A2A v1.0 (`SendStreamingMessage`,
//! `SubscribeToTask`, and the HTTP+JSON `message:stream` and
//! `:subscribe`): each event is then written as a v1.0 `StreamResponse`
//! (inside a JSON-RPC response, or bare on HTTP+JSON, whose errors are
//! problem details), chosen by the call's [`Wire`].

use std::convert::Infallible;
use std::time::Duration;

use asg_shared::Conversation;
use asg_shared::a2a::v1::StreamResponse;
use asg_shared::a2a::{A2aMessage, SendResult, Task, TaskState, TaskStatus, error_codes};
use asg_shared::events::ConversationEvent;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use futures::stream;
use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{
    Action, Call, RpcError, Wire, answer_task, error_response, execute, parse_query, parse_send,
    prepare, result_response, settled, tag,
};
use crate::a2a::mapping::{self, TaskRef};
use crate::api::logging::ConversationTag;
use crate::engine::{Engine, EngineError, Subscription, TurnOutcome};

/// Events buffered for a slow client before the forwarder waits.
const BUFFER: usize = 64;

/// `message/stream`: like `message/send`, as a stream of events.
pub(crate) async fn message_stream(call: Call, params: Option<Value>) -> Response {
    let (id, wire) = (call.id.clone(), call.wire);
    match start_turn(call, params).await {
        Ok(response) => response,
        Err(error) => sse_error(id, wire, error),
    }
}

async fn start_turn(mut call: Call, params: Option<Value>) -> Result<Response, RpcError> {
    let request = parse_send(params)?;
    if request.push.is_some() {
        return Err(RpcError::new(
            asg_shared::a2a::error_codes::PUSH_NOTIFICATION_NOT_SUPPORTED,
            "configuration.pushNotificationConfig is not supported with message/stream (the stream \
             carries the updates); use message/send or tasks/pushNotificationConfig/set",
        ));
    }
    let (action, context) = prepare(&mut call, &request.message).await?;
    let engine = call.state.engine.clone();
    let history_length = request.history_length;
    if let Action::StillWaiting(_) = action {
        return still_waiting(&call, action, context, history_length).await;
    }
    let (action, conversation) = match action.task() {
        None => {
            let Action::Create(text) = action else {
                return Err(internal("a new task without text"));
            };
            let (conversation, _) = settled(&engine, engine.create(&call.ctx, None).await).await?;
            (Action::Send(conversation.id, text), conversation)
        }
        Some(id) => (action, super::stored_task(&call, id).await?),
    };
    let context = context.unwrap_or_else(|| mapping::context_of(&conversation));
    let at = task_ref(&conversation, &context);
    // Subscribe before the turn starts so no event is missed.
    let events = engine
        .subscribe(conversation.id)
        .await
        .map_err(|e| super::engine_error(&e))?;
    let first = first_task(
        &conversation,
        &context,
        history_length,
        request.message,
        &at,
    );
    let (ctx, runner) = (call.ctx.clone(), engine.clone());
    let turn = tokio::spawn(async move { execute(&runner, &ctx, action).await });
    let (sink, response) = channel(&call, Some(tag(&conversation)));
    tokio::spawn(async move {
        if sink.send(SendResult::Task(first)).await {
            relay_to_end(&sink, &engine, &at, events, turn).await;
        }
    });
    Ok(response)
}

/// A message to a task still waiting for a decision: the task as it
/// stands and its last status, at once.
async fn still_waiting(
    call: &Call,
    action: Action,
    context: Option<String>,
    history_length: Option<usize>,
) -> Result<Response, RpcError> {
    let engine = &call.state.engine;
    let (conversation, _) = settled(engine, execute(engine, &call.ctx, action).await).await?;
    let context = context.unwrap_or_else(|| conversation.id.to_string());
    let task = answer_task(&conversation, &context, history_length, true);
    let at = task_ref(&conversation, &context);
    let last = mapping::status_update(&at, task.status.clone(), true);
    let events = vec![SendResult::Task(task), SendResult::Status(last)];
    Ok(sse_now(call, events, Some(tag(&conversation))))
}

/// The stream's first event: the task before the turn, with the caller's
/// message in its history when it starts a task (submitted), working
/// when it continues one.
fn first_task(
    conversation: &Conversation,
    context: &str,
    history_length: Option<usize>,
    mut message: A2aMessage,
    at: &TaskRef,
) -> Task {
    let mut first = mapping::to_task(conversation, context, history_length);
    first.artifacts.clear();
    if message.task_id.is_none() {
        message.task_id = Some(at.task_id.clone());
        message.context_id = Some(at.context_id.clone());
        first.history.push(message);
        first.status = now(TaskState::Submitted);
    } else {
        first.status = now(TaskState::Working);
    }
    first
}

/// Relays the turn's events, then its end: the final task, or the error.
async fn relay_to_end(
    sink: &Sink,
    engine: &Engine,
    at: &TaskRef,
    events: Subscription<ConversationEvent>,
    turn: JoinHandle<Result<TurnOutcome, EngineError>>,
) {
    let Some(result) = relay_turn(sink, at, events, turn).await else {
        return;
    };
    let result = result.map_err(|e| internal(&format!("the turn stopped: {e}")));
    let settled = match result {
        Ok(result) => settled(engine, result).await,
        Err(error) => Err(error),
    };
    match settled {
        Ok((conversation, not_processed)) => finish(sink, &conversation, at, not_processed).await,
        Err(error) => sink.error(error).await,
    }
}

/// `tasks/resubscribe`: the task, then its events until the running turn
/// ends; a task that is not working gets its final status at once.
pub(crate) async fn resubscribe(call: Call, params: Option<Value>) -> Response {
    let rpc_id = call.id.clone();
    let started = async {
        let (id, history_length) = parse_query(params)?;
        let engine = call.state.engine.clone();
        // Only a task the caller may read (else -32001).
        super::stored_task(&call, id).await?;
        // Subscribe before reading the state so the end cannot be missed.
        let events = engine
            .subscribe(id)
            .await
            .map_err(|e| super::engine_error(&e))?;
        let conversation = super::stored_task(&call, id).await?;
        let context = mapping::context_of(&conversation);
        let mut task = mapping::to_task(&conversation, &context, history_length);
        let running = engine.is_running(id).await;
        super::mark_running(&mut task, running);
        finished_refused(call.wire, &task)?;
        let at = task_ref(&conversation, &context);
        // Only a turn in progress has more to stream; anything else (also a
        // conversation left mid-turn by a crash) is answered at once.
        if !running || task.status.state != TaskState::Working {
            let last = mapping::status_update(&at, task.status.clone(), true);
            let events = vec![SendResult::Task(task), SendResult::Status(last)];
            return Ok(sse_now(&call, events, Some(tag(&conversation))));
        }
        let (sink, response) = channel(&call, Some(tag(&conversation)));
        tokio::spawn(async move {
            if !sink.send(SendResult::Task(task)).await
                || !relay_until_finished(&sink, &at, events).await
            {
                return;
            }
            match engine.get(id).await {
                Ok(Some(conversation)) => finish(&sink, &conversation, &at, false).await,
                _ => sink.error(RpcError::task_not_found(&at.task_id)).await,
            }
        });
        Ok(response)
    }
    .await;
    started.unwrap_or_else(|error| sse_error(rpc_id, call.wire, error))
}

/// v1.0 refuses a subscription to a task in a terminal state (nothing
/// more can come): `UnsupportedOperationError` (-32004; HTTP 400
/// `UNSUPPORTED_OPERATION`), as the specification and both official
/// SDKs' servers answer. v0.3 answers the task and its final status.
fn finished_refused(wire: Wire, task: &asg_shared::a2a::Task) -> Result<(), RpcError> {
    if wire == Wire::V03 || !task.status.state.is_terminal() {
        return Ok(());
    }
    let state = serde_json::to_value(asg_shared::a2a::v1::TaskState::from(task.status.state))
        .unwrap_or(Value::Null);
    let state = state.as_str().unwrap_or("a terminal state");
    Err(RpcError::new(
        error_codes::UNSUPPORTED_OPERATION,
        format!(
            "task {} is in terminal state {state}: there is nothing to subscribe to",
            task.id
        ),
    ))
}

/// Relays `working` updates until our turn ends; `None` when the client
/// went away.
async fn relay_turn(
    sink: &Sink,
    at: &TaskRef,
    mut events: Subscription<ConversationEvent>,
    mut turn: JoinHandle<Result<TurnOutcome, EngineError>>,
) -> Option<Result<Result<TurnOutcome, EngineError>, tokio::task::JoinError>> {
    let mut open = true;
    loop {
        tokio::select! {
            biased;
            event = events.recv(), if open => match event {
                Ok(event) => {
                    if !relay(sink, at, &event).await {
                        return None;
                    }
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => open = false,
            },
            result = &mut turn => {
                // Events the turn sent before it returned come first.
                loop {
                    match events.try_recv() {
                        Ok(event) => {
                            if !relay(sink, at, &event).await {
                                return None;
                            }
                        }
                        Err(TryRecvError::Lagged(_)) => {}
                        Err(_) => break,
                    }
                }
                return Some(result);
            }
        }
    }
}

/// Relays `working` updates until the engine says the turn finished;
/// false when the client went away.
async fn relay_until_finished(
    sink: &Sink,
    at: &TaskRef,
    mut events: Subscription<ConversationEvent>,
) -> bool {
    loop {
        match events.recv().await {
            Ok(ConversationEvent::TurnFinished { .. }) | Err(RecvError::Closed) => return true,
            Ok(event) => {
                if !relay(sink, at, &event).await {
                    return false;
                }
            }
            Err(RecvError::Lagged(_)) => {}
        }
    }
}

/// Sends the `working` update an engine event is worth, if any.
async fn relay(sink: &Sink, at: &TaskRef, event: &ConversationEvent) -> bool {
    match mapping::progress(event, at) {
        Some(status) => {
            let update = mapping::status_update(at, status, false);
            sink.send(SendResult::Status(update)).await
        }
        None => true,
    }
}

fn internal(what: &str) -> RpcError {
    RpcError::new(
        error_codes::INTERNAL_ERROR,
        format!("internal error: {what}"),
    )
}

/// The artifact of a completed turn, then the final status update.
async fn finish(sink: &Sink, conversation: &Conversation, at: &TaskRef, not_processed: bool) {
    let task = answer_task(conversation, &at.context_id, Some(0), not_processed);
    if task.status.state == TaskState::Completed {
        for artifact in task.artifacts {
            if !sink
                .send(SendResult::Artifact(mapping::artifact_update(at, artifact)))
                .await
            {
                return;
            }
        }
    }
    sink.send(SendResult::Status(mapping::status_update(
        at,
        task.status,
        true,
    )))
    .await;
}

fn task_ref(conversation: &Conversation, context: &str) -> TaskRef {
    TaskRef {
        task_id: conversation.id.to_string(),
        context_id: context.to_string(),
    }
}

fn now(state: TaskState) -> TaskStatus {
    TaskStatus {
        state,
        message: None,
        timestamp: Some(mapping::rfc3339(Utc::now())),
    }
}

/// Where a forwarder writes; `send` is false once the client is gone.
struct Sink {
    id: Value,
    wire: Wire,
    tx: mpsc::Sender<Event>,
}

impl Sink {
    async fn send(&self, result: SendResult) -> bool {
        self.tx
            .send(result_event(&self.id, self.wire, &result))
            .await
            .is_ok()
    }

    async fn error(&self, error: RpcError) {
        let _ = self
            .tx
            .send(error_event(self.id.clone(), self.wire, error))
            .await;
    }
}

/// One result as an event of `wire`.
fn result_event(id: &Value, wire: Wire, result: &SendResult) -> Event {
    let v1 = || StreamResponse::from(result);
    match wire {
        Wire::V03 => event(&result_response(id.clone(), result)),
        Wire::V1Rpc => event(&result_response(id.clone(), &v1())),
        Wire::V1Rest => event(&v1()),
    }
}

/// An error as an event of `wire`.
fn error_event(id: Value, wire: Wire, error: RpcError) -> Event {
    match wire {
        Wire::V03 | Wire::V1Rpc => event(&error_response(id, error)),
        Wire::V1Rest => event(&super::v1::rest::problem_body(&error)),
    }
}

fn event(body: &impl serde::Serialize) -> Event {
    let data = serde_json::to_string(body).unwrap_or_else(|e| {
        format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32603,"message":"internal error: {e}"}}}}"#)
    });
    Event::default().data(data)
}

fn channel(call: &Call, tag: Option<ConversationTag>) -> (Sink, Response) {
    let (tx, rx) = mpsc::channel(BUFFER);
    let events = stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    let sink = Sink {
        id: call.id.clone(),
        wire: call.wire,
        tx,
    };
    (sink, sse(events, tag))
}

fn sse_now(call: &Call, results: Vec<SendResult>, tag: Option<ConversationTag>) -> Response {
    let events: Vec<Result<Event, Infallible>> = results
        .iter()
        .map(|r| Ok(result_event(&call.id, call.wire, r)))
        .collect();
    sse(stream::iter(events), tag)
}

/// A stream of one event: the error (on HTTP+JSON, before any event,
/// the problem-details response with its HTTP status instead).
pub(crate) fn sse_error(id: Value, wire: Wire, error: RpcError) -> Response {
    if wire == Wire::V1Rest {
        return super::v1::rest::problem(&error);
    }
    let events = vec![Ok::<_, Infallible>(error_event(id, wire, error))];
    sse(stream::iter(events), None)
}

fn sse<S>(events: S, tag: Option<ConversationTag>) -> Response
where
    S: futures::Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    if let Some(tag) = tag {
        response.extensions_mut().insert(tag);
    }
    response
}
