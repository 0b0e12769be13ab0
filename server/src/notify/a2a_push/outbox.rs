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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use asg_tests::fake_http::{FakeHttp, Reply};

    use super::*;
    use crate::notify::deliver::Retry;

    fn job(fake: &FakeHttp, name: &str) -> Vec<Outgoing> {
        vec![Outgoing {
            url: format!("{}/{name}", fake.url),
            headers: Vec::new(),
            body: b"{}".to_vec(),
            label: name.to_string(),
            kind: "a2a_push",
            ssrf: None,
        }]
    }

    #[tokio::test]
    async fn a_tasks_notifications_wait_for_each_other_and_other_tasks_do_not() {
        // The first request is answered late.
        let fake = FakeHttp::start(vec![
            Reply::status(200, "{}").delayed(Duration::from_millis(600)),
            Reply::status(200, "{}"),
        ])
        .await;
        let outbox = Outbox::new(Deliveries::start(16, 4, Retry::default()));
        let (one, other) = (Uuid::new_v4(), Uuid::new_v4());
        outbox.post(one, job(&fake, "first"));
        tokio::time::sleep(Duration::from_millis(100)).await;
        outbox.post(one, job(&fake, "second"));
        outbox.post(other, job(&fake, "other-task"));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while fake.requests().len() < 3 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{:?}",
                fake.requests()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let order: Vec<String> = fake.requests().into_iter().map(|r| r.uri).collect();
        assert_eq!(order, ["/first", "/other-task", "/second"]);
        while !outbox.queues().is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "the senders end");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
