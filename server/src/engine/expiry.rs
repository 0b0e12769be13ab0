//! Approval expiry and reminders.
//!
//! A new approval gets its deadlines when it is saved (`Turn::pause`, and
//! a proxy approval replaced at startup): `expires_at` from
//! `approval.expires_after` or the asking rule's own `expires_after`,
//! `remind_at` from `approval.remind_after`. They are stored on the
//! approval, so a configuration change or a restart never moves them.
//!
//! A background task started with the engine sleeps until the earliest
//! deadline (woken early when an approval is raised), then:
//! - sends one [`InboxEvent::ApprovalReminder`] per approval whose
//!   `remind_at` passed, recording `reminded` first (once, restarts
//!   included);
//! - rejects an approval whose `expires_at` passed through the same
//!   decision path as a human rejection (the core's `Expire` transition: the call is
//!   not run, a proxy approval is rejected on the sub-agent, the audit log
//!   and the conversation record it), decided by [`expiry_actor`]. Under
//!   the conversation lock and only while the approval is still pending,
//!   so it happens once and a racing human decision either wins or gets
//!   the usual conflict. No principal is involved: the system decides,
//!   `policy::can_decide` is deliberately not asked.
//!
//! Deadlines that passed while the agent was down are acted on by the
//! first pass, right after startup. Shutdown stops the task.

use std::sync::Arc;
use std::time::Duration;

use asg_shared::PendingApproval;
use asg_shared::events::{ConversationEvent, InboxEvent};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::index::Slot;
use super::turn::Turn;
use super::{Engine, EngineError, Inner, TurnOutcome, approval, settle, transition};
use crate::config::ApprovalConfig;
use crate::context::RequestContext;
use transition::Who;

/// Longest sleep between two passes (a safety net: raised approvals wake
/// the task, and wall-clock jumps are caught up within this).
const MAX_SLEEP: Duration = Duration::from_secs(30);
/// Pause before retrying an action that failed (no busy loop).
const RETRY: Duration = Duration::from_secs(1);
/// Expiries (each a turn: the model hears of it) run at once at most.
const CONCURRENCY: usize = 8;

/// `approval.expires_after`, the rules' own, and `approval.remind_after`.
#[derive(Debug, Clone, Default)]
pub struct ExpiryPolicy {
    expires_after: Option<Duration>,
    remind_after: Option<Duration>,
    /// By rule index: an `ask` rule's `expires_after`.
    per_rule: Vec<Option<Duration>>,
    /// `questions.expires_after`: a question's own deadline.
    questions: Option<Duration>,
}

impl ExpiryPolicy {
    /// The policy of a validated `approval:` section.
    pub fn from_config(approval: &ApprovalConfig) -> ExpiryPolicy {
        ExpiryPolicy {
            expires_after: approval.expires_after.map(|d| d.get()),
            remind_after: approval.remind_after.map(|d| d.get()),
            per_rule: approval
                .rules
                .iter()
                .map(|rule| rule.expires_after.map(|d| d.get()))
                .collect(),
            questions: None,
        }
    }

    /// Questions expire after `after` (`questions.expires_after`)
    /// instead of `approval.expires_after`.
    pub fn with_questions(self, after: Option<Duration>) -> ExpiryPolicy {
        ExpiryPolicy {
            questions: after,
            ..self
        }
    }

    /// `(expires_at, remind_at)` of an approval raised at `created_at`,
    /// asked for by the rule labelled `rule` (`approval.rules[N] (...)`).
    /// A reminder due at or after the expiry is not sent.
    pub fn deadlines(
        &self,
        rule: Option<&str>,
        created_at: DateTime<Utc>,
    ) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
        let own = rule
            .and_then(rule_index)
            .and_then(|i| self.per_rule.get(i).copied().flatten());
        let after = |d: Duration| {
            chrono::Duration::from_std(d)
                .ok()
                .and_then(|d| created_at.checked_add_signed(d))
        };
        let expires_at = own.or(self.expires_after).and_then(after);
        let remind_at = self
            .remind_after
            .and_then(after)
            .filter(|at| expires_at.is_none_or(|expires| *at < expires));
        (expires_at, remind_at)
    }
}

/// The index `N` of a rule label `approval.rules[N] (...)`
/// (`engine::rules::Rule::label`).
pub(crate) fn rule_index(label: &str) -> Option<usize> {
    let rest = label.strip_prefix("approval.rules[")?;
    let (index, _) = rest.split_once(']')?;
    index.parse().ok()
}

/// The engine's expiry state: the policy and the background task.
pub(crate) struct Expiry {
    policy: ExpiryPolicy,
    wake: Notify,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl Expiry {
    pub(crate) fn new(policy: ExpiryPolicy) -> Expiry {
        Expiry {
            policy,
            wake: Notify::new(),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
        }
    }

    /// Gives a new approval its deadlines (kept when it has some).
    pub(crate) fn stamp(&self, pending: &mut PendingApproval) {
        if pending.expires_at.is_some() || pending.remind_at.is_some() || pending.reminded {
            return;
        }
        let (mut expires_at, remind_at) = self
            .policy
            .deadlines(pending.rule.as_deref(), pending.created_at);
        if let (true, Some(after)) = (pending.is_question(), self.policy.questions) {
            expires_at = chrono::Duration::from_std(after)
                .ok()
                .and_then(|d| pending.created_at.checked_add_signed(d));
        }
        pending.expires_at = expires_at;
        pending.remind_at = remind_at;
    }

    /// Wakes the task (an approval was saved): it sleeps until the new
    /// earliest deadline.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Runs `task` beside the expiry's until shutdown stops it.
    pub(crate) fn spawn_background(
        &self,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = task => {}
            }
        });
    }

    /// Stops the task and waits for it (shutdown).
    pub(crate) async fn stop(&self) {
        self.stop.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

/// What is due for an approval at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// Reject it as expired now.
    Expire,
    /// Send its reminder now.
    Remind,
    /// Nothing yet; look again at this time.
    At(DateTime<Utc>),
    /// Nothing, ever (no deadline, or no longer awaiting a decision).
    Never,
}

/// What is due for `approval` at `now`.
pub(crate) fn due(approval: &PendingApproval, now: DateTime<Utc>) -> Due {
    if approval.state != asg_shared::ApprovalState::Pending {
        return Due::Never;
    }
    if approval.expires_at.is_some_and(|at| at <= now) {
        return Due::Expire;
    }
    let remind = approval.remind_at.filter(|_| !approval.reminded);
    if remind.is_some_and(|at| at <= now) {
        return Due::Remind;
    }
    match [approval.expires_at, remind].into_iter().flatten().min() {
        Some(at) => Due::At(at),
        None => Due::Never,
    }
}

impl Engine {
    /// Starts the background task (at engine start).
    pub(crate) fn start_expiry(&self) {
        let engine = self.clone();
        let stop = self.inner.expiry.stop.clone();
        self.inner.expiry.tasks.spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = engine.expiry_loop() => {}
            }
        });
    }

    async fn expiry_loop(self) {
        loop {
            let sleep = self.expiry_pass(Utc::now()).await;
            tokio::select! {
                () = self.inner.expiry.wake.notified() => {}
                () = tokio::time::sleep(sleep) => {}
            }
        }
    }

    /// Acts on every approval due at `now`; how long to sleep then.
    async fn expiry_pass(&self, now: DateTime<Utc>) -> Duration {
        let mut work = Vec::new();
        let read = super::store_call::stored(&self.inner.store, move |s| s.deadlines(now)).await;
        let deadlines = match read {
            Ok(deadlines) => deadlines,
            Err(error) => {
                tracing::warn!(%error, "cannot read the pending approvals for their deadlines; retrying");
                return RETRY;
            }
        };
        let mut next = deadlines.next;
        let approvals = deadlines.due.iter().flat_map(|c| c.pending().to_vec());
        for approval in approvals {
            match due(&approval, now) {
                Due::Never => {}
                Due::At(at) => next = Some(next.map_or(at, |n: DateTime<Utc>| n.min(at))),
                action => work.push((approval.uuid, action)),
            }
        }
        let worked = !work.is_empty();
        let stalled = futures::stream::iter(work)
            .map(|(uuid, action)| self.act(uuid, action))
            .buffer_unordered(CONCURRENCY)
            .filter(|done| std::future::ready(!done))
            .count()
            .await;
        let until_next = next.map_or(MAX_SLEEP, |at: DateTime<Utc>| {
            (at - Utc::now()).to_std().unwrap_or(Duration::ZERO)
        });
        match (stalled, worked) {
            (0, true) => Duration::ZERO,
            (0, false) => until_next.min(MAX_SLEEP),
            _ => until_next.min(RETRY),
        }
    }

    /// Expires or reminds; false when it could not (retried later).
    async fn act(&self, uuid: Uuid, action: Due) -> bool {
        let result = match action {
            Due::Expire => self.expire(uuid).await.map(|_| ()),
            Due::Remind => self.remind(uuid).await,
            Due::At(_) | Due::Never => Ok(()),
        };
        match result {
            Ok(()) | Err(EngineError::AlreadyResolved { .. }) => true,
            // Expired; what failed afterwards is recorded in the
            // conversation like any turn's failure.
            Err(EngineError::Llm { .. } | EngineError::SubAgent { .. }) => true,
            Err(error) => {
                tracing::warn!(approval = %uuid, %error, "approval expiry/reminder failed; retrying");
                false
            }
        }
    }

    /// Rejects approval `uuid` as expired, if it is still pending and its
    /// deadline passed: a turn like a human's rejection, decided by
    /// [`expiry_actor`].
    pub(crate) async fn expire(&self, uuid: Uuid) -> Result<TurnOutcome, EngineError> {
        let slot = self.inner.slot_of_approval(uuid).await?;
        let inner = self.inner.clone();
        self.spawn_turn(move || async move {
            inner
                .claimed(&slot, || expire_turn(&inner, &slot, uuid))
                .await
        })
        .await
    }

    /// Sends approval `uuid`'s reminder once: `reminded` is saved first.
    async fn remind(&self, uuid: Uuid) -> Result<(), EngineError> {
        let slot = match self.inner.slot_of_approval(uuid).await {
            Ok(slot) => slot,
            Err(EngineError::ApprovalNotFound(_)) => return Ok(()),
            Err(error) => return Err(error),
        };
        self.inner
            .claimed(&slot, || self.remind_claimed(&slot, uuid))
            .await
    }

    async fn remind_claimed(&self, slot: &Arc<Slot>, uuid: Uuid) -> Result<(), EngineError> {
        let mut conversation = (*slot.snapshot()).clone();
        let Some(mut approval) = approval::resolvable(&conversation, uuid)
            .filter(|p| !p.reminded)
            .cloned()
        else {
            return Ok(());
        };
        approval.reminded = true;
        conversation.replace_pending(uuid, approval.clone());
        let mut turn = Turn::new(self.inner.clone(), slot, conversation, &system_context());
        turn.save().await?;
        tracing::info!(approval = %uuid, "approval still pending; reminder sent");
        self.inner
            .index
            .notify_inbox(InboxEvent::ApprovalReminder { approval });
        Ok(())
    }
}

/// The context of the expiry's turns: no caller, no credential.
fn system_context() -> RequestContext {
    RequestContext {
        via: "system",
        ..RequestContext::default()
    }
}

async fn expire_turn(
    inner: &Arc<Inner>,
    slot: &Arc<Slot>,
    uuid: Uuid,
) -> Result<TurnOutcome, EngineError> {
    let conversation = slot.snapshot();
    let command = transition::Command::Expire { uuid };
    let transition = inner
        .with_facts(|facts| transition::apply(&conversation, Who::System, command, facts))
        .map_err(|_| EngineError::AlreadyResolved {
            uuid,
            conversation: slot.snapshot(),
        })?;
    let requested_by = conversation
        .pending_by_uuid(uuid)
        .and_then(|p| p.requested_by.clone());
    tracing::info!(approval = %uuid, "approval expired; rejecting it");
    slot.emit(ConversationEvent::TurnStarted);
    let turn = Turn::new(
        inner.clone(),
        slot,
        transition.conversation,
        &system_context(),
    );
    let result = turn
        .on_behalf_of(requested_by)
        .drive(transition.effects)
        .await;
    settle(inner, slot, result).await
}

#[cfg(test)]
mod tests;
