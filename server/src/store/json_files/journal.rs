//! The JSON store's journal: what a save appends and syncs instead of
//! writing a file of its own.
//!
//! Two files, `<data_dir>/journal/journal.0.log` and `journal.1.log`
//! (owner-only; not under `index/`, which holds only what can be rebuilt
//! from the files), take turns: saves append to the active one; a checkpoint
//! makes the other one active, writes the conversations the retired one
//! holds to their files, syncs them and only then empties the retired one
//! (durably). So no record is dropped before its conversation's file holds
//! it or a newer version, and saves never wait for a checkpoint.
//!
//! A record is `ASGJ`, the payload's length (u32, little-endian), a
//! sequence number (u64: the newest of two records of one conversation
//! wins) and a CRC-32 of those and of the payload (u32), then the payload
//! (a conversation's JSON, compact, or what a save added to the
//! conversation's previous record: `delta.rs`). Reading stops trusting the bytes at the first
//! record that is not whole: at the tail it is a write a crash cut short
//! (never acknowledged: a save returns only after its record is synced);
//! when whole records follow it, the journal was damaged in the middle
//! and the caller sets it aside.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The journal's files, under the data dir.
const JOURNAL_DIR: &str = "journal";
const JOURNAL_FILES: [&str; 2] = ["journal.0.log", "journal.1.log"];
const MAGIC: [u8; 4] = *b"ASGJ";
/// Magic, length, sequence number, checksum.
const HEADER: usize = 4 + 4 + 8 + 4;
/// A longer length is damage, not a conversation.
const MAX_RECORD: usize = 1 << 30;

/// One record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Record {
    pub seq: u64,
    pub payload: Vec<u8>,
}

/// What reading one journal file found.
#[derive(Debug, Default)]
pub(super) struct Contents {
    /// Every whole record, in file order.
    pub records: Vec<Record>,
    /// Damaged ranges with whole records after them: `(offset, bytes)`.
    pub damaged: Vec<(usize, usize)>,
    /// A record cut short at the end: `(offset, bytes)`.
    pub torn_tail: Option<(usize, usize)>,
}

/// An empty record: room for its header, the payload to be written after
/// it (then [`Journal::append`] fills the header in, so the payload is
/// never copied).
pub(super) fn record_buffer(capacity: usize) -> Vec<u8> {
    let mut record = Vec::with_capacity(HEADER + capacity);
    record.resize(HEADER, 0);
    record
}

/// Fills in the header of `record` (from [`record_buffer`], its payload
/// written) as record `seq`.
fn seal(record: &mut [u8], seq: u64) -> io::Result<()> {
    let payload = record
        .get(HEADER..)
        .ok_or_else(|| io::Error::other("a journal record without room for its header"))?;
    let length = u32::try_from(payload.len())
        .ok()
        .filter(|&n| n as usize <= MAX_RECORD)
        .ok_or_else(|| io::Error::other("a conversation too large for the journal"))?;
    let mut header = [0u8; HEADER];
    header[..4].copy_from_slice(&MAGIC);
    header[4..8].copy_from_slice(&length.to_le_bytes());
    header[8..16].copy_from_slice(&seq.to_le_bytes());
    let sum = checksum(&header[4..16], payload);
    header[16..].copy_from_slice(&sum.to_le_bytes());
    record[..HEADER].copy_from_slice(&header);
    Ok(())
}

/// The bytes of one record.
#[cfg(test)]
pub(super) fn encode(seq: u64, payload: &[u8]) -> io::Result<Vec<u8>> {
    let mut record = record_buffer(payload.len());
    record.extend_from_slice(payload);
    seal(&mut record, seq)?;
    Ok(record)
}

fn checksum(length_and_seq: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(length_and_seq);
    hasher.update(payload);
    hasher.finalize()
}

/// The whole record at `at`, and where the next one starts.
fn record_at(bytes: &[u8], at: usize) -> Option<(Record, usize)> {
    let header = bytes.get(at..at.checked_add(HEADER)?)?;
    if header[..4] != MAGIC {
        return None;
    }
    let length = u32::from_le_bytes(header[4..8].try_into().ok()?) as usize;
    let seq = u64::from_le_bytes(header[8..16].try_into().ok()?);
    let sum = u32::from_le_bytes(header[16..20].try_into().ok()?);
    let end = (at + HEADER).checked_add(length)?;
    let payload = bytes.get(at + HEADER..end)?;
    (length <= MAX_RECORD && checksum(&header[4..16], payload) == sum).then(|| {
        let record = Record {
            seq,
            payload: payload.to_vec(),
        };
        (record, end)
    })
}

/// Every record of a journal file's bytes, and what is wrong with the rest.
pub(super) fn decode(bytes: &[u8]) -> Contents {
    let mut contents = Contents::default();
    let mut at = 0;
    while at < bytes.len() {
        if let Some((record, next)) = record_at(bytes, at) {
            contents.records.push(record);
            at = next;
            continue;
        }
        match next_whole_record(bytes, at + 1) {
            Some(next) => {
                contents.damaged.push((at, next - at));
                at = next;
            }
            None => {
                contents.torn_tail = Some((at, bytes.len() - at));
                break;
            }
        }
    }
    contents
}

/// The first offset from `from` where a whole record starts.
fn next_whole_record(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(found) = bytes.get(at..)?.windows(4).position(|w| w == MAGIC) {
        if record_at(bytes, at + found).is_some() {
            return Some(at + found);
        }
        at += found + 1;
    }
    None
}

/// The two files and which one takes appends.
struct Files {
    files: [File; 2],
    /// Each file's length as written (a failed append is cut back to it).
    lengths: [u64; 2],
    /// Appended to since its last sync.
    unsynced: [bool; 2],
    active: usize,
    /// Counts the times the active file changed: a record appended in
    /// one generation stays in the journal as long as the generation
    /// lasts (the active file is never emptied), so a save may be
    /// journaled as a change of a record of the same generation.
    generation: u64,
    next_seq: u64,
    /// Why appends are refused (a failed append could not be cut back).
    broken: Option<String>,
}

/// The journal: appends under a short lock, syncs shared (see
/// [`crate::store::group_sync`]).
pub(super) struct Journal {
    paths: [PathBuf; 2],
    files: Mutex<Files>,
}

impl Journal {
    /// Opens (creating, owner-only) the journal's files under `data_dir`.
    pub(super) fn open(data_dir: &Path) -> io::Result<Journal> {
        let dir = data_dir.join(JOURNAL_DIR);
        super::create_private_dir(&dir)?;
        let paths = JOURNAL_FILES.map(|name| dir.join(name));
        let open = |path: &Path| -> io::Result<(File, u64)> {
            let file = open_private(path)?;
            let length = file.metadata()?.len();
            Ok((file, length))
        };
        let (first, first_length) = open(&paths[0])?;
        let (second, second_length) = open(&paths[1])?;
        // The files' names durable before a save relies on them.
        File::open(&dir)?.sync_all()?;
        if let Some(parent) = dir.parent() {
            File::open(parent)?.sync_all()?;
        }
        Ok(Journal {
            paths,
            files: Mutex::new(Files {
                files: [first, second],
                lengths: [first_length, second_length],
                unsynced: [false; 2],
                active: 0,
                generation: 0,
                next_seq: 1,
                broken: None,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Files> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What each file holds (at open, before any append).
    pub(super) fn read(&self) -> io::Result<[(PathBuf, Contents); 2]> {
        let read = |path: &PathBuf| -> io::Result<(PathBuf, Contents)> {
            Ok((path.clone(), decode(&fs::read(path)?)))
        };
        Ok([read(&self.paths[0])?, read(&self.paths[1])?])
    }

    /// Sequence numbers go on after `seq`.
    pub(super) fn continue_after(&self, seq: u64) {
        let mut files = self.lock();
        files.next_seq = files.next_seq.max(seq.saturating_add(1));
    }

    /// Appends `record` (a [`record_buffer`] with its payload written
    /// after the header's room), its header filled in, then calls `then`
    /// with its sequence number while no other record can be appended (so what `then` does
    /// happens in journal order). Not synced: see [`Journal::sync`].
    /// Answers the active file's length.
    #[cfg(test)]
    pub(super) fn append(&self, record: &mut [u8], then: impl FnOnce(u64)) -> io::Result<u64> {
        let appended = self.append_if(record, |_| true, |seq, _| then(seq))?;
        appended.ok_or_else(|| io::Error::other("an unconditional append was refused"))
    }

    /// [`Journal::append`] if `still_valid(generation)` holds once no
    /// other record can be appended (it answers whether the record, made
    /// outside the lock, still fits what the journal holds); `then` is
    /// told the sequence number and the generation. `Ok(None)`: not
    /// appended.
    pub(super) fn append_if(
        &self,
        record: &mut [u8],
        still_valid: impl FnOnce(u64) -> bool,
        then: impl FnOnce(u64, u64),
    ) -> io::Result<Option<u64>> {
        let mut files = self.lock();
        if let Some(why) = &files.broken {
            return Err(io::Error::other(format!("the journal is unusable: {why}")));
        }
        if !still_valid(files.generation) {
            return Ok(None);
        }
        let seq = files.next_seq;
        seal(record, seq)?;
        let active = files.active;
        if let Err(error) = (&files.files[active]).write_all(record) {
            // Cut the partial record off, or later records would follow
            // damage and be read as a damaged middle.
            let length = files.lengths[active];
            if let Err(cut) = files.files[active].set_len(length) {
                files.broken = Some(format!(
                    "a failed append ({error}) cannot be cut off: {cut}"
                ));
            }
            return Err(error);
        }
        files.next_seq += 1;
        files.lengths[active] += record.len() as u64;
        files.unsynced[active] = true;
        then(seq, files.generation);
        Ok(Some(files.lengths[active]))
    }

    /// Makes every record appended so far durable (`fdatasync` of each file
    /// appended to since its last sync).
    pub(super) fn sync(&self) -> io::Result<()> {
        let mut to_sync = Vec::with_capacity(2);
        {
            let mut files = self.lock();
            for index in 0..2 {
                if std::mem::take(&mut files.unsynced[index]) {
                    to_sync.push((index, files.files[index].try_clone()?));
                }
            }
        }
        for (index, file) in to_sync {
            if let Err(error) = file.sync_data() {
                self.lock().unsynced[index] = true;
                return Err(error);
            }
        }
        Ok(())
    }

    /// Starts a checkpoint: makes the other file active if it is empty,
    /// and calls `snapshot` while no record can be appended. Answers the
    /// file the checkpoint empties once it is done (every record in it
    /// was appended before `snapshot`).
    pub(super) fn rotate(&self, snapshot: impl FnOnce()) -> usize {
        let mut files = self.lock();
        let other = 1 - files.active;
        if files.lengths[other] == 0 {
            files.active = other;
            files.generation += 1;
        }
        snapshot();
        1 - files.active
    }

    /// Empties file `index` durably (its records are all in synced
    /// conversation files). The active file is never emptied.
    ///
    /// Appends go on meanwhile: the lock is not held while the file is cut
    /// and synced (before, every save waited for that sync). The file is
    /// not active, and [`Journal::rotate`] makes it active again only once
    /// its length reads 0, set after the sync.
    pub(super) fn empty(&self, index: usize) -> io::Result<()> {
        let file = {
            let files = self.lock();
            if index == files.active {
                // Saves append to it now: never cut. Empty, it is done.
                return match files.lengths[index] {
                    0 => Ok(()),
                    _ => Err(io::Error::other("the active journal file is not emptied")),
                };
            }
            files.files[index].try_clone()?
        };
        file.set_len(0)?;
        file.sync_all()?;
        self.lock().lengths[index] = 0;
        Ok(())
    }

    /// Empties both files durably (at open, once what they held is in the
    /// conversation files).
    pub(super) fn empty_all(&self) -> io::Result<()> {
        let mut files = self.lock();
        for index in 0..2 {
            files.files[index].set_len(0)?;
            files.files[index].sync_all()?;
            files.lengths[index] = 0;
        }
        files.generation += 1;
        files.broken = None;
        Ok(())
    }
}

/// Opens `path` to append and read, creating it owner-only.
fn open_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        options.open(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(contents: &Contents) -> Vec<(u64, &[u8])> {
        contents
            .records
            .iter()
            .map(|r| (r.seq, r.payload.as_slice()))
            .collect()
    }

    #[test]
    fn records_read_back_in_order() {
        let mut bytes = encode(1, b"{\"one\":1}").unwrap();
        bytes.extend(encode(7, b"").unwrap());
        bytes.extend(encode(8, b"three").unwrap());
        let contents = decode(&bytes);
        assert_eq!(
            records(&contents),
            [(1, &b"{\"one\":1}"[..]), (7, b""), (8, b"three")]
        );
        assert!(contents.damaged.is_empty() && contents.torn_tail.is_none());
    }

    #[test]
    fn a_record_cut_short_at_the_end_is_a_torn_tail() {
        let first = encode(1, b"first").unwrap();
        let second = encode(2, b"second, cut short").unwrap();
        for cut in 1..second.len() {
            let mut bytes = first.clone();
            bytes.extend_from_slice(&second[..cut]);
            let contents = decode(&bytes);
            assert_eq!(records(&contents), [(1, &b"first"[..])], "cut at {cut}");
            assert_eq!(contents.torn_tail, Some((first.len(), cut)));
            assert!(contents.damaged.is_empty());
        }
    }

    #[test]
    fn damage_in_the_middle_skips_one_record_and_keeps_the_rest() {
        let first = encode(1, b"first").unwrap();
        let mut second = encode(2, b"second").unwrap();
        let last = second.len() - 1;
        second[last] ^= 0xff; // a flipped byte: the checksum fails
        let third = encode(3, b"third").unwrap();
        let bytes = [first.clone(), second.clone(), third].concat();
        let contents = decode(&bytes);
        assert_eq!(records(&contents), [(1, &b"first"[..]), (3, b"third")]);
        assert_eq!(contents.damaged, [(first.len(), second.len())]);
        assert!(contents.torn_tail.is_none());
    }

    /// Appends `payload` as the next record.
    fn append(journal: &Journal, payload: &[u8]) {
        let mut record = record_buffer(payload.len());
        record.extend_from_slice(payload);
        journal.append(&mut record, |_| ()).unwrap();
    }

    #[test]
    fn emptying_cuts_the_retired_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path()).unwrap();
        assert!(
            journal.empty(0).is_ok(),
            "the active file, empty: nothing to do"
        );
        append(&journal, b"retired");
        let retired = journal.rotate(|| ());
        assert_eq!(retired, 0);
        append(&journal, b"active");
        let error = journal.empty(1).unwrap_err();
        assert!(error.to_string().contains("active"), "{error}");
        journal.empty(retired).unwrap();
        let [(_, first), (_, second)] = journal.read().unwrap();
        assert!(records(&first).is_empty(), "the retired file is empty");
        assert_eq!(
            records(&second),
            [(2, &b"active"[..])],
            "the active one is kept"
        );
        // Empty again, the retired file becomes active at the next rotation.
        assert_eq!(journal.rotate(|| ()), 1);
        append(&journal, b"next");
        let [(_, first), _] = journal.read().unwrap();
        assert_eq!(records(&first), [(3, &b"next"[..])]);
    }
}
