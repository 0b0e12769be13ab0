//! Every tool name, resolved into what it is (an MCP tool or a sub-agent;
//! `exit_loop` is reserved for the built-in) and whether a call to it is
//! gated. The one place that decides how a name is executed and how it is
//! gated, so the two can never disagree.
//!
//! Resolved at startup, and again when an MCP server that was down at
//! startup answers and its tools join ([`LiveCatalog`]); a node's tools
//! are a [`ToolSelection`] applied to the current catalog at each step.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use super::llm_node::EXIT_LOOP_TOOL;
use crate::llm::ToolSpec;
use crate::mcp::ToolRegistry;
pub use crate::tool::{Tool, ToolKind};

/// Tool names → what they are.
#[derive(Debug, Default)]
pub struct ToolCatalog {
    /// Shared: a call looks its tool up several times (kind, gate,
    /// description), each a reference count, not a copy of its schema.
    entries: HashMap<String, Arc<Tool>>,
    order: Vec<String>,
}

impl ToolCatalog {
    /// Resolves MCP tools and sub-agents. A name used twice (by two
    /// kinds, or by a tool and the built-in `exit_loop`) is an error that
    /// names both.
    pub fn build(mcp: Vec<Tool>, sub_agents: Vec<Tool>) -> Result<ToolCatalog, String> {
        let mut catalog = ToolCatalog::default();
        for tool in mcp.into_iter().chain(sub_agents) {
            if tool.name == EXIT_LOOP_TOOL {
                return Err(format!(
                    "{} is named {EXIT_LOOP_TOOL:?}, the name of the built-in tool that ends a loop; rename it",
                    describe(&tool)
                ));
            }
            if let Some(other) = catalog.entries.get(&tool.name) {
                return Err(format!(
                    "tool name {:?} is used by both {} and {}; tool names must be unique",
                    tool.name,
                    describe(other),
                    describe(&tool)
                ));
            }
            catalog.order.push(tool.name.clone());
            catalog.entries.insert(tool.name.clone(), Arc::new(tool));
        }
        Ok(catalog)
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.entries.get(name).map(|tool| &**tool)
    }

    /// A tool by name, shared.
    pub fn shared(&self, name: &str) -> Option<Arc<Tool>> {
        self.entries.get(name).cloned()
    }

    /// Every tool, MCP tools first, in configuration order.
    pub fn tools(&self) -> Vec<Tool> {
        self.order
            .iter()
            .filter_map(|name| self.get(name))
            .cloned()
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
    fn offers(&self, tool: &Tool) -> bool {
        let name = &tool.name;
        let named = self.names.as_ref().is_none_or(|names| names.contains(name));
        let served = tool.kind != ToolKind::Mcp
            || self
                .mcp_servers
                .as_ref()
                .is_none_or(|servers| servers.contains(&tool.server));
        named && served && !self.hidden.contains(name)
    }
}

impl ToolCatalog {
    /// The tools `selection` offers, in catalog order.
    pub fn offered(&self, selection: &ToolSelection) -> Vec<ToolSpec> {
        self.order
            .iter()
            .filter_map(|name| self.get(name))
            .filter(|tool| selection.offers(tool))
            .map(|tool| ToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool.input_schema.clone(),
            })
            .collect()
    }
}

/// The catalog, rebuilt when the registry's tools change (a server that
/// was down at startup answered).
pub struct LiveCatalog {
    registry: Arc<ToolRegistry>,
    sub_agents: Vec<Tool>,
    current: RwLock<(u64, Arc<ToolCatalog>)>,
}

impl LiveCatalog {
    /// Follows `registry`, starting from `initial` (built from the
    /// registry's tools and `sub_agents` at startup).
    pub fn new(
        registry: Arc<ToolRegistry>,
        sub_agents: Vec<Tool>,
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

/// A node's offered tools, made once for each catalog and kept: every
/// step of every turn offers the same list, and making it copies every
/// tool's name, description and schema (2.6 MiB of 1,000 clients'
/// turns in flight, README "Benchmark").
#[derive(Default)]
pub struct OfferedTools(Mutex<Option<Offered>>);

struct Offered {
    catalog: Arc<ToolCatalog>,
    extras: Vec<&'static str>,
    tools: Arc<[ToolSpec]>,
}

impl OfferedTools {
    /// What `selection` offers of `catalog`, then `extras` (built-in
    /// tools, by name, made by `spec`): the list kept when it was made
    /// for this catalog and these extras, else a new one, kept.
    pub fn get(
        &self,
        catalog: &Arc<ToolCatalog>,
        selection: &ToolSelection,
        extras: &[&'static str],
        spec: impl Fn(&str) -> ToolSpec,
    ) -> Arc<[ToolSpec]> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(offered) = kept.as_ref()
            && Arc::ptr_eq(&offered.catalog, catalog)
            && offered.extras == extras
        {
            return offered.tools.clone();
        }
        let mut tools = catalog.offered(selection);
        tools.extend(extras.iter().map(|name| spec(name)));
        let tools: Arc<[ToolSpec]> = tools.into();
        *kept = Some(Offered {
            catalog: catalog.clone(),
            extras: extras.to_vec(),
            tools: tools.clone(),
        });
        tools
    }
}

impl std::fmt::Debug for OfferedTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OfferedTools")
    }
}

fn describe(tool: &Tool) -> String {
    match tool.kind {
        ToolKind::Mcp => format!("the tool of MCP server {:?}", tool.server),
        ToolKind::SubAgent => format!("the sub-agent at {}", tool.server),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, kind: ToolKind, server: &str) -> Tool {
        Tool {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            gated: false,
            read_only: false,
            kind,
            server: server.into(),
        }
    }

    #[test]
    fn names_resolve_to_their_kind() {
        let catalog = ToolCatalog::build(
            vec![tool("resources_list", ToolKind::Mcp, "resources")],
            vec![tool("helper", ToolKind::SubAgent, "http://b:8082")],
        )
        .unwrap();
        assert_eq!(catalog.get("resources_list").unwrap().kind, ToolKind::Mcp);
        assert_eq!(catalog.get("helper").unwrap().kind, ToolKind::SubAgent);
        assert!(catalog.get("other").is_none());
        let names: Vec<_> = catalog.tools().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["resources_list", "helper"]);
    }

    #[test]
    fn a_selection_limits_by_name_server_and_scope() {
        let catalog = ToolCatalog::build(
            vec![
                tool("resources_list", ToolKind::Mcp, "resources"),
                tool("read_file", ToolKind::Mcp, "filesystem"),
            ],
            vec![
                tool("helper", ToolKind::SubAgent, "http://b:8082"),
                tool("private", ToolKind::SubAgent, "http://c:8083"),
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
            vec![tool("helper", ToolKind::Mcp, "resources")],
            vec![tool("helper", ToolKind::SubAgent, "http://b:8082")],
        )
        .unwrap_err();
        assert!(error.contains("\"helper\""), "{error}");
        assert!(error.contains("MCP server \"resources\""), "{error}");
        assert!(error.contains("http://b:8082"), "{error}");

        let error = ToolCatalog::build(vec![tool("exit_loop", ToolKind::Mcp, "resources")], vec![])
            .unwrap_err();
        assert!(error.contains("built-in"), "{error}");
    }

    #[test]
    fn a_nodes_offered_tools_are_made_once_per_catalog_and_extras() {
        let spec = |name: &str| ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: json!({}),
        };
        let names = |tools: &Arc<[ToolSpec]>| -> Vec<String> {
            tools.iter().map(|t| t.name.clone()).collect()
        };
        let first = Arc::new(
            ToolCatalog::build(
                vec![tool("resources_list", ToolKind::Mcp, "resources")],
                vec![],
            )
            .unwrap(),
        );
        let offered = OfferedTools::default();
        let all = ToolSelection::default();
        let once = offered.get(&first, &all, &[], spec);
        let again = offered.get(&first, &all, &[], spec);
        assert!(Arc::ptr_eq(&once, &again), "the same list is kept");
        assert_eq!(names(&once), ["resources_list"]);
        // Inside a loop the built-in comes after the catalog's tools.
        let looped = offered.get(&first, &all, &[EXIT_LOOP_TOOL], spec);
        assert_eq!(names(&looped), ["resources_list", EXIT_LOOP_TOOL]);
        // A server that joined later: a new catalog, a new list.
        let joined = Arc::new(
            ToolCatalog::build(
                vec![
                    tool("resources_list", ToolKind::Mcp, "resources"),
                    tool("read_file", ToolKind::Mcp, "filesystem"),
                ],
                vec![],
            )
            .unwrap(),
        );
        let now = offered.get(&joined, &all, &[], spec);
        assert_eq!(names(&now), ["resources_list", "read_file"]);
        assert_eq!(
            names(&offered.get(&first, &all, &[], spec)),
            ["resources_list"]
        );
    }
}
