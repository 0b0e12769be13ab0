//! The three MCP tools of `mcp-resources` (`resources_list`,
//! `resources_add`, `resources_remove`) and the server handler around them.
//!
//! Bad input is a tool-level error (`CallToolResult::error`) naming the
//! problem, so the model can read it and retry; `Err(ErrorData)` is only for
//! internal failures (the database, a panicked worker).

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::db::ResourceDb;

/// Test-only fault injection, read from the environment at start-up.
///
/// Never set these in production: they exist so that scenario tests can
/// simulate an MCP server that crashes or hangs in the middle of a call.
#[derive(Debug, Clone, Default)]
pub struct FaultInjection {
    /// `MCP_RESOURCES_CRASH_ON=<tool>`: the process exits with code 3 as soon
    /// as that tool is called.
    pub crash_on: Option<String>,
    /// `MCP_RESOURCES_DELAY_MS=<ms>`: every tool call sleeps this long first.
    pub delay: Option<Duration>,
}

impl FaultInjection {
    /// Reads `MCP_RESOURCES_CRASH_ON` and `MCP_RESOURCES_DELAY_MS`.
    pub fn from_env() -> FaultInjection {
        let crash_on = std::env::var("MCP_RESOURCES_CRASH_ON")
            .ok()
            .filter(|s| !s.trim().is_empty());
        let delay = std::env::var("MCP_RESOURCES_DELAY_MS")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis);
        FaultInjection { crash_on, delay }
    }

    async fn before_call(&self, tool: &str) {
        if self.crash_on.as_deref() == Some(tool) {
            tracing::error!(
                "MCP_RESOURCES_CRASH_ON={tool}: exiting with code 3 (test fault injection)"
            );
            std::process::exit(3);
        }
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
    }
}

/// Arguments of `resources_list`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct ListArgs {
    /// Only resources whose name matches. A pattern containing `%` is a SQL
    /// LIKE pattern (`%` any characters, `_` one character); any other text
    /// is a plain case-insensitive substring of the name.
    pub pattern: Option<String>,
}

/// Arguments of `resources_add`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// Name of the new resource (not empty).
    #[schemars(with = "String")]
    pub name: Option<String>,
    /// Integer value of the new resource.
    #[schemars(with = "i64")]
    pub value: Option<Value>,
}

/// Arguments of `resources_remove`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct RemoveArgs {
    /// Id of the resource to remove (e.g. `res_1a2b3c4d`).
    pub id: Option<String>,
    /// Remove every resource whose name matches: a SQL LIKE pattern if it
    /// contains `%`, else a plain case-insensitive substring. With `id` too,
    /// a resource must match both.
    pub pattern: Option<String>,
}

/// The `mcp-resources` MCP server.
#[derive(Clone)]
pub struct ResourcesServer {
    db: Arc<ResourceDb>,
    faults: FaultInjection,
    tool_router: ToolRouter<Self>,
}

fn tool_error(message: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
}

fn json_result(value: &Value) -> Result<CallToolResult, ErrorData> {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// An integer from JSON: an integer, a float without fraction, or a string
/// holding an integer (models sometimes quote numbers).
fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

impl ResourcesServer {
    /// A server over `db`, with the given fault injection.
    pub fn new(db: Arc<ResourceDb>, faults: FaultInjection) -> ResourcesServer {
        ResourcesServer {
            db,
            faults,
            tool_router: Self::tool_router(),
        }
    }

    /// Runs a database operation off the async runtime.
    async fn blocking<T, F>(&self, op: F) -> Result<T, ErrorData>
    where
        T: Send + 'static,
        F: FnOnce(&ResourceDb) -> rusqlite::Result<T> + Send + 'static,
    {
        let db = Arc::clone(&self.db);
        match tokio::task::spawn_blocking(move || op(&db)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                tracing::error!("database error: {e}");
                Err(ErrorData::internal_error(
                    format!("database error: {e}"),
                    None,
                ))
            }
            Err(e) => Err(ErrorData::internal_error(
                format!("database worker failed: {e}"),
                None,
            )),
        }
    }
}

#[tool_router]
impl ResourcesServer {
    /// Lists resources.
    #[tool(
        name = "resources_list",
        description = "List the stored resources (id, name, integer value, timestamps). Optional `pattern` filters by name: a SQL LIKE pattern if it contains `%` (`%` any characters, `_` one character), otherwise a plain case-insensitive substring.",
        annotations(
            title = "List resources",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn resources_list(
        &self,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.faults.before_call("resources_list").await;
        let pattern = non_empty(args.pattern);
        let resources = self.blocking(move |db| db.list(pattern.as_deref())).await?;
        json_result(&json!({ "count": resources.len(), "resources": resources }))
    }

    /// Adds a resource.
    #[tool(
        name = "resources_add",
        description = "Add a resource with a `name` (non-empty string) and an integer `value`. Returns the created resource with its generated id.",
        annotations(
            title = "Add a resource",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn resources_add(
        &self,
        Parameters(args): Parameters<AddArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.faults.before_call("resources_add").await;
        let Some(name) = non_empty(args.name) else {
            return tool_error("resources_add: `name` is required and must not be empty.");
        };
        let value = match args.value.as_ref() {
            None | Some(Value::Null) => {
                return tool_error("resources_add: `value` is required and must be an integer.");
            }
            Some(raw) => match integer(raw) {
                Some(v) => v,
                None => {
                    return tool_error(format!(
                        "resources_add: `value` must be an integer, got {raw}."
                    ));
                }
            },
        };
        let created = self.blocking(move |db| db.add(&name, value)).await?;
        json_result(&json!({ "created": created }))
    }

    /// Removes resources.
    #[tool(
        name = "resources_remove",
        description = "Remove resources by `id`, or every resource whose name matches `pattern` (a SQL LIKE pattern if it contains `%`, otherwise a plain case-insensitive substring). Give at least one; with both, a resource must match both. Returns the removed resources.",
        annotations(
            title = "Remove resources",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn resources_remove(
        &self,
        Parameters(args): Parameters<RemoveArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.faults.before_call("resources_remove").await;
        let id = non_empty(args.id);
        let pattern = non_empty(args.pattern);
        if id.is_none() && pattern.is_none() {
            return tool_error("resources_remove: give an `id` or a `pattern` (at least one).");
        }
        let (id2, pattern2) = (id.clone(), pattern.clone());
        let removed = self
            .blocking(move |db| db.remove(id2.as_deref(), pattern2.as_deref()))
            .await?;
        if removed.is_empty()
            && let Some(id) = id
        {
            return tool_error(match pattern {
                Some(p) => {
                    format!("resources_remove: no resource with id {id:?} matches pattern {p:?}.")
                }
                None => format!("resources_remove: no resource with id {id:?}."),
            });
        }
        json_result(&json!({ "count": removed.len(), "removed": removed }))
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "mcp-resources",
    instructions = "mcp-resources: a small SQLite store of named integer resources. Use resources_list to read (safe), resources_add to create and resources_remove to delete (both change data)."
)]
impl ServerHandler for ResourcesServer {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_have_the_right_hints() {
        let server = ResourcesServer::new(
            Arc::new(ResourceDb::open_in_memory().unwrap()),
            FaultInjection::default(),
        );
        let tools = server.tool_router.list_all();
        let hint = |name: &str| {
            let tool = tools.iter().find(|t| t.name == name).unwrap();
            let a = tool.annotations.clone().unwrap();
            (a.read_only_hint, a.destructive_hint)
        };
        assert_eq!(hint("resources_list"), (Some(true), Some(false)));
        assert_eq!(hint("resources_add"), (Some(false), Some(true)));
        assert_eq!(hint("resources_remove"), (Some(false), Some(true)));
        assert_eq!(server.get_info().server_info.name, "mcp-resources");
    }

    #[test]
    fn integer_accepts_only_integers() {
        assert_eq!(integer(&json!(5)), Some(5));
        assert_eq!(integer(&json!(-5.0)), Some(-5));
        assert_eq!(integer(&json!("42")), Some(42));
        assert_eq!(integer(&json!(1.5)), None);
        assert_eq!(integer(&json!("x")), None);
        assert_eq!(integer(&json!(true)), None);
    }
}
