//! The gate as a table: every (state, command, principal) row with its
//! permit or refusal.

use asg_shared::{Actor, ApprovalState, Conversation, ConversationStatus, fixtures};
use chrono::Utc;
use serde_json::json;

use super::*;
use crate::cast::{alice, bob, dana, erin, frank, who};
use crate::lifecycle::{NewApproval, pending};

/// States of alice's conversation.
#[derive(Debug, Clone, Copy)]
enum State {
    /// Active, never had an approval.
    Plain,
    /// Active after an approval was decided.
    Decided,
    /// Waiting for approval of `resources_add {name: web-1, value: 42}`.
    Waiting,
    /// Its approval is executing (decided, running).
    Executing,
    /// Closed.
    Completed,
}

fn conversation(state: State) -> Conversation {
    let id = Uuid::from_u128(7);
    let mut approval = pending(NewApproval {
        uuid: Uuid::from_u128(42),
        conversation_id: id,
        tool_name: "resources_add".into(),
        tool_args: json!({"name": "web-1", "value": 42})
            .as_object()
            .cloned()
            .unwrap(),
        description: "d".into(),
        call_id: "c".into(),
        node: None,
    });
    approval.requested_by = Some(Actor {
        subject: "alice".into(),
        name: None,
        role: None,
        via: Some("rest".into()),
    });
    let (status, approvals, had) = match state {
        State::Plain => (ConversationStatus::Active, vec![], false),
        State::Decided => (ConversationStatus::Active, vec![], true),
        State::Waiting => (ConversationStatus::WaitingApproval, vec![approval], true),
        State::Executing => {
            approval.state = ApprovalState::Executing;
            (ConversationStatus::WaitingApproval, vec![approval], true)
        }
        State::Completed => (ConversationStatus::Completed, vec![], true),
    };
    let mut conversation = Conversation {
        id,
        status,
        pending_approvals: approvals,
        owner: Some("alice".into()),
        ..fixtures::conversation()
    };
    if had && conversation.pending().is_empty() {
        // A decided approval leaves its record.
        conversation.decisions.push(asg_shared::ApprovalDecision {
            approval_uuid: Uuid::from_u128(41),
            tool_name: "resources_add".into(),
            approved: true,
            decided_by: Actor {
                subject: "erin".into(),
                name: None,
                role: Some("approver".into()),
                via: None,
            },
            decided_at: Utc::now(),
            reason: None,
            edited_arguments: None,
            remembered: None,
            question: false,
            reply: None,
        });
    }
    conversation
}

fn rules() -> ApprovalRules {
    ApprovalRules::from_yaml(
        r#"
- { tool: resources_add, when: { name: prod }, action: deny }
- { tool: resources_add, when: { value: { gt: 1000 } }, action: ask, approvers: [sre] }
- { tool: resources_add, when: { name: { regex: "^locked-" } }, action: ask, edit: false }
"#,
    )
    .unwrap()
}

/// The input schema of `resources_add`.
fn input_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"}, "value": {"type": "integer"}}})
}

/// What a row expects, in short.
#[derive(Debug, PartialEq)]
enum Expect {
    Ok,
    NotFound,
    Forbidden,
    AlreadyResolved,
    WaitsApproval,
    Closed,
    NotCancelable,
    Invalid,
}

fn outcome(result: Result<Permit, Refusal>) -> Expect {
    match result {
        Ok(_) => Expect::Ok,
        Err(Refusal::NotFound) => Expect::NotFound,
        Err(Refusal::Forbidden(_)) => Expect::Forbidden,
        Err(Refusal::AlreadyResolved(_)) => Expect::AlreadyResolved,
        Err(Refusal::WaitingApproval(_)) => Expect::WaitsApproval,
        Err(Refusal::Completed) => Expect::Closed,
        Err(Refusal::NotCancelable) => Expect::NotCancelable,
        Err(Refusal::Invalid(_)) => Expect::Invalid,
    }
}

fn run(principal: &Principal, state: State, command: Command<'_>) -> Result<Permit, Refusal> {
    let rules = rules();
    let policy = Policy {
        rules: &rules,
        separate_approver: false,
    };
    authorize(principal, &conversation(state), command, policy)
}

fn decide_with(choice: &Choice) -> Command<'_> {
    Command::Decide(Decide {
        uuid: Uuid::from_u128(42),
        approve: true,
        choice,
        input_schema: None,
        gated: Some(true),
    })
}

#[test]
fn reading_sending_cancelling_and_revoking_as_a_table() {
    use Expect::*;
    use State::*;
    let rows: Vec<(Principal, State, Command<'static>, Expect)> = vec![
        (alice(), Plain, Command::Read, Ok),
        (bob(), Plain, Command::Read, NotFound),
        (erin(), Plain, Command::Read, NotFound),
        (erin(), Decided, Command::Read, Ok),
        (dana(), Plain, Command::Read, Ok),
        (Principal::anonymous(), Plain, Command::Read, Ok),
        (alice(), Plain, Command::Send, Ok),
        (alice(), Decided, Command::Send, Ok),
        (alice(), Waiting, Command::Send, WaitsApproval),
        (alice(), Completed, Command::Send, Closed),
        (bob(), Decided, Command::Send, NotFound),
        // An approver reads a conversation with approvals, never writes to it.
        (erin(), Decided, Command::Send, Forbidden),
        (erin(), Waiting, Command::Send, Forbidden),
        (dana(), Plain, Command::Send, Forbidden),
        (alice(), Waiting, Command::Cancel, Ok),
        (alice(), Plain, Command::Cancel, NotCancelable),
        (alice(), Executing, Command::Cancel, NotCancelable),
        (erin(), Waiting, Command::Cancel, Forbidden),
        (bob(), Waiting, Command::Cancel, NotFound),
        (alice(), Decided, Command::RevokeGrant, Ok),
        (erin(), Decided, Command::RevokeGrant, Ok),
        (dana(), Decided, Command::RevokeGrant, Forbidden),
        (bob(), Decided, Command::RevokeGrant, NotFound),
        (alice(), Decided, Command::ManagePush, Ok),
        (erin(), Decided, Command::ManagePush, Forbidden),
        (dana(), Decided, Command::ManagePush, Forbidden),
        (bob(), Decided, Command::ManagePush, NotFound),
        (Principal::anonymous(), Plain, Command::ManagePush, Ok),
    ];
    for (principal, state, command, expected) in rows {
        let got = outcome(run(&principal, state, command));
        assert_eq!(got, expected, "{} {state:?} {command:?}", principal.subject);
    }
}

#[test]
fn deciding_as_a_table() {
    use Expect::*;
    use State::*;
    let plain = Choice::default();
    let rows = [
        (erin(), Waiting, Ok),
        (frank(), Waiting, Ok),
        (Principal::anonymous(), Waiting, Ok),
        // The owner is no approver.
        (alice(), Waiting, Forbidden),
        // A stranger learns nothing, not even that it was resolved.
        (bob(), Waiting, NotFound),
        (bob(), Executing, NotFound),
        (bob(), Decided, NotFound),
        (erin(), Executing, AlreadyResolved),
        (erin(), Decided, AlreadyResolved),
        (erin(), Completed, AlreadyResolved),
    ];
    for (principal, state, expected) in rows {
        let got = outcome(run(&principal, state, decide_with(&plain)));
        assert_eq!(got, expected, "{} {state:?}", principal.subject);
    }
    let permit = run(&erin(), Waiting, decide_with(&plain)).unwrap();
    let Permit::Decide { pending, role } = permit else {
        panic!("not a decision permit: {permit:?}");
    };
    assert_eq!((pending.uuid, role), (Uuid::from_u128(42), Role::Approver));
}

fn edit(arguments: serde_json::Value) -> Choice {
    Choice {
        arguments: arguments.as_object().cloned(),
        remember: None,
    }
}

#[test]
fn an_edit_is_judged_again_by_the_rules() {
    use Expect::*;
    let schema = input_schema();
    let rows = [
        // Harmless edits pass.
        (erin(), json!({"name": "web-2", "value": 43}), Ok),
        // Into a deny rule: refused for everyone.
        (erin(), json!({"name": "prod", "value": 5}), Forbidden),
        (frank(), json!({"name": "prod", "value": 5000}), Forbidden),
        (
            Principal::anonymous(),
            json!({"name": "prod", "value": 5}),
            Forbidden,
        ),
        // Into a rule with named approvers: only they may.
        (erin(), json!({"name": "web-1", "value": 5000}), Forbidden),
        (frank(), json!({"name": "web-1", "value": 5000}), Ok),
        // Into a rule that forbids edits.
        (frank(), json!({"name": "locked-1", "value": 1}), Forbidden),
        // Not the schema.
        (erin(), json!({"name": "web-1", "value": "many"}), Invalid),
    ];
    for (principal, arguments, expected) in rows {
        let choice = edit(arguments.clone());
        let command = Command::Decide(Decide {
            uuid: Uuid::from_u128(42),
            approve: true,
            choice: &choice,
            input_schema: Some(&schema),
            gated: Some(true),
        });
        let result = run(&principal, State::Waiting, command);
        if expected == Forbidden {
            let message = result.clone().unwrap_err().to_string();
            assert!(message.contains("edited call"), "{message}");
        }
        assert_eq!(
            outcome(result),
            expected,
            "{} {arguments}",
            principal.subject
        );
    }
}

#[test]
fn a_rejection_with_arguments_is_not_an_edit() {
    let choice = edit(json!({"name": "prod", "value": 5}));
    let schema = input_schema();
    let command = Command::Decide(Decide {
        uuid: Uuid::from_u128(42),
        approve: false,
        choice: &choice,
        input_schema: Some(&schema),
        gated: Some(true),
    });
    assert!(run(&erin(), State::Waiting, command).is_ok());
}

#[test]
fn the_requester_does_not_decide_its_own_with_separate_approver() {
    let rules = rules();
    let policy = Policy {
        rules: &rules,
        separate_approver: true,
    };
    let alice_approver = who("alice", &[Role::Approver], &[]);
    let plain = Choice::default();
    let waiting = conversation(State::Waiting);
    let own = authorize(&alice_approver, &waiting, decide_with(&plain), policy);
    assert!(
        matches!(&own, Err(Refusal::Forbidden(m)) if m.contains("separate_approver")),
        "{own:?}"
    );
    assert!(authorize(&erin(), &waiting, decide_with(&plain), policy).is_ok());
}
