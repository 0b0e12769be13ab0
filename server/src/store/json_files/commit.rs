//! The JSON store's group commit: what the leader of a group of saves
//! does for all of them (see [`crate::store::group_sync`]). It syncs the
//! journal (`fdatasync`), then writes the catalog rows of every save
//! appended so far in one transaction, so concurrent saves share one sync
//! and one SQLite commit, and a save returns only once its record is
//! durable and its row is listed.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use super::journal::Journal;
use crate::store::json_catalog::{Catalog, Entry};

/// The journal, the catalog, and the rows of the saves not committed yet
/// (in journal order).
pub(super) struct Commit {
    journal: Arc<Journal>,
    catalog: Arc<Catalog>,
    rows: Mutex<Vec<Entry>>,
}

impl Commit {
    pub(super) fn new(journal: Arc<Journal>, catalog: Arc<Catalog>) -> Commit {
        Commit {
            journal,
            catalog,
            rows: Mutex::default(),
        }
    }

    /// Queues the row of a save whose record was just appended (called
    /// under the journal's lock, so rows keep the records' order).
    pub(super) fn queue(&self, row: Entry) {
        self.rows
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(row);
    }

    /// Syncs the journal, then commits the queued rows (put back for the
    /// next group when they cannot be written).
    pub(super) fn run(&self) -> io::Result<()> {
        self.journal.sync()?;
        let rows = std::mem::take(&mut *self.rows.lock().unwrap_or_else(PoisonError::into_inner));
        if rows.is_empty() {
            return Ok(());
        }
        self.catalog.put(&rows, false).map_err(|error| {
            let mut queued = self.rows.lock().unwrap_or_else(PoisonError::into_inner);
            queued.splice(0..0, rows);
            io::Error::other(error.to_string())
        })
    }
}
