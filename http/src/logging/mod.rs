//! Logging for the server binaries: `RUST_LOG` (default
//! [`DEFAULT_LOG_FILTER`]) and `LOG_FORMAT`: `text` (the default, one
//! readable line per event) or `json` (one JSON object a line: time,
//! level, target, message, the event's fields, and the fields of the
//! spans it happened in — `trace_id`, `session_id`, `conversation` — at
//! the top level, for log shippers).
//!
//! Spans made for traces ([`SPAN_TARGET`]) are not shown in text lines
//! (they would prefix every line); their fields are in JSON lines.

mod batched;
mod text;

use std::fmt;
use std::sync::OnceLock;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::filter::{EnvFilter, FilterExt, filter_fn};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields, MakeWriter};
use tracing_subscriber::layer::{Context, Filter, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

/// Default log filter when `RUST_LOG` is unset: `info`, but rmcp's
/// per-connection chatter (its `peer_info` dump, task lifecycle) only from
/// `warn` up.
pub const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";

/// The target of the spans made for traces (request, turn, model and
/// tool calls); the agent exports them over OTLP when traces are on.
pub const SPAN_TARGET: &str = "asg::span";

pub use batched::{BatchedLines, REQUEST_TARGET};

/// Standard output's lines, once logging is installed.
static STDOUT_LINES: OnceLock<BatchedLines> = OnceLock::new();

/// Writes the log lines not yet written; a server binary calls it
/// before it exits (lines go out in batches: [`BatchedLines`]).
pub fn flush() {
    if let Some(lines) = STDOUT_LINES.get() {
        lines.flush();
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One readable line per event.
    Text,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// `LOG_FORMAT` read: `text` (or unset) or `json`; anything else is
    /// an error naming the variable.
    pub fn from_env() -> Result<LogFormat, String> {
        LogFormat::parse(std::env::var("LOG_FORMAT").ok().as_deref())
    }

    fn parse(value: Option<&str>) -> Result<LogFormat, String> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("" | "text") => Ok(LogFormat::Text),
            Some("json") => Ok(LogFormat::Json),
            Some(_) => Err(format!(
                "LOG_FORMAT={:?} is not a log format: use \"text\" or \"json\"",
                value.unwrap_or_default()
            )),
        }
    }
}

/// Installs the logging; `extra` (the agent's OpenTelemetry layer) sees
/// every span and event beside it. An unknown `LOG_FORMAT` is reported
/// and text is used.
pub fn init_with<L>(extra: Option<L>)
where
    L: Layer<Registry> + Send + Sync + 'static,
{
    let format = LogFormat::from_env().unwrap_or_else(|problem| {
        eprintln!("warning: {problem}; logging as text");
        LogFormat::Text
    });
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| DEFAULT_LOG_FILTER.into());
    let stdout = STDOUT_LINES.get_or_init(|| BatchedLines::new(std::io::stdout()));
    install(extra, format, filter, stdout.clone());
}

/// Installs the logging as the global default: lines in `format`,
/// filtered by `filter`, written to `writer`. [`init_with`] is this with
/// the environment's settings and standard output, written in batches.
///
/// Without `extra`, no layer stands in for it: an absent
/// (`Option::None`) layer would declare interest in every callsite, so
/// every disabled `trace!` of hyper or rmcp would reach the filters at
/// run time.
pub fn install<L, W>(extra: Option<L>, format: LogFormat, filter: EnvFilter, writer: W)
where
    L: Layer<Registry> + Send + Sync + 'static,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    match extra {
        Some(extra) => lines_on(Registry::default().with(extra), format, filter, writer),
        None => lines_on(Registry::default(), format, filter, writer),
    }
}

/// The line-writing layer on `subscriber`, installed globally.
fn lines_on<S, W>(subscriber: S, format: LogFormat, filter: EnvFilter, writer: W)
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync + 'static,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let lines = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(writer);
    match format {
        LogFormat::Text => {
            let no_trace_spans =
                filter_fn(|meta| !(meta.is_span() && meta.target() == SPAN_TARGET))
                    .with_max_level_hint(LevelFilter::TRACE);
            let text = lines
                .event_format(text::TextLines::default())
                .with_filter(AskEveryTime(filter.and(no_trace_spans)));
            subscriber.with(text).init();
        }
        LogFormat::Json => {
            let json = lines
                .fmt_fields(JsonFields::new())
                .event_format(JsonLines)
                .with_filter(AskEveryTime(filter));
            subscriber.with(json).init();
        }
    }
}

/// A per-layer filter whose callsites are never cached as "always
/// enabled": an enabled callsite is asked about at every event, a
/// disabled one is still skipped for good.
///
/// tracing-subscriber keeps each per-layer filter's last answer in a
/// thread-local, and an event whose callsite is "always" enabled is
/// dispatched without asking the filters, so it is judged by that
/// last answer. A question answered "no" that no event follows — a
/// `log::log_enabled!` such as sqlx's at every query, through the
/// `log` bridge — left it "no", and the thread's next such event was
/// dropped: a replica's "taking it over" warning after its sweep's
/// query was never written. Asking at every enabled event sets the
/// answer afresh.
struct AskEveryTime<F>(F);

impl<S, F: Filter<S>> Filter<S> for AskEveryTime<F> {
    fn enabled(&self, meta: &Metadata<'_>, cx: &Context<'_, S>) -> bool {
        self.0.enabled(meta, cx)
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        match self.0.callsite_enabled(meta) {
            interest if interest.is_always() => Interest::sometimes(),
            interest => interest,
        }
    }

    fn event_enabled(&self, event: &Event<'_>, cx: &Context<'_, S>) -> bool {
        self.0.event_enabled(event, cx)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        self.0.max_level_hint()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, cx: Context<'_, S>) {
        self.0.on_new_span(attrs, id, cx)
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, cx: Context<'_, S>) {
        self.0.on_record(id, values, cx)
    }

    fn on_enter(&self, id: &Id, cx: Context<'_, S>) {
        self.0.on_enter(id, cx)
    }

    fn on_exit(&self, id: &Id, cx: Context<'_, S>) {
        self.0.on_exit(id, cx)
    }

    fn on_close(&self, id: Id, cx: Context<'_, S>) {
        self.0.on_close(id, cx)
    }
}

/// A JSON object a line, the fields of enclosing spans flattened in.
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = Map::new();
        let mut time = String::new();
        SystemTime.format_time(&mut Writer::new(&mut time))?;
        line.insert("timestamp".into(), Value::String(time));
        let meta = event.metadata();
        line.insert("level".into(), Value::String(meta.level().to_string()));
        line.insert("target".into(), Value::String(meta.target().to_string()));
        // Outer spans first, so an inner span's field wins.
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                line.insert("span".into(), Value::String(span.name().to_string()));
                let extensions = span.extensions();
                let Some(fields) = extensions.get::<FormattedFields<N>>() else {
                    continue;
                };
                if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(fields) {
                    for (key, value) in fields {
                        if !key.starts_with("otel.") {
                            line.insert(key, value);
                        }
                    }
                }
            }
        }
        event.record(&mut JsonVisitor(&mut line));
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// An event's fields into a JSON object.
struct JsonVisitor<'a>(&'a mut Map<String, Value>);

impl Visit for JsonVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().into(), Value::String(value.into()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::String(format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn json_lines_carry_the_fields_of_enclosing_spans_at_the_top_level() {
        let lines = Lines::default();
        let writer = lines.clone();
        let layer = tracing_subscriber::fmt::layer()
            .fmt_fields(JsonFields::new())
            .event_format(JsonLines)
            .with_writer(move || writer.clone());
        let subscriber = Registry::default().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!(
                target: SPAN_TARGET,
                "request",
                trace_id = tracing::field::Empty,
                session_id = "s-1",
                otel.kind = "server"
            );
            span.record("trace_id", "0af7651916cd43dd8448eb211c80319c");
            let _in = span.enter();
            tracing::info!(status = 200u64, path = "/health", "request \"done\"");
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        let line: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(line["trace_id"], "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(line["session_id"], "s-1");
        assert_eq!(line["status"], 200);
        assert_eq!(line["message"], "request \"done\"");
        assert_eq!(line["level"], "INFO");
        assert!(line.get("otel.kind").is_none());
        assert!(line["timestamp"].as_str().unwrap().contains('T'));
    }

    #[test]
    fn log_format_is_text_or_json_and_anything_else_is_named() {
        assert_eq!(LogFormat::parse(None), Ok(LogFormat::Text));
        assert_eq!(LogFormat::parse(Some("JSON")), Ok(LogFormat::Json));
        let problem = LogFormat::parse(Some("yaml")).unwrap_err();
        assert!(problem.contains("LOG_FORMAT=\"yaml\""), "{problem}");
    }
}
