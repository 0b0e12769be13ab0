//! The deterministic offline model: replies come from rules in a YAML file.
//!
//! It drives the keyless demo and every scenario test, so its behaviour is
//! a pure function of the request. A file looks like:
//!
//! ```yaml
//! rules:
//!   - when: { user: "(?i)\\b(list|show)\\b" }
//!     call: { tool: resources_list, args: {} }
//!   - when: { user: "(?i)add .*?(?P<name>[\\w-]+) with value (?P<value>-?\\d+)" }
//!     call: { tool: resources_add, args: { name: "{name}", value: "{value:int}" } }
//!   - when: { after_tool: resources_list }
//!     reply: "Here are the resources: {result}"
//!   - reply: "I can list, add and remove resources."
//! ```
//!
//! The trigger of a call is the last history entry: a tool result or a user
//! message. A rule without `after_tool` only answers user messages, so a
//! rule that calls a tool cannot fire again on that tool's result. Rules are
//! tried in order; the first whose conditions all hold answers.
//!
//! Templates: `{name}` is a named capture of the `user` or `result` regex,
//! `{user}` the last user text, `{result}` the tool output, `{tool}` the
//! tool name, `{node}` the calling node. `check: "{count} >= {target}"`
//! compares two filled templates (numerically when both are numbers). An
//! argument that is exactly
//! `"{x:int}"` (or `:float`, `:bool`, `:json`) becomes a typed JSON value.

use std::collections::HashMap;
use std::path::Path;

use async_trait::async_trait;
use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{LlmClient, LlmError, LlmMessage, LlmRequest, LlmResponse, LlmToolCall};

/// A model whose answers are declared in a rules file.
#[derive(Debug)]
pub struct ScriptedModel {
    source: String,
    rules: Vec<Rule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    rules: Vec<RuleSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    #[serde(default)]
    when: WhenSpec,
    #[serde(default)]
    reply: Option<String>,
    #[serde(default)]
    call: Option<CallSpec>,
    #[serde(default)]
    calls: Vec<CallSpec>,
    #[serde(default)]
    fail: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WhenSpec {
    node: Option<String>,
    system: Option<String>,
    user: Option<String>,
    after_tool: Option<String>,
    result: Option<String>,
    tool_error: Option<bool>,
    check: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallSpec {
    tool: String,
    #[serde(default)]
    args: Map<String, Value>,
}

#[derive(Debug)]
struct Rule {
    node: Option<String>,
    system: Option<Regex>,
    user: Option<Regex>,
    after_tool: Option<String>,
    result: Option<Regex>,
    tool_error: Option<bool>,
    check: Option<Check>,
    action: Action,
}

/// `"{a} >= {b}"`: a comparison of two templates, numeric when both sides
/// are numbers.
#[derive(Debug)]
struct Check {
    left: String,
    op: String,
    right: String,
}

impl Check {
    fn parse(text: &str) -> Option<Check> {
        for op in [">=", "<=", "==", "!=", ">", "<"] {
            if let Some((left, right)) = text.split_once(op) {
                return Some(Check {
                    left: left.trim().to_string(),
                    op: op.to_string(),
                    right: right.trim().to_string(),
                });
            }
        }
        None
    }

    fn holds(&self, vars: &HashMap<String, String>) -> bool {
        let (left, right) = (fill(&self.left, vars), fill(&self.right, vars));
        let ordering = match (left.parse::<f64>(), right.parse::<f64>()) {
            (Ok(l), Ok(r)) => l.partial_cmp(&r),
            _ => Some(left.cmp(&right)),
        };
        let Some(ordering) = ordering else {
            return false;
        };
        match self.op.as_str() {
            ">=" => ordering.is_ge(),
            "<=" => ordering.is_le(),
            ">" => ordering.is_gt(),
            "<" => ordering.is_lt(),
            "==" => ordering.is_eq(),
            _ => ordering.is_ne(),
        }
    }
}

#[derive(Debug)]
enum Action {
    Reply(String),
    Calls(Option<String>, Vec<CallSpec>),
    Fail(String),
}

/// What a request is answering: the user's words or a tool's output.
enum Trigger<'a> {
    User,
    ToolResult {
        name: &'a str,
        content: &'a str,
        is_error: bool,
    },
}

impl ScriptedModel {
    /// Loads and checks a rules file.
    pub fn load(path: &Path) -> Result<ScriptedModel, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the scripted model: {e}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses rules text; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<ScriptedModel, String> {
        let file: RulesFile = serde_yaml::from_str(text).map_err(|e| format!("{source}: {e}"))?;
        let mut rules = Vec::with_capacity(file.rules.len());
        for (i, spec) in file.rules.into_iter().enumerate() {
            let regex = |field: &str, pattern: Option<String>| -> Result<Option<Regex>, String> {
                pattern
                    .map(|p| Regex::new(&p))
                    .transpose()
                    .map_err(|e| format!("{source}: rules[{i}].when.{field}: {e}"))
            };
            let mut calls = spec.calls;
            calls.extend(spec.call);
            let action = match (spec.fail, calls.is_empty(), spec.reply) {
                (Some(message), true, None) => Action::Fail(message),
                (None, false, text) => Action::Calls(text, calls),
                (None, true, Some(text)) => Action::Reply(text),
                _ => {
                    return Err(format!(
                        "{source}: rules[{i}]: give exactly one of `reply`, `call`/`calls` \
                         (optionally with `reply`) or `fail`"
                    ));
                }
            };
            rules.push(Rule {
                node: spec.when.node,
                system: regex("system", spec.when.system)?,
                user: regex("user", spec.when.user)?,
                after_tool: spec.when.after_tool,
                result: regex("result", spec.when.result)?,
                tool_error: spec.when.tool_error,
                check: match spec.when.check {
                    Some(text) => Some(Check::parse(&text).ok_or_else(|| {
                        format!("{source}: rules[{i}].when.check: expected \"A op B\" with op one of >= <= == != > <, got {text:?}")
                    })?),
                    None => None,
                },
                action,
            });
        }
        Ok(ScriptedModel {
            source: source.to_string(),
            rules,
        })
    }

    fn answer(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let last_user = request
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                LlmMessage::User { text } => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or("");
        let trigger = match request.messages.last() {
            Some(LlmMessage::Tool {
                name,
                content,
                is_error,
                ..
            }) => Trigger::ToolResult {
                name,
                content,
                is_error: *is_error,
            },
            _ => Trigger::User,
        };
        let calls_so_far = request
            .messages
            .iter()
            .map(|m| match m {
                LlmMessage::Assistant { tool_calls, .. } => tool_calls.len(),
                _ => 0,
            })
            .sum::<usize>();
        for rule in &self.rules {
            if let Some(vars) = rule.matches(request, last_user, &trigger) {
                return rule.action.answer(&vars, calls_so_far);
            }
        }
        Err(LlmError::Script(format!(
            "the scripted model {} has no rule for node {:?} and message {:?}",
            self.source, request.node, last_user
        )))
    }
}

impl Action {
    /// The model's answer by this action, its templates filled from
    /// `vars`; call ids go on from the `calls_so_far` of the request.
    fn answer(
        &self,
        vars: &HashMap<String, String>,
        calls_so_far: usize,
    ) -> Result<LlmResponse, LlmError> {
        match self {
            Action::Fail(message) => Err(LlmError::Script(fill(message, vars))),
            Action::Reply(text) => Ok(LlmResponse {
                text: Some(fill(text, vars)),
                tool_calls: Vec::new(),
                usage: None,
            }),
            Action::Calls(text, calls) => Ok(LlmResponse {
                text: text.as_ref().map(|t| fill(t, vars)),
                tool_calls: calls
                    .iter()
                    .enumerate()
                    .map(|(k, call)| LlmToolCall {
                        id: format!("call_{}", calls_so_far + k + 1),
                        name: call.tool.clone(),
                        arguments: call
                            .args
                            .iter()
                            .map(|(key, value)| (key.clone(), fill_value(value, vars)))
                            .collect(),
                        signature: None,
                    })
                    .collect(),
                usage: None,
            }),
        }
    }
}

impl Rule {
    /// The template variables when every condition holds.
    fn matches(
        &self,
        request: &LlmRequest,
        last_user: &str,
        trigger: &Trigger<'_>,
    ) -> Option<HashMap<String, String>> {
        let mut vars = HashMap::new();
        vars.insert("user".to_string(), last_user.to_string());
        vars.insert("node".to_string(), request.node.clone());
        if self.node.as_ref().is_some_and(|node| *node != request.node) {
            return None;
        }
        if let Some(system) = &self.system {
            capture(system, &request.system, &mut vars)?;
        }
        if let Some(user) = &self.user {
            capture(user, last_user, &mut vars)?;
        }
        match (trigger, &self.after_tool) {
            (Trigger::User, None) => {}
            (Trigger::User, Some(_)) | (Trigger::ToolResult { .. }, None) => return None,
            (
                Trigger::ToolResult {
                    name,
                    content,
                    is_error,
                },
                Some(wanted),
            ) => {
                if wanted != "*" && wanted != name {
                    return None;
                }
                if self.tool_error.is_some_and(|e| e != *is_error) {
                    return None;
                }
                if let Some(result) = &self.result {
                    capture(result, content, &mut vars)?;
                }
                vars.insert("result".to_string(), content.to_string());
                vars.insert("tool".to_string(), name.to_string());
            }
        }
        if let Some(check) = &self.check
            && !check.holds(&vars)
        {
            return None;
        }
        Some(vars)
    }
}

fn capture(regex: &Regex, text: &str, vars: &mut HashMap<String, String>) -> Option<()> {
    let caps = regex.captures(text)?;
    for name in regex.capture_names().flatten() {
        if let Some(m) = caps.name(name) {
            vars.insert(name.to_string(), m.as_str().to_string());
        }
    }
    Some(())
}

/// Replaces `{name}` placeholders; unknown names are left as they are.
fn fill(template: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) if is_ident(&after[..end]) => {
                let name = &after[..end];
                match vars.get(name) {
                    Some(value) => out.push_str(value),
                    None => out.push_str(&rest[start..start + end + 2]),
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Fills a templated argument; `"{x:int}"` and friends become typed values.
fn fill_value(value: &Value, vars: &HashMap<String, String>) -> Value {
    match value {
        Value::String(s) => {
            if let Some(inner) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))
                && let Some((name, kind)) = inner.split_once(':')
                && let Some(raw) = vars.get(name)
            {
                let typed = match kind {
                    "int" => raw.trim().parse::<i64>().ok().map(Value::from),
                    "float" => raw.trim().parse::<f64>().ok().map(Value::from),
                    "bool" => raw.trim().parse::<bool>().ok().map(Value::from),
                    "json" => serde_json::from_str(raw).ok(),
                    _ => None,
                };
                return typed.unwrap_or_else(|| Value::String(raw.clone()));
            }
            Value::String(fill(s, vars))
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| fill_value(v, vars)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill_value(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[async_trait]
impl LlmClient for ScriptedModel {
    fn describe(&self) -> String {
        format!("scripted:{}", self.source)
    }

    async fn generate(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        self.answer(request)
    }
}

#[cfg(test)]
mod tests;
