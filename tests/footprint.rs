//! What a pending timer costs in memory, counted at the allocator: one 40-byte block (the
//! entry and its reference count) for a callback that captures nothing, and one block more
//! for the captures of one that does. Nothing else is allocated per timer.

mod common;
use common::{wait_until, Counting};
use std::time::Duration;

use shardwheel::TimerEngine;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Enough that the engine's own structures, allocated once, are lost in the rounding.
const TIMERS: usize = 200_000;

/// The bytes per timer that `schedule` leaves live while `TIMERS` timers made by `callback`
/// are pending in the wheels. The fewest of two tries: the count is the whole process's, and
/// the test harness's own threads may allocate meanwhile.
fn live_bytes_per_timer<F: FnOnce() + Send + 'static>(callback: impl Fn() -> F) -> f64 {
    let once = || {
        let engine = TimerEngine::builder().shards(2).build().unwrap();
        // Warm up the engine's own structures (lanes, thread slots) and the handles' storage.
        let mut handles = Vec::with_capacity(TIMERS);
        drop(engine.schedule(Duration::from_secs(600), || {}).unwrap());
        let before = Counting::live();
        for _ in 0..TIMERS {
            handles.push(
                engine
                    .schedule(Duration::from_secs(600), callback())
                    .unwrap(),
            );
        }
        wait_until("every timer is in a wheel", || {
            engine
                .stats()
                .shards
                .iter()
                .map(|s| s.in_wheel)
                .sum::<u64>()
                == TIMERS as u64 + 1
        });
        let after = Counting::live();
        drop(handles);
        drop(engine.shutdown());
        (after as f64 - before as f64) / TIMERS as f64
    };
    once().min(once())
}

/// The entry's block: 32 bytes of entry and its reference count, 8 bytes (in the sanitizer
/// builds, std's `Arc`, whose strong and weak counts take 16).
const ENTRY_BLOCK: f64 = if cfg!(shardwheel_sanitize) {
    48.0
} else {
    40.0
};

// One test, so that no other test's engine allocates while this one counts.
#[test]
#[cfg_attr(miri, ignore = "needs too many timers for Miri")]
fn a_timer_costs_one_block_and_its_captures_one_more() {
    let capture_free = live_bytes_per_timer(|| || {});
    assert!(
        (ENTRY_BLOCK..ENTRY_BLOCK + 1.0).contains(&capture_free),
        "{capture_free} bytes per timer with a capture-free callback"
    );
    // A 16-byte capture: one more block, of 8 bytes of header and 16 of captures.
    let capturing = live_bytes_per_timer(|| {
        let captured = [1u64, 2];
        move || assert_eq!(captured.len(), 2)
    });
    let with_captures = ENTRY_BLOCK + 24.0;
    assert!(
        (with_captures..with_captures + 1.0).contains(&capturing),
        "{capturing} bytes per timer with a 16-byte capture"
    );
}
