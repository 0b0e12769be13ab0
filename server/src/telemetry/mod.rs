//! OpenTelemetry traces over OTLP, and the agent's logging set-up.
//!
//! Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; `OTEL_SDK_DISABLED=true`
//! or `OTEL_TRACES_EXPORTER=none` turn it off again. The protocol is
//! `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`: `http/protobuf` (the default)
//! or `grpc`. The exporter reads the other standard variables itself
//! (headers, timeout, compression), the SDK the sampler
//! (`OTEL_TRACES_SAMPLER[_ARG]`) and the resource (`OTEL_SERVICE_NAME`,
//! default the agent's name; `OTEL_RESOURCE_ATTRIBUTES`).
//!
//! Spans are `tracing` spans of target [`SPAN_TARGET`] (`spans.rs`),
//! bridged by `tracing-opentelemetry`; spans are exported in batches from
//! a task on the agent's runtime. W3C `traceparent` is read from incoming
//! requests and written on outgoing ones (`propagate.rs`). Arguments are
//! never attributes unless `telemetry.record_arguments` is set; secrets
//! never are.

mod propagate;
mod spans;

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::runtime::Tokio;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;

pub use asg_http::logging::SPAN_TARGET;
pub use propagate::{inject, set_parent_from, trace_id_of, traceparent};
pub use spans::*;

static RECORD_ARGUMENTS: AtomicBool = AtomicBool::new(false);

/// Whether tool arguments become span attributes
/// (`telemetry.record_arguments`).
pub fn record_arguments() -> bool {
    RECORD_ARGUMENTS.load(Ordering::Relaxed)
}

/// The tracer provider while traces are exported; shut down at exit
/// (the last batch is sent).
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Whether traces are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Sends what is buffered and stops the exporter.
    pub fn shutdown(&self) {
        if let Some(provider) = &self.provider
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(%error, "traces: the last spans could not be exported");
        }
    }
}

/// The OTLP protocol chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    HttpProtobuf,
    Grpc,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the `OTEL_*` variables ask for traces, and over which
/// protocol; an unknown protocol or exporter is an error naming it.
fn wanted(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Protocol>, String> {
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    match env("OTEL_TRACES_EXPORTER").as_deref().map(str::trim) {
        None | Some("otlp") => {}
        Some("none") => return Ok(None),
        Some(other) => {
            return Err(format!(
                "OTEL_TRACES_EXPORTER={other:?} is not supported: use \"otlp\" or \"none\""
            ));
        }
    }
    if env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none()
        && env("OTEL_EXPORTER_OTLP_ENDPOINT").is_none()
    {
        return Ok(None);
    }
    let protocol =
        env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"));
    match protocol.as_deref().map(str::trim) {
        None | Some("http/protobuf") => Ok(Some(Protocol::HttpProtobuf)),
        Some("grpc") => Ok(Some(Protocol::Grpc)),
        Some(other) => Err(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={other:?} is not supported: use \"http/protobuf\" or \"grpc\""
        )),
    }
}

fn exporter(protocol: Protocol) -> Result<SpanExporter, String> {
    let built = match protocol {
        Protocol::HttpProtobuf => SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_http_client(reqwest::Client::new())
            .build(),
        Protocol::Grpc => SpanExporter::builder().with_tonic().build(),
    };
    built.map_err(|error| format!("traces: cannot set up the OTLP exporter: {error}"))
}

/// Sets up logging (`LOG_FORMAT`, `RUST_LOG`) and, when the `OTEL_*`
/// variables ask for it, trace export for the agent `service` (the
/// default `service.name`). Must run inside the tokio runtime.
pub fn init(service: &str, record_arguments: bool) -> Result<Telemetry, String> {
    RECORD_ARGUMENTS.store(record_arguments, Ordering::Relaxed);
    let Some(protocol) = wanted(&env)? else {
        asg_http::logging::init_with(None::<tracing_subscriber::layer::Identity>);
        return Ok(Telemetry { provider: None });
    };
    let processor = BatchSpanProcessor::builder(exporter(protocol)?, Tokio).build();
    let resource = match env("OTEL_SERVICE_NAME") {
        Some(_) => Resource::builder().build(),
        None => Resource::builder()
            .with_service_name(service.to_string())
            .build(),
    };
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .build();
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("agent-stop-and-go"))
        .with_filter(Targets::new().with_target(SPAN_TARGET, tracing::Level::INFO));
    asg_http::logging::init_with(Some(layer));
    tracing::info!(?protocol, "traces: exporting over OTLP");
    Ok(Telemetry {
        provider: Some(provider),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn traces_are_off_without_an_endpoint_or_when_disabled() {
        assert_eq!(wanted(&vars(&[])), Ok(None));
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert_eq!(wanted(&vars(&[endpoint])), Ok(Some(Protocol::HttpProtobuf)));
        assert_eq!(
            wanted(&vars(&[endpoint, ("OTEL_SDK_DISABLED", "true")])),
            Ok(None)
        );
        assert_eq!(
            wanted(&vars(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")])),
            Ok(None)
        );
    }

    #[test]
    fn the_protocol_is_http_protobuf_or_grpc_and_others_are_named() {
        let endpoint = (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://collector:4317",
        );
        assert_eq!(
            wanted(&vars(&[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")])),
            Ok(Some(Protocol::Grpc))
        );
        // The traces-specific variable wins.
        assert_eq!(
            wanted(&vars(&[
                endpoint,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ])),
            Ok(Some(Protocol::HttpProtobuf))
        );
        let problem = wanted(&vars(&[
            endpoint,
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ]))
        .unwrap_err();
        assert!(problem.contains("http/json"), "{problem}");
        let problem = wanted(&vars(&[endpoint, ("OTEL_TRACES_EXPORTER", "zipkin")])).unwrap_err();
        assert!(problem.contains("zipkin"), "{problem}");
    }
}
