//! What each place in the agent counts.

use std::time::Duration;

use super::Metrics;
use super::labels::*;

fn result(ok: bool) -> &'static str {
    if ok { "ok" } else { "error" }
}

impl Metrics {
    /// A request answered on `route` (a template) with `status`.
    pub fn http_request(&self, method: &str, route: &str, status: u16, took: Duration) {
        self.http.observe(method, route, status, took);
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

    /// A call run after its approval: `result` is `ok`, `error`,
    /// `approval` or `interrupted`.
    pub fn approved_call(&self, tool: &str, result: &'static str) {
        self.approved_calls
            .get_or_create(&ApprovedCallLabels {
                tool: tool.into(),
                result,
            })
            .inc();
    }

    /// A turn admitted to run.
    pub fn turn_started(&self) {
        self.turns.inc();
    }

    /// A tool call on `server` that took `took`.
    pub fn tool_call(&self, tool: &str, server: &str, is_error: bool, took: Duration) {
        self.tool_calls
            .get_or_create(&ToolCallLabels {
                tool: tool.into(),
                server: server.into(),
                result: result(!is_error),
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
                result: result(ok),
            })
            .observe(took.as_secs_f64());
    }

    /// Tokens a provider counted for one call.
    pub fn model_tokens(&self, model: &str, input: u64, output: u64) {
        for (direction, count) in [("input", input), ("output", output)] {
            self.model_tokens
                .get_or_create(&TokenLabels {
                    model: model.into(),
                    direction,
                })
                .inc_by(count);
        }
    }

    /// A call to the sub-agent `agent` (see [`SubAgentLabels`]).
    pub fn subagent_call(&self, agent: &str, result: &'static str) {
        self.subagent_calls
            .get_or_create(&SubAgentLabels {
                agent: agent.into(),
                result,
            })
            .inc();
    }

    /// A notification of `kind` delivered, failed or dropped.
    pub fn notification(&self, kind: &'static str, result: &'static str) {
        self.deliveries
            .get_or_create(&DeliveryLabels { kind, result })
            .inc();
    }

    /// A conversation save that took `took`.
    pub fn store_save(&self, ok: bool, took: Duration) {
        self.store_saves
            .get_or_create(&ResultLabels { result: result(ok) })
            .observe(took.as_secs_f64());
    }

    /// A claim over a shared store: `taken`, `waited` or `busy`.
    pub fn store_claim(&self, result: &'static str) {
        self.store_claims
            .get_or_create(&ResultLabels { result })
            .inc();
    }

    /// A conversation taken over from a stopped replica.
    pub fn store_takeover(&self) {
        self.store_takeovers.inc();
    }
}
