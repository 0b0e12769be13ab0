//! The lifecycle as tables: every (state, principal, command) row with
//! the phase it leads to and the effects the engine carries out, or the
//! refusal.

use asg_shared::{Actor, PausedStep, PipelineState, fixtures};
use chrono::Duration;
use serde_json::json;

use super::*;
use crate::cast::{alice, bob, erin, frank};
use crate::choice::Choice;
use crate::lifecycle::{NewApproval, pending};
use crate::rules::ApprovalRules;

const FIRST: Uuid = Uuid::from_u128(42);
const SECOND: Uuid = Uuid::from_u128(43);

/// States of alice's conversation.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Active, nothing runs.
    Idle,
    /// A simple agent waits for approval of `resources_add web-1/42`.
    Waiting,
    /// Same, past its deadline.
    Expired,
    /// Its approval is executing.
    Executing,
    /// A turn runs.
    Running,
    /// Waits for a sub-agent's approval (a proxy approval).
    Proxy,
    /// A pipeline waits for two approvals of parallel branches.
    TwoBranches,
    /// Completed.
    Closed,
}

fn approval(uuid: Uuid) -> PendingApproval {
    let mut approval = pending(NewApproval {
        uuid,
        conversation_id: Uuid::from_u128(7),
        tool_name: "resources_add".into(),
        tool_args: json!({"name": "web-1", "value": 42})
            .as_object()
            .cloned()
            .unwrap(),
        description: "d".into(),
        call_id: format!("c{uuid}"),
        node: None,
    });
    approval.requested_by = Some(Actor {
        subject: "alice".into(),
        name: None,
        role: None,
        via: Some("rest".into()),
    });
    approval
}

fn conversation(state: State) -> Conversation {
    let now = Utc::now();
    let mut first = approval(FIRST);
    let (status, approvals) = match state {
        State::Idle | State::Running => (ConversationStatus::Active, vec![]),
        State::Closed => (ConversationStatus::Completed, vec![]),
        State::Waiting => (ConversationStatus::WaitingApproval, vec![first]),
        State::Expired => {
            first.expires_at = Some(now - Duration::seconds(1));
            (ConversationStatus::WaitingApproval, vec![first])
        }
        State::Executing => {
            first.state = ApprovalState::Executing;
            (ConversationStatus::WaitingApproval, vec![first])
        }
        State::Proxy => {
            first.remote_task_id = Some("task-1".into());
            first.remote_agent_name = Some("ops-agent".into());
            first.no_edit = true;
            (ConversationStatus::WaitingApproval, vec![first])
        }
        State::TwoBranches => (
            ConversationStatus::WaitingApproval,
            vec![first, approval(SECOND)],
        ),
    };
    let pipeline = (state == State::TwoBranches).then(|| PipelineState {
        paused_steps: [(FIRST, 0), (SECOND, 1)]
            .into_iter()
            .map(|(uuid, branch)| PausedStep {
                path: vec![branch],
                approval_uuid: uuid,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    });
    Conversation {
        id: Uuid::from_u128(7),
        status,
        pending_approvals: approvals,
        pipeline_state: pipeline,
        turn_in_progress: matches!(state, State::Running | State::Executing),
        owner: Some("alice".into()),
        created_at: now,
        updated_at: now,
        ..fixtures::conversation()
    }
}

fn rules() -> ApprovalRules {
    ApprovalRules::from_yaml(
        r#"
- { tool: resources_add, when: { name: prod }, action: deny }
- { tool: resources_add, when: { value: { gt: 1000 } }, action: ask, approvers: [sre] }
"#,
    )
    .unwrap()
}

/// The input schema of `resources_add`.
fn input_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"}, "value": {"type": "integer"}}})
}

/// The configuration as the engine knows it.
#[derive(Clone, Copy)]
enum Config {
    Same,
    ChangedRefuse,
    ChangedResume,
}

/// The facts under `config`, with the test's rules, handed to `f`.
fn with_facts<R>(config: Config, f: impl FnOnce(&Facts<'_>) -> R) -> R {
    let rules = rules();
    let same = |_: &PendingApproval| false;
    let changed = |_: &PendingApproval| true;
    let (on_change, changed): (_, &dyn Fn(&PendingApproval) -> bool) = match config {
        Config::Same => (OnChange::Refuse, &same),
        Config::ChangedRefuse => (OnChange::Refuse, &changed),
        Config::ChangedResume => (OnChange::Resume, &changed),
    };
    f(&Facts {
        policy: Policy {
            rules: &rules,
            separate_approver: false,
        },
        on_change,
        changed,
        root: "root",
        now: Utc::now(),
    })
}

/// Applies `command` to a conversation in `state` under `config`.
fn run(
    state: State,
    who: Who<'_>,
    command: Command<'_>,
    config: Config,
) -> Result<Transition, Refusal> {
    with_facts(config, |facts| {
        apply(&conversation(state), who, command, facts)
    })
}

/// Effects as short words, for the tables.
fn words(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .map(|effect| match effect {
            Effect::Audit(entry) => format!("audit {}", entry.decision),
            Effect::AuditOutcome { outcome, .. } => format!("outcome {outcome}"),
            Effect::Save => "save".into(),
            Effect::WakeExpiry => "wake".into(),
            Effect::Call(order) if order.is_remote() => format!("forward {}", order.approve),
            Effect::Call(_) => "run".into(),
            Effect::Run { .. } => "run tree".into(),
            Effect::Continue => "continue".into(),
            Effect::Resume(_) => "resume".into(),
            Effect::Reply(_) => "reply".into(),
        })
        .collect()
}

fn decide(uuid: Uuid, approve: bool, choice: &Choice) -> Command<'_> {
    let schema = Box::leak(Box::new(input_schema()));
    Command::Decide {
        request: gate::Decide {
            uuid,
            approve,
            choice,
            input_schema: Some(schema),
            gated: Some(true),
        },
        reason: None,
    }
}

fn edit(arguments: serde_json::Value) -> Choice {
    Choice {
        arguments: arguments.as_object().cloned(),
        remember: None,
    }
}

/// A row's expected answer.
enum Expect {
    /// The phase after, and the effects.
    To(Phase, &'static [&'static str]),
    /// Refused.
    Refused(fn(&Refusal) -> bool),
}

fn person(principal: &Principal) -> Who<'_> {
    Who::Person {
        principal,
        via: "rest",
    }
}

#[test]
fn persons_commands_as_a_table() {
    use Expect::*;
    use State::*;
    let (alice, bob, erin, frank) = (alice(), bob(), erin(), frank());
    let none = Choice::default();
    let prod = edit(json!({"name": "prod", "value": 1}));
    let big = edit(json!({"name": "web-1", "value": 5000}));
    let not_found: fn(&Refusal) -> bool = |r| *r == Refusal::NotFound;
    let forbidden: fn(&Refusal) -> bool = |r| matches!(r, Refusal::Forbidden(_));
    let resolved: fn(&Refusal) -> bool = |r| matches!(r, Refusal::AlreadyResolved(_));
    let send = || Command::Send { text: "hi" };
    let cancel = || Command::Cancel { reason: None };
    #[rustfmt::skip]
    let rows: Vec<(State, &Principal, Command<'_>, Expect)> = vec![
        (Idle, &alice, send(), To(Phase::Running, &["save", "run tree"])),
        (Idle, &bob, send(), Refused(not_found)),
        (Idle, &erin, send(), Refused(not_found)),
        (Waiting, &alice, send(), Refused(|r| matches!(r, Refusal::WaitingApproval(_)))),
        (Waiting, &erin, send(), Refused(forbidden)),
        (Closed, &alice, send(), Refused(|r| *r == Refusal::Completed)),
        // Decisions.
        (Waiting, &erin, decide(FIRST, true, &none), To(Phase::Executing(FIRST), &["audit approved", "save", "run"])),
        (Waiting, &erin, decide(FIRST, false, &none), To(Phase::Running, &["audit rejected", "outcome failed", "save", "continue"])),
        (Waiting, &alice, decide(FIRST, true, &none), Refused(forbidden)),
        (Waiting, &bob, decide(FIRST, true, &none), Refused(not_found)),
        (Waiting, &erin, decide(SECOND, true, &none), Refused(resolved)),
        (Executing, &erin, decide(FIRST, true, &none), Refused(resolved)),
        (Idle, &erin, decide(FIRST, true, &none), Refused(not_found)),
        // An edit is a new proposal, judged by the rules.
        (Waiting, &frank, decide(FIRST, true, &prod), Refused(forbidden)),
        (Waiting, &erin, decide(FIRST, true, &big), Refused(forbidden)),
        (Waiting, &frank, decide(FIRST, true, &big), To(Phase::Executing(FIRST), &["audit approved", "save", "run"])),
        (Proxy, &erin, decide(FIRST, true, &big), Refused(|r| matches!(r, Refusal::Invalid(_)))),
        (Proxy, &erin, decide(FIRST, true, &none), To(Phase::Executing(FIRST), &["audit approved", "save", "forward true"])),
        (Proxy, &erin, decide(FIRST, false, &none), To(Phase::Running, &["audit rejected", "forward false"])),
        // Parallel branches: one decided, the other still waits.
        (TwoBranches, &erin, decide(SECOND, false, &none), To(Phase::Waiting, &["audit rejected", "outcome failed", "save", "reply"])),
        // Cancel.
        (Waiting, &alice, cancel(), To(Phase::Closed, &["audit canceled", "save", "reply"])),
        (TwoBranches, &alice, cancel(), To(Phase::Closed, &["audit canceled", "audit canceled", "save", "reply"])),
        (Proxy, &alice, cancel(), To(Phase::Waiting, &["audit canceled", "forward false"])),
        (Waiting, &erin, cancel(), Refused(forbidden)),
        (Waiting, &bob, cancel(), Refused(not_found)),
        (Idle, &alice, cancel(), Refused(|r| *r == Refusal::NotCancelable)),
        // The agent's own transitions are not a person's to bring.
        (Expired, &erin, Command::Expire { uuid: FIRST }, Refused(forbidden)),
        (Expired, &bob, Command::Expire { uuid: FIRST }, Refused(not_found)),
        (Executing, &alice, Command::Interrupted, Refused(forbidden)),
    ];
    for (state, principal, command, expect) in rows {
        let label = format!("{state:?} / {} / {command:?}", principal.subject);
        let got = run(state, person(principal), command, Config::Same);
        check(&label, got, expect);
    }
}

fn check(label: &str, got: Result<Transition, Refusal>, expect: Expect) {
    match (got, expect) {
        (Ok(t), Expect::To(phase_after, effects)) => {
            assert_eq!(phase(&t.conversation), phase_after, "{label}");
            assert_eq!(words(&t.effects), effects, "{label}");
        }
        (Err(refusal), Expect::Refused(is)) => assert!(is(&refusal), "{label}: {refusal:?}"),
        (Ok(t), Expect::Refused(_)) => {
            panic!("{label}: expected a refusal, got {:?}", words(&t.effects))
        }
        (Err(refusal), Expect::To(..)) => panic!("{label}: refused: {refusal:?}"),
    }
}

#[test]
fn the_agents_own_transitions_as_a_table() {
    use Expect::*;
    use State::*;
    let order = CallOrder {
        pending: approval(FIRST),
        approve: true,
        by: DecidedBy::Expiry,
        reason: None,
        arguments: Map::new(),
        edited: None,
        reply: None,
        batch: Batch::One,
    };
    let ok = || CallResult::Done {
        content: "added".into(),
        is_error: false,
    };
    let mut next = approval(SECOND);
    next.remote_task_id = Some("task-1".into());
    let asked = || CallResult::AskedAgain {
        agent: "ops-agent".into(),
        next: Box::new(next.clone()),
    };
    let resolved: fn(&Refusal) -> bool = |r| matches!(r, Refusal::AlreadyResolved(_));
    let settled = |uuid| Command::SettledRemotely {
        uuid,
        content: "done there".into(),
        is_error: false,
    };
    #[rustfmt::skip]
    let rows: Vec<(State, Command<'_>, Expect)> = vec![
        (Expired, Command::Expire { uuid: FIRST }, To(Phase::Running, &["audit rejected", "outcome failed", "save", "continue"])),
        (Waiting, Command::Expire { uuid: FIRST }, Refused(resolved)),
        (Executing, Command::Expire { uuid: FIRST }, Refused(resolved)),
        (Executing, Command::Finished { order: &order, result: ok() }, To(Phase::Running, &["outcome succeeded", "save", "continue"])),
        (Executing, Command::Finished { order: &order, result: asked() }, To(Phase::Waiting, &["outcome waiting_again", "save", "wake", "reply"])),
        (Idle, Command::Finished { order: &order, result: ok() }, To(Phase::Idle, &[])),
        (Executing, Command::Interrupted, To(Phase::Idle, &["save"])),
        (Running, Command::Interrupted, To(Phase::Idle, &["save"])),
        (Waiting, Command::Interrupted, To(Phase::Waiting, &[])),
        (Proxy, settled(FIRST), To(Phase::Idle, &["save", "wake"])),
        (Waiting, settled(FIRST), Refused(resolved)),
        (Proxy, Command::Replaced { old: FIRST, next: Box::new(next.clone()) }, To(Phase::Waiting, &["save", "wake"])),
        (Executing, Command::Replaced { old: FIRST, next: Box::new(next.clone()) }, Refused(resolved)),
        (Waiting, Command::Send { text: "hi" }, Refused(|r| matches!(r, Refusal::Forbidden(_)))),
        (Waiting, Command::Cancel { reason: None }, Refused(|r| matches!(r, Refusal::Forbidden(_)))),
    ];
    for (state, command, expect) in rows {
        let label = format!("{state:?} / system / {command:?}");
        check(
            &label,
            run(state, Who::System, command, Config::Same),
            expect,
        );
    }
}

#[test]
fn an_approval_under_a_changed_configuration_follows_on_config_change() {
    let erin = erin();
    let none = Choice::default();
    // refuse: the approval becomes the configuration change's refusal.
    let t = run(
        State::Waiting,
        person(&erin),
        decide(FIRST, true, &none),
        Config::ChangedRefuse,
    )
    .unwrap();
    assert_eq!(
        words(&t.effects),
        ["audit rejected", "outcome failed", "save", "continue"]
    );
    let decision = t.conversation.decisions.last().unwrap();
    assert!(!decision.approved);
    assert_eq!(decision.decided_by.subject, lifecycle::CONFIG_SUBJECT);
    assert_eq!(decision.decided_by.via.as_deref(), Some("rest"));
    let result = t.conversation.messages.last().unwrap();
    assert!(
        result
            .content
            .starts_with("Not run: the agent's configuration changed"),
        "{}",
        result.content
    );
    // resume: approved, the change noted.
    let t = run(
        State::Waiting,
        person(&erin),
        decide(FIRST, true, &none),
        Config::ChangedResume,
    )
    .unwrap();
    assert_eq!(words(&t.effects), ["audit approved", "save", "run"]);
    let decision = t.conversation.decisions.last().unwrap();
    assert_eq!(decision.decided_by.subject, "erin");
    assert!(decision.reason.as_deref().unwrap().contains(RESUMED));
    // A pipeline whose config changed under refuse ends: the other branch
    // is refused too, nothing resumes.
    let t = run(
        State::TwoBranches,
        person(&erin),
        decide(FIRST, true, &none),
        Config::ChangedRefuse,
    )
    .unwrap();
    assert_eq!(
        words(&t.effects),
        [
            "audit rejected",
            "outcome failed",
            "audit rejected",
            "save",
            "reply"
        ]
    );
    assert!(t.conversation.pending().is_empty());
    assert!(t.conversation.pipeline_state.is_none());
    assert_eq!(phase(&t.conversation), Phase::Idle);
    assert!(
        t.conversation
            .messages
            .last()
            .unwrap()
            .content
            .starts_with("Pipeline cancelled")
    );
}

#[test]
fn a_decision_records_who_in_which_role_and_orders_the_edited_call() {
    let frank = frank();
    let big = Choice {
        arguments: json!({"name": "web-1", "value": 5000}).as_object().cloned(),
        remember: Some(asg_shared::GrantScope::Conversation),
    };
    let t = run(
        State::Waiting,
        person(&frank),
        decide(FIRST, true, &big),
        Config::Same,
    )
    .unwrap();
    let decision = t.conversation.decisions.last().unwrap();
    assert_eq!(decision.decided_by.subject, "frank");
    assert_eq!(decision.decided_by.role.as_deref(), Some("approver"));
    assert_eq!(
        decision.remembered,
        Some(asg_shared::GrantScope::Conversation)
    );
    assert_eq!(t.conversation.grants.len(), 1);
    assert!(t.conversation.turn_in_progress);
    let Some(Effect::Call(order)) = t.effects.last() else {
        panic!("no call ordered: {:?}", t.effects);
    };
    assert_eq!(order.arguments["value"], 5000);
    assert_eq!(order.edited.as_ref().unwrap()["value"], 5000);
    let Effect::Audit(entry) = &t.effects[0] else {
        panic!("the audit line comes first");
    };
    assert_eq!((entry.decision, entry.outcome), ("approved", "executing"));
    // The result tells the model the arguments were changed.
    let result = CallResult::Done {
        content: "added".into(),
        is_error: false,
    };
    let finished = Command::Finished { order, result };
    let done = with_facts(Config::Same, |facts| {
        apply(&t.conversation, Who::System, finished, facts)
    })
    .unwrap();
    let message = done.conversation.messages.last().unwrap();
    assert!(
        message
            .content
            .starts_with("Note: the approver changed the arguments")
    );
    assert!(message.content.ends_with("added"));
    assert_eq!(phase(&done.conversation), Phase::Running);
}

#[test]
fn an_expired_approval_tells_the_model_it_expired() {
    let t = run(
        State::Expired,
        Who::System,
        Command::Expire { uuid: FIRST },
        Config::Same,
    )
    .unwrap();
    let decision = t.conversation.decisions.last().unwrap();
    assert_eq!(decision.decided_by.subject, lifecycle::EXPIRY_SUBJECT);
    let result = t.conversation.messages.last().unwrap();
    assert!(
        result.content.starts_with("The approval expired after"),
        "{}",
        result.content
    );
    assert!(result.is_error);
}

#[test]
fn a_cancel_with_a_sub_agents_approval_closes_once_its_refusal_is_back() {
    let alice = alice();
    let t = run(
        State::Proxy,
        person(&alice),
        Command::Cancel { reason: Some("no") },
        Config::Same,
    )
    .unwrap();
    let Some(Effect::Call(order)) = t.effects.last() else {
        panic!("the refusal is forwarded: {:?}", t.effects);
    };
    assert!(!order.approve);
    let result = CallResult::Done {
        content: "ops-agent: canceled".into(),
        is_error: true,
    };
    let finished = Command::Finished { order, result };
    let done = with_facts(Config::Same, |facts| {
        apply(&t.conversation, Who::System, finished, facts)
    })
    .unwrap();
    assert_eq!(words(&done.effects), ["save", "reply"]);
    assert_eq!(phase(&done.conversation), Phase::Closed);
    let texts: Vec<&str> = done
        .conversation
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Rejected by the user: no") && t.ends_with("ops-agent: canceled")),
        "{texts:?}"
    );
    assert_eq!(
        *texts.last().unwrap(),
        "Canceled: resources_add was not run (no)."
    );
}

/// Alice's conversation waiting for a question (a sub-agent's, when
/// `remote`).
fn asking(remote: bool) -> Conversation {
    let mut conversation = conversation(if remote { State::Proxy } else { State::Waiting });
    let mut list = conversation.pending().to_vec();
    list[0].question = crate::question::from_arguments(
        json!({"question": "Which?", "choices": ["staging", "prod"]})
            .as_object()
            .unwrap(),
    )
    .ok()
    .map(Box::new);
    conversation.set_pending(list);
    conversation
}

/// A row: name, a sub-agent's question, who, what, the effects or why not.
type AnswerRow<'a> = (
    &'a str,
    bool,
    Who<'a>,
    Command<'a>,
    Result<Vec<&'a str>, &'a str>,
);

#[test]
fn an_answer_is_judged_recorded_and_becomes_the_calls_result() {
    let prod = QuestionReply::Accept {
        answer: json!("prod"),
    };
    let dev = QuestionReply::Accept {
        answer: json!("dev"),
    };
    let (alice, bob, erin) = (alice(), bob(), erin());
    let person = |principal| Who::Person {
        principal,
        via: "rest",
    };
    let answer = |reply| Command::Answer { uuid: FIRST, reply };
    let none = Choice::default();
    let table: [AnswerRow<'_>; 6] = [
        (
            "owner answers",
            false,
            person(&alice),
            answer(&prod),
            Ok(vec![
                "audit answered",
                "outcome succeeded",
                "save",
                "continue",
            ]),
        ),
        (
            "sub-agent's question is forwarded",
            true,
            person(&alice),
            answer(&prod),
            Ok(vec!["audit answered", "save", "forward true"]),
        ),
        (
            "stranger",
            false,
            person(&bob),
            answer(&prod),
            Err("not found"),
        ),
        (
            "approver is not the owner",
            false,
            person(&erin),
            answer(&prod),
            Err("only the principal that started"),
        ),
        (
            "not a choice",
            false,
            person(&alice),
            answer(&dev),
            Err("one of \"staging\", \"prod\""),
        ),
        (
            "a decision on a question",
            false,
            person(&alice),
            decide(FIRST, true, &none),
            Err("is a question"),
        ),
    ];
    for (name, remote, who, command, expected) in table {
        let got = with_facts(Config::Same, |facts| {
            apply(&asking(remote), who, command, facts)
        });
        match (got, expected) {
            (Ok(transition), Ok(effects)) => {
                assert_eq!(words(&transition.effects), effects, "{name}");
                let decision = &transition.conversation.decisions[0];
                assert!(decision.question, "{name}");
                assert_eq!(decision.reply.as_ref(), Some(&prod), "{name}");
                if !remote {
                    let result = transition.conversation.messages.last().unwrap();
                    assert_eq!(result.content, "prod", "{name}");
                    assert!(transition.conversation.pending().is_empty(), "{name}");
                }
            }
            (Err(refusal), Err(why)) => {
                assert!(refusal.to_string().contains(why), "{name}: {refusal}")
            }
            (got, expected) => panic!("{name}: got {got:?}, expected {expected:?}"),
        }
    }
}
