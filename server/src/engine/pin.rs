//! Runs pinned to their configuration: a paused run records a
//! fingerprint of what its resumption depends on — the agent tree (node
//! kinds, names, prompts, models, tool selections, outputs, loop and
//! parallel settings), the top-level prompt and model, and the gated
//! tool as the catalog resolves it (description, input schema, gate). A
//! decision taken after the configuration changed is refused
//! (`approval.on_config_change: refuse`, the default) or goes on with the
//! change recorded (`resume`). Pure functions.

use asg_shared::PendingApproval;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Inner;
use super::catalog::Tool;
use crate::config::{AgentConfig, NodeConfig, OnConfigChange};

/// Who refuses a decision whose run's configuration changed.
pub use super::approval::CONFIG_SUBJECT;

/// What pinning needs: the running configuration's description and the
/// policy.
#[derive(Debug, Clone, Default)]
pub struct Pinning {
    /// [`tree_description`] of the configuration running now.
    pub tree: Value,
    /// `approval.on_config_change`.
    pub on_change: OnConfigChange,
}

impl Pinning {
    /// From the configuration.
    pub fn from_config(config: &AgentConfig) -> Pinning {
        Pinning {
            tree: tree_description(config),
            on_change: config.approval.on_config_change,
        }
    }
}

impl Inner {
    /// The fingerprint of what `pending`'s run depends on, now (a proxy
    /// approval depends on the sub-agent it was delegated to).
    pub(crate) fn config_hash(&self, pending: &PendingApproval) -> String {
        let tool = pending
            .remote_agent_name
            .as_deref()
            .unwrap_or(&pending.tool_name);
        fingerprint(&self.pinning.tree, self.tool(tool).as_deref())
    }

    /// The configuration changed since `pending` paused.
    pub(crate) fn config_changed(&self, pending: &PendingApproval) -> bool {
        pending
            .config_hash
            .as_ref()
            .is_some_and(|pinned| *pinned != self.config_hash(pending))
    }
}

/// The configuration-dependent part of every run: the tree and the
/// top-level prompt and model, as canonical JSON.
pub fn tree_description(config: &AgentConfig) -> Value {
    json!({
        "prompt": config.prompt,
        "model": config.llm.model,
        "tree": config.agent.as_ref().map(node),
    })
}

fn node(node: &NodeConfig) -> Value {
    json!({
        "kind": format!("{:?}", node.kind),
        "name": node.name,
        "prompt": node.prompt,
        "model": node.model,
        "output_key": node.output_key,
        "can_exit_loop": node.can_exit_loop,
        "tools": node.tools,
        "mcp_servers": node.mcp_servers,
        "max_iterations": node.max_iterations,
        "agent": node.agent,
        "allow_destructive": node.allow_destructive,
        "agents": node.agents.iter().map(self::node).collect::<Vec<_>>(),
    })
}

/// `sha256:<hex>` of the tree description and the gated tool (`None`:
/// the tool is not available now, which counts as a change).
pub fn fingerprint(tree: &Value, tool: Option<&Tool>) -> String {
    let tool = tool.map(|t| {
        json!({
            "name": t.name,
            "description": t.description,
            "input_schema": t.input_schema,
            "gated": t.gated,
        })
    });
    let bytes = serde_json::to_vec(&json!({"config": tree, "tool": tool})).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn described(yaml: &str) -> Value {
        tree_description(&AgentConfig::parse(yaml, Path::new("agent.yaml")).unwrap())
    }

    fn tool(schema: Value) -> Tool {
        Tool {
            name: "resources_add".into(),
            description: "Add".into(),
            input_schema: schema,
            gated: true,
            read_only: false,
            kind: crate::tool::ToolKind::Mcp,
            server: "resources".into(),
        }
    }

    #[test]
    fn a_change_that_matters_changes_the_fingerprint() {
        let base = "prompt: p\nagent:\n  type: sequential\n  name: s\n  agents:\n    - { type: llm, name: a, prompt: one }\n";
        let schema = json!({"type": "object"});
        let pinned = fingerprint(&described(base), Some(&tool(schema.clone())));
        assert_eq!(
            pinned,
            fingerprint(&described(base), Some(&tool(schema.clone()))),
            "stable"
        );
        assert!(pinned.starts_with("sha256:"));
        let changes = [
            base.replace("prompt: one", "prompt: two"),
            base.replace("prompt: p", "prompt: q"),
            base.replace("name: a", "name: b"),
            format!("{base}llm: {{ model: other-model }}\n"),
        ];
        for changed in changes {
            assert_ne!(
                pinned,
                fingerprint(&described(&changed), Some(&tool(schema.clone()))),
                "{changed}"
            );
        }
        let other_schema = json!({"type": "object", "required": ["name"]});
        assert_ne!(
            pinned,
            fingerprint(&described(base), Some(&tool(other_schema)))
        );
        assert_ne!(pinned, fingerprint(&described(base), None));
        // What a run does not depend on leaves it alone.
        let unrelated = format!("{base}port: 9999\nmax_tool_steps: 3\n");
        assert_eq!(
            pinned,
            fingerprint(&described(&unrelated), Some(&tool(schema)))
        );
    }
}
