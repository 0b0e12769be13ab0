//! The approval state machine, as pure functions over a [`Conversation`].
//!
//! `pending` --approve--> `executing` --result recorded--> gone
//! `pending` --reject--> gone (refusal recorded)
//! `executing` found at startup --> gone (interruption recorded, not re-run)

use asg_shared::{
    Actor, ApprovalState, Conversation, ConversationStatus, PendingApproval, Role, ToolResult,
};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use uuid::Uuid;

/// A new message stamped now.
pub fn new_message(role: Role, content: impl Into<String>) -> asg_shared::Message {
    asg_shared::Message {
        id: Uuid::new_v4(),
        role,
        content: content.into(),
        tool_call: None,
        tool_result: None,
        node: None,
        is_error: false,
        created_at: Utc::now(),
    }
}

/// The subject recorded for decisions taken by the expiry (webhooks
/// recognise it).
pub const EXPIRY_SUBJECT: &str = "system:expiry";
/// The role recorded for decisions taken by the expiry.
pub const EXPIRY_ROLE: &str = "expiry";
/// The subject recorded for refusals after a configuration change.
pub const CONFIG_SUBJECT: &str = "system:config";

/// Who decided an approval: a person, or the system itself. The engine
/// branches on this, never on a subject string, so no principal can pass
/// for the system by its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecidedBy {
    /// A principal, as recorded (subject, role, channel).
    Person(Actor),
    /// Its deadline passed without a decision.
    Expiry,
    /// The configuration changed since it was raised
    /// (`approval.on_config_change: refuse`); `via` is the channel of the
    /// decision it replaced.
    ConfigChange {
        /// That decision's channel.
        via: Option<String>,
    },
}

impl DecidedBy {
    /// The record kept with the decision and in the audit log.
    pub fn actor(&self) -> Actor {
        match self {
            DecidedBy::Person(actor) => actor.clone(),
            DecidedBy::Expiry => Actor {
                subject: EXPIRY_SUBJECT.to_string(),
                name: None,
                role: Some(EXPIRY_ROLE.to_string()),
                via: Some("system".to_string()),
            },
            DecidedBy::ConfigChange { via } => Actor {
                subject: CONFIG_SUBJECT.to_string(),
                name: None,
                role: Some("config".to_string()),
                via: via.clone(),
            },
        }
    }

    /// How a refusal by it is described when it ends a pipeline.
    pub fn refusal_word(&self) -> &'static str {
        match self {
            DecidedBy::Expiry => "not decided in time (expired)",
            DecidedBy::ConfigChange { .. } => "refused because the agent's configuration changed",
            DecidedBy::Person(_) => "rejected",
        }
    }
}

/// Where a run goes once a decided call's result is recorded (and its
/// approval taken off the conversation): the one branching of the
/// lifecycle after a decision, as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterDecision {
    /// A refusal for a configuration change of a paused pipeline: the
    /// other approvals are refused too and nothing resumes.
    EndRun,
    /// Other approvals of the run still wait: save and wait for them.
    WaitForTheRest,
    /// The pipeline paused under another configuration and
    /// `approval.on_config_change` is `refuse`: it is cancelled.
    RefuseResume,
    /// A simple agent: the model goes on.
    Continue,
    /// A pipeline: every paused step resumes.
    Resume,
}

/// What comes after a decision by `by` on `conversation` (its result
/// recorded, its approval taken), given whether the configuration
/// changed under a `refuse` policy.
pub fn after_decision(
    conversation: &Conversation,
    by: &DecidedBy,
    changed_under_refuse: bool,
) -> AfterDecision {
    let pipeline = conversation.pipeline_state.is_some();
    if pipeline && matches!(by, DecidedBy::ConfigChange { .. }) {
        return AfterDecision::EndRun;
    }
    if !conversation.pending().is_empty() {
        return AfterDecision::WaitForTheRest;
    }
    match (pipeline, changed_under_refuse) {
        (true, true) => AfterDecision::RefuseResume,
        (true, false) => AfterDecision::Resume,
        (false, _) => AfterDecision::Continue,
    }
}

/// The pending approval `uuid` if it can still be decided.
pub fn resolvable(conversation: &Conversation, uuid: uuid::Uuid) -> Option<&PendingApproval> {
    conversation.pending_by_uuid(uuid).filter(|p| {
        p.state == ApprovalState::Pending
            && conversation.status == ConversationStatus::WaitingApproval
    })
}

/// Marks the paused step that waited for `uuid` as settled: `refusal`
/// says what was refused (the step then reports it instead of going on).
/// A state written before steps were listed has one step: this one.
pub fn settle_step(conversation: &mut Conversation, uuid: uuid::Uuid, refusal: Option<String>) {
    let Some(state) = conversation.pipeline_state.as_mut() else {
        return;
    };
    if state.paused_steps.is_empty() {
        state.paused_steps = state.steps(Some(uuid));
    }
    if let Some(step) = state
        .paused_steps
        .iter_mut()
        .find(|s| s.approval_uuid == uuid)
    {
        step.refusal = refusal;
    }
}

/// Points the paused step that waited for `old` at its successor (a
/// sub-agent asking again on the same call).
pub fn move_step(conversation: &mut Conversation, old: uuid::Uuid, new: uuid::Uuid) {
    let Some(state) = conversation.pipeline_state.as_mut() else {
        return;
    };
    if state.paused_steps.is_empty() {
        state.paused_steps = state.steps(Some(old));
    }
    for step in state
        .paused_steps
        .iter_mut()
        .filter(|s| s.approval_uuid == old)
    {
        step.approval_uuid = new;
    }
}

/// The conversation a turn starts from, taken under its lock: an
/// approval still `executing` or a turn still marked in progress was left
/// by a turn that did not finish (its last save failed, or its holder
/// died), so it is recorded as interrupted, never run again.
pub fn turn_start(snapshot: &Conversation) -> Conversation {
    let mut conversation = snapshot.clone();
    recover_interrupted(&mut conversation, Utc::now());
    conversation
}

/// Records a turn that a crash or a shutdown stopped halfway: an approval
/// left `executing` becomes an "interrupted, may have run, not re-run"
/// tool result, and the turn ends with an error answer that says so (an
/// A2A task then reads `failed`, not `working` forever). With sibling
/// approvals still pending, the run keeps waiting for them and the
/// interrupted step reports the interruption. Returns true when the
/// conversation changed.
pub fn recover_interrupted(conversation: &mut Conversation, now: DateTime<Utc>) -> bool {
    let executing = conversation
        .pending()
        .iter()
        .find(|p| p.state == ApprovalState::Executing)
        .map(|p| p.uuid)
        .and_then(|uuid| conversation.take_pending(uuid));
    if executing.is_none() && !conversation.turn_in_progress {
        return false;
    }
    let mut node = None;
    if let Some(pending) = executing {
        conversation
            .messages
            .push(interrupted_call(&pending, now).into());
        if !conversation.pending().is_empty() {
            let what = format!("{} was interrupted (it may have run)", pending.tool_name);
            settle_step(conversation, pending.uuid, Some(what));
            conversation.turn_in_progress = false;
            conversation.updated_at = now;
            return true;
        }
        conversation.pipeline_state = None;
        node = pending.node;
    }
    let mut answer = new_message(
        Role::Assistant,
        "Interrupted: the agent stopped (restart, crash or shutdown) before this turn \
         finished. Nothing was run again; send the message again to continue."
            .to_string(),
    );
    answer.node = node;
    answer.is_error = true;
    answer.created_at = now;
    conversation.messages.push(answer.into());
    if conversation.status == ConversationStatus::WaitingApproval
        && conversation.pending().is_empty()
    {
        conversation.status = ConversationStatus::Active;
    }
    conversation.turn_in_progress = false;
    conversation.updated_at = now;
    true
}

/// The tool result of an approved call whose outcome is unknown.
fn interrupted_call(pending: &PendingApproval, now: DateTime<Utc>) -> asg_shared::Message {
    let mut message = new_message(
        Role::Tool,
        format!(
            "Interrupted: the approved call to {} (approval {}) was started but the agent \
             stopped before its result was recorded, so it may have run. It was NOT run \
             again; check the outcome before retrying.",
            pending.tool_name, pending.uuid
        ),
    );
    message.tool_result = Some(Box::new(ToolResult {
        call_id: pending.call_id.clone(),
        name: pending
            .remote_agent_name
            .clone()
            .unwrap_or_else(|| pending.tool_name.clone()),
        is_error: true,
        auth_required: false,
    }));
    message.node = pending.node.clone();
    message.is_error = true;
    message.created_at = now;
    message
}

/// What a new approval is about; everything else starts empty.
pub struct NewApproval {
    /// Its uuid.
    pub uuid: uuid::Uuid,
    /// The waiting conversation.
    pub conversation_id: uuid::Uuid,
    /// The tool (or sub-agent) to call.
    pub tool_name: String,
    /// Its exact arguments.
    pub tool_args: Map<String, Value>,
    /// For the approver.
    pub description: String,
    /// The gated call.
    pub call_id: String,
    /// The node that asked.
    pub node: Option<String>,
}

/// A pending approval, created now: the one place that lists every
/// field, so a new field has one default.
pub fn pending(new: NewApproval) -> PendingApproval {
    PendingApproval {
        uuid: new.uuid,
        conversation_id: new.conversation_id,
        tool_name: new.tool_name,
        tool_args: new.tool_args,
        description: new.description,
        created_at: Utc::now(),
        call_id: new.call_id,
        node: new.node,
        state: ApprovalState::Pending,
        remote_task_id: None,
        remote_agent_name: None,
        remote_approval_uuid: None,
        remote_context_id: None,
        requested_by: None,
        approvers: Vec::new(),
        rule: None,
        no_edit: false,
        config_hash: None,
        config_changed: false,
        expires_at: None,
        remind_at: None,
        reminded: false,
        question: None,
    }
}

/// A one-line, human-readable description of a gated call.
pub fn describe(tool_name: &str, tool_description: &str, arguments: &Map<String, Value>) -> String {
    let args = Value::Object(arguments.clone());
    if tool_description.trim().is_empty() {
        format!("{tool_name} with arguments {args}")
    } else {
        format!(
            "{tool_name} ({}) with arguments {args}",
            tool_description.trim().trim_end_matches('.')
        )
    }
}

/// What the model is told when a human rejects a call.
pub fn rejection_text(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) => format!("Rejected by the user: {reason}. The call was not run."),
        None => "Rejected by the user. The call was not run.".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use asg_shared::{Conversation, fixtures};
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    fn waiting(state: ApprovalState) -> Conversation {
        let conversation = fixtures::conversation();
        Conversation {
            status: ConversationStatus::WaitingApproval,
            pending_approval: Some(PendingApproval {
                conversation_id: conversation.id,
                description: "d".into(),
                state,
                ..fixtures::pending_approval("resources_add")
            }),
            ..conversation
        }
    }

    #[test]
    fn only_a_pending_approval_with_that_uuid_is_resolvable() {
        let conversation = waiting(ApprovalState::Pending);
        let uuid = conversation.pending_approval.as_ref().unwrap().uuid;
        assert!(resolvable(&conversation, uuid).is_some());
        assert!(resolvable(&conversation, Uuid::new_v4()).is_none());
        let executing = waiting(ApprovalState::Executing);
        let uuid = executing.pending_approval.as_ref().unwrap().uuid;
        assert!(resolvable(&executing, uuid).is_none());
    }

    #[test]
    fn an_executing_approval_becomes_an_interruption_not_a_rerun() {
        let mut pending = waiting(ApprovalState::Pending);
        assert!(!recover_interrupted(&mut pending, Utc::now()));
        assert!(pending.pending_approval.is_some());

        let mut executing = waiting(ApprovalState::Executing);
        assert!(recover_interrupted(&mut executing, Utc::now()));
        assert!(executing.pending_approval.is_none());
        assert_eq!(executing.status, ConversationStatus::Active);
        let result = &executing.messages[executing.messages.len() - 2];
        assert!(result.is_error);
        assert!(result.content.contains("NOT run again"));
        assert!(result.content.contains("may have run"));
        assert_eq!(result.tool_result.as_ref().unwrap().call_id, "call_1");
        let answer = executing.messages.last().unwrap();
        assert_eq!(answer.role, Role::Assistant);
        assert!(answer.is_error && answer.content.starts_with("Interrupted"));
    }

    /// Two approvals of parallel branches, the first `executing`.
    fn two_branches_one_executing() -> (Conversation, Uuid, Uuid) {
        let mut conversation = waiting(ApprovalState::Executing);
        let first = conversation.pending_approval.clone().unwrap();
        let mut second = first.clone();
        second.uuid = Uuid::new_v4();
        second.state = ApprovalState::Pending;
        second.call_id = "call_2".into();
        conversation.set_pending(vec![first.clone(), second.clone()]);
        conversation.pipeline_state = Some(asg_shared::PipelineState {
            paused_steps: [(first.uuid, 0), (second.uuid, 1)]
                .into_iter()
                .map(|(uuid, branch)| asg_shared::PausedStep {
                    path: vec![branch],
                    approval_uuid: uuid,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        conversation.turn_in_progress = true;
        (conversation, first.uuid, second.uuid)
    }

    #[test]
    fn a_turn_starts_from_a_copy_where_a_call_left_executing_is_interrupted() {
        // A decision's call ran, and its save (and the one after it)
        // failed: the live copy still says executing. The next turn under
        // the lock must not wait on it forever, nor run it again.
        let (stale, first, second) = two_branches_one_executing();
        let start = turn_start(&stale);
        assert!(start.pending_by_uuid(first).is_none());
        assert!(
            resolvable(&start, second).is_some(),
            "the sibling is decidable"
        );
        assert!(!start.turn_in_progress);
        assert!(
            start
                .messages
                .iter()
                .any(|m| m.content.contains("may have run"))
        );
        // A clean conversation starts as it is.
        let clean = waiting(ApprovalState::Pending);
        assert_eq!(turn_start(&clean), clean);
    }

    #[test]
    fn an_interrupted_branch_reports_it_while_its_sibling_still_waits() {
        let (mut conversation, first, second) = two_branches_one_executing();
        assert!(recover_interrupted(&mut conversation, Utc::now()));
        // The sibling can still be decided; the run keeps its state.
        assert_eq!(conversation.status, ConversationStatus::WaitingApproval);
        assert!(!conversation.turn_in_progress);
        let left: Vec<Uuid> = conversation.pending().iter().map(|p| p.uuid).collect();
        assert_eq!(left, [second]);
        assert_eq!(
            conversation.pending_approval.as_ref().map(|p| p.uuid),
            Some(second)
        );
        assert!(resolvable(&conversation, second).is_some());
        assert!(resolvable(&conversation, first).is_none());
        let steps = &conversation.pipeline_state.as_ref().unwrap().paused_steps;
        let interrupted = steps.iter().find(|s| s.approval_uuid == first).unwrap();
        assert!(
            interrupted
                .refusal
                .as_deref()
                .unwrap()
                .contains("interrupted")
        );
        assert!(
            steps
                .iter()
                .find(|s| s.approval_uuid == second)
                .unwrap()
                .refusal
                .is_none()
        );
        // The model is told the call may have run; no closing answer yet.
        let result = conversation.messages.last().unwrap();
        assert_eq!(result.tool_result.as_ref().unwrap().call_id, "call_1");
        assert!(result.content.contains("NOT run again"));
        assert!(!recover_interrupted(&mut conversation, Utc::now()));
    }

    #[test]
    fn a_step_written_before_steps_were_listed_is_settled_as_the_only_one() {
        let mut conversation = waiting(ApprovalState::Pending);
        let uuid = conversation.pending_approval.as_ref().unwrap().uuid;
        conversation.pipeline_state = Some(asg_shared::PipelineState {
            paused_node_path: vec![1, 0],
            node_messages_from: 7,
            ..Default::default()
        });
        settle_step(&mut conversation, uuid, Some("x was rejected".into()));
        let steps = &conversation.pipeline_state.as_ref().unwrap().paused_steps;
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].path, [1, 0]);
        assert_eq!(steps[0].messages_from, 7);
        assert_eq!(steps[0].approval_uuid, uuid);
        assert_eq!(steps[0].refusal.as_deref(), Some("x was rejected"));
        let next = Uuid::new_v4();
        move_step(&mut conversation, uuid, next);
        let steps = &conversation.pipeline_state.as_ref().unwrap().paused_steps;
        assert_eq!(steps[0].approval_uuid, next);
    }

    #[test]
    fn a_turn_left_in_progress_ends_with_an_interruption() {
        let mut conversation = waiting(ApprovalState::Pending);
        conversation.pending_approval = None;
        conversation.status = ConversationStatus::Active;
        conversation.turn_in_progress = true;
        assert!(recover_interrupted(&mut conversation, Utc::now()));
        assert!(!conversation.turn_in_progress);
        assert_eq!(conversation.status, ConversationStatus::Active);
        let answer = conversation.messages.last().unwrap();
        assert!(answer.is_error && answer.content.starts_with("Interrupted"));
        assert!(!recover_interrupted(&mut conversation, Utc::now()));
    }

    #[test]
    fn descriptions_show_tool_and_exact_arguments() {
        let args = json!({"name": "web", "value": 42});
        let args = args.as_object().unwrap();
        assert_eq!(
            describe("resources_add", "Add a resource.", args),
            r#"resources_add (Add a resource) with arguments {"name":"web","value":42}"#
        );
        assert!(rejection_text(Some(" too big ")).contains("too big"));
    }

    #[test]
    fn after_a_decision_the_run_goes_where_the_table_says() {
        use AfterDecision::*;
        let person = DecidedBy::Person(Actor {
            subject: "alice".into(),
            name: None,
            role: Some("approver".into()),
            via: None,
        });
        let config = DecidedBy::ConfigChange { via: None };
        // (pipeline, another approval still pending, decided by, changed under refuse)
        let rows = [
            (false, false, &person, false, Continue),
            (false, false, &person, true, Continue),
            (false, true, &person, false, WaitForTheRest),
            (true, false, &person, false, Resume),
            (true, false, &person, true, RefuseResume),
            (true, true, &person, true, WaitForTheRest),
            (true, false, &DecidedBy::Expiry, false, Resume),
            (true, true, &config, true, EndRun),
            (true, false, &config, true, EndRun),
            (false, false, &config, true, Continue),
            (false, true, &config, true, WaitForTheRest),
        ];
        for (pipeline, others, by, changed, expected) in rows {
            let mut conversation = waiting(ApprovalState::Pending);
            if !others {
                conversation.set_pending(Vec::new());
            }
            if pipeline {
                conversation.pipeline_state = Some(asg_shared::PipelineState::default());
            }
            assert_eq!(
                after_decision(&conversation, by, changed),
                expected,
                "pipeline {pipeline}, others {others}, {by:?}, changed {changed}"
            );
        }
    }
}
