//! Server-sent events, read by hand: the agent's streams
//! (`GET /events`, `GET /conversations/{id}/events`) send one JSON object
//! per event in `data:` lines. [`SseParser`] turns chunks of bytes into
//! the events' data, whatever the chunk boundaries.

/// Incremental parser: feed bytes, take complete events' data.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes after the last complete line.
    partial: Vec<u8>,
    /// `data:` lines of the event being read.
    data: Vec<String>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds a chunk; returns the data of every event it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<String> {
        self.partial.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if let Some(event) = self.line(line) {
                events.push(event);
            }
        }
        events
    }

    /// One line: a blank line ends an event; `data:` lines collect;
    /// comments (`:`), `event:`, `id:` and `retry:` are ignored.
    fn line(&mut self, line: &str) -> Option<String> {
        if line.is_empty() {
            if self.data.is_empty() {
                return None;
            }
            let data = self.data.join("\n");
            self.data.clear();
            return Some(data);
        }
        if let Some(value) = line.strip_prefix("data:") {
            self.data
                .push(value.strip_prefix(' ').unwrap_or(value).to_string());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_end_at_blank_lines_whatever_the_chunks() {
        let stream =
            b": keep-alive\n\ndata: {\"type\":\"pending\"}\n\nevent: x\ndata: a\ndata: b\r\n\r\n";
        for size in [1, 2, 5, stream.len()] {
            let mut parser = SseParser::new();
            let events: Vec<String> = stream.chunks(size).flat_map(|c| parser.feed(c)).collect();
            assert_eq!(
                events,
                ["{\"type\":\"pending\"}", "a\nb"],
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn an_unfinished_event_is_not_given_out() {
        let mut parser = SseParser::new();
        assert!(parser.feed(b"data: half").is_empty());
        assert!(parser.feed(b"\n").is_empty());
        assert_eq!(parser.feed(b"\n"), ["half"]);
    }
}
