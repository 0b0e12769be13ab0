//! Running a tool call, whichever kind of tool it is: an MCP tool, or a
//! sub-agent reached over A2A. A sub-agent may answer that it needs an
//! approval itself; that becomes a proxy approval here.

use asg_shared::rest::ToolInfo;
use asg_shared::{ApprovalState, PendingApproval};
use chrono::Utc;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::Inner;
use crate::a2a::client::{Delegation, RemoteApproval};
use crate::context::RequestContext;

/// What a call produced.
pub enum CallOutcome {
    /// A result (or an error) for the model.
    Done { content: String, is_error: bool },
    /// The sub-agent `agent` waits for an approval of its own.
    Remote {
        agent: String,
        approval: RemoteApproval,
    },
}

impl CallOutcome {
    fn done(content: String, is_error: bool) -> CallOutcome {
        CallOutcome::Done { content, is_error }
    }
}

impl Inner {
    /// A tool by name: MCP tools first, then sub-agents.
    pub(crate) fn tool(&self, name: &str) -> Option<ToolInfo> {
        self.tools
            .tool(name)
            .cloned()
            .or_else(|| self.agents.agent(name).map(|agent| agent.tool_info()))
    }
}

/// Runs a call. Failures become an error result the model can read.
pub async fn execute(
    inner: &Inner,
    ctx: &RequestContext,
    name: &str,
    arguments: Map<String, Value>,
) -> CallOutcome {
    if let Some(agent) = inner.agents.agent(name) {
        let text = match arguments.get("message").and_then(Value::as_str) {
            Some(text) => text.to_string(),
            None => Value::Object(arguments).to_string(),
        };
        return delegation(name, inner.agents.send(agent, &text, None, None, ctx).await);
    }
    match inner.tools.call(name, arguments, ctx.bearer.as_ref()).await {
        Ok(output) => CallOutcome::done(output.content, output.is_error),
        Err(error) => {
            tracing::warn!(tool = name, %error, "tool call failed");
            CallOutcome::done(format!("Tool error: {error}"), true)
        }
    }
}

/// Forwards a decision on a proxy approval to the sub-agent's task.
pub async fn forward_decision(
    inner: &Inner,
    ctx: &RequestContext,
    agent_name: &str,
    task_id: &str,
    approve: bool,
) -> CallOutcome {
    let Some(agent) = inner.agents.agent(agent_name) else {
        return CallOutcome::done(
            format!(
                "Sub-agent {agent_name:?} is no longer configured; the decision was not forwarded."
            ),
            true,
        );
    };
    let text = if approve { "approved" } else { "rejected" };
    tracing::info!(
        agent = agent_name,
        task = task_id,
        approve,
        "forwarding approval decision to sub-agent"
    );
    let outcome = delegation(
        agent_name,
        inner
            .agents
            .send(agent, text, Some(task_id), Some(approve), ctx)
            .await,
    );
    match outcome {
        CallOutcome::Done { content, .. } if !approve => CallOutcome::done(
            format!("Rejected by the user; {agent_name} answered: {content}"),
            true,
        ),
        other => other,
    }
}

fn delegation(
    agent: &str,
    result: Result<Delegation, crate::a2a::client::A2aError>,
) -> CallOutcome {
    match result {
        Ok(Delegation::Completed(text)) => CallOutcome::done(text, false),
        Ok(Delegation::Failed(reason)) => {
            CallOutcome::done(format!("Sub-agent {agent} failed: {reason}"), true)
        }
        Ok(Delegation::InputRequired(approval)) => CallOutcome::Remote {
            agent: agent.to_string(),
            approval,
        },
        Err(error) => {
            tracing::warn!(agent, %error, "delegation failed");
            CallOutcome::done(error.to_string(), true)
        }
    }
}

/// The local approval that stands for a sub-agent's approval request.
pub fn proxy_approval(
    conversation_id: Uuid,
    call_id: &str,
    node: Option<String>,
    agent: &str,
    remote: RemoteApproval,
) -> PendingApproval {
    PendingApproval {
        uuid: Uuid::new_v4(),
        conversation_id,
        description: format!("{agent} asks for approval: {}", remote.description),
        tool_name: remote.tool_name,
        tool_args: remote.tool_args,
        created_at: Utc::now(),
        call_id: call_id.to_string(),
        node,
        state: ApprovalState::Pending,
        remote_task_id: Some(remote.task_id),
        remote_agent_name: Some(agent.to_string()),
    }
}
