//! "Does this call run, ask, or get refused, and why": one pure function
//! of the call, what the node was offered, the tool's gate, the node's
//! place in the tree, `approval.rules` and the conversation's grants. Everything that gates a call
//! (`llm_node::plan`, the `a2a` node step) asks it; its table of cases is
//! the unit test below.
//!
//! Order: a call to a tool the node was not offered is refused; the
//! built-in `exit_loop` ends the loop; the first matching rule decides
//! (`deny` refuses, `allow` runs, `ask` stops for a human — or refuses
//! where the node cannot pause); otherwise the tool's gate (hints,
//! `always` / `never`) and the node's place decide. A call that would ask
//! runs instead when a remembered approval of the conversation covers it
//! — unless the rule that asks names `approvers` (a grant never widens
//! who decides).

use asg_shared::Grant;
use serde_json::{Map, Value};

use crate::rule_config::RuleAction;
use crate::rules::ApprovalRules;

/// Name of the tool offered to `llm` nodes that may end their loop.
pub const EXIT_LOOP_TOOL: &str = "exit_loop";

/// What happens to a destructive call in this part of the tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Stop for a human decision.
    Approve,
    /// Run without approval (`parallel`/`loop` with `allow_destructive`);
    /// every such run is logged with the node names.
    RunUnapproved { container: String },
    /// Refuse (a `parallel` node without `allow_destructive`).
    Refuse { container: String },
}

/// What is known about one call.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    /// Tool name.
    pub tool: &'a str,
    /// Its arguments.
    pub arguments: &'a Map<String, Value>,
    /// Offered to the node.
    pub offered: bool,
    /// The tool's own gate (`destructive_hint` after `always` / `never`);
    /// None when no tool has this name.
    pub gated: Option<bool>,
    /// The conversation's remembered approvals.
    pub grants: &'a [Grant],
}

/// What happens to the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run now.
    Run,
    /// Run without approval although gated (`allow_destructive`).
    RunUnapproved,
    /// Stop for a human decision by an approver holding one of
    /// `approvers` (any approver when empty).
    Ask {
        /// Roles or groups allowed to decide.
        approvers: Vec<String>,
    },
    /// Do not run; the model is told `reason`.
    Refuse,
    /// Not a tool of this node: refused, never run.
    NotOffered,
    /// The built-in `exit_loop`.
    Exit,
}

/// A verdict and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// What happens.
    pub verdict: Verdict,
    /// Why, in words for the model, the conversation and the audit log.
    pub reason: String,
    /// The rule that decided (`approval.rules[N] (action tool)`).
    pub rule: Option<String>,
    /// `Ask`: the rule forbids approving with edited arguments.
    pub no_edit: bool,
}

impl Decision {
    fn new(verdict: Verdict, reason: impl Into<String>) -> Decision {
        Decision {
            verdict,
            reason: reason.into(),
            rule: None,
            no_edit: false,
        }
    }
}

/// Decides one call (see the module docs for the order).
pub fn decide(call: CallFacts<'_>, gate: &Gate, rules: &ApprovalRules) -> Decision {
    let decision = judge(call, gate, rules);
    let Verdict::Ask { approvers } = &decision.verdict else {
        return decision;
    };
    // A grant stands for the rule (or the gate) that raised it: it
    // covers only what that same rule would ask for.
    match call
        .grants
        .iter()
        .find(|g| g.covers(call.tool, call.arguments) && g.rule == decision.rule)
    {
        Some(grant) if approvers.is_empty() => Decision {
            verdict: Verdict::Run,
            reason: format!(
                "covered by the approval {} remembered by {} for this conversation",
                grant.approval_uuid, grant.granted_by.subject
            ),
            rule: Some(format!("grant {}", grant.approval_uuid)),
            no_edit: false,
        },
        _ => decision,
    }
}

/// The decision before grants.
fn judge(call: CallFacts<'_>, gate: &Gate, rules: &ApprovalRules) -> Decision {
    if !call.offered {
        return Decision::new(Verdict::NotOffered, "not offered to this node");
    }
    if call.tool == EXIT_LOOP_TOOL {
        return Decision::new(Verdict::Exit, "loop exit");
    }
    let Some(gated) = call.gated else {
        return Decision::new(Verdict::NotOffered, "no tool has this name");
    };
    if let Some(rule) = rules.first_match(call.tool, call.arguments) {
        let label = rule.label();
        let mut decision = match (rule.action, gate) {
            (RuleAction::Deny, _) => Decision::new(Verdict::Refuse, format!("denied by {label}")),
            (RuleAction::Allow, _) => Decision::new(Verdict::Run, format!("allowed by {label}")),
            (RuleAction::Ask, Gate::Approve) => Decision::new(
                Verdict::Ask {
                    approvers: rule.approvers.clone(),
                },
                format!("{label} asks for approval"),
            ),
            (RuleAction::Ask, Gate::RunUnapproved { container } | Gate::Refuse { container }) => {
                Decision::new(
                    Verdict::Refuse,
                    format!(
                        "{label} asks for approval, which cannot be given inside {container:?}"
                    ),
                )
            }
        };
        decision.rule = Some(label);
        decision.no_edit = !rule.edit;
        return decision;
    }
    match (gated, gate) {
        (false, _) => Decision::new(Verdict::Run, "not gated"),
        (true, Gate::Approve) => Decision::new(
            Verdict::Ask {
                approvers: Vec::new(),
            },
            "destructive: needs approval",
        ),
        (true, Gate::RunUnapproved { container }) => Decision::new(
            Verdict::RunUnapproved,
            format!("destructive, run without approval inside {container:?} (allow_destructive)"),
        ),
        (true, Gate::Refuse { container }) => Decision::new(
            Verdict::Refuse,
            format!(
                "destructive and needs approval, which cannot be given inside {container:?} (allow_destructive is false)"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules() -> ApprovalRules {
        ApprovalRules::from_yaml(
            r#"
- { tool: resources_remove, when: { pattern: "^tmp-" }, action: allow }
- { tool: resources_add, when: { value: { gt: 1000 } }, action: ask, approvers: [sre] }
- { tool: resources_list, when: { pattern: secret }, action: deny }
"#,
        )
        .unwrap()
    }

    fn approve() -> Gate {
        Gate::Approve
    }
    fn in_parallel() -> Gate {
        Gate::Refuse {
            container: "fan".into(),
        }
    }
    fn in_loop() -> Gate {
        Gate::RunUnapproved {
            container: "again".into(),
        }
    }

    fn ask(approvers: &[&str]) -> Verdict {
        Verdict::Ask {
            approvers: approvers.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// (tool, arguments, offered, gated, gate) -> verdict, a word of the
    /// reason.
    type Case = (
        &'static str,
        Value,
        bool,
        Option<bool>,
        Gate,
        Verdict,
        &'static str,
    );

    #[test]
    fn the_decision_table() {
        let rules = rules();
        #[rustfmt::skip]
        let table: Vec<Case> = vec![
            ("resources_add", json!({}), false, Some(true), approve(), Verdict::NotOffered, "not offered"),
            ("exit_loop", json!({}), true, None, in_loop(), Verdict::Exit, "loop exit"),
            ("ghost", json!({}), true, None, approve(), Verdict::NotOffered, "no tool"),
            ("resources_list", json!({}), true, Some(false), approve(), Verdict::Run, "not gated"),
            ("resources_list", json!({"pattern": "a-secret"}), true, Some(false), approve(), Verdict::Refuse, "denied by approval.rules[2]"),
            ("resources_add", json!({"value": 1}), true, Some(true), approve(), ask(&[]), "destructive"),
            ("resources_add", json!({"value": 5000}), true, Some(true), approve(), ask(&["sre"]), "approval.rules[1] (ask resources_add) asks"),
            ("resources_add", json!({"value": 5000}), true, Some(true), in_loop(), Verdict::Refuse, "cannot be given inside \"again\""),
            ("resources_add", json!({"value": 5000}), true, Some(true), in_parallel(), Verdict::Refuse, "cannot be given inside \"fan\""),
            ("resources_add", json!({"value": 1}), true, Some(true), in_loop(), Verdict::RunUnapproved, "allow_destructive"),
            ("resources_add", json!({"value": 1}), true, Some(true), in_parallel(), Verdict::Refuse, "allow_destructive is false"),
            ("resources_remove", json!({"pattern": "tmp-x"}), true, Some(true), approve(), Verdict::Run, "allowed by approval.rules[0]"),
            ("resources_remove", json!({"pattern": "tmp-x"}), true, Some(true), in_parallel(), Verdict::Run, "allowed by"),
            ("resources_remove", json!({"pattern": "web"}), true, Some(true), approve(), ask(&[]), "destructive"),
        ];
        for (tool, arguments, offered, gated, gate, verdict, reason) in table {
            let arguments = arguments.as_object().cloned().unwrap();
            let call = CallFacts {
                tool,
                arguments: &arguments,
                offered,
                gated,
                grants: &[],
            };
            let decision = decide(call, &gate, &rules);
            assert_eq!(decision.verdict, verdict, "{tool} {arguments:?} {gate:?}");
            assert!(
                decision.reason.contains(reason),
                "{tool} {arguments:?}: {}",
                decision.reason
            );
            assert_eq!(
                decision.rule.is_some(),
                decision.reason.contains("approval.rules["),
                "{decision:?}"
            );
        }
    }

    #[test]
    fn a_grant_runs_what_would_ask_but_never_what_a_rule_reserves_or_denies() {
        let rules = rules();
        let grant = |tool: &str| Grant {
            tool: tool.into(),
            scope: asg_shared::GrantScope::Conversation,
            arguments: None,
            approval_uuid: uuid::Uuid::nil(),
            granted_by: asg_shared::Actor {
                subject: "alice".into(),
                name: None,
                role: None,
                via: None,
            },
            granted_at: chrono::Utc::now(),
            rule: None,
        };
        let grants = [grant("resources_add"), grant("resources_list")];
        let judge = |tool: &str, arguments: Value| {
            let arguments = arguments.as_object().cloned().unwrap();
            let call = CallFacts {
                tool,
                arguments: &arguments,
                offered: true,
                gated: Some(tool != "resources_list"),
                grants: &grants,
            };
            decide(call, &approve(), &rules)
        };
        let covered = judge("resources_add", json!({"value": 1}));
        assert_eq!(covered.verdict, Verdict::Run);
        assert!(
            covered.reason.contains("remembered by alice"),
            "{covered:?}"
        );
        assert_eq!(
            covered.rule.as_deref(),
            Some("grant 00000000-0000-0000-0000-000000000000")
        );
        // A rule naming approvers still asks them.
        assert_eq!(
            judge("resources_add", json!({"value": 5000})).verdict,
            ask(&["sre"])
        );
        // A deny stays a deny.
        assert_eq!(
            judge("resources_list", json!({"pattern": "secret"})).verdict,
            Verdict::Refuse
        );
        // Another tool is not covered.
        assert_eq!(
            judge("resources_remove", json!({"pattern": "x"})).verdict,
            ask(&[])
        );
    }

    #[test]
    fn a_grant_covers_only_what_the_rule_that_raised_it_asks_for() {
        let rules = ApprovalRules::from_yaml(
            "- { tool: resources_remove, when: { pattern: \"^prod-\" }, action: ask }\n",
        )
        .unwrap();
        let rule = "approval.rules[0] (ask resources_remove)";
        let grant = |raised_by: Option<&str>| Grant {
            tool: "resources_remove".into(),
            scope: asg_shared::GrantScope::Conversation,
            arguments: None,
            approval_uuid: uuid::Uuid::nil(),
            granted_by: asg_shared::Actor {
                subject: "alice".into(),
                name: None,
                role: None,
                via: None,
            },
            granted_at: chrono::Utc::now(),
            rule: raised_by.map(str::to_string),
        };
        let judge = |grants: &[Grant], pattern: &str| {
            let arguments = json!({ "pattern": pattern }).as_object().cloned().unwrap();
            let call = CallFacts {
                tool: "resources_remove",
                arguments: &arguments,
                offered: true,
                gated: Some(true),
                grants,
            };
            decide(call, &approve(), &rules).verdict
        };
        // Given on the gate's own ask: covers the gate's asks only.
        let by_gate = [grant(None)];
        assert_eq!(judge(&by_gate, "tmp-1"), Verdict::Run);
        assert_eq!(judge(&by_gate, "prod-1"), ask(&[]), "the rule still asks");
        // Given on the rule's ask: covers that rule only.
        let by_rule = [grant(Some(rule))];
        assert_eq!(judge(&by_rule, "prod-1"), Verdict::Run);
        assert_eq!(judge(&by_rule, "tmp-1"), ask(&[]), "the gate still asks");
    }
}
