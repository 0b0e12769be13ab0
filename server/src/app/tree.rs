//! Builds the engine's [`AgentTree`] from the configured node tree: one
//! model client per distinct model, tool selection per `llm` node (an
//! inline `a2a` node's peer is configured as a sub-agent by the config
//! layer and reached by name like any other).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::a2a::client::A2aClient;
use crate::config::tree::DEFAULT_MAX_ITERATIONS;
use crate::config::{AgentConfig, LlmConfig, NodeConfig, NodeKind};
use crate::engine::catalog::ToolSelection;
use crate::engine::{A2aNode, AgentTree, GroupNode, LlmNode, LoopNode, Node};
use crate::llm::{LlmClient, Provider, build_client};
use crate::mcp::ToolRegistry;

use super::StartupError;

/// Everything node building needs.
struct Builder<'a> {
    config: &'a AgentConfig,
    tools: &'a ToolRegistry,
    agents: &'a A2aClient,
    config_dir: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
    clients: HashMap<String, Arc<dyn LlmClient>>,
}

/// The agent tree of `config` (a single `llm` node without `agent:`).
pub fn build_tree(
    config: &AgentConfig,
    tools: &ToolRegistry,
    agents: &A2aClient,
    config_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<AgentTree, StartupError> {
    let mut builder = Builder {
        config,
        tools,
        agents,
        config_dir,
        env,
        clients: HashMap::new(),
    };
    let root = builder.node(&config.tree())?;
    Ok(AgentTree {
        root,
        system_prompt: match &config.agent {
            Some(NodeConfig {
                kind: NodeKind::Llm,
                prompt: Some(prompt),
                ..
            }) => prompt.clone(),
            _ => config.prompt.clone(),
        },
    })
}

impl Builder<'_> {
    fn node(&mut self, node: &NodeConfig) -> Result<Node, StartupError> {
        let children = |builder: &mut Self| -> Result<Vec<Node>, StartupError> {
            node.agents
                .iter()
                .map(|child| builder.node(child))
                .collect()
        };
        Ok(match node.kind {
            NodeKind::Llm => Node::Llm(LlmNode {
                name: node.name.clone(),
                prompt: node.prompt.clone().unwrap_or_default(),
                llm: self.client(node)?,
                tools: self.tools_for(node)?,
                output_key: node.output_key.clone(),
                can_exit_loop: node.can_exit_loop,
                ask_human: node.questions.unwrap_or(self.config.questions.enabled),
                offered: Default::default(),
            }),
            NodeKind::Sequential => Node::Sequential(GroupNode {
                name: node.name.clone(),
                children: children(self)?,
                allow_destructive: None,
            }),
            NodeKind::Parallel => Node::Parallel(GroupNode {
                name: node.name.clone(),
                children: children(self)?,
                allow_destructive: node.allow_destructive,
            }),
            NodeKind::Loop => Node::Loop(LoopNode {
                name: node.name.clone(),
                children: children(self)?,
                max_iterations: node.max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS),
                allow_destructive: node.allow_destructive,
            }),
            NodeKind::A2a => Node::A2a(A2aNode {
                name: node.name.clone(),
                agent: node.agent.clone().unwrap_or_default(),
                prompt: node
                    .prompt
                    .clone()
                    .unwrap_or_else(|| "{user_message}".to_string()),
                output_key: node.output_key.clone(),
            }),
        })
    }

    /// The node's model client; nodes with the same model share one.
    fn client(&mut self, node: &NodeConfig) -> Result<Arc<dyn LlmClient>, StartupError> {
        let top = &self.config.llm;
        let llm = match &node.model {
            None => top.clone(),
            Some(model) => LlmConfig {
                model: model.clone(),
                // An endpoint override belongs to the top-level provider.
                base_url: top.base_url.clone().filter(|_| {
                    Provider::from_model(model).0 == Provider::from_model(&top.model).0
                }),
                ..top.clone()
            },
        };
        if let Some(client) = self.clients.get(&llm.model) {
            return Ok(client.clone());
        }
        let client = build_client(&llm, self.config_dir, self.env)
            .map_err(|e| StartupError(format!("node {:?}: {e}", node.name)))?;
        tracing::info!(node = %node.name, model = %client.describe(), "node model ready");
        self.clients.insert(llm.model.clone(), client.clone());
        Ok(client)
    }

    /// The tools an `llm` node may use. Sub-agents scoped to one node
    /// (an `llm` node's own `a2a:` list, an `a2a` node's inline peer) are
    /// offered to that node only. A `tools:` name no server offers is a
    /// startup error, unless an MCP server that could offer it is still
    /// unreachable (its tools join when it answers).
    fn tools_for(&self, node: &NodeConfig) -> Result<ToolSelection, StartupError> {
        let scopes = &self.config.sub_agent_scopes;
        let hidden: Vec<String> = scopes
            .iter()
            .filter(|(_, only)| *only != &node.name)
            .map(|(name, _)| name.clone())
            .collect();
        let known = |name: &String| {
            self.tools.tool(name).is_some()
                || (self.agents.agent(name).is_some() && !hidden.contains(name))
        };
        let waiting = self.tools.unavailable_servers();
        for name in node.tools.iter().flatten().filter(|name| !known(name)) {
            if waiting.is_empty() {
                return Err(StartupError(format!(
                    "node {:?}: tool {name:?} is not offered by any MCP server or sub-agent",
                    node.name
                )));
            }
            tracing::warn!(
                node = %node.name,
                tool = %name,
                "tool not offered yet; MCP server(s) {} may offer it once they answer",
                waiting.join(", ")
            );
        }
        for server in node.mcp_servers.iter().flatten() {
            if !self.config.mcp_servers.iter().any(|s| &s.name == server) {
                return Err(StartupError(format!(
                    "node {:?}: no MCP server is named {server:?}",
                    node.name
                )));
            }
        }
        Ok(ToolSelection {
            names: node.tools.clone(),
            mcp_servers: node.mcp_servers.clone(),
            hidden,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::catalog::ToolCatalog;

    /// The tools each `llm` child of the root sequence is offered.
    fn offered(tree: &AgentTree, catalog: &ToolCatalog) -> Vec<(String, Vec<String>)> {
        let Node::Sequential(group) = &tree.root else {
            panic!("not a sequence");
        };
        group
            .children
            .iter()
            .filter_map(|child| match child {
                Node::Llm(node) => Some((
                    node.name.clone(),
                    catalog
                        .offered(&node.tools)
                        .into_iter()
                        .map(|t| t.name)
                        .collect(),
                )),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn scoped_sub_agents_are_offered_to_their_node_only() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let text = format!(
            r#"
llm: {{ model: "scripted:{}" }}
a2a:
  - {{ name: everyone, url: "http://127.0.0.1:9/a2a", description: Shared }}
agent:
  type: sequential
  name: s
  agents:
    - type: llm
      name: planner
      prompt: p
      a2a:
        - {{ name: own, url: "http://127.0.0.1:9/a2a", description: Own }}
    - {{ type: llm, name: other, prompt: q }}
    - {{ type: a2a, name: inline, url: "http://127.0.0.1:9/a2a", description: Inline }}
"#,
            root.join("testdata/scripted/pipelines.yaml").display()
        );
        let config = AgentConfig::parse(&text, Path::new("agent.yaml")).unwrap();
        let agents = A2aClient::start(&config.a2a, 4).await;
        let tools = ToolRegistry::empty();
        let tree = build_tree(&config, &tools, &agents, &root, &|_| None).unwrap();
        let catalog = ToolCatalog::build(tools.tools(), agents.tools()).unwrap();
        assert_eq!(
            offered(&tree, &catalog),
            [
                ("planner".to_string(), vec!["everyone".into(), "own".into()]),
                ("other".to_string(), vec!["everyone".into()]),
            ]
        );
        let Node::Sequential(group) = &tree.root else {
            unreachable!()
        };
        let Node::A2a(inline) = &group.children[2] else {
            panic!("not an a2a node");
        };
        assert_eq!(inline.agent, "inline");
    }
}
