//! `approval.rules`: an ordered list of policies on tool calls, first
//! match wins.
//!
//! ```yaml
//! approval:
//!   rules:
//!     - tool: resources_remove
//!       when: { pattern: "^tmp-" }   # a bare string is a regex
//!       action: allow                # allow | ask | deny
//!     - tool: resources_add
//!       when: { value: { gt: 1000 } }
//!       action: ask
//!       approvers: [sre]             # who may decide (roles or groups)
//!       expires_after: 2h            # rejected as expired after (ask)
//!     - tool: "*_remove"
//!       action: ask
//! ```
//!
//! A condition names an argument and tests it: a bare string is a regex
//! (searched, so anchor it), any other bare value must be equal, and an
//! object combines `equals`, `regex`, `gt`, `lt` and `in` (all must hold).
//! A missing argument fails every test. Compiled and checked here; the
//! tool patterns are checked against the tools at startup.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Tool (or sub-agent) name; `*` matches any run of characters.
    pub tool: String,
    /// Argument name → condition; every condition must hold.
    #[serde(default)]
    pub when: BTreeMap<String, ConditionConfig>,
    /// What happens to a matching call.
    pub action: RuleAction,
    /// `ask` only: the roles or identity-provider groups allowed to
    /// decide (besides the approver role); empty: any approver.
    #[serde(default)]
    pub approvers: Vec<String>,
    /// `ask` only: `false` forbids approving with edited arguments.
    #[serde(default = "default_true")]
    pub edit: bool,
    /// `ask` only: an approval this rule asked for and still undecided
    /// after this long is rejected as expired (wins over
    /// `approval.expires_after`).
    #[serde(default)]
    pub expires_after: Option<crate::duration::ConfigDuration>,
}

/// What a rule does with a matching call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    /// Run without asking.
    Allow,
    /// Stop for a human decision.
    Ask,
    /// Refuse; the model is told.
    Deny,
}

impl RuleAction {
    /// The configuration word.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Allow => "allow",
            RuleAction::Ask => "ask",
            RuleAction::Deny => "deny",
        }
    }
}

/// A condition as written: an object of tests, or a bare value.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ConditionConfig {
    /// `{equals, regex, gt, lt, in}`.
    Tests(ConditionTests),
    /// A string (regex) or another value (equals).
    Bare(Value),
}

/// The tests of one condition; all given ones must hold.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditionTests {
    /// Equal to this value (numbers compare by value).
    pub equals: Option<Value>,
    /// A string the regex finds a match in.
    pub regex: Option<String>,
    /// A number greater than this.
    pub gt: Option<f64>,
    /// A number less than this.
    pub lt: Option<f64>,
    /// Equal to one of these.
    #[serde(rename = "in")]
    pub one_of: Option<Vec<Value>>,
}

/// Checks the rules' shape; the error is (field path, message).
pub fn validate_rules(rules: &[RuleConfig]) -> Result<(), (String, String)> {
    for (i, rule) in rules.iter().enumerate() {
        let at = |field: &str| format!("approval.rules[{i}].{field}");
        if rule.tool.trim().is_empty() {
            return Err((
                at("tool"),
                "must name a tool (`*` matches any run of characters)".into(),
            ));
        }
        if !rule.edit && rule.action != RuleAction::Ask {
            return Err((
                at("edit"),
                format!(
                    "only applies to `action: ask`, not `{}`",
                    rule.action.as_str()
                ),
            ));
        }
        if !rule.approvers.is_empty() && rule.action != RuleAction::Ask {
            return Err((
                at("approvers"),
                format!(
                    "only applies to `action: ask`, not `{}`",
                    rule.action.as_str()
                ),
            ));
        }
        if rule.expires_after.is_some() && rule.action != RuleAction::Ask {
            return Err((
                at("expires_after"),
                format!(
                    "only applies to `action: ask`, not `{}`",
                    rule.action.as_str()
                ),
            ));
        }
        for (argument, condition) in &rule.when {
            validate_condition(condition).map_err(|e| (at(&format!("when.{argument}")), e))?;
        }
    }
    Ok(())
}

fn default_true() -> bool {
    true
}

fn validate_condition(condition: &ConditionConfig) -> Result<(), String> {
    match condition {
        ConditionConfig::Bare(Value::Object(_)) => {
            Err("an object condition takes only `equals`, `regex`, `gt`, `lt` and `in`".into())
        }
        ConditionConfig::Bare(Value::String(pattern)) => check_regex(pattern),
        ConditionConfig::Bare(_) => Ok(()),
        ConditionConfig::Tests(tests) => {
            let given = [
                tests.equals.is_some(),
                tests.regex.is_some(),
                tests.gt.is_some(),
                tests.lt.is_some(),
                tests.one_of.is_some(),
            ];
            if !given.contains(&true) {
                return Err("needs at least one of `equals`, `regex`, `gt`, `lt`, `in`".into());
            }
            tests.regex.as_deref().map_or(Ok(()), check_regex)
        }
    }
}

fn check_regex(pattern: &str) -> Result<(), String> {
    regex::Regex::new(pattern)
        .map(|_| ())
        .map_err(|e| format!("invalid regex {pattern:?}: {e}"))
}
