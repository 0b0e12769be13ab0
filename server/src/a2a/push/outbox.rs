//! A task's notifications go out in the order its states were saved: one
//! sender per task with something to send, which sends each notification
//! to its callbacks (with the deliveries' retries) before the next, and
//! ends when the task's queue is empty. Tasks do not wait for each other.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use crate::notify::deliver::{Deliveries, Outgoing};

/// The tasks with a sender running, and what waits for it.
#[derive(Clone)]
pub(super) struct Outbox {
    deliveries: Deliveries,
    queues: Arc<Mutex<HashMap<Uuid, VecDeque<Vec<Outgoing>>>>>,
}

impl Outbox {
    pub(super) fn new(deliveries: Deliveries) -> Outbox {
        Outbox {
            deliveries,
            queues: Arc::default(),
        }
    }

    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, VecDeque<Vec<Outgoing>>>> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `jobs` (one notification, to each callback) after what the
    /// task already has on its way.
    pub(super) fn post(&self, task: Uuid, jobs: Vec<Outgoing>) {
        if jobs.is_empty() {
            return;
        }
        let mut queues = self.queues();
        if let Some(waiting) = queues.get_mut(&task) {
            waiting.push_back(jobs);
            return;
        }
        queues.insert(task, VecDeque::new());
        drop(queues);
        let outbox = self.clone();
        self.deliveries.spawn(outbox.send(task, jobs));
    }

    /// The task's sender.
    async fn send(self, task: Uuid, mut jobs: Vec<Outgoing>) {
        loop {
            for job in &jobs {
                self.deliveries.send(job).await;
            }
            let mut queues = self.queues();
            match queues.get_mut(&task).and_then(VecDeque::pop_front) {
                Some(next) => jobs = next,
                None => {
                    queues.remove(&task);
                    return;
                }
            }
        }
    }
}
