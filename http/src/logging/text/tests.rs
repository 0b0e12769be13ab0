use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing_subscriber::Registry;
use tracing_subscriber::layer::SubscriberExt;

use super::*;

#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Length of `2026-11-29T08:54:11.099417Z`.
const STAMP: usize = 27;

/// Runs `log` under two text layers, the default format's and ours;
/// their output.
fn both(log: impl FnOnce()) -> (String, String) {
    let (default, ours) = (Lines::default(), Lines::default());
    let (a, b) = (default.clone(), ours.clone());
    let subscriber = Registry::default()
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(move || a.clone()),
        )
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .event_format(TextLines::default())
                .with_writer(move || b.clone()),
        );
    tracing::subscriber::with_default(subscriber, log);
    (default.text(), ours.text())
}

/// Each line's timestamp shape checked and cut off.
fn without_stamps(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            let stamp = &line[..STAMP];
            assert!(
                stamp.as_bytes()[10] == b'T'
                    && stamp.ends_with('Z')
                    && line.as_bytes()[STAMP] == b' ',
                "{line}"
            );
            line[STAMP..].to_string()
        })
        .collect()
}

#[test]
fn a_request_line_is_byte_for_byte_the_default_formats_line() {
    let (default, ours) = both(|| {
        let latency_ms = 0.987_f64;
        tracing::info!(
            target: REQUEST_TARGET,
            method = %"GET",
            path = %"/conversations/7a3c",
            status = 200u64,
            latency_ms = format_args!("{latency_ms:.2}"),
            trace_id = %"-",
            quoted = "a \"str\"",
            r#type = true,
            negative = -3i64,
            "request"
        );
        tracing::warn!(target: REQUEST_TARGET, "bell \x07 and \x1b[31m red \u{9b}");
        tracing::info!(target: REQUEST_TARGET, message = "as a str", n = 1u64);
    });
    let ours = without_stamps(&ours);
    assert_eq!(without_stamps(&default), ours);
    assert_eq!(
        ours[0],
        "  INFO http: request method=GET path=/conversations/7a3c status=200 latency_ms=0.99 \
         trace_id=- quoted=\"a \\\"str\\\"\" type=true negative=-3"
    );
    assert!(
        ours[1].contains("bell \\x07 and \\x1b[31m red \\u{9b}"),
        "{}",
        ours[1]
    );
}

#[test]
fn lines_in_a_shown_span_and_other_targets_are_the_default_formats() {
    let (default, ours) = both(|| {
        let span = tracing::info_span!("turn", conversation = "c-1");
        let _in = span.enter();
        tracing::info!(target: REQUEST_TARGET, status = 201u64, "request");
        tracing::warn!(target: "agent_server::engine", step = 2u64, "model timed out");
    });
    let ours = without_stamps(&ours);
    assert_eq!(without_stamps(&default), ours);
    assert_eq!(
        ours[0],
        "  INFO turn{conversation=\"c-1\"}: http: request status=201"
    );
}

#[test]
fn the_timestamp_is_rfc3339_with_microseconds_across_seconds() {
    let at = |secs: u64, micros: u64| {
        let time = UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros);
        let mut out = String::new();
        write_timestamp(&mut out, time).unwrap();
        let expected = chrono::DateTime::from_timestamp(secs as i64, micros as u32 * 1000)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        assert_eq!(out, format!("{expected} "));
        out
    };
    assert_eq!(at(1_700_000_000, 42), "2023-11-14T22:13:20.000042Z ");
    // The same second again (its prefix reused), then the next ones.
    assert_eq!(at(1_700_000_000, 999_999), "2023-11-14T22:13:20.999999Z ");
    assert_eq!(at(1_700_000_001, 0), "2023-11-14T22:13:21.000000Z ");
    at(1_764_460_799, 123_456);
    at(0, 1);
}

#[test]
fn a_time_before_the_epoch_is_named_unknown() {
    let mut out = String::new();
    write_timestamp(&mut out, UNIX_EPOCH - Duration::from_secs(1)).unwrap();
    assert_eq!(out, "<unknown time> ");
}
