//! A reader of server-sent events for the scenario tests: each `data:`
//! line as JSON.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;

/// An open event stream.
pub struct EventStream {
    stream: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl EventStream {
    /// `GET url` with `headers`; the status, and the stream when it is 200.
    pub async fn open(url: &str, headers: &[(&str, &str)]) -> (u16, Option<EventStream>) {
        let mut request = reqwest::Client::new()
            .get(url)
            .header("accept", "text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("GET events");
        let status = response.status().as_u16();
        if status != 200 {
            return (status, None);
        }
        let events = EventStream {
            stream: response
                .bytes_stream()
                .map(|r| r.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
        };
        (status, Some(events))
    }

    /// The next event whose `type` is `kind` (others are skipped); panics
    /// after 10 s.
    pub async fn next_of(&mut self, kind: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(event) = self.take_buffered(Some(kind)) {
                return event;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.stream.next()).await {
                Ok(Some(Ok(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                other => panic!("no {kind} event: {other:?}"),
            }
        }
    }

    /// Every event that arrives within `wait`.
    pub async fn within(&mut self, wait: Duration) -> Vec<Value> {
        let deadline = Instant::now() + wait;
        let mut events = Vec::new();
        loop {
            while let Some(event) = self.take_buffered(None) {
                events.push(event);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.stream.next()).await {
                Ok(Some(Ok(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return events,
            }
        }
    }

    /// Whether the server ends the stream within `wait` (events that
    /// arrive meanwhile are read and dropped).
    pub async fn ended_within(&mut self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.stream.next()).await {
                Ok(Some(Ok(_))) => continue,
                Ok(None) | Ok(Some(Err(_))) => return true,
                Err(_) => return false,
            }
        }
    }

    /// The next complete buffered event (of `kind`, when given; others
    /// are dropped).
    fn take_buffered(&mut self, kind: Option<&str>) -> Option<Value> {
        while let Some(end) = self.buffer.find('\n') {
            let line = self.buffer[..end].trim().to_string();
            self.buffer.drain(..=end);
            if let Some(data) = line.strip_prefix("data:") {
                let event: Value = serde_json::from_str(data.trim()).expect("event JSON");
                if kind.is_none_or(|k| event["type"] == k) {
                    return Some(event);
                }
            }
        }
        None
    }
}
