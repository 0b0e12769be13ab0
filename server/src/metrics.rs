//! Prometheus metrics (`GET /metrics`): one process-wide registry, counted
//! where things happen (the HTTP edge, the turn, the tool call, the
//! decision) and read at each scrape. Label values are bounded: route
//! templates, tool and server names from the config, outcomes and
//! channels from fixed lists — never ids, users or arguments.
//!
//! `prometheus-client` (the Prometheus project's Rust client) keeps the
//! families; `metrics-process` reads the standard `process_*` values.

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The content type of [`encode`]'s text (OpenMetrics 1.0, which
/// Prometheus asks for first).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One HTTP route's requests.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// The HTTP method.
    pub method: String,
    /// The route template (`/conversations/{id}`), `unmatched` for none.
    pub route: String,
    /// `2xx`, `4xx`, …
    pub status: &'static str,
}

/// A route template and method, for the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// The HTTP method.
    pub method: String,
    /// The route template.
    pub route: String,
}

/// A tool (MCP tool or sub-agent) by name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolLabels {
    /// Its name as the model sees it.
    pub tool: String,
}

/// A tool call's timing labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolCallLabels {
    /// Its name.
    pub tool: String,
    /// `ok` or `error`.
    pub result: &'static str,
}

/// A model call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModelLabels {
    /// Provider and model, as configured (never a key).
    pub model: String,
    /// `ok` or `error`.
    pub result: &'static str,
}

/// An A2A JSON-RPC request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct A2aLabels {
    /// A method this server knows, `unknown` or `invalid` (no envelope).
    pub method: &'static str,
    /// The protocol version served (`0.3`).
    pub version: &'static str,
    /// `ok`, `error` (a JSON-RPC error) or `stream`.
    pub result: &'static str,
}

/// A decision.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// `approved`, `rejected`, `edited`, `expired`, `cancelled`, …
    pub outcome: &'static str,
    /// The door it came through (`rest`, `a2a`, `chat`, …; `system` for
    /// expiry and refusals by the engine).
    pub channel: String,
}

/// Every family the agent keeps.
pub struct Metrics {
    registry: Registry,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: Family<RouteLabels, Histogram>,
    approvals_requested: Family<ToolLabels, Counter>,
    approvals_decided: Family<DecisionLabels, Counter>,
    approval_wait: Histogram,
    approvals_pending: Family<ToolLabels, Gauge>,
    turns: Counter,
    tool_calls: Family<ToolCallLabels, Histogram>,
    model_calls: Family<ModelLabels, Histogram>,
    a2a_requests: Family<A2aLabels, Counter>,
}

fn latency_buckets() -> Histogram {
    // 1 ms .. ~33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

fn wait_buckets() -> Histogram {
    // 1 s .. ~9 h: a human decides.
    Histogram::new(exponential_buckets(1.0, 3.0, 11))
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::default();
        let metrics = Metrics {
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(latency_buckets as fn() -> Histogram),
            approvals_requested: Family::default(),
            approvals_decided: Family::default(),
            approval_wait: wait_buckets(),
            approvals_pending: Family::default(),
            turns: Counter::default(),
            tool_calls: Family::new_with_constructor(latency_buckets as fn() -> Histogram),
            model_calls: Family::new_with_constructor(latency_buckets as fn() -> Histogram),
            a2a_requests: Family::default(),
            registry: Registry::default(),
        };
        registry.register(
            "asg_http_requests",
            "HTTP requests by route template, method and status class",
            metrics.http_requests.clone(),
        );
        registry.register(
            "asg_http_request_duration_seconds",
            "HTTP request duration by route template",
            metrics.http_duration.clone(),
        );
        registry.register(
            "asg_approvals_requested",
            "Destructive calls stopped for a human decision, by tool",
            metrics.approvals_requested.clone(),
        );
        registry.register(
            "asg_approvals_decided",
            "Approvals decided, by outcome and the channel the decision came through",
            metrics.approvals_decided.clone(),
        );
        registry.register(
            "asg_approval_wait_seconds",
            "Time from an approval request to its decision",
            metrics.approval_wait.clone(),
        );
        registry.register(
            "asg_approvals_pending",
            "Approvals waiting for a decision, by tool (read from the store at each scrape)",
            metrics.approvals_pending.clone(),
        );
        registry.register("asg_turns", "Turns admitted to run", metrics.turns.clone());
        registry.register(
            "asg_tool_call_duration_seconds",
            "Tool calls (MCP tools and sub-agents) by tool and result",
            metrics.tool_calls.clone(),
        );
        registry.register(
            "asg_model_call_duration_seconds",
            "Model calls by model and result",
            metrics.model_calls.clone(),
        );
        registry.register(
            "asg_a2a_requests",
            "A2A JSON-RPC requests by method, protocol version and result",
            metrics.a2a_requests.clone(),
        );
        registry.register_collector(Box::new(ProcessCollector));
        Metrics {
            registry,
            ..metrics
        }
    }

    /// A request answered on `route` (a template) with `status`.
    pub fn http_request(&self, method: &str, route: &str, status: u16, took: Duration) {
        let status = match status {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        let route = route.to_string();
        let method = method.to_string();
        self.http_duration
            .get_or_create(&RouteLabels {
                method: method.clone(),
                route: route.clone(),
            })
            .observe(took.as_secs_f64());
        self.http_requests
            .get_or_create(&HttpLabels {
                method,
                route,
                status,
            })
            .inc();
    }

    /// A destructive call stopped for a decision.
    pub fn approval_requested(&self, tool: &str) {
        self.approvals_requested
            .get_or_create(&ToolLabels { tool: tool.into() })
            .inc();
    }

    /// A decision, `waited` after the request.
    pub fn approval_decided(&self, outcome: &'static str, channel: &str, waited: Duration) {
        self.approvals_decided
            .get_or_create(&DecisionLabels {
                outcome,
                channel: channel.to_string(),
            })
            .inc();
        self.approval_wait.observe(waited.as_secs_f64());
    }

    /// The approvals waiting now, by tool (replaces the last reading).
    pub fn set_pending(&self, by_tool: &[(String, i64)]) {
        self.approvals_pending.clear();
        for (tool, count) in by_tool {
            self.approvals_pending
                .get_or_create(&ToolLabels { tool: tool.clone() })
                .set(*count);
        }
    }

    /// A turn admitted to run.
    pub fn turn_started(&self) {
        self.turns.inc();
    }

    /// A tool call that took `took`.
    pub fn tool_call(&self, tool: &str, is_error: bool, took: Duration) {
        self.tool_calls
            .get_or_create(&ToolCallLabels {
                tool: tool.into(),
                result: if is_error { "error" } else { "ok" },
            })
            .observe(took.as_secs_f64());
    }

    /// An A2A request answered.
    pub fn a2a_request(&self, method: &'static str, version: &'static str, result: &'static str) {
        self.a2a_requests
            .get_or_create(&A2aLabels {
                method,
                version,
                result,
            })
            .inc();
    }

    /// A model call that took `took`.
    pub fn model_call(&self, model: &str, ok: bool, took: Duration) {
        self.model_calls
            .get_or_create(&ModelLabels {
                model: model.into(),
                result: if ok { "ok" } else { "error" },
            })
            .observe(took.as_secs_f64());
    }

    /// Everything, in the text format of [`CONTENT_TYPE`].
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

/// The standard `process_*` metrics, read from the OS at each scrape.
#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let process = metrics_process::collector::collect();
        if let Some(seconds) = process.cpu_seconds_total {
            let counter = ConstCounter::new(seconds);
            counter.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                counter.metric_type(),
            )?)?;
        }
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                process.resident_memory_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                process.virtual_memory_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                process.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                process.max_fds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process",
                process.threads,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds",
                process.start_time_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value {
                let gauge = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
                gauge.encode(encoder.encode_descriptor(
                    name,
                    help,
                    None,
                    gauge.metric_type(),
                )?)?;
            }
        }
        Ok(())
    }
}
