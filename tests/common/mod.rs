//! What several integration tests share. Each test binary uses part of it.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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
    #[allow(dead_code)] // not every test that counts bytes counts blocks
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

/// Polls `done` every millisecond until it holds, failing the test after a minute (a generous
/// bound for waits on real time; tests that can use a manual clock do not wait).
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < give_up, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The cpu each of `engine`'s tick threads is pinned to, in shard order.
pub fn pinned_cpus(engine: &shardwheel::TimerEngine) -> Vec<Option<usize>> {
    engine
        .stats()
        .shards
        .iter()
        .map(|shard| shard.pinned_cpu)
        .collect()
}
