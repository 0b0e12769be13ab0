//! The agent tree the engine runs. A simple agent is the single-`llm`-node
//! tree; `sequential`, `parallel` and `loop` nodes orchestrate children.
//! Built from [`crate::config::NodeConfig`] by [`crate::app`].

use std::sync::Arc;

use super::catalog::ToolSelection;
use crate::llm::LlmClient;

/// An agent tree.
pub struct AgentTree {
    /// The root node.
    pub root: Node,
    /// The system message recorded first in every conversation.
    pub system_prompt: String,
}

/// One node.
pub enum Node {
    /// A model with tools.
    Llm(LlmNode),
    /// Children in order; each sees the session state of the earlier ones.
    Sequential(GroupNode),
    /// Children at the same time; outputs joined in configuration order;
    /// each branch may stop for its own approval.
    Parallel(GroupNode),
    /// Children repeated until `exit_loop` or `max_iterations`.
    Loop(LoopNode),
    /// A remote A2A agent as a pipeline step.
    A2a(A2aNode),
}

/// A sub-agent called as a step.
pub struct A2aNode {
    /// Unique node name.
    pub name: String,
    /// The sub-agent (name in the `a2a:` section).
    pub agent: String,
    /// Message sent to it; `{key}` placeholders resolve from session state.
    pub prompt: String,
    /// Session-state key for its answer.
    pub output_key: Option<String>,
}

/// A model with a prompt and tools.
pub struct LlmNode {
    /// Unique node name (recorded on every message it produces).
    pub name: String,
    /// System prompt; `{key}` placeholders resolve from session state.
    pub prompt: String,
    /// The model.
    pub llm: Arc<dyn LlmClient>,
    /// Which of the catalog's tools are offered to the model.
    pub tools: ToolSelection,
    /// Session-state key for the node's final text.
    pub output_key: Option<String>,
    /// Offer the `exit_loop` tool.
    pub can_exit_loop: bool,
    /// Offer the built-in `ask_human` tool.
    pub ask_human: bool,
    /// The tools offered, kept for the current catalog.
    pub offered: super::catalog::OfferedTools,
}

/// A `sequential` or `parallel` node.
pub struct GroupNode {
    /// Unique node name.
    pub name: String,
    /// Children.
    pub children: Vec<Node>,
    /// `parallel` only: unset asks for approval, `true` runs destructive
    /// tools without approval, `false` refuses them.
    pub allow_destructive: Option<bool>,
}

/// A `loop` node.
pub struct LoopNode {
    /// Unique node name.
    pub name: String,
    /// Children, repeated.
    pub children: Vec<Node>,
    /// Most iterations.
    pub max_iterations: usize,
    /// Unset asks for approval, `true` runs destructive tools without
    /// approval, `false` refuses them.
    pub allow_destructive: Option<bool>,
}

impl Node {
    /// The node's name.
    pub fn name(&self) -> &str {
        match self {
            Node::Llm(node) => &node.name,
            Node::Sequential(node) | Node::Parallel(node) => &node.name,
            Node::Loop(node) => &node.name,
            Node::A2a(node) => &node.name,
        }
    }

    /// Names of the `loop` nodes in this subtree, itself included.
    pub fn loop_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.children().iter().flat_map(Node::loop_names).collect();
        if let Node::Loop(lp) = self {
            names.push(&lp.name);
        }
        names
    }

    /// Children of a group node (none for `llm`).
    pub fn children(&self) -> &[Node] {
        match self {
            Node::Llm(_) | Node::A2a(_) => &[],
            Node::Sequential(node) | Node::Parallel(node) => &node.children,
            Node::Loop(node) => &node.children,
        }
    }
}

impl AgentTree {
    /// The tree of a simple agent: one `llm` node.
    pub fn single(node: LlmNode) -> AgentTree {
        AgentTree {
            system_prompt: node.prompt.clone(),
            root: Node::Llm(node),
        }
    }

    /// The prompt recorded as a new conversation's system message.
    pub fn root_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// True for the single-`llm`-node tree (the model sees the whole
    /// conversation; no pipeline state is kept).
    pub fn is_simple(&self) -> bool {
        matches!(self.root, Node::Llm(_))
    }

    /// The node at a path of child indices from the root.
    pub fn node_at(&self, path: &[usize]) -> Option<&Node> {
        path.iter()
            .try_fold(&self.root, |node, &i| node.children().get(i))
    }
}
