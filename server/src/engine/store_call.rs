//! Store calls on the storage threads, with the engine's error mapping:
//! the one way the engine reaches its [`Store`].
//!
//! The `Store` trait blocks (file and journal syncs, the catalog's SQLite,
//! PostgreSQL through its runtime handle), so the engine never calls it on
//! a runtime thread. Calls run on a fixed set of storage threads
//! ([`StorageThreads`], `limits.storage_threads`) fed by one queue in
//! arrival order: however many requests wait, the process keeps the same
//! threads (tokio's blocking pool would grow to 512, one thread per
//! waiting call, and keep their memory). A store failure becomes
//! [`EngineError::Store`] carrying the [`StoreError`] as its source; a
//! call that stopped (a panic in the store) is not the store's answer but
//! a bug, [`EngineError::Internal`].

use std::sync::{Arc, OnceLock};

use asg_http::thread_cache::{IDLE_AFTER, IdleFlush};
use asg_shared::Conversation;

use super::EngineError;
use crate::store::{Saved, Store, StoreError};

pub use crate::config::DEFAULT_STORAGE_THREADS;

/// A job for a storage thread.
type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of threads running store calls, first come first served.
pub struct StorageThreads {
    queue: flume::Sender<Job>,
}

/// A storage thread: runs jobs as they come; one that waited a second
/// for the next gives its allocator cache back (`asg_http::thread_cache`).
fn run_jobs(jobs: &flume::Receiver<Job>) {
    let mut cache = IdleFlush::default();
    loop {
        match jobs.recv_timeout(IDLE_AFTER) {
            Ok(job) => {
                job();
                cache.worked();
            }
            Err(flume::RecvTimeoutError::Timeout) => {
                cache.idle();
            }
            Err(flume::RecvTimeoutError::Disconnected) => return,
        }
    }
}

impl StorageThreads {
    /// Starts `threads` storage threads (at least one). They live as long
    /// as the process.
    fn start(threads: usize) -> StorageThreads {
        let threads = threads.max(1);
        let (queue, jobs) = flume::unbounded::<Job>();
        for n in 0..threads {
            let jobs = jobs.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("asg-storage-{n}"))
                .spawn(move || run_jobs(&jobs));
            if let Err(error) = spawned {
                tracing::error!(%error, "a storage thread could not start");
            }
        }
        StorageThreads { queue }
    }

    /// Runs `call` on a storage thread; its result, or an error when the
    /// call panicked.
    async fn run<T: Send + 'static>(
        &self,
        call: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        self.submit(call)
            .await
            .map_err(|_| "the storage threads stopped".to_string())?
    }

    /// Queues `call` now (it runs even when the answer is never awaited);
    /// its result, or an error when it panicked, comes through the
    /// receiver.
    pub(crate) fn submit<T: Send + 'static>(
        &self,
        call: impl FnOnce() -> T + Send + 'static,
    ) -> tokio::sync::oneshot::Receiver<Result<T, String>> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call))
                .map_err(|panic| panic_message(panic.as_ref()));
            let _ = answer.send(result);
        });
        // Fails only when every thread is gone; dropping the job then drops
        // its sender, which the receiver reports.
        let _ = self.queue.send(job);
        answered
    }
}

/// What a panic said, when it said it with a string.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let said = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into());
    format!("a store call stopped: {said}")
}

static THREADS: OnceLock<StorageThreads> = OnceLock::new();

/// Sets how many storage threads the process runs, before the first store
/// call (the agent does it from `limits.storage_threads` at start). False
/// when they were already started (the first setting stays).
pub fn configure(threads: usize) -> bool {
    let mut started = false;
    THREADS.get_or_init(|| {
        started = true;
        StorageThreads::start(threads)
    });
    started
}

/// The process's storage threads (started with the default count when
/// nothing configured them first).
pub fn threads() -> &'static StorageThreads {
    THREADS.get_or_init(|| StorageThreads::start(DEFAULT_STORAGE_THREADS))
}

/// Runs a store call on a storage thread (stores block); the call's own
/// result is the caller's to judge.
pub(crate) async fn blocking<T: Send + 'static>(
    store: &Arc<dyn Store>,
    call: impl FnOnce(&dyn Store) -> T + Send + 'static,
) -> Result<T, EngineError> {
    let store = store.clone();
    threads()
        .run(move || call(store.as_ref()))
        .await
        .map_err(EngineError::Internal)
}

/// A store call on a storage thread, its error as the engine's.
pub(crate) async fn stored<T: Send + 'static>(
    store: &Arc<dyn Store>,
    call: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, EngineError> {
    Ok(blocking(store, call).await??)
}

/// Saves `conversation` durably: the save starts on a storage thread,
/// and its answer comes from whichever thread made it durable
/// ([`Store::save_then`]), so a save waiting for a group commit holds no
/// storage thread.
pub(crate) async fn save(
    store: &Arc<dyn Store>,
    conversation: Arc<Conversation>,
) -> Result<(), EngineError> {
    let started = std::time::Instant::now();
    let saved = save_durably(store, conversation).await;
    crate::metrics::metrics().store_save(saved.is_ok(), started.elapsed());
    saved
}

async fn save_durably(
    store: &Arc<dyn Store>,
    conversation: Arc<Conversation>,
) -> Result<(), EngineError> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let store = store.clone();
    let started = threads().submit(move || {
        let saved: Saved = Box::new(move |result| {
            let _ = answer.send(result);
        });
        store.save_then(&conversation, saved);
    });
    match answered.await {
        Ok(result) => Ok(result?),
        // The callback was dropped unanswered: the call stopped (a panic).
        Err(_) => Err(EngineError::Internal(match started.await {
            Ok(Err(stopped)) => stopped,
            _ => "a save stopped without an answer".to_string(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_waiting_calls_share_the_fixed_threads() {
        let pool = Arc::new(StorageThreads::start(3));
        let names = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
        let calls: Vec<_> = (0..200)
            .map(|_| {
                let (pool, names) = (pool.clone(), names.clone());
                tokio::spawn(async move {
                    pool.run(move || {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                        let name = std::thread::current().name().map(str::to_string);
                        names.lock().unwrap().insert(name);
                    })
                    .await
                })
            })
            .collect();
        for call in calls {
            call.await.unwrap().unwrap();
        }
        let names = names.lock().unwrap();
        assert_eq!(names.len(), 3, "200 waiting calls ran on {names:?}");
        assert!(
            names
                .iter()
                .all(|n| n.as_deref().is_some_and(|n| n.starts_with("asg-storage-")))
        );
    }

    /// JSON files whose saves are answered when the test says, as a
    /// group commit answers them: later, from another thread.
    struct Deferred {
        files: crate::store::JsonFileStore,
        answers: std::sync::Mutex<Vec<Saved>>,
    }

    impl Store for Deferred {
        fn load_all(&self) -> Result<Vec<Conversation>, StoreError> {
            self.files.load_all()
        }
        fn save(&self, _: &Conversation) -> Result<(), StoreError> {
            unreachable!("the engine saves through save_then")
        }
        fn save_then(&self, conversation: &Arc<Conversation>, saved: Saved) {
            assert!(conversation.id != uuid::Uuid::nil(), "a disk on fire");
            self.answers.lock().unwrap().push(saved);
        }
        fn load(&self, id: uuid::Uuid) -> Result<Option<Conversation>, StoreError> {
            self.files.load(id)
        }
        fn conversation_of_approval(
            &self,
            uuid: uuid::Uuid,
        ) -> Result<Option<uuid::Uuid>, StoreError> {
            self.files.conversation_of_approval(uuid)
        }
        fn waiting(&self) -> Result<Vec<Conversation>, StoreError> {
            self.files.waiting()
        }
        fn list_page(
            &self,
            query: &crate::store::ListQuery,
        ) -> Result<crate::store::ListPage, StoreError> {
            self.files.list_page(query)
        }
        fn claim(&self, id: uuid::Uuid) -> Result<crate::store::Claim, StoreError> {
            self.files.claim(id)
        }
        fn abandoned(&self) -> Result<Vec<uuid::Uuid>, StoreError> {
            self.files.abandoned()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_save_is_answered_by_the_thread_that_made_it_durable() {
        const SAVES: usize = 3 * DEFAULT_STORAGE_THREADS;
        let dir = tempfile::tempdir().unwrap();
        let deferred = Arc::new(Deferred {
            files: crate::store::JsonFileStore::open(dir.path()).unwrap(),
            answers: Default::default(),
        });
        let store: Arc<dyn Store> = deferred.clone();
        let saves: Vec<_> = (0..SAVES)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move {
                    save(&store, Arc::new(asg_shared::fixtures::conversation())).await
                })
            })
            .collect();
        // More saves wait than there are storage threads: none holds one.
        for _ in 0..500 {
            if deferred.answers.lock().unwrap().len() == SAVES {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let answers = std::mem::take(&mut *deferred.answers.lock().unwrap());
        assert_eq!(answers.len(), SAVES, "every save waits for its answer");
        assert!(saves.iter().all(|s| !s.is_finished()), "none answered yet");
        std::thread::spawn(move || {
            for (n, answer) in answers.into_iter().enumerate() {
                answer(match n {
                    0 => Err(StoreError("disk full".into())),
                    _ => Ok(()),
                });
            }
        });
        let mut failed = Vec::new();
        for saved in saves {
            if let Err(error) = saved.await.unwrap() {
                failed.push(error);
            }
        }
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(
            matches!(&failed[0], EngineError::Store(e) if e.0.contains("disk full")),
            "{:?}",
            failed[0]
        );

        let mut stopped = asg_shared::fixtures::conversation();
        stopped.id = uuid::Uuid::nil();
        let error = save(&store, Arc::new(stopped)).await.unwrap_err();
        assert!(
            matches!(&error, EngineError::Internal(why) if why.contains("a disk on fire")),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn a_panicking_call_is_an_error_and_the_thread_goes_on() {
        let pool = StorageThreads::start(1);
        let error = pool
            .run(|| -> u8 { panic!("disk on fire") })
            .await
            .unwrap_err();
        assert!(error.contains("disk on fire"), "{error}");
        assert_eq!(pool.run(|| 7).await, Ok(7));
    }
}
