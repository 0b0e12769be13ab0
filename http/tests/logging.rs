//! The installed logging, as a server binary has it: the global default
//! with the `log` bridge. Its own test binary, since the global default
//! can be set once per process.

use std::io::Write;
use std::sync::{Arc, Mutex};

use asg_http::logging::{LogFormat, SPAN_TARGET, install};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::Identity;

#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Lines {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

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
fn every_enabled_event_is_written_whatever_was_asked_before_it_on_its_thread() {
    let lines = Lines::default();
    let writer = lines.clone();
    install(
        None::<Identity>,
        LogFormat::Text,
        EnvFilter::new("info,noisy=error"),
        move || writer.clone(),
    );
    std::thread::spawn(|| {
        // What sqlx asks after every query, through the `log` bridge: a
        // question that no record follows. (With per-layer filters the
        // bridge may answer yes; the filters' own answer was "no".)
        let _ = log::log_enabled!(target: "sqlx::query", log::Level::Debug);
        tracing::warn!("first warning after a question");
        let _ = log::log_enabled!(target: "noisy", log::Level::Warn);
        tracing::warn!("second warning after a question");
        log::warn!(target: "noisy", "not written: noisy is at error");
        log::info!("a log record is written");
        tracing::debug!("not written: debug");
        let span = tracing::info_span!(target: SPAN_TARGET, "request", trace_id = "abc");
        let _in = span.enter();
        tracing::info!("inside a trace span");
    })
    .join()
    .unwrap();
    let text = lines.text();
    for written in [
        "first warning after a question",
        "second warning after a question",
        "a log record is written",
        "inside a trace span",
    ] {
        assert!(text.contains(written), "{written:?} missing from:\n{text}");
    }
    assert!(!text.contains("not written"), "{text}");
    assert!(
        !text.contains("request{"),
        "trace spans prefix no line: {text}"
    );
    assert_eq!(text.lines().count(), 4, "{text}");
}
