//! The choices of an approver beyond Approve / Reject: approving with
//! edited arguments (the JSON editor's text checked before sending),
//! approving and remembering for the conversation (or for the same
//! arguments), and the conversation's
//! remembered approvals ("grants") with who gave them. Also what a decided
//! tool card says about an edited or remembered approval.

use asg_shared::rest::ApprovalRequest;
use asg_shared::{ApprovalDecision, Grant, GrantScope, PendingApproval};
use serde_json::{Map, Value};

use crate::logic::args::pretty_json;
use crate::logic::auth::AuthState;
use crate::logic::errors::RequestError;
use crate::logic::json::{Shown, show_value};

/// What an approver decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// Run the call as requested.
    Approve,
    /// Run the call with these arguments instead.
    ApproveEdited(Map<String, Value>),
    /// Run the call, and later calls of the tool in this conversation
    /// without asking.
    ApproveAlways,
    /// Run the call, and later calls of the tool with equal arguments in
    /// this conversation without asking.
    ApproveSameArguments,
    /// Do not run it; the optional reason is recorded.
    Reject(Option<String>),
}

/// The body of `POST /approvals/{uuid}` for a choice.
pub fn request_body(choice: Choice) -> ApprovalRequest {
    let approve = ApprovalRequest {
        approved: Some(true),
        ..ApprovalRequest::default()
    };
    match choice {
        Choice::Approve => approve,
        Choice::ApproveEdited(arguments) => ApprovalRequest {
            arguments: Some(arguments),
            ..approve
        },
        Choice::ApproveAlways => ApprovalRequest {
            remember: Some(GrantScope::Conversation),
            ..approve
        },
        Choice::ApproveSameArguments => ApprovalRequest {
            remember: Some(GrantScope::SameArguments),
            ..approve
        },
        Choice::Reject(reason) => ApprovalRequest {
            approved: Some(false),
            reason: reason.filter(|r| !r.trim().is_empty()),
            ..ApprovalRequest::default()
        },
    }
}

/// True when the approval's arguments may be edited: not forbidden by a
/// rule (`no_edit`) and not a sub-agent's approval (edited over there).
pub fn can_edit(approval: &PendingApproval) -> bool {
    !approval.no_edit && approval.remote_task_id.is_none()
}

/// True when approving may be remembered ("Approve & always allow …"):
/// not for a sub-agent's approval, whose tool is the sub-agent's (the
/// agent refuses it; remember it over there).
pub fn can_remember(approval: &PendingApproval) -> bool {
    approval.remote_task_id.is_none()
}

/// The editor's starting text: the requested arguments, pretty-printed.
pub fn editor_text(arguments: &Map<String, Value>) -> String {
    pretty_json(&Value::Object(arguments.clone()))
}

/// The editor's text as arguments, or the problem to show under it.
pub fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Err("Enter the arguments as a JSON object, e.g. {\"name\": \"web-1\"}.".into());
    }
    match crate::logic::objects::from_str::<Value>(text) {
        Ok(Value::Object(arguments)) => Ok(arguments),
        Ok(other) => Err(format!(
            "The arguments must be a JSON object ({{…}}), not {}.",
            kind(&other)
        )),
        Err(error) => Err(format!("Not valid JSON: {error}.")),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The message shown in the editor when the agent refused the edited
/// arguments (a 422: they break the tool's schema, or editing is not
/// allowed); `None` for other failures, which go to the error banner.
pub fn edit_refusal(error: &RequestError) -> Option<String> {
    if error.status() != Some(422) {
        return None;
    }
    match error {
        RequestError::Http { body: Some(b), .. } => Some(b.error.message.clone()),
        RequestError::Http { text, .. } if !text.trim().is_empty() => {
            Some(text.trim().chars().take(300).collect())
        }
        _ => Some("The agent refused the edited arguments.".into()),
    }
}

/// One remembered approval as listed: `resources_add (by alice)`, with
/// `, same arguments only` for a grant limited to equal arguments.
pub fn grant_label(grant: &Grant) -> String {
    let by = grant
        .granted_by
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(&grant.granted_by.subject);
    match grant.scope {
        GrantScope::Conversation => format!("{} (by {by})", grant.tool),
        GrantScope::SameArguments => format!("{} (by {by}, same arguments only)", grant.tool),
    }
}

/// The tools with grants, each once, in the order given.
pub fn granted_tools(grants: &[Grant]) -> Vec<&Grant> {
    let mut seen = Vec::new();
    let mut listed: Vec<&Grant> = Vec::new();
    for grant in grants {
        if !seen.contains(&grant.tool.as_str()) {
            seen.push(grant.tool.as_str());
            listed.push(grant);
        }
    }
    listed
}

/// True when Revoke is offered: approvers, and the conversation's owner
/// (the agent stays the authority).
pub fn can_revoke(auth: &AuthState, owner: Option<&str>) -> bool {
    auth.can_approve()
        || auth
            .user()
            .is_some_and(|me| owner == Some(me.subject.as_str()))
}

/// What a decided tool card adds to "Approved by …".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DecisionNotes {
    /// `approved with edited arguments`, when they were edited.
    pub edited: Option<&'static str>,
    /// The arguments that ran instead of the requested ones, when the
    /// requested ones are not known (else `changes` shows the edit).
    pub edited_arguments: Option<Shown>,
    /// What the edit changed, argument by argument (a diff of the
    /// requested and the edited arguments).
    pub changes: Vec<ArgChange>,
    /// `always allowed in this conversation` (or with the same arguments).
    pub remembered: Option<&'static str>,
}

/// One argument an edit changed: its value as requested and as it ran
/// (compact JSON; `None`: absent on that side).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ArgChange {
    /// The argument.
    pub name: String,
    /// As the model requested it.
    pub before: Option<String>,
    /// As it ran.
    pub after: Option<String>,
}

/// The arguments that differ between `requested` and `ran`, by name.
pub fn arg_changes(requested: &Map<String, Value>, ran: &Map<String, Value>) -> Vec<ArgChange> {
    let mut names: Vec<&String> = requested.keys().chain(ran.keys()).collect();
    // Equal names are the same string: no need for a stable sort.
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter(|name| requested.get(*name) != ran.get(*name))
        .map(|name| ArgChange {
            name: name.clone(),
            before: requested.get(name).map(Value::to_string),
            after: ran.get(name).map(Value::to_string),
        })
        .collect()
}

/// The notes for a recorded decision on a call that requested
/// `requested` (when known).
pub fn decision_notes(
    decision: &ApprovalDecision,
    requested: Option<&Map<String, Value>>,
) -> DecisionNotes {
    let edited = decision.edited_arguments.as_ref();
    let changes = match (edited, requested) {
        (Some(ran), Some(requested)) => arg_changes(requested, ran),
        _ => Vec::new(),
    };
    DecisionNotes {
        edited: edited.map(|_| "approved with edited arguments"),
        edited_arguments: edited
            .filter(|_| changes.is_empty())
            .map(|args| show_value(&Value::Object(args.clone()))),
        changes,
        remembered: decision.remembered.map(|scope| match scope {
            GrantScope::Conversation => "always allowed in this conversation",
            GrantScope::SameArguments => "always allowed with the same arguments",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logic::fixtures::{approval, at, id};
    use asg_shared::Actor;
    use asg_shared::rest::Me;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn bodies_carry_the_choice() {
        let body = |choice| serde_json::to_value(request_body(choice)).unwrap();
        assert_eq!(body(Choice::Approve), json!({"approved": true}));
        assert_eq!(
            body(Choice::ApproveEdited(map(
                json!({"name": "web-2", "value": 7})
            ))),
            json!({"approved": true, "arguments": {"name": "web-2", "value": 7}})
        );
        assert_eq!(
            body(Choice::ApproveAlways),
            json!({"approved": true, "remember": "conversation"})
        );
        assert_eq!(
            body(Choice::ApproveSameArguments),
            json!({"approved": true, "remember": "same_arguments"})
        );
        assert_eq!(
            request_body(Choice::ApproveSameArguments).decision(),
            Ok(true)
        );
        assert_eq!(
            body(Choice::Reject(Some("not today".into()))),
            json!({"approved": false, "reason": "not today"})
        );
        assert_eq!(
            body(Choice::Reject(Some("  ".into()))),
            json!({"approved": false})
        );
        assert_eq!(request_body(Choice::ApproveAlways).decision(), Ok(true));
    }

    #[test]
    fn the_editor_starts_pretty_and_round_trips() {
        let args = map(json!({"name": "web-1", "value": 42}));
        let text = editor_text(&args);
        assert_eq!(text, "{\n  \"name\": \"web-1\",\n  \"value\": 42\n}");
        assert_eq!(parse_arguments(&text), Ok(args));
        assert_eq!(parse_arguments(" {} "), Ok(Map::new()));
    }

    #[test]
    fn editor_text_that_is_no_object_is_explained() {
        let error = parse_arguments("{\"name\": ").unwrap_err();
        assert!(error.starts_with("Not valid JSON: "), "{error}");
        assert!(error.contains("line 1"), "{error}");
        assert!(
            parse_arguments("[1, 2]")
                .unwrap_err()
                .contains("not an array")
        );
        assert!(parse_arguments("42").unwrap_err().contains("not a number"));
        assert!(parse_arguments("  \n").unwrap_err().contains("JSON object"));
    }

    #[test]
    fn only_refusals_of_the_arguments_stay_in_the_editor() {
        let refused = RequestError::from_response(
            422,
            json!({"error": {"code": "invalid_request",
                "message": "invalid edited arguments: arguments.value: \"x\" is not of type \"integer\""}})
            .to_string(),
        );
        assert_eq!(
            edit_refusal(&refused).as_deref(),
            Some("invalid edited arguments: arguments.value: \"x\" is not of type \"integer\"")
        );
        let plain = RequestError::from_response(422, "bad".into());
        assert_eq!(edit_refusal(&plain).as_deref(), Some("bad"));
        let conflict = RequestError::from_response(409, "{}".into());
        assert_eq!(edit_refusal(&conflict), None);
        assert_eq!(edit_refusal(&RequestError::Network("x".into())), None);
    }

    #[test]
    fn editing_is_offered_unless_forbidden_or_remote() {
        let mut pending = approval(1, "call_1");
        assert!(can_edit(&pending));
        pending.no_edit = true;
        assert!(!can_edit(&pending));
        let mut remote = approval(2, "call_2");
        remote.remote_task_id = Some("task-1".into());
        assert!(!can_edit(&remote));
    }

    #[test]
    fn remembering_is_offered_unless_remote() {
        let mut pending = approval(1, "call_1");
        pending.no_edit = true;
        assert!(
            can_remember(&pending),
            "a rule's edit: false still remembers"
        );
        pending.remote_task_id = Some("task-1".into());
        assert!(!can_remember(&pending));
    }

    fn grant(tool: &str, scope: GrantScope, name: Option<&str>) -> Grant {
        Grant {
            tool: tool.into(),
            scope,
            arguments: None,
            approval_uuid: id(1),
            granted_by: Actor {
                subject: "alice".into(),
                name: name.map(str::to_string),
                role: Some("approver".into()),
                via: Some("web".into()),
            },
            granted_at: at(0),
            rule: None,
        }
    }

    #[test]
    fn grants_are_listed_once_per_tool_with_who_gave_them() {
        let grants = vec![
            grant("resources_add", GrantScope::Conversation, None),
            grant("resources_add", GrantScope::SameArguments, None),
            grant(
                "resources_remove",
                GrantScope::SameArguments,
                Some("Alice A"),
            ),
        ];
        let labels: Vec<_> = granted_tools(&grants)
            .into_iter()
            .map(grant_label)
            .collect();
        assert_eq!(
            labels,
            [
                "resources_add (by alice)",
                "resources_remove (by Alice A, same arguments only)"
            ]
        );
    }

    #[test]
    fn approvers_and_owners_may_revoke() {
        let me = |subject: &str, roles: &[&str]| Me {
            subject: subject.into(),
            name: None,
            roles: roles.iter().map(|r| r.to_string()).collect(),
            authenticated: true,
            login: false,
        };
        assert!(can_revoke(&AuthState::NoLogin { me: None }, None));
        let bob = AuthState::SignedIn(me("bob", &[]));
        assert!(can_revoke(&bob, Some("bob")));
        assert!(!can_revoke(&bob, Some("carol")));
        assert!(can_revoke(
            &AuthState::SignedIn(me("alice", &["approver"])),
            Some("carol")
        ));
        assert!(!can_revoke(&AuthState::SignedOut, None));
    }

    #[test]
    fn decided_cards_note_edits_and_remembering() {
        let mut decision = ApprovalDecision {
            approval_uuid: id(1),
            tool_name: "resources_add".into(),
            approved: true,
            decided_by: grant("x", GrantScope::Conversation, None).granted_by,
            decided_at: at(0),
            reason: None,
            edited_arguments: None,
            remembered: None,
            question: false,
            reply: None,
        };
        assert_eq!(decision_notes(&decision, None), DecisionNotes::default());
        decision.edited_arguments = Some(map(json!({"name": "web-2", "value": 7})));
        decision.remembered = Some(GrantScope::Conversation);
        let requested = map(json!({"name": "web-1", "value": 7, "tag": "x"}));
        let diffed = decision_notes(&decision, Some(&requested));
        assert_eq!(diffed.edited_arguments, None, "the diff shows the edit");
        assert_eq!(
            diffed.changes,
            [
                ArgChange {
                    name: "name".into(),
                    before: Some("\"web-1\"".into()),
                    after: Some("\"web-2\"".into()),
                },
                ArgChange {
                    name: "tag".into(),
                    before: Some("\"x\"".into()),
                    after: None,
                },
            ]
        );
        let notes = decision_notes(&decision, None);
        assert_eq!(notes.edited, Some("approved with edited arguments"));
        assert_eq!(
            notes.edited_arguments,
            Some(Shown::Inline("{\"name\":\"web-2\",\"value\":7}".into()))
        );
        assert_eq!(
            notes.remembered,
            Some("always allowed in this conversation")
        );
    }
}
