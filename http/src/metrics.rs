//! What every server binary's `GET /metrics` shows, whatever else it
//! counts: HTTP requests by route template ([`HttpMetrics`]) and the
//! standard `process_*` values ([`register_process`]). The agent adds its
//! own families to the same registry; the `web` binary serves these
//! alone ([`serve`]).
//!
//! `prometheus-client` (the Prometheus project's Rust client) keeps the
//! families and writes the OpenMetrics text; `metrics-process` reads the
//! process values from the OS at each scrape.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
pub use prometheus_client::registry::Registry;

/// The content type of [`encode`]'s text (OpenMetrics 1.0, which
/// Prometheus asks for first).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The route label of a request no route matched (never the raw path).
pub const UNMATCHED: &str = "unmatched";

/// One HTTP route's requests.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    method: String,
    /// The route template (`/conversations/{id}`), [`UNMATCHED`] for none.
    route: String,
    /// `2xx`, `4xx`, …
    status: &'static str,
}

/// A route template and method, for the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

/// Latency buckets from 1 ms to about 33 s.
pub fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// `asg_http_requests_total` and `asg_http_request_duration_seconds`.
#[derive(Clone)]
pub struct HttpMetrics {
    requests: Family<HttpLabels, Counter>,
    duration: Family<RouteLabels, Histogram>,
}

impl HttpMetrics {
    /// Registers both families in `registry`.
    pub fn register(registry: &mut Registry) -> HttpMetrics {
        let metrics = HttpMetrics {
            requests: Family::default(),
            duration: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
        };
        registry.register(
            "asg_http_requests",
            "HTTP requests by route template, method and status class",
            metrics.requests.clone(),
        );
        registry.register(
            "asg_http_request_duration_seconds",
            "HTTP request duration by route template",
            metrics.duration.clone(),
        );
        metrics
    }

    /// A request answered on `route` (a template) with `status`.
    pub fn observe(&self, method: &str, route: &str, status: u16, took: Duration) {
        let status = match status {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        self.duration
            .get_or_create(&RouteLabels {
                method: method.to_string(),
                route: route.to_string(),
            })
            .observe(took.as_secs_f64());
        self.requests
            .get_or_create(&HttpLabels {
                method: method.to_string(),
                route: route.to_string(),
                status,
            })
            .inc();
    }
}

/// The route template axum matched, [`UNMATCHED`] for none.
pub fn route_of(request: &Request) -> String {
    request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED.to_string(), |m| m.as_str().to_string())
}

/// Middleware counting every request in `metrics` (for binaries without
/// their own request logging; the agent counts in its own).
pub async fn count_requests(
    State(metrics): State<HttpMetrics>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = route_of(&request);
    let response = next.run(request).await;
    metrics.observe(
        method.as_str(),
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// Registers the standard `process_*` metrics, read at each scrape.
pub fn register_process(registry: &mut Registry) {
    registry.register_collector(Box::new(ProcessCollector));
}

/// Everything in `registry`, in the text format of [`CONTENT_TYPE`].
pub fn encode(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)?;
    Ok(text)
}

/// The `GET /metrics` answer for `registry`.
pub fn answer(registry: &Registry) -> Response {
    match encode(registry) {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(error) => {
            tracing::error!(%error, "metrics: cannot encode");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// A handler answering `GET /metrics` from a shared registry.
pub async fn serve(State(registry): State<Arc<Registry>>) -> Response {
    answer(&registry)
}

/// Checks a `metrics_listen` value: an IP address with a port.
pub fn check_listen_address(address: &str) -> Result<(), String> {
    address
        .parse::<std::net::SocketAddr>()
        .map(|_| ())
        .map_err(|_| format!("{address:?} is not an address with a port, e.g. 127.0.0.1:9464"))
}

/// Serves `router` (`GET /metrics` alone) on `listener` for as long as
/// the process runs, and prints where.
pub fn serve_alone(listener: tokio::net::TcpListener, router: axum::Router) -> std::io::Result<()> {
    let bound = listener.local_addr()?;
    println!("metrics on http://{bound}/metrics");
    tokio::spawn(async move {
        if let Err(error) = crate::serve::serve_forever(listener, router).await {
            tracing::error!(%error, "the metrics listener stopped");
        }
    });
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_template_and_status_class() {
        let mut registry = Registry::default();
        let http = HttpMetrics::register(&mut registry);
        register_process(&mut registry);
        http.observe("GET", "/conversations/{id}", 404, Duration::from_millis(3));
        http.observe("GET", "/conversations/{id}", 200, Duration::from_millis(2));
        let text = encode(&registry).unwrap();
        assert!(text.contains(
            "asg_http_requests_total{method=\"GET\",route=\"/conversations/{id}\",status=\"4xx\"} 1"
        ));
        assert!(text.contains(
            "asg_http_request_duration_seconds_count{method=\"GET\",route=\"/conversations/{id}\"} 2"
        ));
        assert!(text.contains("process_resident_memory_bytes"));
    }
}
