//! What an approver may add to an approval: edited arguments (checked
//! against the tool's input schema) and a remembered grant. Pure checks;
//! `turn.rs` applies them.

use asg_shared::{Actor, Grant, GrantScope, PendingApproval};
use chrono::Utc;
use serde_json::{Map, Value};

/// An approver's extras on a decision.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    /// Run with these arguments instead of the requested ones.
    pub arguments: Option<Map<String, Value>>,
    /// Also approve later calls.
    pub remember: Option<GrantScope>,
}

impl Choice {
    /// Checks the extras against the approval and the tool's input schema
    /// (`None`: the tool is not available now): editing is refused where
    /// forbidden (a rule's `edit: false`, a proxy approval), and edited
    /// arguments must satisfy the input schema. The error names the
    /// problem (and the field).
    pub fn check(
        &self,
        pending: &PendingApproval,
        input_schema: Option<&Value>,
    ) -> Result<(), String> {
        if self.remember.is_some() && pending.remote_task_id.is_some() {
            // Its tool is the sub-agent's: a grant here would cover a
            // local tool that happens to share the name.
            return Err(format!(
                "a sub-agent's approval cannot be remembered here; remember it on {}",
                pending
                    .remote_agent_name
                    .as_deref()
                    .unwrap_or("the sub-agent")
            ));
        }
        let Some(arguments) = &self.arguments else {
            return Ok(());
        };
        if pending.remote_task_id.is_some() {
            return Err(format!(
                "the arguments of a sub-agent's approval cannot be edited here; decide on {} or approve as requested",
                pending
                    .remote_agent_name
                    .as_deref()
                    .unwrap_or("the sub-agent")
            ));
        }
        if pending.no_edit {
            return Err(format!(
                "the arguments of {} may not be edited ({}); approve or reject as requested",
                pending.tool_name,
                pending.rule.as_deref().unwrap_or("approval policy")
            ));
        }
        match input_schema {
            Some(schema) => check_schema(schema, arguments),
            None => Err(format!(
                "{} is not available now, so edited arguments cannot be checked",
                pending.tool_name
            )),
        }
    }

    /// The arguments the approved call runs with.
    pub fn arguments_for(&self, pending: &PendingApproval) -> Map<String, Value> {
        self.arguments
            .clone()
            .unwrap_or_else(|| pending.tool_args.clone())
    }

    /// The arguments when they differ from the requested ones.
    pub fn edited(&self, pending: &PendingApproval) -> Option<Map<String, Value>> {
        self.arguments
            .clone()
            .filter(|arguments| *arguments != pending.tool_args)
    }

    /// The grant an approval with `remember` gives (on the arguments that
    /// actually ran).
    pub fn grant(&self, pending: &PendingApproval, by: &Actor) -> Option<Grant> {
        let scope = self.remember?;
        Some(Grant {
            tool: pending.tool_name.clone(),
            scope,
            arguments: (scope == GrantScope::SameArguments).then(|| self.arguments_for(pending)),
            approval_uuid: pending.uuid,
            granted_by: by.clone(),
            granted_at: Utc::now(),
            rule: pending.rule.clone(),
        })
    }
}

/// `arguments` against a JSON Schema; the error lists each problem with
/// the path of the field.
pub fn check_schema(schema: &Value, arguments: &Map<String, Value>) -> Result<(), String> {
    let instance = Value::Object(arguments.clone());
    let problems = schema_problems(schema, &instance, "arguments")
        .map_err(|e| format!("the tool's input schema cannot be used to check arguments: {e}"))?;
    match problems.is_empty() {
        true => Ok(()),
        false => Err(format!("invalid edited arguments: {}", problems.join("; "))),
    }
}

/// The problems of `instance` against `schema`, each named by its field
/// under `root` (`arguments.value: …`); `Err` when the schema itself
/// cannot be used.
pub fn schema_problems(
    schema: &Value,
    instance: &Value,
    root: &str,
) -> Result<Vec<String>, String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
    let problems = validator
        .iter_errors(instance)
        .map(|error| {
            let path = error.instance_path().to_string();
            let field = path.trim_start_matches('/').replace('/', ".");
            match field.is_empty() {
                true => format!("{root}: {error}"),
                false => format!("{root}.{field}: {error}"),
            }
        })
        .collect();
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use asg_shared::fixtures;
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 1},
            "value": {"type": "integer"}},
            "required": ["name", "value"], "additionalProperties": false})
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn edited_arguments_are_checked_against_the_schema_naming_the_field() {
        let schema = schema();
        assert!(check_schema(&schema, &args(json!({"name": "a", "value": 2}))).is_ok());
        let cases = [
            (json!({"name": "a", "value": "two"}), "arguments.value"),
            (json!({"name": "a"}), "\"value\" is a required property"),
            (json!({"name": "", "value": 1}), "arguments.name"),
            (json!({"name": "a", "value": 1, "extra": true}), "extra"),
        ];
        for (arguments, expected) in cases {
            let error = check_schema(&schema, &args(arguments.clone())).unwrap_err();
            assert!(error.contains(expected), "{arguments}: {error}");
        }
    }

    fn pending() -> PendingApproval {
        PendingApproval {
            uuid: "9b2f3c50-0d2f-4a43-a5de-2b4c5b0f1a10".parse().unwrap(),
            conversation_id: "1b2f3c50-0d2f-4a43-a5de-2b4c5b0f1a10".parse().unwrap(),
            tool_args: args(json!({"name": "a", "value": 1})),
            description: "d".into(),
            created_at: "2026-01-01T00:00:00Z".parse().unwrap(),
            call_id: "c".into(),
            ..fixtures::pending_approval("resources_add")
        }
    }

    #[test]
    fn editing_is_refused_where_forbidden() {
        let edit = Choice {
            arguments: Some(args(json!({"name": "b", "value": 2}))),
            remember: None,
        };
        assert!(edit.check(&pending(), Some(&schema())).is_ok());
        assert_eq!(
            edit.edited(&pending()),
            Some(args(json!({"name": "b", "value": 2})))
        );
        let mut locked = pending();
        locked.no_edit = true;
        locked.rule = Some("approval.rules[0] (ask resources_add)".into());
        let error = edit.check(&locked, Some(&schema())).unwrap_err();
        assert!(
            error.contains("may not be edited") && error.contains("rules[0]"),
            "{error}"
        );
        let mut proxy = pending();
        proxy.remote_task_id = Some("t".into());
        assert!(
            edit.check(&proxy, Some(&schema()))
                .unwrap_err()
                .contains("sub-agent")
        );
        assert!(edit.check(&pending(), None).is_err());
        let remember = Choice {
            arguments: None,
            remember: Some(GrantScope::Conversation),
        };
        assert!(remember.check(&pending(), Some(&schema())).is_ok());
        let refused = remember.check(&proxy, Some(&schema())).unwrap_err();
        assert!(refused.contains("cannot be remembered"), "{refused}");
        let same = Choice {
            arguments: Some(pending().tool_args),
            remember: None,
        };
        assert_eq!(same.edited(&pending()), None, "unchanged is not an edit");
    }

    #[test]
    fn a_grant_covers_what_its_scope_says() {
        let by = Actor {
            subject: "alice".into(),
            name: None,
            role: Some("approver".into()),
            via: Some("rest".into()),
        };
        let choice = |remember| Choice {
            arguments: Some(args(json!({"name": "b", "value": 2}))),
            remember: Some(remember),
        };
        let everything = choice(GrantScope::Conversation)
            .grant(&pending(), &by)
            .unwrap();
        assert!(everything.covers("resources_add", &args(json!({"name": "z", "value": 9}))));
        assert!(!everything.covers("resources_remove", &Map::new()));
        let same = choice(GrantScope::SameArguments)
            .grant(&pending(), &by)
            .unwrap();
        assert!(same.covers("resources_add", &args(json!({"value": 2, "name": "b"}))));
        assert!(!same.covers("resources_add", &args(json!({"name": "a", "value": 1}))));
        assert!(Choice::default().grant(&pending(), &by).is_none());
    }
}
