//! Log lines written to their output in batches, by a thread of their
//! own: a request's line costs the request an append to a buffer, not a
//! `write` system call.
//!
//! Under load the agent logs a line per request; written one by one to
//! a pipe or file that was a sixth of the CPU time of a cached `GET`
//! (the `write` itself, and waking whoever reads the pipe). Here the
//! first request line after a quiet moment wakes the writing thread,
//! which writes it at once; after each write the thread waits
//! [`LINGER`] before it looks again, so the lines of a busy moment go
//! out together, in the order they were appended. A request line is
//! out at most about a millisecond after it was logged.
//!
//! Only the request lines ([`REQUEST_TARGET`]) wait so. Any other line
//! (a warning, a turn's steps, start and stop) is written by the thread
//! that logs it before its event returns, after the lines pending ahead
//! of it: whoever reads the log after an answer, or after a crash, sees
//! every line the work behind that answer logged. [`BatchedLines::flush`]
//! (called before a server binary exits) writes what is left.
//!
//! tracing-appender's `non_blocking` was the library for this; its
//! thread writes as soon as it wakes, so at the rate of a `GET` it woke
//! and wrote for nearly every line, and a woken thread costs about what
//! the `write` did.
//!
//! If the output stops taking lines (a full pipe nobody reads), the
//! buffer stops at [`BatchedLines::with_limit`]'s bytes and loggers
//! wait for room, as they waited on the `write` before: memory stays
//! bounded and no line is dropped.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use tracing::Metadata;
use tracing_subscriber::fmt::MakeWriter;

/// The target of the one line logged per request: those lines are
/// written in batches.
pub const REQUEST_TARGET: &str = "http";

/// How long the writing thread gathers lines after a write.
pub const LINGER: Duration = Duration::from_millis(1);

/// Bytes of lines held when nothing else is said: four thousand lines
/// or so; past it, loggers wait for the output.
const DEFAULT_LIMIT: usize = 1 << 20;

/// Lines bound for one output, shared by every logging thread.
#[derive(Clone)]
pub struct BatchedLines {
    shared: Arc<Shared>,
}

struct Shared {
    pending: Mutex<Pending>,
    /// Signalled when lines arrive for a sleeping writer.
    arrived: Condvar,
    /// Signalled when a write took the pending lines.
    room: Condvar,
    /// The output; held across a take and its write, so batches go out
    /// in the order they were taken.
    output: Mutex<Box<dyn Write + Send>>,
    limit: usize,
    /// False when the writing thread could not be started: then every
    /// append writes.
    threaded: AtomicBool,
}

struct Pending {
    lines: Vec<u8>,
    writer_asleep: bool,
}

impl BatchedLines {
    /// Lines for `output`, written by a new thread.
    pub fn new(output: impl Write + Send + 'static) -> BatchedLines {
        BatchedLines::with_limit(output, DEFAULT_LIMIT)
    }

    /// As [`BatchedLines::new`], holding at most about `limit` bytes.
    pub fn with_limit(output: impl Write + Send + 'static, limit: usize) -> BatchedLines {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending {
                lines: Vec::new(),
                writer_asleep: false,
            }),
            arrived: Condvar::new(),
            room: Condvar::new(),
            output: Mutex::new(Box::new(output)),
            limit,
            threaded: AtomicBool::new(true),
        });
        let writer = Arc::clone(&shared);
        let spawned = thread::Builder::new()
            .name("log-lines".into())
            .spawn(move || writer.write_forever());
        if let Err(error) = spawned {
            eprintln!("warning: no thread for log lines ({error}); writing each at once");
            shared.threaded.store(false, Ordering::Relaxed);
        }
        BatchedLines { shared }
    }

    /// Writes every line appended so far, now.
    pub fn flush(&self) {
        self.shared.write_pending();
    }

    fn sink(&self, at_once: bool) -> LineSink<'_> {
        LineSink {
            shared: &self.shared,
            at_once,
        }
    }
}

impl Shared {
    fn lock_pending(&self) -> MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds `bytes` (whole lines), waking the writer if it sleeps, or
    /// waiting for room if the output has fallen behind.
    fn append(&self, bytes: &[u8]) {
        if !self.threaded.load(Ordering::Relaxed) {
            self.lock_pending().lines.extend_from_slice(bytes);
            return self.write_pending();
        }
        let mut pending = self.lock_pending();
        while !pending.lines.is_empty() && pending.lines.len() + bytes.len() > self.limit {
            pending = self
                .room
                .wait(pending)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        pending.lines.extend_from_slice(bytes);
        if pending.writer_asleep {
            pending.writer_asleep = false;
            self.arrived.notify_one();
        }
    }

    /// Takes the pending lines and writes them; an output that fails
    /// loses that batch (there is nowhere to report it but stderr).
    fn write_pending(&self) {
        let mut output = self.output.lock().unwrap_or_else(|p| p.into_inner());
        let lines = std::mem::take(&mut self.lock_pending().lines);
        self.room.notify_all();
        if lines.is_empty() {
            return;
        }
        if let Err(error) = output.write_all(&lines).and_then(|()| output.flush()) {
            eprintln!("warning: cannot write log lines: {error}");
        }
    }

    /// The writing thread: sleeps until lines arrive, writes them, then
    /// lingers so the next ones gather.
    fn write_forever(&self) {
        loop {
            {
                let mut pending = self.lock_pending();
                while pending.lines.is_empty() {
                    pending.writer_asleep = true;
                    pending = self
                        .arrived
                        .wait(pending)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                }
            }
            self.write_pending();
            thread::sleep(LINGER);
        }
    }
}

/// One event's line on its way to the buffer.
pub struct LineSink<'a> {
    shared: &'a Shared,
    /// Written before the event returns, not with the next batch.
    at_once: bool,
}

impl Write for LineSink<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.shared.append(bytes);
        if self.at_once {
            self.shared.write_pending();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for BatchedLines {
    type Writer = LineSink<'a>;

    /// A line written at once (an event of unknown kind).
    fn make_writer(&'a self) -> LineSink<'a> {
        self.sink(true)
    }

    /// A request line waits for the next batch; any other is written
    /// at once.
    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> LineSink<'a> {
        self.sink(meta.target() != REQUEST_TARGET)
    }
}

#[cfg(test)]
mod tests;
