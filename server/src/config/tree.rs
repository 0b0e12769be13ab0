//! The `agent:` tree of `agent.yaml`: node types, their fields, and the
//! startup checks (unique names, fields that fit the type, non-empty
//! groups, `{placeholder}`s that an earlier node can provide).

use std::collections::BTreeSet;

use serde::Deserialize;

use super::SubAgentConfig;

/// Placeholders every prompt may use without a producing node.
pub const BUILTIN_KEYS: &[&str] = &["user_message"];

/// Default `max_iterations` of a `loop` node.
pub const DEFAULT_MAX_ITERATIONS: usize = 10;

/// Node types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A model with tools.
    Llm,
    /// Children one after the other.
    Sequential,
    /// Children at the same time.
    Parallel,
    /// Children repeated until `exit_loop` or `max_iterations`.
    Loop,
    /// A remote A2A agent as a step.
    A2a,
}

impl NodeKind {
    fn as_str(self) -> &'static str {
        match self {
            NodeKind::Llm => "llm",
            NodeKind::Sequential => "sequential",
            NodeKind::Parallel => "parallel",
            NodeKind::Loop => "loop",
            NodeKind::A2a => "a2a",
        }
    }
}

/// One node of the tree, as written. Fields that do not fit the node's
/// type are rejected by [`validate_tree`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Node type.
    #[serde(rename = "type")]
    pub kind: NodeKind,
    /// Unique name in the tree.
    pub name: String,
    /// What the node does (documentation, agent card).
    #[serde(default)]
    pub description: Option<String>,
    /// `llm`: system prompt; `a2a`: the message sent to the sub-agent
    /// (default `{user_message}`). `{key}` / `{key?}` placeholders.
    #[serde(default)]
    pub prompt: Option<String>,
    /// `llm`: model for this node (any provider); default: `llm.model`.
    #[serde(default)]
    pub model: Option<String>,
    /// `llm` / `a2a`: session-state key that receives the node's output.
    #[serde(default)]
    pub output_key: Option<String>,
    /// `llm` inside a `loop`: offer the `exit_loop` tool.
    #[serde(default)]
    pub can_exit_loop: bool,
    /// `llm`: only these tools (by name).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// `llm`: offer the built-in `ask_human` tool (`true`), or not
    /// (`false`); absent: `questions.enabled`.
    #[serde(default)]
    pub questions: Option<bool>,
    /// `llm`: only the tools of these MCP servers (by name).
    #[serde(default)]
    pub mcp_servers: Option<Vec<String>>,
    /// `sequential` / `parallel` / `loop`: the children.
    #[serde(default)]
    pub agents: Vec<NodeConfig>,
    /// `loop`: most iterations (default 10).
    #[serde(default)]
    pub max_iterations: Option<usize>,
    /// `a2a`: the sub-agent (a name from the `a2a:` section). Exactly one
    /// of `agent` and `url`.
    #[serde(default)]
    pub agent: Option<String>,
    /// `a2a`: the peer declared inline (the reference's form): its base
    /// URL or JSON-RPC endpoint. It becomes a sub-agent named after the
    /// node (see [`crate::config::AgentConfig::parse`]).
    #[serde(default)]
    pub url: Option<String>,
    /// `a2a` with `url`: delegating needs a human approval first.
    #[serde(default, alias = "destructiveHint")]
    pub destructive_hint: Option<bool>,
    /// `llm`: sub-agents offered to this node only (entries like the
    /// top-level `a2a:` section).
    #[serde(default)]
    pub a2a: Vec<SubAgentConfig>,
    /// `parallel` / `loop`: what a destructive call inside does. Unset:
    /// it stops for approval (in a `parallel` node, that branch only);
    /// `true`: it runs without approval (logged); `false`: it is refused.
    #[serde(default)]
    pub allow_destructive: Option<bool>,
}

impl NodeConfig {
    /// A single `llm` node, for configs without `agent:`.
    pub fn single_llm(name: &str, prompt: &str) -> NodeConfig {
        NodeConfig {
            kind: NodeKind::Llm,
            name: name.to_string(),
            description: None,
            prompt: Some(prompt.to_string()),
            model: None,
            output_key: None,
            can_exit_loop: false,
            tools: None,
            questions: None,
            mcp_servers: None,
            agents: Vec::new(),
            max_iterations: None,
            allow_destructive: None,
            agent: None,
            url: None,
            destructive_hint: None,
            a2a: Vec::new(),
        }
    }
}

/// A `{name}` or `{name?}` in a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// Key name.
    pub name: String,
    /// `{name?}`: resolves to empty when missing.
    pub optional: bool,
}

/// The placeholders of a template. `{{` and `}}` are literal braces; a
/// brace pair around anything but an identifier is literal text.
pub fn placeholders(template: &str) -> Vec<Placeholder> {
    let mut found = Vec::new();
    scan(template, |piece| {
        if let Piece::Key(name, optional) = piece {
            found.push(Placeholder {
                name: name.to_string(),
                optional,
            });
        }
    });
    found
}

/// Resolves placeholders with `lookup`; a missing key becomes empty.
pub fn resolve(template: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len());
    scan(template, |piece| match piece {
        Piece::Text(text) => out.push_str(text),
        Piece::Key(name, _) => out.push_str(&lookup(name).unwrap_or_default()),
    });
    out
}

enum Piece<'a> {
    Text(&'a str),
    Key(&'a str, bool),
}

fn scan<'a>(template: &'a str, mut emit: impl FnMut(Piece<'a>)) {
    let mut rest = template;
    while let Some(pos) = rest.find(['{', '}']) {
        emit(Piece::Text(&rest[..pos]));
        let after = &rest[pos..];
        if after.starts_with("{{") || after.starts_with("}}") {
            emit(Piece::Text(&after[..1]));
            rest = &after[2..];
            continue;
        }
        if after.starts_with('{')
            && let Some(end) = after.find('}')
        {
            let inner = &after[1..end];
            let (name, optional) = match inner.strip_suffix('?') {
                Some(name) => (name, true),
                None => (inner, false),
            };
            if is_key(name) {
                emit(Piece::Key(name, optional));
                rest = &after[end + 1..];
                continue;
            }
        }
        emit(Piece::Text(&after[..1]));
        rest = &after[1..];
    }
    emit(Piece::Text(rest));
}

fn is_key(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

/// Checks a tree; the error is `(field path, message)`.
pub fn validate_tree(root: &NodeConfig, field: &str) -> Result<(), (String, String)> {
    let mut names = BTreeSet::new();
    check_node(root, field, &mut names, false)?;
    let mut available: BTreeSet<String> = BUILTIN_KEYS.iter().map(|k| k.to_string()).collect();
    check_placeholders(root, field, &mut available)
}

fn check_node(
    node: &NodeConfig,
    field: &str,
    names: &mut BTreeSet<String>,
    in_loop: bool,
) -> Result<(), (String, String)> {
    check_name(node, field, names)?;
    check_fields_apply(node, field)?;
    match node.kind {
        NodeKind::Llm => check_llm(node, field, in_loop),
        NodeKind::A2a => check_a2a(node, field),
        NodeKind::Sequential | NodeKind::Parallel | NodeKind::Loop => {
            if node.agents.is_empty() {
                return node_error(
                    node,
                    field,
                    "agents",
                    format!(
                        "a {} node needs at least one child in `agents`",
                        node.kind.as_str()
                    ),
                );
            }
            if node.max_iterations == Some(0) {
                return node_error(node, field, "max_iterations", "must be at least 1".into());
            }
            let in_loop = in_loop || node.kind == NodeKind::Loop;
            for (i, child) in node.agents.iter().enumerate() {
                check_node(child, &format!("{field}.agents[{i}]"), names, in_loop)?;
            }
            Ok(())
        }
    }
}

/// An error about `node`, at `field.sub`.
fn node_error(
    node: &NodeConfig,
    field: &str,
    sub: &str,
    message: String,
) -> Result<(), (String, String)> {
    let path = if sub.is_empty() {
        field.to_string()
    } else {
        format!("{field}.{sub}")
    };
    Err((path, format!("node {:?}: {message}", node.name)))
}

/// A non-empty name, unique in the tree.
fn check_name(
    node: &NodeConfig,
    field: &str,
    names: &mut BTreeSet<String>,
) -> Result<(), (String, String)> {
    if node.name.trim().is_empty() {
        return Err((
            format!("{field}.name"),
            format!("a {} node needs a non-empty name", node.kind.as_str()),
        ));
    }
    if !names.insert(node.name.clone()) {
        return node_error(
            node,
            field,
            "name",
            "duplicate node name; names must be unique in the tree".into(),
        );
    }
    Ok(())
}

/// Every field set belongs to this node's type.
fn check_fields_apply(node: &NodeConfig, field: &str) -> Result<(), (String, String)> {
    let kind = node.kind.as_str();
    let not_for = |present: bool, name: &str| -> Result<(), (String, String)> {
        if present {
            node_error(
                node,
                field,
                name,
                format!("`{name}` does not apply to {kind} nodes"),
            )
        } else {
            Ok(())
        }
    };
    if !matches!(node.kind, NodeKind::Llm | NodeKind::A2a) {
        not_for(node.prompt.is_some(), "prompt")?;
        not_for(node.output_key.is_some(), "output_key")?;
    }
    if node.kind != NodeKind::A2a {
        not_for(node.agent.is_some(), "agent")?;
        not_for(node.url.is_some(), "url")?;
        not_for(node.destructive_hint.is_some(), "destructiveHint")?;
    }
    if node.kind != NodeKind::Llm {
        not_for(!node.a2a.is_empty(), "a2a")?;
        not_for(node.model.is_some(), "model")?;
        not_for(node.can_exit_loop, "can_exit_loop")?;
        not_for(node.tools.is_some(), "tools")?;
        not_for(node.questions.is_some(), "questions")?;
        not_for(node.mcp_servers.is_some(), "mcp_servers")?;
    }
    if node.kind != NodeKind::Loop {
        not_for(node.max_iterations.is_some(), "max_iterations")?;
    }
    if !matches!(node.kind, NodeKind::Loop | NodeKind::Parallel) {
        not_for(node.allow_destructive.is_some(), "allow_destructive")?;
    }
    let is_group = matches!(
        node.kind,
        NodeKind::Sequential | NodeKind::Parallel | NodeKind::Loop
    );
    if !is_group {
        not_for(!node.agents.is_empty(), "agents")?;
    }
    Ok(())
}

/// An `output_key` that placeholders can name.
fn check_output_key(node: &NodeConfig, field: &str) -> Result<(), (String, String)> {
    match &node.output_key {
        Some(key) if !is_key(key) => node_error(
            node,
            field,
            "output_key",
            format!("{key:?} is not a valid key (letters, digits, _ - .)"),
        ),
        _ => Ok(()),
    }
}

/// An `llm` node: a prompt; `can_exit_loop` only inside a loop.
fn check_llm(node: &NodeConfig, field: &str, in_loop: bool) -> Result<(), (String, String)> {
    if node.prompt.as_deref().is_none_or(|p| p.trim().is_empty()) {
        return node_error(node, field, "prompt", "an llm node needs a prompt".into());
    }
    if node.can_exit_loop && !in_loop {
        return node_error(
            node,
            field,
            "can_exit_loop",
            "only a node inside a loop can exit it".into(),
        );
    }
    check_output_key(node, field)
}

/// An `a2a` node: exactly one of `agent` (by name) and `url` (inline).
fn check_a2a(node: &NodeConfig, field: &str) -> Result<(), (String, String)> {
    let err = |sub: &str, message: &str| node_error(node, field, sub, message.to_string());
    match (&node.agent, &node.url) {
        (Some(_), Some(_)) => {
            return err(
                "url",
                "set either `agent` (an entry of the `a2a:` section) or `url` \
                 (the peer inline), not both",
            );
        }
        (None, None) => {
            return err(
                "agent",
                "an a2a node needs `agent` (the name of an entry of the `a2a:` \
                 section) or `url` (the peer inline)",
            );
        }
        (Some(agent), None) if agent.trim().is_empty() => {
            return err("agent", "must not be empty");
        }
        (Some(_), None) if node.destructive_hint.is_some() => {
            return err(
                "destructiveHint",
                "applies to an inline peer (`url`); set it on the `a2a:` entry",
            );
        }
        (None, Some(url)) if !is_url(url) => {
            return node_error(
                node,
                field,
                "url",
                format!("must be an http(s) URL, got {url:?}"),
            );
        }
        _ => {}
    }
    check_output_key(node, field)
}

/// An `http(s)` URL, or one that starts with a `${VAR}` expanded later.
pub(super) fn is_url(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://") || url.starts_with("${")
}

/// Checks that every `a2a` node names a configured sub-agent.
pub fn check_agent_refs(
    node: &NodeConfig,
    field: &str,
    agents: &BTreeSet<String>,
) -> Result<(), (String, String)> {
    if let Some(agent) = &node.agent
        && !agents.contains(agent)
    {
        return Err((
            format!("{field}.agent"),
            format!(
                "node {:?}: no sub-agent named {agent:?} in the `a2a:` section",
                node.name
            ),
        ));
    }
    for (i, child) in node.agents.iter().enumerate() {
        check_agent_refs(child, &format!("{field}.agents[{i}]"), agents)?;
    }
    Ok(())
}

/// Walks the tree in execution order; `available` holds the keys that are
/// certainly set when a node starts.
fn check_placeholders(
    node: &NodeConfig,
    field: &str,
    available: &mut BTreeSet<String>,
) -> Result<(), (String, String)> {
    match node.kind {
        NodeKind::Llm | NodeKind::A2a => {
            for placeholder in placeholders(node.prompt.as_deref().unwrap_or("{user_message}")) {
                if !placeholder.optional && !available.contains(&placeholder.name) {
                    let known: Vec<&str> = available.iter().map(String::as_str).collect();
                    return Err((
                        format!("{field}.prompt"),
                        format!(
                            "node {:?}: placeholder {{{}}} is never set before this node runs \
                             (available: {}); set it with an earlier node's output_key, or \
                             write {{{}?}} to accept an empty value",
                            node.name,
                            placeholder.name,
                            known.join(", "),
                            placeholder.name
                        ),
                    ));
                }
            }
            if let Some(key) = &node.output_key {
                available.insert(key.clone());
            }
        }
        NodeKind::Sequential | NodeKind::Loop => {
            for (i, child) in node.agents.iter().enumerate() {
                check_placeholders(child, &format!("{field}.agents[{i}]"), available)?;
            }
        }
        NodeKind::Parallel => {
            // Branches run at the same time: none sees a sibling's keys,
            // and all of them are available after the node.
            let before = available.clone();
            let mut after = before.clone();
            for (i, child) in node.agents.iter().enumerate() {
                let mut branch = before.clone();
                check_placeholders(child, &format!("{field}.agents[{i}]"), &mut branch)?;
                after.extend(branch);
            }
            *available = after;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
