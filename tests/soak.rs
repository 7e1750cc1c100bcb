//! A bounded soak (ignored by default): one engine under mixed load for `SOAK_SECS` seconds
//! (default 10) while the live heap (counted by this test's global allocator) and the resident
//! set are sampled every second. It fails if the live heap keeps growing once warmed up, if a
//! callback runs early or after a successful cancel, or if the accounting identity breaks.
//! (A callback is an `FnOnce`, so it cannot run twice; a timer fired twice would break the
//! identity.) The resident set is reported, not judged: the system allocator keeps freed pages as
//! it sees fit.
//!
//! The load: producer threads in the RPC pattern (schedule, cancel nine in ten) at a steady
//! rate, a thread that
//! keeps a hundred repeating timers going and replaces them as it cancels them, and a thread
//! that awaits sleeps and timeouts under `futures::executor`.
//!
//! ```text
//! SOAK_SECS=600 cargo test --release --test soak -- --ignored --nocapture
//! ```

#![cfg(not(loom))]

mod support;
use support::{Counting, SplitMix};

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{ScheduleError, TimerEngine, TimerHandle};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What went wrong, counted by the callbacks and cancellers that saw it.
#[derive(Default)]
struct Faults {
    early: AtomicU64,
    after_cancel: AtomicU64,
}

/// The fate of one timer, shared by its callback and its canceller.
const WAITING: u8 = 0;
const RAN: u8 = 1;
const CANCELLED: u8 = 2;

/// A callback that checks it is on time and not run after a successful cancel.
fn checked(due: Instant, fate: Arc<AtomicU8>, faults: Arc<Faults>) -> impl FnOnce() + Send {
    move || {
        if Instant::now() < due {
            faults.early.fetch_add(1, Ordering::SeqCst);
        }
        if fate.swap(RAN, Ordering::SeqCst) == CANCELLED {
            faults.after_cancel.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn cancel_checked(timer: &TimerHandle, fate: &AtomicU8, faults: &Faults) {
    if timer.cancel() && fate.swap(CANCELLED, Ordering::SeqCst) == RAN {
        faults.after_cancel.fetch_add(1, Ordering::SeqCst);
    }
}

/// The RPC pattern: a window of recent timeouts, nine in ten cancelled before they run out.
fn producer(engine: Arc<TimerEngine>, stop: Arc<AtomicBool>, faults: Arc<Faults>, seed: u64) {
    let mut rng = SplitMix(seed);
    let mut window: Vec<Option<(TimerHandle, Arc<AtomicU8>)>> = (0..1000).map(|_| None).collect();
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        // A steady rate the machine sustains (a saturated machine only measures backlogs):
        // 200 operations, then a millisecond's pause.
        if n % 200 == 0 {
            thread::sleep(Duration::from_millis(1));
        }
        let slot = n % window.len();
        if let Some((timer, fate)) = window[slot].take() {
            if n % 10 != 0 {
                cancel_checked(&timer, &fate, &faults);
            }
        }
        let due = Instant::now() + Duration::from_micros(rng.below(50_000));
        let fate = Arc::new(AtomicU8::new(WAITING));
        match engine.schedule_at(due, checked(due, fate.clone(), faults.clone())) {
            Ok(timer) => window[slot] = Some((timer, fate)),
            Err(ScheduleError::Shutdown(_)) => break,
            Err(other) => panic!("unexpected refusal: {other}"),
        }
        n += 1;
    }
}

/// A hundred repeating timers; every millisecond or so one is cancelled and replaced.
fn repeater(engine: Arc<TimerEngine>, stop: Arc<AtomicBool>, runs: Arc<AtomicU64>, seed: u64) {
    let mut rng = SplitMix(seed);
    let start = |rng: &mut SplitMix| {
        let runs = runs.clone();
        let period = Duration::from_micros(500 + rng.below(10_000));
        engine.repeating(period).schedule(move || {
            runs.fetch_add(1, Ordering::Relaxed);
        })
    };
    let mut timers: Vec<TimerHandle> = (0..100).map(|_| start(&mut rng).unwrap()).collect();
    while !stop.load(Ordering::Relaxed) {
        let i = rng.below(timers.len() as u64) as usize;
        timers[i].cancel();
        match start(&mut rng) {
            Ok(timer) => timers[i] = timer,
            Err(ScheduleError::Shutdown(_)) => break,
            Err(other) => panic!("unexpected refusal: {other}"),
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Sleeps and timeouts awaited one after another; every third timeout gives up.
fn sleeper(engine: Arc<TimerEngine>, stop: Arc<AtomicBool>, seed: u64) -> u64 {
    let mut rng = SplitMix(seed);
    let mut awaited = 0;
    futures::executor::block_on(async {
        while !stop.load(Ordering::Relaxed) {
            let delay = Duration::from_micros(rng.below(3_000));
            let start = Instant::now();
            engine.sleep(delay).await;
            assert!(start.elapsed() >= delay, "a sleep ended early");
            let slow = engine.sleep(Duration::from_millis(5 + rng.below(5)));
            let limit = Duration::from_millis(if awaited % 3 == 0 { 1 } else { 50 });
            let _ = engine.timeout(limit, slow).await;
            awaited += 2;
        }
    });
    awaited
}

/// The resident set in KiB, from `/proc/self/status`.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line")
}

#[test]
#[ignore = "a soak run; SOAK_SECS sets its length"]
fn memory_stays_flat_under_mixed_load() {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
        .max(6);
    let engine = Arc::new(TimerEngine::builder().callback_threads(4).build().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let faults = Arc::new(Faults::default());
    let repeats = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for seed in 0..2 {
        let (engine, stop, faults) = (engine.clone(), stop.clone(), faults.clone());
        workers.push(thread::spawn(move || producer(engine, stop, faults, seed)));
    }
    {
        let (engine, stop, runs) = (engine.clone(), stop.clone(), repeats.clone());
        workers.push(thread::spawn(move || repeater(engine, stop, runs, 7)));
    }
    let sleeps = {
        let (engine, stop) = (engine.clone(), stop.clone());
        thread::spawn(move || sleeper(engine, stop, 11))
    };

    let mut heap = Vec::new();
    let mut rss = Vec::new();
    let begin = Instant::now();
    for second in 1..=secs {
        let next = begin + Duration::from_secs(second);
        thread::sleep(next.saturating_duration_since(Instant::now()));
        heap.push(Counting::live() as u64 / 1024);
        rss.push(rss_kib());
    }
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.join().unwrap();
    }
    let awaited = sleeps.join().unwrap();
    let unfired = engine.shutdown();
    let stats = engine.stats();
    println!(
        "soak: {secs} s, {} timers scheduled ({} fired, {} cancelled, {} handed back), \
         {} repeating runs, {awaited} sleeps and timeouts awaited",
        stats.scheduled,
        stats.fired,
        stats.cancelled,
        stats.handed_back,
        repeats.load(Ordering::SeqCst),
    );
    println!("soak: live heap each second, KiB: {heap:?}");
    println!("soak: RSS each second, KiB: {rss:?}");

    assert_eq!(
        faults.early.load(Ordering::SeqCst),
        0,
        "a timer fired early"
    );
    assert_eq!(
        faults.after_cancel.load(Ordering::SeqCst),
        0,
        "a callback ran after cancel"
    );
    assert_eq!(stats.pending, 0);
    assert_eq!(
        stats.scheduled,
        stats.fired + stats.cancelled + stats.handed_back,
        "scheduled = fired + cancelled + handed back"
    );
    assert_eq!(stats.handed_back as usize, unfired.len());

    // Warmed up after the first third; then the later half of what is left may not hold more
    // than the earlier half, beyond what timers in flight at a sample's instant explain.
    let settled = &heap[heap.len() / 3..];
    let (earlier, later) = settled.split_at(settled.len() / 2);
    let earlier_max = *earlier.iter().max().unwrap();
    let later_max = *later.iter().max().unwrap();
    let allowance = (earlier_max / 10).max(256);
    assert!(
        later_max <= earlier_max + allowance,
        "the live heap keeps growing: {earlier_max} KiB, then {later_max} KiB"
    );
}
