//! Saves per second of the JSON store, by one thread and by 64 at once,
//! with 5,000 conversations stored. A measurement, not a test: it asserts
//! nothing about time. Run it by hand:
//!
//! `cargo test -p asg-server store::tests::throughput -- --ignored --nocapture`
//!
//! (the data dir is under `$TMPDIR`; keep it on a real disk, not tmpfs,
//! or the fsyncs cost nothing).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use asg_shared::Conversation;

use super::conversation;
use crate::store::{JsonFileStore, Store};

const STORED: usize = 5_000;
const PHASE: Duration = Duration::from_secs(3);

/// Saves by `threads` threads for [`PHASE`], each its own conversations
/// (one writer per conversation, as the engine does); saves per second.
fn saves_per_second(
    store: &Arc<JsonFileStore>,
    all: &Arc<Vec<Conversation>>,
    threads: usize,
) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (store, all, stop, count) =
                (store.clone(), all.clone(), stop.clone(), count.clone());
            std::thread::spawn(move || {
                let mut n = t;
                while !stop.load(Ordering::Relaxed) {
                    let mut changed = all[n % all.len()].clone();
                    changed.updated_at = chrono::Utc::now();
                    store.save(&changed).unwrap();
                    count.fetch_add(1, Ordering::Relaxed);
                    n += threads;
                }
            })
        })
        .collect();
    std::thread::sleep(PHASE);
    stop.store(true, Ordering::Relaxed);
    workers.into_iter().for_each(|w| w.join().unwrap());
    count.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

#[test]
#[ignore = "a measurement: run by hand with --ignored --nocapture"]
fn json_store_saves_per_second() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonFileStore::open(dir.path()).unwrap());
    let all: Arc<Vec<Conversation>> = Arc::new(
        (0..STORED)
            .map(|n| conversation(n as i64, &format!("c{n}")))
            .collect(),
    );
    let loading: Vec<_> = (0..8)
        .map(|t| {
            let (store, all) = (store.clone(), all.clone());
            std::thread::spawn(move || {
                all.iter()
                    .skip(t)
                    .step_by(8)
                    .for_each(|c| store.save(c).unwrap())
            })
        })
        .collect();
    loading.into_iter().for_each(|l| l.join().unwrap());
    for threads in [1, 64] {
        let rate = saves_per_second(&store, &all, threads);
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "json store, {STORED} stored, {threads:>2} threads: {rate:>8.0} saves/s  (loadavg {})",
            load.trim()
        );
    }
    let started = Instant::now();
    store.close();
    println!(
        "{} conversation files written by checkpoints; the last one (at close) took {} ms",
        store.files_written(),
        started.elapsed().as_millis()
    );
}
