//! Running a tool call, whichever kind of tool it is: an MCP tool, or a
//! sub-agent reached over A2A. A sub-agent may answer that it needs an
//! approval itself; that becomes a proxy approval here.

use asg_shared::PendingApproval;
use asg_shared::QuestionReply;
use serde_json::{Map, Value};
use tracing::Instrument;
use uuid::Uuid;

use super::Inner;
use super::approval;
use super::catalog::{Tool, ToolKind};
use super::question::CallSite;
use asg_shared::a2a::{Task, TaskState};

use crate::a2a::client::{
    A2aError, Continuation, Delegation, RemoteApproval, RemoteDecision, SubAgent, delegation_of,
};
use crate::context::RequestContext;

/// What a call produced.
pub enum CallOutcome {
    /// A result (or an error) for the model; `auth_required` when a
    /// sub-agent refused it for want of a credential.
    Done {
        content: String,
        is_error: bool,
        auth_required: bool,
    },
    /// The sub-agent `agent` waits for an approval of its own.
    Remote {
        agent: String,
        approval: RemoteApproval,
    },
}

impl CallOutcome {
    /// A result (or an error) for the model.
    pub fn done(content: String, is_error: bool) -> CallOutcome {
        CallOutcome::Done {
            content,
            is_error,
            auth_required: false,
        }
    }

    /// A sub-agent's refusal for want of a credential.
    fn auth_required(content: String) -> CallOutcome {
        CallOutcome::Done {
            content,
            is_error: true,
            auth_required: true,
        }
    }
}

impl Inner {
    /// A tool by name, as resolved now.
    pub(crate) fn tool(&self, name: &str) -> Option<std::sync::Arc<Tool>> {
        self.catalog.current().shared(name)
    }

    /// What a tool name stands for now.
    fn tool_kind(&self, name: &str) -> Option<ToolKind> {
        self.catalog.current().get(name).map(|tool| tool.kind)
    }
}

/// Runs a call on what its name resolves to now. Failures
/// become an error result the model can read; a result longer than
/// `limits.max_tool_result_bytes` is cut with a visible note.
pub async fn execute(
    inner: &Inner,
    ctx: &RequestContext,
    name: &str,
    arguments: Map<String, Value>,
    site: Option<CallSite>,
) -> CallOutcome {
    let started = std::time::Instant::now();
    let tool = inner.tool(name);
    // Only names this agent offers label the metric and the span (a
    // model may ask for any name).
    let (label, server) = match &tool {
        Some(tool) if tool.kind == ToolKind::SubAgent => (name, "a2a"),
        Some(tool) => (name, tool.server.as_str()),
        None => ("unknown", "unknown"),
    };
    let span = crate::telemetry::tool_span(label, server, &arguments);
    let outcome = capped(
        inner,
        run_call(inner, ctx, name, arguments, site)
            .instrument(span.clone())
            .await,
    );
    let is_error = matches!(outcome, CallOutcome::Done { is_error: true, .. });
    crate::telemetry::end_tool_span(&span, is_error);
    crate::metrics::metrics().tool_call(label, server, is_error, started.elapsed());
    outcome
}

/// Cuts a long result at `limits.max_tool_result_bytes`, saying so.
pub fn capped(inner: &Inner, outcome: CallOutcome) -> CallOutcome {
    match outcome {
        CallOutcome::Done {
            content,
            is_error,
            auth_required,
        } => CallOutcome::Done {
            content: truncate_result(content, inner.limits.max_tool_result_bytes),
            is_error,
            auth_required,
        },
        remote => remote,
    }
}

/// `content` cut at `max` bytes (on a character boundary) with a note.
pub fn truncate_result(mut content: String, max: usize) -> String {
    if content.len() <= max {
        return content;
    }
    let total = content.len();
    let mut cut = max;
    while !content.is_char_boundary(cut) {
        cut -= 1;
    }
    content.truncate(cut);
    content.push_str(&format!(
        "\n[truncated: the result was {total} bytes; only the first {cut} are kept (limits.max_tool_result_bytes)]"
    ));
    content
}

async fn run_call(
    inner: &Inner,
    ctx: &RequestContext,
    name: &str,
    arguments: Map<String, Value>,
    site: Option<CallSite>,
) -> CallOutcome {
    let kind = inner.tool_kind(name);
    if kind == Some(ToolKind::SubAgent)
        && let Some(agent) = inner.agents.agent(name)
    {
        let text = match arguments.get("message").and_then(Value::as_str) {
            Some(text) => text.to_string(),
            None => Value::Object(arguments).to_string(),
        };
        // Boxed, as the tool call below: see there.
        let sent = Box::pin(inner.agents.send(agent, &text, None, None, ctx)).await;
        return delegation(name, sent);
    }
    if kind != Some(ToolKind::Mcp) {
        // Unknown here; the registry says whether a server that is down
        // might offer it.
        return CallOutcome::done(inner.tools.unknown_tool(name).to_string(), true);
    }
    // A question the server asks during the call goes to a person.
    let asker = site.map(|site| inner.asking.asker(site));
    let asks = asker
        .clone()
        .map(|a| a as std::sync::Arc<dyn crate::mcp::Asker>);
    // Boxed: the MCP call's future (rmcp's, about 12 KiB) would
    // otherwise sit inside every turn's future, copied whole each time
    // a turn is started or awaited into place, tool call or not.
    let called =
        Box::pin((inner.tools).call_asking(name, arguments, ctx.bearer.as_ref(), asks)).await;
    if let Some(asker) = asker {
        asker.finish();
        if let Some(interrupted) = asker.interruption() {
            return CallOutcome::done(interrupted, true);
        }
    }
    match called {
        Ok(output) => CallOutcome::done(output.content, output.is_error),
        Err(error) => {
            tracing::warn!(tool = name, %error, "tool call failed");
            CallOutcome::done(format!("Tool error: {error}"), true)
        }
    }
}

/// Forwards a human's decision on a proxy approval to the sub-agent's
/// task, naming the sub-agent's approval uuid (it refuses a decision for
/// anything else). A forward whose answer is lost (timeout, connection
/// error) or refused is reconciled with `tasks/get` before anything is
/// sent again, so the decision is applied once.
pub async fn forward_decision(
    inner: &Inner,
    ctx: &RequestContext,
    pending: &PendingApproval,
    approve: bool,
    reason: Option<&str>,
    reply: Option<&QuestionReply>,
) -> CallOutcome {
    let agent_name = pending.remote_agent_name.as_deref().unwrap_or_default();
    let task_id = pending.remote_task_id.as_deref().unwrap_or_default();
    let task = Continuation {
        task_id,
        context_id: pending.remote_context_id.as_deref(),
    };
    let Some(agent) = inner.agents.agent(agent_name) else {
        return CallOutcome::done(
            format!(
                "Sub-agent {agent_name:?} is no longer configured; the decision was not forwarded."
            ),
            true,
        );
    };
    let decision = RemoteDecision {
        approve,
        approval_uuid: pending.remote_approval_uuid.clone(),
        reason: reason.map(str::to_string),
        reply: reply.cloned(),
    };
    let mut outcome = forward_once(inner, ctx, agent, task, decision).await;
    if !approve {
        // The sub-agent's run may wait for more approvals (parallel
        // branches there): the run this rejection ends must not leave
        // them to be approved on the sub-agent later.
        for _ in 0..MAX_FOLLOW_UP_REJECTIONS {
            let CallOutcome::Remote { approval, .. } = &outcome else {
                break;
            };
            if approval.task_id != task_id {
                break;
            }
            let next = RemoteDecision {
                approve: false,
                approval_uuid: approval.approval_uuid.clone(),
                reason: reason.map(str::to_string),
                reply: None,
            };
            outcome = forward_once(inner, ctx, agent, task, next).await;
        }
    }
    match outcome {
        CallOutcome::Done { content, .. } if !approve => CallOutcome::done(
            format!("Rejected by the user; {agent_name} answered: {content}"),
            true,
        ),
        other => other,
    }
}

/// How many more approvals of the same sub-agent task a rejection
/// refuses after the one it named.
const MAX_FOLLOW_UP_REJECTIONS: usize = 16;

/// Sends one decision to the sub-agent's task, reconciling with
/// `tasks/get` when the send fails.
async fn forward_once(
    inner: &Inner,
    ctx: &RequestContext,
    agent: &SubAgent,
    task: Continuation<'_>,
    decision: RemoteDecision,
) -> CallOutcome {
    let agent_name = agent.name.as_str();
    let task_id = task.task_id;
    tracing::info!(
        agent = agent_name,
        task = task_id,
        approve = decision.approve,
        remote_approval = ?decision.approval_uuid,
        "forwarding approval decision to sub-agent"
    );
    let text = match (&decision.reply, decision.approve) {
        (Some(_), _) => "answered",
        (None, true) => "approved",
        (None, false) => "rejected",
    };
    let sent = inner
        .agents
        .send(agent, text, Some(task), Some(&decision), ctx)
        .await;
    match sent {
        Ok(delegation) => capped(inner, from_delegation(agent_name, delegation)),
        Err(error @ A2aError::DepthLimit { .. }) => from_error(agent_name, error),
        Err(error) => {
            tracing::warn!(agent = agent_name, %error, "forwarded decision failed; reconciling with tasks/get");
            capped(
                inner,
                reconcile(inner, ctx, agent, task, &decision, error).await,
            )
        }
    }
}

/// Learns from the sub-agent's task what became of a decision whose
/// forward failed, and sends it again only when the task still waits for
/// that same approval.
async fn reconcile(
    inner: &Inner,
    ctx: &RequestContext,
    agent: &SubAgent,
    continues: Continuation<'_>,
    decision: &RemoteDecision,
    error: A2aError,
) -> CallOutcome {
    let task_id = continues.task_id;
    // A forward that timed out usually means a slow sub-agent: wait for
    // its task to leave `working` well beyond one call's timeout.
    let window = reconcile_window(agent.timeout());
    let task = match task_done_working(inner, ctx, agent, task_id, window).await {
        Ok(task) => task,
        Err(get_error) => {
            return CallOutcome::done(
                format!(
                    "The decision could not be confirmed with sub-agent {}: {error}; reading \
                     its task also failed: {get_error}. It may have been applied; it was not \
                     sent again. Check the sub-agent before retrying.",
                    agent.name
                ),
                true,
            );
        }
    };
    match delegation_of(&task) {
        Delegation::InputRequired(remote) if remote.approval_uuid == decision.approval_uuid => {
            tracing::info!(agent = %agent.name, task = task_id, "the decision was not applied; sending it once more");
            let text = if decision.approve {
                "approved"
            } else {
                "rejected"
            };
            let again = inner
                .agents
                .send(agent, text, Some(continues), Some(decision), ctx)
                .await;
            match again {
                Ok(delegation) => from_delegation(&agent.name, delegation),
                Err(error) => from_error(&agent.name, error),
            }
        }
        Delegation::InputRequired(remote) => {
            tracing::warn!(agent = %agent.name, task = task_id, "the sub-agent now waits for another approval; the decision was not applied to it");
            CallOutcome::Remote {
                agent: agent.name.clone(),
                approval: remote,
            }
        }
        _ if task.status.state == TaskState::Working => CallOutcome::done(
            format!(
                "Sub-agent {} is still working on the decision after {} s; its outcome is not \
                 known yet (it may have run). It was not sent again.",
                agent.name,
                window.as_secs()
            ),
            true,
        ),
        other => from_delegation(&agent.name, other),
    }
}

/// The sub-agent's task once it is no longer `working`, or as it is when
/// `window` has passed.
async fn task_done_working(
    inner: &Inner,
    ctx: &RequestContext,
    agent: &SubAgent,
    task_id: &str,
    window: std::time::Duration,
) -> Result<Task, A2aError> {
    let deadline = tokio::time::Instant::now() + window;
    loop {
        let task = inner.agents.get_task(agent, task_id, ctx).await?;
        if task.status.state != TaskState::Working || tokio::time::Instant::now() >= deadline {
            return Ok(task);
        }
        tokio::time::sleep(RECONCILE_POLL).await;
    }
}

/// How long a lost forward's outcome is awaited: ten times one call's
/// timeout, at least a minute, at most half an hour.
fn reconcile_window(call_timeout: std::time::Duration) -> std::time::Duration {
    (call_timeout * 10).clamp(
        std::time::Duration::from_secs(60),
        std::time::Duration::from_secs(1800),
    )
}

/// Pause between two `tasks/get` while a sub-agent works on a decision.
const RECONCILE_POLL: std::time::Duration = std::time::Duration::from_millis(250);

fn delegation(agent: &str, result: Result<Delegation, A2aError>) -> CallOutcome {
    let counted = match &result {
        Ok(Delegation::Completed(_)) => "answered",
        Ok(Delegation::Failed(_)) => "failed",
        Ok(Delegation::AuthRequired(_)) => "auth_required",
        Err(error) if error.is_unauthorized() => "auth_required",
        Ok(Delegation::InputRequired(_)) => "proxy_approval",
        Err(_) => "error",
    };
    crate::metrics::metrics().subagent_call(agent, counted);
    match result {
        Ok(delegation) => from_delegation(agent, delegation),
        Err(error) => from_error(agent, error),
    }
}

fn from_delegation(agent: &str, delegation: Delegation) -> CallOutcome {
    match delegation {
        Delegation::Completed(text) => CallOutcome::done(text, false),
        Delegation::Failed(reason) => {
            CallOutcome::done(format!("Sub-agent {agent} failed: {reason}"), true)
        }
        Delegation::AuthRequired(reason) => CallOutcome::auth_required(format!(
            "Sub-agent {agent:?} needs a credential: its task is auth-required ({reason}); send \
             the request again with an Authorization: Bearer it accepts"
        )),
        Delegation::InputRequired(approval) => CallOutcome::Remote {
            agent: agent.to_string(),
            approval,
        },
    }
}

fn from_error(agent: &str, error: A2aError) -> CallOutcome {
    tracing::warn!(agent, %error, "delegation failed");
    if error.is_unauthorized() {
        return CallOutcome::auth_required(error.to_string());
    }
    CallOutcome::done(error.to_string(), true)
}

/// The local approval that stands for a sub-agent's approval request.
pub fn proxy_approval(
    conversation_id: Uuid,
    call_id: &str,
    node: Option<String>,
    agent: &str,
    remote: RemoteApproval,
) -> PendingApproval {
    let description = match &remote.question {
        Some(question) => format!("{agent} asks: {}", question.text),
        None => format!("{agent} asks for approval: {}", remote.description),
    };
    let mut pending = approval::pending(approval::NewApproval {
        uuid: Uuid::new_v4(),
        conversation_id,
        tool_name: remote.tool_name,
        tool_args: remote.tool_args,
        description,
        call_id: call_id.to_string(),
        node,
    });
    // Answered here by this agent's answerers (set when it is stamped).
    pending.question = remote.question.map(|mut question| {
        question.answerers.clear();
        question
    });
    pending.remote_task_id = Some(remote.task_id);
    pending.remote_context_id = remote.context_id;
    pending.remote_agent_name = Some(agent.to_string());
    pending.remote_approval_uuid = remote.approval_uuid;
    // Edited on the sub-agent, where the tool is.
    pending.no_edit = true;
    pending
}

#[cfg(test)]
mod tests {
    use super::truncate_result;

    #[test]
    fn long_results_are_cut_on_a_char_boundary_with_a_note() {
        assert_eq!(truncate_result("short".into(), 10), "short");
        let cut = truncate_result("ééééé".into(), 5);
        assert!(
            cut.starts_with("éé\n[truncated: the result was 10 bytes; only the first 4"),
            "{cut}"
        );
    }
}
