//! One invocation of an `llm` node: call the model, run or gate the tool
//! calls it asks for, repeat until it answers, stops for approval, exits
//! its loop, or runs out of steps.
//!
//! Messages go to a [`Recorder`]: straight into the conversation (saved at
//! each step) in sequential context, or into a buffer for a `parallel`
//! branch. The node keeps its own copy to build the model history.

use std::sync::Arc;

use asg_shared::{Grant, Message, PendingApproval, Question, Role, ToolCall, ToolResult};
use async_trait::async_trait;
use serde_json::json;
use tracing::Instrument;
use uuid::Uuid;

use super::calls::{self, CallOutcome};
use super::decide::{CallFacts, Decision, Verdict, decide};
use super::tree::LlmNode;
use super::{EngineError, Inner, approval, history, new_message};
use crate::context::RequestContext;
use crate::llm::{LlmClient, LlmError, LlmMessage, LlmRequest, LlmResponse, LlmToolCall, ToolSpec};

pub use asg_core::decide::{EXIT_LOOP_TOOL, Gate};
use asg_core::question::{self, ASK_HUMAN_TOOL};

/// Where a node's messages go.
#[async_trait]
pub trait Recorder: Send {
    /// Records a message.
    fn push(&mut self, message: Message);
    /// Makes what was recorded durable (no-op for buffers).
    async fn checkpoint(&mut self) -> Result<(), EngineError>;
}

/// A recorder that only collects (parallel branches).
#[derive(Default)]
pub struct Buffer(pub Vec<Message>);

#[async_trait]
impl Recorder for Buffer {
    fn push(&mut self, message: Message) {
        self.0.push(message);
    }
    async fn checkpoint(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
}

/// How an invocation ended.
pub enum NodeOutcome {
    /// Final text.
    Answered(String),
    /// The model called `exit_loop`; carries its text, if any.
    ExitLoop(String),
    /// A destructive call waits for approval (not yet saved).
    Paused(Box<PendingApproval>),
    /// The model failed; the error is recorded.
    Failed(LlmError),
}

/// One invocation's inputs.
pub struct Invocation<'a> {
    /// The node.
    pub node: &'a LlmNode,
    /// Resolved system prompt.
    pub system: String,
    /// History before this invocation (whole conversation for a simple
    /// agent; the user message for a pipeline node).
    pub base: Vec<LlmMessage>,
    /// This invocation's messages so far (non-empty when resuming).
    pub own: Vec<Message>,
    /// Destructive-call policy.
    pub gate: Gate,
    /// Offer `exit_loop`.
    pub exit_loop: bool,
    /// The conversation's remembered approvals.
    pub grants: Arc<[Grant]>,
}

/// How one call of a step is handled: as decided (`decide.rs`), with the
/// uuid of the approval a gated call waits for; or skipped because an
/// earlier call of the step waits for one.
enum Plan {
    Decided(Decision, Option<Uuid>),
    /// The model's `ask_human`: the question as checked (or what is
    /// wrong with it), and the uuid it waits under.
    Ask(Result<Question, String>, Uuid),
    Skip,
}

impl Plan {
    fn verdict(&self) -> Option<&Verdict> {
        match self {
            Plan::Decided(decision, _) => Some(&decision.verdict),
            Plan::Ask(..) | Plan::Skip => None,
        }
    }

    /// The uuid the call waits under, when it stops for a human.
    fn waits_under(&self) -> Option<Uuid> {
        match self {
            Plan::Decided(_, uuid) => *uuid,
            Plan::Ask(Ok(_), uuid) => Some(*uuid),
            Plan::Ask(Err(_), _) | Plan::Skip => None,
        }
    }
}

/// Runs an invocation to its end: model, then the calls it asks for,
/// step after step, until an answer, a pause, `exit_loop` or
/// `max_tool_steps`.
pub async fn run(
    inner: &Inner,
    ctx: &RequestContext,
    conversation_id: Uuid,
    mut inv: Invocation<'_>,
    rec: &mut dyn Recorder,
) -> Result<NodeOutcome, EngineError> {
    let tools = offered(inner, &inv);
    let gate = inv.gate.clone();
    let mut run = NodeRun {
        step: Step {
            inner,
            ctx,
            node: inv.node,
            gate: &gate,
            conversation_id,
        },
        inv: &mut inv,
        rec,
    };
    for _ in 0..inner.max_tool_steps {
        let answer = generate(&*run.step.node.llm, run.request(&tools)).await;
        let response = match answer {
            Ok(response) => response,
            Err(error) => return run.model_failed(error).await,
        };
        let text = response.text.clone().unwrap_or_default();
        if response.tool_calls.is_empty() {
            // Saved by the caller with what comes next (the end of the
            // turn, or the next step of the pipeline).
            run.record(new_message(Role::Assistant, text.clone()));
            return Ok(NodeOutcome::Answered(text));
        }
        let plans = plan(
            inner,
            run.step.gate,
            &tools,
            &run.inv.grants,
            &response.tool_calls,
        );
        run.record_calls(&response, &plans);
        match run.perform_all(response.tool_calls, plans).await {
            StepEnd::Paused(pending) => return Ok(NodeOutcome::Paused(pending)),
            StepEnd::Exit => {
                run.rec.checkpoint().await?;
                return Ok(NodeOutcome::ExitLoop(text));
            }
            StepEnd::Next => run.rec.checkpoint().await?,
        }
    }
    run.out_of_steps().await
}

/// How the calls of one step ended.
enum StepEnd {
    /// Go on with the next model call.
    Next,
    /// `exit_loop` was called.
    Exit,
    /// A call waits for a human.
    Paused(Box<PendingApproval>),
}

/// One running invocation: where its messages go.
struct NodeRun<'a, 'i> {
    step: Step<'a>,
    inv: &'a mut Invocation<'i>,
    rec: &'a mut dyn Recorder,
}

/// One model call, timed, counted and traced (a `chat` span with the
/// GenAI attributes and the tokens the provider counted).
async fn generate(llm: &dyn LlmClient, request: LlmRequest) -> Result<LlmResponse, LlmError> {
    let model = llm.describe();
    let span = crate::telemetry::model_span(&model);
    let started = std::time::Instant::now();
    let answer = llm.generate(&request).instrument(span.clone()).await;
    let metrics = crate::metrics::metrics();
    metrics.model_call(&model, answer.is_ok(), started.elapsed());
    match &answer {
        Ok(LlmResponse {
            usage: Some(usage), ..
        }) => {
            metrics.model_tokens(&model, usage.input, usage.output);
            crate::telemetry::model_usage(&span, usage.input, usage.output);
        }
        Ok(_) => {}
        Err(error) => crate::telemetry::model_failed(&span, error_type(error)),
    }
    answer
}

/// The span's `error.type` of a failed model call.
fn error_type(error: &LlmError) -> &'static str {
    match error {
        LlmError::Timeout(_) => "timeout",
        LlmError::Http { .. } => "http",
        _ => "model_error",
    }
}

impl NodeRun<'_, '_> {
    /// Records a message as this node's.
    fn record(&mut self, mut message: Message) {
        message.node = Some(self.step.node.name.clone());
        self.inv.own.push(message.clone());
        self.rec.push(message);
    }

    /// The next model request: the history before the node, the node's
    /// messages so far, fitted to the history budget.
    fn request(&self, tools: &std::sync::Arc<[ToolSpec]>) -> LlmRequest {
        let mut messages = self.inv.base.clone();
        messages.extend(history::to_llm_messages(&self.inv.own));
        LlmRequest {
            node: self.step.node.name.clone(),
            system: self.inv.system.clone(),
            messages: history::fit(messages, &self.step.inner.limits.history),
            tools: tools.clone(),
        }
    }

    /// Records the model's failure as the node's answer.
    async fn model_failed(mut self, error: LlmError) -> Result<NodeOutcome, EngineError> {
        tracing::warn!(node = %self.step.node.name, %error, "model call failed");
        let mut message = new_message(Role::Assistant, format!("Error: {error}"));
        message.is_error = true;
        self.record(message);
        self.rec.checkpoint().await?;
        Ok(NodeOutcome::Failed(error))
    }

    /// Records the calls the model asked for, each as planned (the
    /// step's text goes with the first).
    fn record_calls(&mut self, response: &crate::llm::LlmResponse, plans: &[Plan]) {
        for (i, (call, plan)) in response.tool_calls.iter().zip(plans).enumerate() {
            let mut content = match i {
                0 => response.text.clone().unwrap_or_default(),
                _ => String::new(),
            };
            if let (Some(Verdict::RunUnapproved), Gate::RunUnapproved { container }) =
                (plan.verdict(), self.step.gate)
            {
                content = format!(
                    "{content}\n[ran without approval: allow_destructive on {container:?}]"
                )
                .trim()
                .to_string();
            }
            let mut message = new_message(Role::Assistant, content);
            message.tool_call = Some(Box::new(tool_call(call, plan)));
            self.record(message);
        }
    }

    /// Performs the step's calls in order; after a pause, the rest are
    /// recorded as skipped.
    async fn perform_all(&mut self, calls: Vec<LlmToolCall>, plans: Vec<Plan>) -> StepEnd {
        let mut end = StepEnd::Next;
        for (call, plan) in calls.into_iter().zip(plans) {
            if matches!(end, StepEnd::Paused(_)) {
                self.record(result_message(&call.id, &call.name, skipped_text(), true));
                continue;
            }
            match self.step.perform(call, plan).await {
                Performed::Result(message) => self.record(message),
                Performed::Exit(message) => {
                    end = StepEnd::Exit;
                    self.record(message);
                }
                Performed::Paused(pending) => end = StepEnd::Paused(pending),
            }
        }
        end
    }

    /// `max_tool_steps` reached without a final answer.
    async fn out_of_steps(mut self) -> Result<NodeOutcome, EngineError> {
        let text = format!(
            "Stopped after {} tool steps without a final answer.",
            self.step.inner.max_tool_steps
        );
        let mut message = new_message(Role::Assistant, text.clone());
        message.is_error = true;
        self.record(message);
        self.rec.checkpoint().await?;
        Ok(NodeOutcome::Answered(text))
    }
}

/// What one planned call produced.
enum Performed {
    /// Its result (or refusal) for the model.
    Result(Message),
    /// `exit_loop` was called.
    Exit(Message),
    /// It stops for a human (a gated call, or a sub-agent's approval).
    Paused(Box<PendingApproval>),
}

/// What performing a call needs.
struct Step<'a> {
    inner: &'a Inner,
    ctx: &'a RequestContext,
    node: &'a LlmNode,
    gate: &'a Gate,
    conversation_id: Uuid,
}

impl Step<'_> {
    /// Runs, refuses or gates one call as planned.
    async fn perform(&self, call: LlmToolCall, plan: Plan) -> Performed {
        let (inner, ctx, node) = (self.inner, self.ctx, self.node);
        let (decision, uuid) = match plan {
            Plan::Decided(decision, uuid) => (decision, uuid),
            Plan::Ask(question, uuid) => return self.ask(call, question, uuid),
            Plan::Skip => {
                let text = skipped_text();
                return Performed::Result(result_message(&call.id, &call.name, text, true));
            }
        };
        if let Some(rule) = &decision.rule {
            tracing::info!(node = %node.name, tool = %call.name, %rule, "{}", decision.reason);
            policy_audit(inner, self.conversation_id, &call, &decision).await;
        }
        let outcome = match decision.verdict {
            Verdict::Run => {
                let site = self.site(&call);
                calls::execute(inner, ctx, &call.name, call.arguments.clone(), site).await
            }
            Verdict::RunUnapproved => {
                tracing::warn!(node = %node.name, gate = ?self.gate, tool = %call.name, "destructive tool runs WITHOUT approval (allow_destructive)");
                let site = self.site(&call);
                calls::execute(inner, ctx, &call.name, call.arguments.clone(), site).await
            }
            Verdict::NotOffered => {
                tracing::warn!(node = %node.name, tool = %call.name, "the model called a tool this node was not offered; refused, not run");
                done(not_offered_text(self.inner, &call.name), true)
            }
            Verdict::Refuse => done(
                format!("Refused: {} was not run: {}.", call.name, decision.reason),
                true,
            ),
            Verdict::Exit => {
                let message =
                    result_message(&call.id, &call.name, "Loop exit requested.".into(), false);
                return Performed::Exit(message);
            }
            Verdict::Ask { approvers } => {
                let mut pending = self.gated(uuid.unwrap_or_else(Uuid::new_v4), call);
                pending.approvers = approvers;
                pending.rule = decision.rule;
                pending.no_edit = decision.no_edit;
                return Performed::Paused(Box::new(pending));
            }
        };
        self.performed(&call, outcome)
    }

    /// What a call that ran (or was refused) gives the model, or the
    /// approval it waits for when a sub-agent asks for one.
    fn performed(&self, call: &LlmToolCall, outcome: CallOutcome) -> Performed {
        match outcome {
            CallOutcome::Done {
                content,
                is_error,
                auth_required,
            } => {
                let message = result_message(&call.id, &call.name, content, is_error);
                Performed::Result(needing_auth(message, auth_required))
            }
            CallOutcome::Remote { agent, approval } if *self.gate == Gate::Approve => {
                Performed::Paused(Box::new(calls::proxy_approval(
                    self.conversation_id,
                    &call.id,
                    Some(self.node.name.clone()),
                    &agent,
                    approval,
                )))
            }
            CallOutcome::Remote { agent, approval } => {
                let content = format!(
                    "Sub-agent {agent} asks for approval of {} (its task {}), which cannot be \
                     given inside this node ({:?}); decide on {agent} directly.",
                    approval.tool_name, approval.task_id, self.gate
                );
                Performed::Result(result_message(&call.id, &call.name, content, true))
            }
        }
    }

    /// The model's question: it waits for a human as a pending item
    /// (a question cannot wait inside a node that runs without pauses).
    fn ask(&self, call: LlmToolCall, question: Result<Question, String>, uuid: Uuid) -> Performed {
        let refused = |why: String| {
            let text = format!("Not asked: {why}.");
            Performed::Result(result_message(&call.id, &call.name, text, true))
        };
        let question = match question {
            Ok(question) => question,
            Err(why) => return refused(why),
        };
        if *self.gate != Gate::Approve {
            return refused(format!(
                "a question cannot wait for its answer inside this node ({:?})",
                self.gate
            ));
        }
        let mut pending = approval::pending(approval::NewApproval {
            uuid,
            conversation_id: self.conversation_id,
            tool_name: call.name,
            tool_args: call.arguments,
            description: question.text.clone(),
            call_id: call.id,
            node: Some(self.node.name.clone()),
        });
        pending.question = Some(Box::new(question));
        Performed::Paused(Box::new(pending))
    }

    /// Where `call` runs, for a question its tool server asks.
    fn site(&self, call: &LlmToolCall) -> Option<super::CallSite> {
        Some(super::CallSite {
            conversation_id: self.conversation_id,
            call_id: call.id.clone(),
            node: Some(self.node.name.clone()),
            requester: self.ctx.requester(),
            approval: None,
        })
    }

    /// The approval a gated call waits for.
    fn gated(&self, uuid: Uuid, call: LlmToolCall) -> PendingApproval {
        let description = self
            .inner
            .tool(&call.name)
            .map(|info| approval::describe(&call.name, &info.description, &call.arguments))
            .unwrap_or_default();
        approval::pending(approval::NewApproval {
            uuid,
            conversation_id: self.conversation_id,
            tool_name: call.name,
            tool_args: call.arguments,
            description,
            call_id: call.id,
            node: Some(self.node.name.clone()),
        })
    }
}

/// The audit line of a call a rule allowed or denied without asking
/// anyone (an approval a rule asked for is audited when decided).
async fn policy_audit(inner: &Inner, conversation: Uuid, call: &LlmToolCall, decision: &Decision) {
    let (Some(audit), Some(rule)) = (&inner.audit, &decision.rule) else {
        return;
    };
    let allowed = match decision.verdict {
        Verdict::Run => true,
        Verdict::Refuse => false,
        _ => return,
    };
    let line =
        crate::audit::AuditLine::policy(conversation, &call.name, &call.arguments, rule, allowed);
    if let Err(error) = audit.append(&line).await {
        tracing::error!(%error, "cannot write the audit log");
    }
}

/// Why a call was refused as not offered: a tool of a server that is
/// still unreachable is named as such.
fn not_offered_text(inner: &Inner, name: &str) -> String {
    if inner.tool(name).is_none() && !inner.tools.unavailable_servers().is_empty() {
        return format!("Refused: {}", inner.tools.unknown_tool(name));
    }
    format!(
        "Refused: {name:?} is not one of the tools available here, so it was not run. \
         Use only the tools you were given."
    )
}

/// How each call of a step is handled (`decide.rs`); after a call that
/// stops for approval, the rest of the step is skipped.
fn plan(
    inner: &Inner,
    gate: &Gate,
    offered: &[ToolSpec],
    grants: &[Grant],
    calls: &[LlmToolCall],
) -> Vec<Plan> {
    let mut gated = false;
    calls
        .iter()
        .map(|call| {
            if gated {
                return Plan::Skip;
            }
            if call.name == ASK_HUMAN_TOOL && offered.iter().any(|t| t.name == ASK_HUMAN_TOOL) {
                let question = question::from_arguments(&call.arguments);
                gated = question.is_ok();
                return Plan::Ask(question, Uuid::new_v4());
            }
            let facts = CallFacts {
                tool: &call.name,
                arguments: &call.arguments,
                offered: offered.iter().any(|tool| tool.name == call.name),
                gated: inner.tool(&call.name).map(|tool| tool.gated),
                grants,
            };
            let decision = decide(facts, gate, &inner.rules);
            let uuid = matches!(decision.verdict, Verdict::Ask { .. }).then(Uuid::new_v4);
            gated = uuid.is_some();
            Plan::Decided(decision, uuid)
        })
        .collect()
}

fn tool_call(call: &LlmToolCall, plan: &Plan) -> ToolCall {
    ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
        needs_approval: matches!(plan.verdict(), Some(Verdict::Ask { .. })),
        approval_uuid: plan.waits_under(),
        provider_signature: call.signature.clone(),
    }
}

/// A tool message answering `call_id`.
pub fn result_message(call_id: &str, name: &str, content: String, is_error: bool) -> Message {
    let mut message = new_message(Role::Tool, content);
    message.tool_result = Some(Box::new(ToolResult {
        call_id: call_id.to_string(),
        name: name.to_string(),
        is_error,
        auth_required: false,
    }));
    message.is_error = is_error;
    message
}

/// A tool message marked as a sub-agent's refusal for want of a
/// credential when `auth_required`.
pub fn needing_auth(mut message: Message, auth_required: bool) -> Message {
    if let Some(result) = &mut message.tool_result {
        result.auth_required = auth_required;
    }
    message
}

fn done(content: String, is_error: bool) -> CallOutcome {
    CallOutcome::done(content, is_error)
}

fn skipped_text() -> String {
    "Not run: an earlier call of the same step is waiting for approval. \
     Ask again after the decision."
        .to_string()
}

/// The tools the node offers in this invocation: its selection of the
/// catalog, then `exit_loop` inside a loop and `ask_human` when enabled.
fn offered(inner: &Inner, inv: &Invocation<'_>) -> Arc<[ToolSpec]> {
    let extras: &[&'static str] = match (inv.exit_loop, inv.node.ask_human) {
        (true, true) => &[EXIT_LOOP_TOOL, ASK_HUMAN_TOOL],
        (true, false) => &[EXIT_LOOP_TOOL],
        (false, true) => &[ASK_HUMAN_TOOL],
        (false, false) => &[],
    };
    let catalog = inner.catalog.current();
    inv.node
        .offered
        .get(&catalog, &inv.node.tools, extras, |name| {
            if name == EXIT_LOOP_TOOL {
                exit_loop_spec()
            } else {
                ask_human_spec()
            }
        })
}

fn ask_human_spec() -> ToolSpec {
    ToolSpec {
        name: ASK_HUMAN_TOOL.to_string(),
        description: question::ASK_HUMAN_DESCRIPTION.to_string(),
        input_schema: question::ask_human_input_schema(),
    }
}

fn exit_loop_spec() -> ToolSpec {
    ToolSpec {
        name: EXIT_LOOP_TOOL.to_string(),
        description: "Stop the enclosing loop now: call it when the loop's goal is reached."
            .to_string(),
        input_schema: json!({"type": "object", "properties": {}}),
    }
}
