//! The JSON store's catalog rows between a save and the catalog. A save
//! queues its row (under the journal's lock, so rows keep the records'
//! order) and waits only for the journal's group `fdatasync`: the record
//! is the durable truth, and the row is derived from it. The queued rows
//! go to the catalog in one transaction, the newest row of each
//! conversation only, when something needs them there:
//!
//! - every read of the catalog ([`Listing::catalog`]), so a listing or a
//!   lookup sees every save acknowledged before it (read your writes);
//! - a checkpoint, before it empties the journal file that holds their
//!   records (after a crash, the records still in the journal are written
//!   to the catalog at open, so no row is lost in between);
//! - close.
//!
//! Before, the leader of each group commit also committed the group's
//! rows: one SQLite transaction per `fdatasync`, most of it rewriting the
//! same pages for the two or three saves of one turn (about a sixth of
//! the agent's CPU under A2A load).

use std::sync::{Arc, Mutex, PoisonError};

use crate::store::StoreError;
use crate::store::json_catalog::{Catalog, Coalesced, Entry};

/// The catalog, and the rows of the saves not in it yet: the newest of
/// each conversation, merged as they are queued, so the queue holds a row
/// per conversation however many saves come between two writes (it
/// held every save's row: 2.9 MiB of vector under 1,000 clients' turns).
pub(super) struct Listing {
    catalog: Arc<Catalog>,
    queued: Mutex<Coalesced>,
    /// One writer at a time, so an older row never lands after a newer.
    flushing: Mutex<()>,
}

impl Listing {
    pub(super) fn new(catalog: Arc<Catalog>) -> Listing {
        Listing {
            catalog,
            queued: Mutex::default(),
            flushing: Mutex::default(),
        }
    }

    /// Queues the row of a save whose record was just appended (called
    /// under the journal's lock, so rows keep the records' order).
    pub(super) fn queue(&self, row: Entry) {
        self.queued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(row);
    }

    /// Conversations with a row queued and not written yet.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.queued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Writes every queued row in one transaction (put back, ahead of
    /// newer ones, when they cannot be written).
    pub(super) fn flush(&self) -> Result<(), StoreError> {
        let _one = self.flushing.lock().unwrap_or_else(PoisonError::into_inner);
        let newest = self
            .queued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if newest.is_empty() {
            return Ok(());
        }
        match self.catalog.put(&newest, false) {
            Ok(()) => Ok(()),
            Err(error) => {
                let mut queued = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
                queued.push_older(newest);
                Err(error)
            }
        }
    }

    /// The catalog with every queued row in it: what reads go through.
    pub(super) fn catalog(&self) -> Result<&Catalog, StoreError> {
        self.flush()?;
        Ok(&self.catalog)
    }
}
