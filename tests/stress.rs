//! A bounded stress run (ignored by default): engines are built, hammered by threads that
//! schedule, cancel and race a shutdown, and checked after each round for the accounting
//! identity, early fires and double fires.
//!
//! ```text
//! STRESS_SECS=60 cargo test --release --test stress -- --ignored --nocapture
//! ```

mod support;
use support::SplitMix;

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{ScheduleError, TimerEngine, TimerHandle};

const THREADS: usize = 4;
const PER_THREAD: usize = 20_000;

/// One round: returns how many timers the round scheduled.
fn round(seed: u64) -> usize {
    let engine = Arc::new(
        TimerEngine::builder()
            .shards(1 + (seed % 3) as usize)
            .callback_threads(2)
            .build()
            .unwrap(),
    );
    let total = THREADS * PER_THREAD;
    let runs: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
    let early = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (engine, runs, early, start) =
                (engine.clone(), runs.clone(), early.clone(), start.clone());
            thread::spawn(move || {
                let mut rng = SplitMix(seed * 31 + t as u64);
                let mut ring: Vec<Option<TimerHandle>> = (0..64).map(|_| None).collect();
                let (mut cancelled, mut refused) = (Vec::new(), Vec::new());
                start.wait();
                for i in 0..PER_THREAD {
                    let id = t * PER_THREAD + i;
                    let slot = i % ring.len();
                    if let Some(old) = ring[slot].take() {
                        if rng.below(4) != 0 && old.cancel() {
                            cancelled.push(id - ring.len());
                        }
                    }
                    let due = Instant::now() + Duration::from_micros(rng.below(20_000));
                    let (runs, early) = (runs.clone(), early.clone());
                    let callback = move || {
                        if Instant::now() < due {
                            early.fetch_add(1, Ordering::SeqCst);
                        }
                        runs[id].fetch_add(1, Ordering::SeqCst);
                    };
                    match engine.schedule_at(due, callback) {
                        Ok(handle) => ring[slot] = Some(handle),
                        Err(ScheduleError::Shutdown(_)) => refused.push(id),
                        Err(other) => panic!("unexpected {other:?}"),
                    }
                }
                (cancelled, refused)
            })
        })
        .collect();
    start.wait();
    thread::sleep(Duration::from_millis(seed % 40));
    let unfired = engine.shutdown();
    let mut cancelled = Vec::new();
    let mut refused = Vec::new();
    for worker in workers {
        let (c, r) = worker.join().unwrap();
        cancelled.extend(c);
        refused.extend(r);
    }
    let stats = engine.stats();
    assert_eq!(early.load(Ordering::SeqCst), 0, "a timer fired early");
    assert!(
        runs.iter().all(|r| r.load(Ordering::SeqCst) <= 1),
        "a callback ran twice"
    );
    for id in &cancelled {
        assert_eq!(runs[*id].load(Ordering::SeqCst), 0, "ran after cancel");
    }
    let fired = runs
        .iter()
        .filter(|r| r.load(Ordering::SeqCst) == 1)
        .count();
    assert_eq!(stats.scheduled as usize + refused.len(), total);
    assert_eq!(
        fired + cancelled.len() + unfired.len(),
        stats.scheduled as usize,
        "scheduled = fired + cancelled + handed back"
    );
    assert_eq!(stats.fired as usize, fired);
    assert_eq!(stats.cancelled as usize, cancelled.len());
    assert_eq!(stats.handed_back as usize, unfired.len());
    assert_eq!(stats.pending, 0);
    stats.scheduled as usize
}

#[test]
#[ignore = "a stress run; STRESS_SECS sets its length"]
fn schedule_cancel_shutdown_stress() {
    let secs: u64 = std::env::var("STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let stop = Instant::now() + Duration::from_secs(secs);
    let (mut rounds, mut timers) = (0u64, 0usize);
    while Instant::now() < stop {
        timers += round(rounds);
        rounds += 1;
    }
    println!("stress: {rounds} rounds, {timers} timers, all accounted for");
}
