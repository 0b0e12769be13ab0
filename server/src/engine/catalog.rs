//! Every tool name, resolved once at startup into what it is (an MCP
//! tool or a sub-agent; `exit_loop` is reserved for the built-in) and
//! whether a call to it
//! is gated. The one place that decides how a name is executed and how it
//! is gated, so the two can never disagree.

use std::collections::HashMap;

use asg_shared::rest::ToolInfo;

use super::llm_node::EXIT_LOOP_TOOL;

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
