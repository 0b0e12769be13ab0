//! The agent tree. A simple agent is the single-`llm`-node tree; the
//! orchestration node types (`sequential`, `parallel`, `loop`, `a2a`) are
//! added as further [`Node`] variants.

use std::sync::Arc;

use crate::llm::{LlmClient, ToolSpec};

/// An agent tree and its root.
pub struct AgentTree {
    /// The root node.
    pub root: Node,
}

/// One node of the tree.
pub enum Node {
    /// Calls a model with tools until it answers.
    Llm(LlmNode),
}

/// A model with a prompt and tools.
pub struct LlmNode {
    /// Unique node name (recorded on every message it produces).
    pub name: String,
    /// System prompt.
    pub prompt: String,
    /// The model.
    pub llm: Arc<dyn LlmClient>,
    /// Tools offered to the model.
    pub tools: Arc<[ToolSpec]>,
}

impl AgentTree {
    /// The tree of a simple agent: one `llm` node.
    pub fn single(node: LlmNode) -> AgentTree {
        AgentTree {
            root: Node::Llm(node),
        }
    }

    /// The prompt recorded as a new conversation's system message.
    pub fn root_prompt(&self) -> &str {
        match &self.root {
            Node::Llm(node) => &node.prompt,
        }
    }
}
