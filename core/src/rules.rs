//! `approval.rules` compiled for matching: tool patterns and argument
//! conditions (the format: `config/rules.rs`). Pure: no I/O.

use regex::Regex;
use serde_json::{Map, Value};

use crate::rule_config::{ConditionConfig, ConditionTests, RuleAction, RuleConfig};

/// The rules, in order.
#[derive(Debug, Default)]
pub struct ApprovalRules {
    rules: Vec<Rule>,
}

/// One compiled rule.
#[derive(Debug)]
pub struct Rule {
    /// Its position in `approval.rules`.
    pub index: usize,
    /// The tool pattern as written.
    pub tool: String,
    tool_pattern: Regex,
    when: Vec<(String, Vec<Test>)>,
    /// What it does.
    pub action: RuleAction,
    /// Who may decide (`ask`).
    pub approvers: Vec<String>,
    /// Approving with edited arguments is allowed (`ask`).
    pub edit: bool,
}

#[derive(Debug)]
enum Test {
    Equals(Value),
    Regex(Regex),
    Gt(f64),
    Lt(f64),
    In(Vec<Value>),
}

impl ApprovalRules {
    /// Compiles validated rules (`config::rules::validate_rules`).
    pub fn compile(rules: &[RuleConfig]) -> Result<ApprovalRules, String> {
        let rules = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| compile_rule(index, rule))
            .collect::<Result<_, _>>()?;
        Ok(ApprovalRules { rules })
    }

    /// The first rule matching a call of `tool` with `arguments`.
    pub fn first_match(&self, tool: &str, arguments: &Map<String, Value>) -> Option<&Rule> {
        self.rules.iter().find(|rule| rule.matches(tool, arguments))
    }

    /// Rules written as the YAML list of `approval.rules`, validated and
    /// compiled (the tables of the tests).
    #[cfg(test)]
    pub(crate) fn from_yaml(yaml: &str) -> Result<ApprovalRules, String> {
        let rules: Vec<RuleConfig> = serde_yaml::from_str(yaml).map_err(|e| e.to_string())?;
        crate::rule_config::validate_rules(&rules).map_err(|(at, e)| format!("{at}: {e}"))?;
        ApprovalRules::compile(&rules)
    }

    /// The rules whose tool pattern matches none of `tools` (startup
    /// check: a typo would silently never apply).
    pub fn unmatched<'a>(&'a self, tools: &[String]) -> Vec<&'a Rule> {
        self.rules
            .iter()
            .filter(|rule| !tools.iter().any(|t| rule.tool_pattern.is_match(t)))
            .collect()
    }
}

impl Rule {
    /// `approval.rules[N] (action tool)`, for messages and the audit log.
    pub fn label(&self) -> String {
        format!(
            "approval.rules[{}] ({} {})",
            self.index,
            self.action.as_str(),
            self.tool
        )
    }

    fn matches(&self, tool: &str, arguments: &Map<String, Value>) -> bool {
        self.tool_pattern.is_match(tool)
            && self.when.iter().all(|(name, tests)| {
                arguments
                    .get(name)
                    .is_some_and(|value| tests.iter().all(|test| test.holds(value)))
            })
    }
}

impl Test {
    fn holds(&self, value: &Value) -> bool {
        match self {
            Test::Equals(expected) => same(expected, value),
            Test::Regex(regex) => value.as_str().is_some_and(|text| regex.is_match(text)),
            Test::Gt(bound) => value.as_f64().is_some_and(|n| n > *bound),
            Test::Lt(bound) => value.as_f64().is_some_and(|n| n < *bound),
            Test::In(options) => options.iter().any(|option| same(option, value)),
        }
    }
}

/// JSON equality, numbers by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn compile_rule(index: usize, rule: &RuleConfig) -> Result<Rule, String> {
    let at = |field: &str| format!("approval.rules[{index}].{field}");
    let glob = format!(
        "^{}$",
        rule.tool
            .split('*')
            .map(regex::escape)
            .collect::<Vec<_>>()
            .join(".*")
    );
    let tool_pattern = Regex::new(&glob).map_err(|e| format!("{}: {e}", at("tool")))?;
    let when = rule
        .when
        .iter()
        .map(|(name, condition)| {
            tests(condition)
                .map(|tests| (name.clone(), tests))
                .map_err(|e| format!("{}: {e}", at(&format!("when.{name}"))))
        })
        .collect::<Result<_, _>>()?;
    Ok(Rule {
        index,
        tool: rule.tool.clone(),
        tool_pattern,
        when,
        action: rule.action,
        approvers: rule.approvers.clone(),
        edit: rule.edit,
    })
}

fn tests(condition: &ConditionConfig) -> Result<Vec<Test>, String> {
    let regex = |pattern: &str| Regex::new(pattern).map_err(|e| format!("invalid regex: {e}"));
    match condition {
        ConditionConfig::Bare(Value::String(pattern)) => Ok(vec![Test::Regex(regex(pattern)?)]),
        ConditionConfig::Bare(value) => Ok(vec![Test::Equals(value.clone())]),
        ConditionConfig::Tests(ConditionTests {
            equals,
            regex: pattern,
            gt,
            lt,
            one_of,
        }) => {
            let mut tests = Vec::new();
            tests.extend(equals.clone().map(Test::Equals));
            if let Some(pattern) = pattern {
                tests.push(Test::Regex(regex(pattern)?));
            }
            tests.extend(gt.map(Test::Gt));
            tests.extend(lt.map(Test::Lt));
            tests.extend(one_of.clone().map(Test::In));
            Ok(tests)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(yaml: &str) -> ApprovalRules {
        ApprovalRules::from_yaml(yaml).unwrap()
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    /// The index of the rule that matches, as a table.
    #[test]
    fn first_match_wins_with_each_condition_type() {
        let rules = rules(
            r#"
    - { tool: resources_remove, when: { pattern: "^tmp-" }, action: allow }
    - { tool: resources_add, when: { value: { gt: 1000 } }, action: ask, approvers: [sre] }
    - { tool: resources_add, when: { value: { lt: 0 } }, action: deny }
    - { tool: resources_add, when: { name: { in: [prod, live] } }, action: deny }
    - { tool: resources_add, when: { name: { equals: exact } }, action: allow }
    - { tool: resources_add, when: { value: 7 }, action: allow }
    - { tool: "*_remove", action: ask }
"#,
        );
        let table: [(&str, Value, Option<usize>); 12] = [
            ("resources_remove", json!({"pattern": "tmp-1"}), Some(0)),
            ("resources_remove", json!({"pattern": "web-tmp-1"}), Some(6)),
            ("resources_remove", json!({"id": "res_1"}), Some(6)),
            ("other_remove", json!({}), Some(6)),
            (
                "resources_add",
                json!({"name": "a", "value": 1001}),
                Some(1),
            ),
            ("resources_add", json!({"name": "a", "value": 1000}), None),
            ("resources_add", json!({"name": "a", "value": -1}), Some(2)),
            (
                "resources_add",
                json!({"name": "live", "value": 1}),
                Some(3),
            ),
            (
                "resources_add",
                json!({"name": "exact", "value": 1}),
                Some(4),
            ),
            ("resources_add", json!({"name": "b", "value": 7.0}), Some(5)),
            ("resources_add", json!({"name": "b", "value": "1001"}), None),
            ("resources_list", json!({}), None),
        ];
        for (tool, arguments, expected) in table {
            let found = rules.first_match(tool, &args(arguments.clone()));
            assert_eq!(found.map(|r| r.index), expected, "{tool} {arguments}");
        }
        assert_eq!(
            rules
                .first_match("resources_add", &args(json!({"value": 2000})))
                .unwrap()
                .approvers,
            ["sre"]
        );
    }

    #[test]
    fn a_pattern_that_matches_no_tool_is_reported() {
        let rules = rules(
            "    - { tool: resources_remov, action: deny }\n    - { tool: \"resources_*\", action: ask }\n",
        );
        let tools = vec!["resources_add".to_string(), "resources_remove".to_string()];
        let unmatched: Vec<_> = rules.unmatched(&tools).iter().map(|r| r.index).collect();
        assert_eq!(unmatched, [0]);
        assert_eq!(
            rules.unmatched(&tools).first().map(|r| r.label()),
            Some("approval.rules[0] (deny resources_remov)".to_string())
        );
    }
}
