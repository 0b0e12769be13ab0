//! Every tool name, resolved into what it is (an MCP tool or a sub-agent;
//! `exit_loop` is reserved for the built-in) and whether a call to it is
//! gated. The one place that decides how a name is executed and how it is
//! gated, so the two can never disagree.
//!
//! Resolved at startup, and again when an MCP server that was down at
//! startup answers and its tools join ([`LiveCatalog`]); a node's tools
//! are a [`ToolSelection`] applied to the current catalog at each step.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use asg_shared::rest::ToolInfo;

use super::llm_node::EXIT_LOOP_TOOL;
use crate::llm::ToolSpec;
use crate::mcp::ToolRegistry;

/// What a tool name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolKind {
    /// A tool of an MCP server.
    Mcp,
    /// A sub-agent reached over A2A.
    SubAgent,
}

/// One resolved tool.
#[derive(Debug, Clone)]
pub struct CatalogEntry {
    /// What it is.
    pub kind: ToolKind,
    /// Name, description, schema; `destructive_hint` is the effective
    /// gate (a call needs a human's approval).
    pub info: ToolInfo,
}

/// Tool names → what they are.
#[derive(Debug, Default)]
pub struct ToolCatalog {
    entries: HashMap<String, CatalogEntry>,
    order: Vec<String>,
}

impl ToolCatalog {
    /// Resolves MCP tools and sub-agents. A name used twice (by two
    /// kinds, or by a tool and the built-in `exit_loop`) is an error that
    /// names both.
    pub fn build(mcp: Vec<ToolInfo>, sub_agents: Vec<ToolInfo>) -> Result<ToolCatalog, String> {
        let mut catalog = ToolCatalog::default();
        let tagged = mcp.into_iter().map(|info| (ToolKind::Mcp, info)).chain(
            sub_agents
                .into_iter()
                .map(|info| (ToolKind::SubAgent, info)),
        );
        for (kind, info) in tagged {
            if info.name == EXIT_LOOP_TOOL {
                return Err(format!(
                    "{} is named {EXIT_LOOP_TOOL:?}, the name of the built-in tool that ends a loop; rename it",
                    describe(&kind, &info)
                ));
            }
            if let Some(other) = catalog.entries.get(&info.name) {
                return Err(format!(
                    "tool name {:?} is used by both {} and {}; tool names must be unique",
                    info.name,
                    describe(&other.kind, &other.info),
                    describe(&kind, &info)
                ));
            }
            catalog.order.push(info.name.clone());
            catalog
                .entries
                .insert(info.name.clone(), CatalogEntry { kind, info });
        }
        Ok(catalog)
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<&CatalogEntry> {
        self.entries.get(name)
    }

    /// Every tool, MCP tools first, in configuration order.
    pub fn infos(&self) -> Vec<ToolInfo> {
        self.order
            .iter()
            .filter_map(|name| self.entries.get(name))
            .map(|entry| entry.info.clone())
            .collect()
    }
}

/// Which tools an `llm` node is offered: its `tools:` and `mcp_servers:`
/// limits and the sub-agents scoped to other nodes. Applied to the
/// current catalog, so tools of a server that joins late are offered too.
#[derive(Debug, Clone, Default)]
pub struct ToolSelection {
    /// The node's `tools:` list (None: every tool).
    pub names: Option<Vec<String>>,
    /// The node's `mcp_servers:` list (None: every server). Sub-agents
    /// are not limited by it.
    pub mcp_servers: Option<Vec<String>>,
    /// Sub-agents declared for another node: never offered here.
    pub hidden: Vec<String>,
}

impl ToolSelection {
    fn offers(&self, entry: &CatalogEntry) -> bool {
        let name = &entry.info.name;
        let named = self.names.as_ref().is_none_or(|names| names.contains(name));
        let served = entry.kind != ToolKind::Mcp
            || self
                .mcp_servers
                .as_ref()
                .is_none_or(|servers| servers.contains(&entry.info.server));
        named && served && !self.hidden.contains(name)
    }
}

impl ToolCatalog {
    /// The tools `selection` offers, in catalog order.
    pub fn offered(&self, selection: &ToolSelection) -> Vec<ToolSpec> {
        self.order
            .iter()
            .filter_map(|name| self.entries.get(name))
            .filter(|entry| selection.offers(entry))
            .map(|entry| ToolSpec {
                name: entry.info.name.clone(),
                description: entry.info.description.clone(),
                input_schema: entry.info.input_schema.clone(),
            })
            .collect()
    }
}

/// The catalog, rebuilt when the registry's tools change (a server that
/// was down at startup answered).
pub struct LiveCatalog {
    registry: Arc<ToolRegistry>,
    sub_agents: Vec<ToolInfo>,
    current: RwLock<(u64, Arc<ToolCatalog>)>,
}

impl LiveCatalog {
    /// Follows `registry`, starting from `initial` (built from the
    /// registry's tools and `sub_agents` at startup).
    pub fn new(
        registry: Arc<ToolRegistry>,
        sub_agents: Vec<ToolInfo>,
        initial: ToolCatalog,
    ) -> LiveCatalog {
        let version = registry.version();
        LiveCatalog {
            registry,
            sub_agents,
            current: RwLock::new((version, Arc::new(initial))),
        }
    }

    /// The catalog as of now.
    pub fn current(&self) -> Arc<ToolCatalog> {
        let version = self.registry.version();
        {
            let current = self.current.read().unwrap_or_else(|p| p.into_inner());
            if current.0 == version {
                return Arc::clone(&current.1);
            }
        }
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        match ToolCatalog::build(self.registry.tools(), self.sub_agents.clone()) {
            Ok(rebuilt) => *current = (version, Arc::new(rebuilt)),
            // The registry refuses late names that clash, so this is not
            // expected; the previous catalog stays.
            Err(error) => tracing::error!("tool catalog not updated: {error}"),
        }
        Arc::clone(&current.1)
    }
}

fn describe(kind: &ToolKind, info: &ToolInfo) -> String {
    match kind {
        ToolKind::Mcp => format!("the tool of MCP server {:?}", info.server),
        ToolKind::SubAgent => format!("the sub-agent at {}", info.server),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, source: &str, server: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            destructive_hint: false,
            read_only_hint: false,
            source: source.into(),
            server: server.into(),
        }
    }

    #[test]
    fn names_resolve_to_their_kind() {
        let catalog = ToolCatalog::build(
            vec![tool("resources_list", "mcp", "resources")],
            vec![tool("helper", "a2a", "http://b:8082")],
        )
        .unwrap();
        assert_eq!(catalog.get("resources_list").unwrap().kind, ToolKind::Mcp);
        assert_eq!(catalog.get("helper").unwrap().kind, ToolKind::SubAgent);
        assert!(catalog.get("other").is_none());
        let names: Vec<_> = catalog.infos().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["resources_list", "helper"]);
    }

    #[test]
    fn a_selection_limits_by_name_server_and_scope() {
        let catalog = ToolCatalog::build(
            vec![
                tool("resources_list", "mcp", "resources"),
                tool("read_file", "mcp", "filesystem"),
            ],
            vec![
                tool("helper", "a2a", "http://b:8082"),
                tool("private", "a2a", "http://c:8083"),
            ],
        )
        .unwrap();
        let names = |selection: &ToolSelection| -> Vec<String> {
            catalog
                .offered(selection)
                .into_iter()
                .map(|t| t.name)
                .collect()
        };
        let everything = ToolSelection::default();
        assert_eq!(
            names(&everything),
            ["resources_list", "read_file", "helper", "private"]
        );
        let scoped = ToolSelection {
            hidden: vec!["private".into()],
            mcp_servers: Some(vec!["filesystem".into()]),
            ..ToolSelection::default()
        };
        assert_eq!(names(&scoped), ["read_file", "helper"]);
        let listed = ToolSelection {
            names: Some(vec!["helper".into(), "resources_list".into()]),
            ..ToolSelection::default()
        };
        assert_eq!(names(&listed), ["resources_list", "helper"]);
        let none = ToolSelection {
            names: Some(vec![]),
            ..ToolSelection::default()
        };
        assert!(names(&none).is_empty());
    }

    #[test]
    fn a_name_clash_names_both_sides() {
        let error = ToolCatalog::build(
            vec![tool("helper", "mcp", "resources")],
            vec![tool("helper", "a2a", "http://b:8082")],
        )
        .unwrap_err();
        assert!(error.contains("\"helper\""), "{error}");
        assert!(error.contains("MCP server \"resources\""), "{error}");
        assert!(error.contains("http://b:8082"), "{error}");

        let error =
            ToolCatalog::build(vec![tool("exit_loop", "mcp", "resources")], vec![]).unwrap_err();
        assert!(error.contains("built-in"), "{error}");
    }
}
