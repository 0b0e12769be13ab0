//! The outbox: approval mails go through a bounded queue to one sender
//! task, off every turn's path ([`Outbox::enqueue`] never waits; a full
//! queue drops the mail with a warning). A transient SMTP failure (no
//! connection, a 4xx reply, a timeout) is retried with doubling waits; a
//! permanent one (5xx) is logged and dropped. Logs name the mail and the
//! error, never the credentials (lettre's errors carry none).

use std::sync::Mutex;
use std::time::Duration;

use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Mails waiting to be sent, at most.
pub const QUEUE_CAPACITY: usize = 256;

/// One mail to send.
pub struct Outgoing {
    /// The message.
    pub message: Message,
    /// What the log calls it (approval and recipient; no secret).
    pub label: String,
}

/// How often and how patiently a mail is tried: the notifications'
/// policy (attempts, first delay doubled after each failure).
pub use crate::notify::deliver::Retry;

/// Attempts per mail: one more than a webhook gets (1+2+4+8+16 s).
pub const MAIL_ATTEMPTS: u32 = 6;

/// The queue and its sender task.
pub struct Outbox {
    queue: mpsc::Sender<Outgoing>,
    /// The receiving end until [`Outbox::start`] takes it.
    waiting: Mutex<Option<mpsc::Receiver<Outgoing>>>,
    tracker: TaskTracker,
    /// Set when shutdown starts: no more backoff waits.
    closing: CancellationToken,
    /// Set when shutdown's bound is over: stop now.
    stop: CancellationToken,
}

impl Outbox {
    /// An outbox that queues until started.
    pub fn new() -> Outbox {
        let (queue, receiver) = mpsc::channel(QUEUE_CAPACITY);
        Outbox {
            queue,
            waiting: Mutex::new(Some(receiver)),
            tracker: TaskTracker::new(),
            closing: CancellationToken::new(),
            stop: CancellationToken::new(),
        }
    }

    /// Starts the sender task on `transport` (once).
    pub fn start(&self, transport: AsyncSmtpTransport<Tokio1Executor>, retry: Retry) {
        let receiver = self
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(receiver) = receiver else {
            return;
        };
        let (closing, stop) = (self.closing.clone(), self.stop.clone());
        self.tracker.spawn(async move {
            tokio::select! {
                () = run(receiver, transport, retry, closing) => {},
                () = stop.cancelled() => {},
            }
        });
    }

    /// Queues a mail; never waits (a full or closed queue drops it with a
    /// warning).
    pub fn enqueue(&self, outgoing: Outgoing) {
        if let Err(error) = self.queue.try_send(outgoing) {
            let (why, outgoing) = match error {
                mpsc::error::TrySendError::Full(o) => ("the mail queue is full", o),
                mpsc::error::TrySendError::Closed(o) => ("the mail sender stopped", o),
            };
            tracing::warn!(mail = %outgoing.label, "approval mail not sent: {why}");
        }
    }

    /// Sends what is queued without further waits, for at most `bound`,
    /// then stops.
    pub async fn shutdown(&self, bound: Duration) {
        self.closing.cancel();
        self.tracker.close();
        if tokio::time::timeout(bound, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("approval mails still queued at shutdown were not sent");
            self.stop.cancel();
            self.tracker.wait().await;
        }
    }
}

impl Default for Outbox {
    fn default() -> Self {
        Outbox::new()
    }
}

/// Sends mails in order until shutdown; then what is still queued.
async fn run(
    mut receiver: mpsc::Receiver<Outgoing>,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    retry: Retry,
    closing: CancellationToken,
) {
    loop {
        let outgoing = tokio::select! {
            outgoing = receiver.recv() => outgoing,
            () = closing.cancelled() => receiver.try_recv().ok(),
        };
        let Some(outgoing) = outgoing else {
            return;
        };
        deliver(&transport, outgoing, retry, &closing).await;
    }
}

/// Tries one mail until it is sent, fails for good, runs out of
/// attempts, or shutdown starts.
async fn deliver(
    transport: &AsyncSmtpTransport<Tokio1Executor>,
    outgoing: Outgoing,
    retry: Retry,
    closing: &CancellationToken,
) {
    let mut delay = retry.first_delay;
    for attempt in 1..=retry.attempts {
        let error = match transport.send(outgoing.message.clone()).await {
            Ok(_) => {
                tracing::info!(mail = %outgoing.label, attempt, "approval mail sent");
                return;
            }
            Err(error) => error,
        };
        if error.is_permanent() || attempt == retry.attempts {
            tracing::warn!(mail = %outgoing.label, attempt, error = %error, "approval mail not sent; giving up");
            return;
        }
        tracing::warn!(mail = %outgoing.label, attempt, error = %error, retry_in = ?delay, "approval mail not sent; will retry");
        tokio::select! {
            () = tokio::time::sleep(delay) => {},
            () = closing.cancelled() => {
                tracing::warn!(mail = %outgoing.label, "approval mail not sent: shutting down");
                return;
            }
        }
        delay = delay.saturating_mul(2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(n: usize) -> Outgoing {
        let message = Message::builder()
            .from("agent@example.com".parse().unwrap())
            .to("alice@example.com".parse().unwrap())
            .subject("s")
            .body(String::from("b"))
            .unwrap();
        Outgoing {
            message,
            label: format!("mail {n}"),
        }
    }

    #[tokio::test]
    async fn a_full_queue_drops_without_waiting_and_shutdown_is_bounded() {
        let outbox = Outbox::new();
        for n in 0..QUEUE_CAPACITY + 5 {
            outbox.enqueue(mail(n));
        }
        assert_eq!(outbox.queue.capacity(), 0, "full, and nothing waited");
        // Nothing listens on port 1: every attempt fails fast; shutdown
        // stops the retries within its bound.
        let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
            .port(1)
            .build();
        outbox.start(
            transport,
            Retry {
                attempts: 100,
                first_delay: Duration::from_secs(60),
            },
        );
        let started = std::time::Instant::now();
        outbox.shutdown(Duration::from_secs(5)).await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}
