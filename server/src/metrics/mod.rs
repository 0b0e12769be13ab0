//! Prometheus metrics (`GET /metrics`): one process-wide registry, counted
//! where things happen (the HTTP edge, the turn, the tool call, the
//! decision, the store, the notifications) and read at each scrape. Label
//! values are bounded (`labels.rs`): route templates, names from the
//! config, words from fixed lists — never ids, users or arguments.
//!
//! `prometheus-client` (the Prometheus project's Rust client) keeps the
//! families; the HTTP and `process_*` families every binary shares come
//! from `asg_http::metrics`. `record.rs` has what each place counts.

mod labels;
mod record;

use std::sync::OnceLock;

use asg_http::metrics::{HttpMetrics, latency_histogram};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub use asg_http::metrics::CONTENT_TYPE;
use labels::*;

/// Every family the agent keeps.
pub struct Metrics {
    registry: Registry,
    http: HttpMetrics,
    approvals_requested: Family<ToolLabels, Counter>,
    approvals_decided: Family<DecisionLabels, Counter>,
    approval_wait: Histogram,
    approvals_pending: Family<ToolLabels, Gauge>,
    approved_calls: Family<ApprovedCallLabels, Counter>,
    turns: Counter,
    tool_calls: Family<ToolCallLabels, Histogram>,
    model_calls: Family<ModelLabels, Histogram>,
    model_tokens: Family<TokenLabels, Counter>,
    a2a_requests: Family<A2aLabels, Counter>,
    subagent_calls: Family<SubAgentLabels, Counter>,
    deliveries: Family<DeliveryLabels, Counter>,
    store_saves: Family<ResultLabels, Histogram>,
    store_claims: Family<ResultLabels, Counter>,
    store_takeovers: Counter,
}

fn wait_histogram() -> Histogram {
    // 1 s .. ~16 h: a human decides.
    Histogram::new(exponential_buckets(1.0, 3.0, 11))
}

fn save_histogram() -> Histogram {
    // 0.1 ms .. ~3 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

fn timed<L>() -> Family<L, Histogram>
where
    L: Clone + std::hash::Hash + Eq,
{
    Family::new_with_constructor(latency_histogram as fn() -> Histogram)
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::default();
        let http = HttpMetrics::register(&mut registry);
        asg_http::metrics::register_process(&mut registry);
        let metrics = Metrics {
            http,
            approvals_requested: Family::default(),
            approvals_decided: Family::default(),
            approval_wait: wait_histogram(),
            approvals_pending: Family::default(),
            approved_calls: Family::default(),
            turns: Counter::default(),
            tool_calls: timed(),
            model_calls: timed(),
            model_tokens: Family::default(),
            a2a_requests: Family::default(),
            subagent_calls: Family::default(),
            deliveries: Family::default(),
            store_saves: Family::new_with_constructor(save_histogram as fn() -> Histogram),
            store_claims: Family::default(),
            store_takeovers: Counter::default(),
            registry: Registry::default(),
        };
        metrics.register_approvals(&mut registry);
        metrics.register_calls(&mut registry);
        metrics.register_store(&mut registry);
        Metrics {
            registry,
            ..metrics
        }
    }

    fn register_approvals(&self, registry: &mut Registry) {
        registry.register(
            "asg_approvals_requested",
            "Destructive calls stopped for a human decision, by tool",
            self.approvals_requested.clone(),
        );
        registry.register(
            "asg_approvals_decided",
            "Approvals decided, by outcome and the channel the decision came through",
            self.approvals_decided.clone(),
        );
        registry.register(
            "asg_approval_wait_seconds",
            "Time from an approval request to its decision",
            self.approval_wait.clone(),
        );
        registry.register(
            "asg_approvals_pending",
            "Approvals waiting for a decision, by tool (read from the store at each scrape)",
            self.approvals_pending.clone(),
        );
        registry.register(
            "asg_approved_calls",
            "Calls run after their approval, by tool and result",
            self.approved_calls.clone(),
        );
    }

    fn register_calls(&self, registry: &mut Registry) {
        registry.register("asg_turns", "Turns admitted to run", self.turns.clone());
        registry.register(
            "asg_tool_call_duration_seconds",
            "Tool calls (MCP tools and sub-agents) by tool, server and result",
            self.tool_calls.clone(),
        );
        registry.register(
            "asg_model_call_duration_seconds",
            "Model calls by model and result",
            self.model_calls.clone(),
        );
        registry.register(
            "asg_model_tokens",
            "Tokens the model providers counted, by model and direction",
            self.model_tokens.clone(),
        );
        registry.register(
            "asg_a2a_requests",
            "A2A JSON-RPC requests by method, protocol version and result",
            self.a2a_requests.clone(),
        );
        registry.register(
            "asg_subagent_calls",
            "Calls to sub-agents over A2A, by sub-agent and result (proxy_approval: it waits for a decision)",
            self.subagent_calls.clone(),
        );
        registry.register(
            "asg_notifications",
            "Webhook and A2A push notifications, by kind and result",
            self.deliveries.clone(),
        );
    }

    fn register_store(&self, registry: &mut Registry) {
        registry.register(
            "asg_store_save_duration_seconds",
            "Conversation saves (durable when answered), by result",
            self.store_saves.clone(),
        );
        registry.register(
            "asg_store_claims",
            "Conversation claims over a shared store, by result (waited: another replica held it first; busy: given up)",
            self.store_claims.clone(),
        );
        registry.register(
            "asg_store_lease_takeovers",
            "Conversations a stopped replica left in the middle of a turn, taken over here",
            self.store_takeovers.clone(),
        );
    }

    /// Everything, in the text format of [`CONTENT_TYPE`].
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        asg_http::metrics::encode(&self.registry)
    }
}

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}
