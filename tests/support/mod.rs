//! What the integration tests share; each test binary uses part of it.
#![allow(dead_code)]

pub mod delay;
pub mod files;

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use shardwheel::{ManualClock, TimerEngine};

/// Long enough that a pass never waits for it; a failure shows as this wait running out.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// An engine of two shards on a new manual clock.
pub fn manual() -> (ManualClock, TimerEngine) {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(2)
        .build()
        .unwrap();
    (clock, engine)
}

/// An engine on a new manual clock that holds at most `max` timers.
pub fn capped(max: usize) -> (ManualClock, TimerEngine) {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .max_pending(max)
        .build()
        .unwrap();
    (clock, engine)
}

/// An engine of one shard on `clock`, ticking every millisecond.
pub fn one_shard_on(clock: &ManualClock) -> TimerEngine {
    one_shard_ticking(clock, Duration::from_millis(1))
}

/// An engine of one shard on `clock`, ticking every `tick`.
pub fn one_shard_ticking(clock: &ManualClock, tick: Duration) -> TimerEngine {
    TimerEngine::builder()
        .shards(1)
        .pin_threads(false)
        .tick(tick)
        .manual_clock(clock)
        .build()
        .unwrap()
}

/// A callback that adds one to `ran`.
pub fn adds_one(ran: &Arc<AtomicUsize>) -> impl FnMut() + Send + 'static {
    let ran = ran.clone();
    move || {
        ran.fetch_add(1, Ordering::SeqCst);
    }
}

/// A callback that counts its runs, and the count.
pub fn counting_runs() -> (Arc<AtomicUsize>, impl FnMut() + Send + 'static) {
    let runs = Arc::new(AtomicUsize::new(0));
    let callback = adds_one(&runs);
    (runs, callback)
}

/// A waker that counts its wakes.
#[derive(Default)]
pub struct CountingWaker(AtomicUsize);

impl CountingWaker {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A counting waker, and the waker made of it.
pub fn counting() -> (Arc<CountingWaker>, Waker) {
    let count = Arc::new(CountingWaker::default());
    let waker = Waker::from(count.clone());
    (count, waker)
}

/// A manual clock, an engine on it, and a counting waker with its count.
pub fn on_manual_clock() -> (ManualClock, TimerEngine, Waker, impl Fn() -> usize) {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let (count, waker) = counting();
    (clock, engine, waker, move || count.count())
}

/// Polls `future` once with `waker`.
pub fn poll_once<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

/// Polls `done` every millisecond until it holds, failing the test after a minute (a generous
/// bound for waits on real time; tests that can use a manual clock do not wait).
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < give_up, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Scales counts down under Miri.
pub fn scaled(n: usize) -> usize {
    if cfg!(miri) {
        (n / 100).max(4)
    } else {
        n
    }
}

/// A tiny deterministic generator (splitmix64) for delays and choices.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The system allocator, counting the bytes live; a test binary that needs the count installs
/// it with `#[global_allocator] static A: Counting = Counting;`.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static BLOCKS: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    /// The bytes allocated and not yet freed, over the whole process.
    pub fn live() -> usize {
        // SeqCst: tests read it between phases driven from other threads; a statistic either
        // way, and never on a hot path.
        LIVE.load(Ordering::SeqCst)
    }

    /// The blocks allocated and not yet freed, over the whole process.
    pub fn blocks() -> usize {
        // SeqCst: as in `live`.
        BLOCKS.load(Ordering::SeqCst)
    }
}

// SAFETY: forwards to `System` with the caller's arguments, so each method keeps `System`'s
// contract; the counter only observes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the impl says.
        let block = unsafe { System.alloc(layout) };
        if !block.is_null() {
            // Relaxed: a count only; `live` reads it after the allocating threads were joined
            // or waited for.
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
            BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // Relaxed: as above.
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        BLOCKS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: as the impl says.
        unsafe { System.dealloc(block, layout) }
    }
}
