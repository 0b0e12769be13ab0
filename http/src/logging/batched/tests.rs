use super::*;
use std::sync::mpsc;
use std::time::Instant;

/// An output that records each `write_all` as one batch, and can be
/// held shut so lines pile up behind it.
#[derive(Clone, Default)]
struct Recorder {
    batches: Arc<Mutex<Vec<Vec<u8>>>>,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl Recorder {
    fn shut() -> Recorder {
        let recorder = Recorder::default();
        *recorder.gate.0.lock().unwrap() = true;
        recorder
    }

    fn open(&self) {
        *self.gate.0.lock().unwrap() = false;
        self.gate.1.notify_all();
    }

    fn batches(&self) -> Vec<Vec<u8>> {
        self.batches.lock().unwrap().clone()
    }

    fn text(&self) -> String {
        String::from_utf8(self.batches().concat()).unwrap()
    }

    /// Waits (up to 10 s) until the output holds `lines` lines.
    fn wait_for_lines(&self, lines: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = self.text();
            if text.lines().count() >= lines || Instant::now() > deadline {
                return text;
            }
            thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Write for Recorder {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let (shut, opened) = &*self.gate;
        let mut shut = shut.lock().unwrap();
        while *shut {
            shut = opened.wait(shut).unwrap();
        }
        self.batches.lock().unwrap().push(bytes.to_vec());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A request's line: it waits for the next batch.
fn log(lines: &BatchedLines, line: &str) {
    lines.sink(false).write_all(line.as_bytes()).unwrap();
}

#[test]
fn any_other_line_is_out_when_its_event_returns_after_the_lines_ahead_of_it() {
    use tracing_subscriber::layer::SubscriberExt;
    let output = Recorder::default();
    let lines = BatchedLines::new(output.clone());
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .without_time()
        .with_writer(lines.clone());
    let subscriber = tracing_subscriber::Registry::default().with(layer);
    tracing::subscriber::with_default(subscriber, || {
        for n in 0..3 {
            tracing::info!(target: REQUEST_TARGET, n, "request");
        }
        tracing::warn!(target: "asg::engine", "stopped");
    });
    let text = output.text();
    let shown: Vec<&str> = text.lines().map(str::trim).collect();
    assert_eq!(
        shown,
        [
            "INFO http: request n=0",
            "INFO http: request n=1",
            "INFO http: request n=2",
            "WARN asg::engine: stopped"
        ]
    );
}

#[test]
fn a_lone_line_is_written_without_a_flush() {
    let output = Recorder::default();
    let lines = BatchedLines::new(output.clone());
    log(&lines, "one\n");
    assert_eq!(output.wait_for_lines(1), "one\n");
    // Once the writer has gone back to sleep, the next line wakes it.
    thread::sleep(LINGER * 5);
    log(&lines, "two\n");
    assert_eq!(output.wait_for_lines(2), "one\ntwo\n");
}

#[test]
fn lines_logged_while_a_write_is_under_way_go_out_in_one_write() {
    let output = Recorder::shut();
    let lines = BatchedLines::new(output.clone());
    log(&lines, "first\n");
    // The writer takes "first" and is held in its write.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !lines.shared.lock_pending().lines.is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
    for n in 0..500 {
        log(&lines, &format!("line {n}\n"));
    }
    output.open();
    let text = output.wait_for_lines(501);
    assert_eq!(text.lines().count(), 501, "{text}");
    let batches = output.batches();
    assert_eq!(
        batches.len(),
        2,
        "500 lines logged during one write: one more write"
    );
    assert_eq!(batches[0], b"first\n");
}

#[test]
fn every_line_of_every_thread_arrives_whole_and_in_its_threads_order() {
    let output = Recorder::default();
    let lines = BatchedLines::new(output.clone());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let lines = lines.clone();
            thread::spawn(move || {
                for n in 0..1_000 {
                    log(
                        &lines,
                        &format!("thread {t} line {n} {}\n", "x".repeat(n % 50)),
                    );
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    lines.flush();
    let text = output.text();
    let mut next = [0usize; 8];
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let (t, n): (usize, usize) = (words[1].parse().unwrap(), words[3].parse().unwrap());
        assert_eq!(n, next[t], "thread {t}'s lines out of order: {line}");
        assert_eq!(words[4].len(), n % 50, "a torn line: {line}");
        next[t] += 1;
    }
    assert_eq!(next, [1_000; 8]);
    assert!(
        output.batches().len() < 8_000,
        "8,000 lines in as many writes"
    );
}

#[test]
fn flush_writes_what_is_pending_before_it_returns() {
    let output = Recorder::default();
    let lines = BatchedLines::new(output.clone());
    for n in 0..100 {
        log(&lines, &format!("{n}\n"));
    }
    lines.flush();
    assert_eq!(output.text().lines().count(), 100);
}

#[test]
fn a_stalled_output_holds_loggers_back_instead_of_growing_the_buffer() {
    let output = Recorder::shut();
    let lines = BatchedLines::with_limit(output.clone(), 64);
    let (done, finished) = mpsc::channel();
    let logger = {
        let lines = lines.clone();
        thread::spawn(move || {
            for n in 0..20 {
                log(&lines, &format!("line {n:02} of twenty\n"));
            }
            done.send(()).unwrap();
        })
    };
    assert!(
        finished.recv_timeout(Duration::from_millis(200)).is_err(),
        "20 lines of 20 bytes went into a 64-byte buffer"
    );
    assert!(lines.shared.lock_pending().lines.len() <= 64);
    output.open();
    finished.recv_timeout(Duration::from_secs(10)).unwrap();
    logger.join().unwrap();
    lines.flush();
    let text = output.text();
    assert_eq!(text.lines().count(), 20, "{text}");
    assert!(text.starts_with("line 00 of twenty\n") && text.ends_with("line 19 of twenty\n"));
}
