//! [`WatchedStore`]: the JSON files, counting their reads and able to
//! hold saves (tests of the read cache and of admission under load).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use asg_shared::Conversation;
use uuid::Uuid;

use crate::store::{Claim, JsonFileStore, ListPage, ListQuery, Store, StoreError};

/// The JSON files, watched.
pub struct WatchedStore {
    files: JsonFileStore,
    loads: AtomicUsize,
    held: Mutex<bool>,
    released: Condvar,
    waiting: AtomicUsize,
}

impl WatchedStore {
    /// Watches `files`.
    pub fn new(files: JsonFileStore) -> WatchedStore {
        WatchedStore {
            files,
            loads: AtomicUsize::new(0),
            held: Mutex::new(false),
            released: Condvar::new(),
            waiting: AtomicUsize::new(0),
        }
    }

    /// Conversations read one by one ([`Store::load`]) so far.
    pub fn loads(&self) -> usize {
        self.loads.load(Ordering::SeqCst)
    }

    /// Saves wait from now on, until [`WatchedStore::release_saves`].
    pub fn hold_saves(&self) {
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = true;
    }

    /// Lets the held saves (and later ones) go on.
    pub fn release_saves(&self) {
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = false;
        self.released.notify_all();
    }

    /// Saves waiting now.
    pub fn saves_waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }
}

impl Store for WatchedStore {
    fn load_all(&self) -> Result<Vec<Conversation>, StoreError> {
        self.files.load_all()
    }
    fn save(&self, conversation: &Conversation) -> Result<(), StoreError> {
        self.save_shared(&Arc::new(conversation.clone()))
    }
    fn save_shared(&self, conversation: &Arc<Conversation>) -> Result<(), StoreError> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        self.waiting.fetch_add(1, Ordering::SeqCst);
        while *held {
            held = self
                .released
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        drop(held);
        self.files.save_shared(conversation)
    }
    fn load(&self, id: Uuid) -> Result<Option<Conversation>, StoreError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        self.files.load(id)
    }
    fn conversation_of_approval(&self, uuid: Uuid) -> Result<Option<Uuid>, StoreError> {
        self.files.conversation_of_approval(uuid)
    }
    fn waiting(&self) -> Result<Vec<Conversation>, StoreError> {
        self.files.waiting()
    }
    fn list_page(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        self.files.list_page(query)
    }
    fn claim(&self, id: Uuid) -> Result<Claim, StoreError> {
        self.files.claim(id)
    }
    fn abandoned(&self) -> Result<Vec<Uuid>, StoreError> {
        self.files.abandoned()
    }
}
