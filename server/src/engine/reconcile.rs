//! At startup, pending proxy approvals are checked against their
//! sub-agents: while this agent was down, the sub-agent's approval may
//! have been decided there, canceled, or replaced by another. A proxy
//! approval must never stand for something the sub-agent no longer asks.

use std::sync::Arc;

use asg_shared::a2a::Task;
use asg_shared::{ApprovalState, PendingApproval};
use uuid::Uuid;

use super::turn::Turn;
use super::{Engine, EngineError, Inner, calls, store_call, transition};
use crate::a2a::client::{Delegation, delegation_of};
use crate::context::RequestContext;
use transition::{Command, Who};

/// Proxy approvals read at a time when they are checked at startup.
const RECONCILE_PAGE: usize = 200;

/// What the sub-agent's task says about a pending proxy approval.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// It still waits for that approval: nothing to do.
    Unchanged,
    /// It now waits for another approval: the proxy is replaced.
    Replaced(Box<PendingApproval>),
    /// It is no longer waiting (decided there, canceled, failed): the
    /// proxy is closed with this result.
    Settled { content: String, is_error: bool },
}

/// Compares a pending proxy approval with the sub-agent's task.
pub fn verdict(pending: &PendingApproval, task: &Task) -> Verdict {
    let agent = pending.remote_agent_name.as_deref().unwrap_or_default();
    match delegation_of(task) {
        Delegation::InputRequired(remote)
            if remote.approval_uuid == pending.remote_approval_uuid =>
        {
            Verdict::Unchanged
        }
        Delegation::InputRequired(remote) => Verdict::Replaced(Box::new(calls::proxy_approval(
            pending.conversation_id,
            &pending.call_id,
            pending.node.clone(),
            agent,
            remote,
        ))),
        Delegation::Completed(text) => Verdict::Settled {
            content: format!(
                "Decided on {agent} directly while this agent was stopped; it answered: {text}"
            ),
            is_error: false,
        },
        Delegation::Failed(reason) | Delegation::AuthRequired(reason) => Verdict::Settled {
            content: format!(
                "{agent}'s task ended while this agent was stopped ({reason}); the approval here is closed."
            ),
            is_error: true,
        },
    }
}

impl Engine {
    /// Checks every pending proxy approval with its sub-agent (in the
    /// background at startup). A sub-agent that cannot be reached leaves
    /// the approval as it is; deciding it later reconciles again.
    pub async fn reconcile_proxy_approvals(&self) {
        let mut query = crate::store::PendingQuery {
            questions: Some(false),
            proxies: true,
            state: Some(ApprovalState::Pending),
            limit: RECONCILE_PAGE,
            ..Default::default()
        };
        loop {
            let asked = query.clone();
            let read = store_call::stored(&self.inner.store, move |s| s.pending_page(&asked)).await;
            let page = match read {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(%error, "cannot read the proxy approvals to check them with their sub-agents");
                    return;
                }
            };
            for pending in page.approvals {
                let (id, uuid) = (pending.conversation_id, pending.uuid);
                if let Err(error) = self.reconcile_one(id, uuid).await {
                    tracing::warn!(conversation = %id, approval = %uuid, %error, "could not check a proxy approval with its sub-agent");
                }
            }
            match page.next {
                Some(next) => query.after = Some(next),
                None => return,
            }
        }
    }

    async fn reconcile_one(&self, id: Uuid, uuid: Uuid) -> Result<(), String> {
        let current = self.get(id).await.map_err(|e| e.to_string())?;
        let Some(pending) = current.and_then(|c| c.pending_by_uuid(uuid).cloned()) else {
            return Ok(());
        };
        let agent_name = pending.remote_agent_name.clone().unwrap_or_default();
        let agent = self
            .inner
            .agents
            .agent(&agent_name)
            .ok_or_else(|| format!("sub-agent {agent_name:?} is no longer configured"))?;
        let task_id = pending.remote_task_id.clone().unwrap_or_default();
        let ctx = RequestContext::default();
        let task = self
            .inner
            .agents
            .get_task(agent, &task_id, &ctx)
            .await
            .map_err(|e| e.to_string())?;
        let verdict = verdict(&pending, &task);
        if verdict == Verdict::Unchanged {
            return Ok(());
        }
        let slot = self.inner.slot(id).await.map_err(|e| e.to_string())?;
        // A turn like any other: shutdown waits for it (or stops it), and
        // none starts while the agent is closing.
        let inner = self.inner.clone();
        self.spawn_turn(move || settle_remote(inner, slot, pending, verdict))
            .await
            .map_err(|e| e.to_string())
    }
}

/// Applies what the sub-agent says of `pending` under the conversation's
/// lock; a paused run whose last approval was settled there goes on as
/// after a decision.
async fn settle_remote(
    inner: Arc<Inner>,
    slot: Arc<super::index::Slot>,
    pending: asg_shared::PendingApproval,
    verdict: Verdict,
) -> Result<(), EngineError> {
    inner
        .claimed(&slot, || settle_claimed(&inner, &slot, pending, verdict))
        .await
}

async fn settle_claimed(
    inner: &Arc<Inner>,
    slot: &Arc<super::index::Slot>,
    pending: asg_shared::PendingApproval,
    verdict: Verdict,
) -> Result<(), EngineError> {
    let conversation = slot.snapshot();
    if conversation.pending_by_uuid(pending.uuid) != Some(&pending) {
        return Ok(()); // decided meanwhile
    }
    let command = match verdict {
        Verdict::Unchanged => return Ok(()),
        Verdict::Replaced(mut next) => {
            tracing::warn!(conversation = %conversation.id, old = %pending.uuid, new = %next.uuid, "the sub-agent now asks for another approval; the proxy approval is replaced");
            inner.expiry.stamp(&mut next);
            next.config_hash = Some(inner.config_hash(&next));
            Command::Replaced {
                old: pending.uuid,
                next,
            }
        }
        Verdict::Settled { content, is_error } => {
            tracing::warn!(conversation = %conversation.id, approval = %pending.uuid, "the sub-agent's approval was settled there; the proxy approval is closed");
            Command::SettledRemotely {
                uuid: pending.uuid,
                content,
                is_error,
            }
        }
    };
    let transition = inner
        .with_facts(|facts| transition::apply(&conversation, Who::System, command, facts))
        .map_err(|refusal| super::refused(refusal, &conversation))?;
    let ctx = RequestContext::default();
    let turn = Turn::new(inner.clone(), slot, transition.conversation, &ctx);
    let result = turn
        .on_behalf_of(pending.requested_by.clone())
        .drive(transition.effects)
        .await;
    super::settle(inner, slot, result).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use asg_shared::fixtures;
    use chrono::Utc;
    use serde_json::json;

    use super::*;

    fn pending() -> PendingApproval {
        PendingApproval {
            conversation_id: Uuid::new_v4(),
            description: "d".into(),
            created_at: Utc::now(),
            call_id: "c1".into(),
            remote_task_id: Some("t1".into()),
            remote_agent_name: Some("b".into()),
            remote_approval_uuid: Some("x".into()),
            remote_context_id: None,
            ..fixtures::pending_approval("resources_add")
        }
    }

    fn task(state: &str, approval: Option<&str>) -> Task {
        let parts = match approval {
            Some(uuid) => json!([{"kind": "text", "text": "approve?"},
                {"kind": "data", "data": {"approval_uuid": uuid, "tool_name": "resources_add",
                 "tool_args": {"name": "n", "value": 1}, "description": "add n"}}]),
            None => json!([{"kind": "text", "text": "done"}]),
        };
        serde_json::from_value(json!({"id": "t1", "contextId": "c", "kind": "task",
            "status": {"state": state, "message": {"role": "agent", "messageId": "m",
            "kind": "message", "parts": parts}}}))
        .unwrap()
    }

    #[test]
    fn the_same_approval_is_unchanged() {
        assert_eq!(
            verdict(&pending(), &task("input-required", Some("x"))),
            Verdict::Unchanged
        );
    }

    #[test]
    fn another_approval_replaces_the_proxy_with_a_new_uuid() {
        let old = pending();
        let Verdict::Replaced(next) = verdict(&old, &task("input-required", Some("y"))) else {
            panic!("not replaced");
        };
        assert_ne!(next.uuid, old.uuid);
        assert_eq!(next.remote_approval_uuid.as_deref(), Some("y"));
        assert_eq!(next.call_id, old.call_id);
        assert_eq!(next.tool_args["name"], "n");
    }

    #[test]
    fn a_finished_task_settles_the_proxy() {
        let Verdict::Settled { is_error, content } = verdict(&pending(), &task("completed", None))
        else {
            panic!("not settled");
        };
        assert!(!is_error && content.contains("directly"), "{content}");
        let Verdict::Settled { is_error, .. } = verdict(&pending(), &task("canceled", None)) else {
            panic!("not settled");
        };
        assert!(is_error);
    }
}
