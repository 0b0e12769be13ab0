//! W3C trace context (`traceparent`, `tracestate`) in and out: read from
//! incoming requests ([`set_parent_from`]), written on outgoing HTTP
//! requests to models and sub-agents ([`inject`]) and into MCP `_meta`
//! ([`traceparent`]). With traces off the propagator is a no-op: nothing
//! is written.

use std::collections::HashMap;

use axum::http::HeaderMap;
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

struct Headers<'a>(&'a mut HeaderMap);

impl Injector for Headers<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(key.as_bytes()),
            axum::http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct ReadHeaders<'a>(&'a HeaderMap);

impl Extractor for ReadHeaders<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// Writes the current span's trace context into `headers`.
pub fn inject(headers: &mut HeaderMap) {
    let context = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut Headers(headers));
    });
}

/// The current span's `traceparent`, when traces are on.
pub fn traceparent() -> Option<String> {
    let context = tracing::Span::current().context();
    let mut fields = HashMap::new();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut fields);
    });
    fields.remove("traceparent")
}

/// Makes the caller's trace (incoming `traceparent`) the parent of
/// `span`, which must not have been entered yet.
pub fn set_parent_from(span: &tracing::Span, headers: &HeaderMap) {
    // The W3C propagator reads `traceparent` (and `tracestate` with it):
    // without one there is no parent, and no global lookup per request.
    if !headers.contains_key("traceparent") {
        return;
    }
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&ReadHeaders(headers))
    });
    if parent.span().span_context().is_valid() {
        // Fails only when traces are off (no layer): nothing to link.
        let _ = span.set_parent(parent);
    }
}

/// The trace id of `span` for log lines: its OpenTelemetry trace when
/// traces are on, else the caller's `traceparent` (so lines still join
/// the caller's trace).
pub fn trace_id_of(span: &tracing::Span, headers: &HeaderMap) -> Option<String> {
    let context = span.context();
    let ours = context.span().span_context().trace_id();
    if ours != opentelemetry::trace::TraceId::INVALID {
        return Some(ours.to_string());
    }
    let header = headers.get("traceparent")?.to_str().ok()?;
    incoming_trace_id(header)
}

/// The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`),
/// when it is well formed and not all zeros.
fn incoming_trace_id(header: &str) -> Option<String> {
    let mut parts = header.trim().split('-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let well_formed = hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && hex(parent, 16)
        && hex(flags, 2)
        && trace.bytes().any(|b| b != b'0');
    well_formed.then(|| trace.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_well_formed_traceparent_gives_a_trace_id() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        assert_eq!(
            incoming_trace_id(good).as_deref(),
            Some("0af7651916cd43dd8448eb211c80319c")
        );
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033-01",
            "00-<script>alert(1)</script>0000000000000-b7ad6b7169203331-01",
        ] {
            assert_eq!(incoming_trace_id(bad), None, "{bad:?}");
        }
    }
}
