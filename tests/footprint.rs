//! What a pending timer costs in memory, counted at the allocator: 40 bytes (the entry, its
//! reference count and its slot index) in a slot of a chunk shared with other timers, so no
//! block of its own (a 40-byte block costs 48 in malloc), for a callback that captures
//! nothing; one block more for the captures of one that does. Nothing else is allocated per
//! timer.

mod support;
use support::{wait_until, Counting};

use std::time::Duration;

use shardwheel::TimerEngine;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Enough that the engine's own structures, allocated once, are lost in the rounding.
const TIMERS: usize = 200_000;

/// Bytes and blocks per timer that `schedule` leaves live while `TIMERS` timers made by
/// `callback` are pending in the wheels. The fewest of two tries: the count is the whole
/// process's, and the test harness's own threads may allocate meanwhile.
fn live_per_timer<F: FnOnce() + Send + 'static>(callback: impl Fn() -> F) -> (f64, f64) {
    let once = || {
        let engine = TimerEngine::builder().shards(2).build().unwrap();
        // Warm up the engine's own structures (lanes, thread slots) and the handles' storage.
        let mut handles = Vec::with_capacity(TIMERS);
        drop(engine.schedule(Duration::from_secs(600), || {}).unwrap());
        let before = (Counting::live(), Counting::blocks());
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
        let after = (Counting::live(), Counting::blocks());
        // What the stats say the entries' chunks hold: the slots, and the chunks' rounding.
        let held = engine.stats().entry_bytes as f64 / TIMERS as f64;
        assert!(
            (ENTRY_SLOT..ENTRY_SLOT + 0.5).contains(&held),
            "the stats count {held} bytes per timer for the entries"
        );
        drop(handles);
        drop(engine.shutdown());
        let per_timer =
            |after: usize, before: usize| (after as f64 - before as f64) / TIMERS as f64;
        (per_timer(after.0, before.0), per_timer(after.1, before.1))
    };
    let (first, second) = (once(), once());
    (first.0.min(second.0), first.1.min(second.1))
}

/// The entry's slot: 32 bytes of entry, its reference count and slot index, 8 bytes.
const ENTRY_SLOT: f64 = 40.0;

/// The most a chunk of entries takes. The count sees whole chunks, so it may miss up to a
/// chunk of the timers' slots (those in the chunk the warm-up opened): here 122 new chunks of
/// 65,512 bytes hold the 200,000 slots, 39.96 bytes a timer, and other growth meanwhile (the
/// shards' buffers) usually, not always, made up the rest.
const CHUNK: usize = 64 * 1024;

/// That rounding, a timer: 0.33 bytes.
const CHUNK_ROUNDING: f64 = CHUNK as f64 / TIMERS as f64;

// One test, so that no other test's engine allocates while this one counts.
#[test]
#[cfg_attr(miri, ignore = "needs too many timers for Miri")]
fn a_timer_costs_a_40_byte_slot_and_its_captures_one_block() {
    let (bytes, blocks) = live_per_timer(|| || {});
    assert!(
        (ENTRY_SLOT - CHUNK_ROUNDING..ENTRY_SLOT + 1.0).contains(&bytes),
        "{bytes} bytes per timer with a capture-free callback"
    );
    // A chunk of 64 KiB holds over 1,600 entries.
    assert!(
        blocks < 0.01,
        "{blocks} blocks per timer with a capture-free callback"
    );
    // A 16-byte capture: one block, of 8 bytes of header and 16 of captures.
    let (bytes, blocks) = live_per_timer(|| {
        let captured = [1u64, 2];
        move || assert_eq!(captured.len(), 2)
    });
    let with_captures = ENTRY_SLOT + 24.0;
    assert!(
        (with_captures - CHUNK_ROUNDING..with_captures + 1.0).contains(&bytes),
        "{bytes} bytes per timer with a 16-byte capture"
    );
    assert!(
        (1.0..1.01).contains(&blocks),
        "{blocks} blocks per timer with a 16-byte capture"
    );
    after_a_spike_the_memory_goes_back_while_timers_come_and_go();
    after_a_spike_from_threads_that_exit_the_memory_goes_back_with_no_more_timers();
}

/// `TIMERS` timers scheduled, linked and cancelled, then a thousand at a time scheduled to
/// fire at once: what the spike took (its entries' chunks, the spare entries handed back, the
/// shard's buffers) goes back to the allocator but for an eighth.
fn after_a_spike_the_memory_goes_back_while_timers_come_and_go() {
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let mut handles = Vec::with_capacity(TIMERS);
    drop(engine.schedule(Duration::from_secs(600), || {}).unwrap());
    let before = Counting::live();
    let live = || Counting::live().saturating_sub(before);
    for _ in 0..TIMERS {
        handles.push(engine.schedule(Duration::from_secs(600), || {}).unwrap());
    }
    // All linked, so that their cancels reach the shard as unlink requests, in one turn.
    wait_until("every timer is in a wheel", || {
        engine.stats().shards[0].in_wheel == TIMERS as u64 + 1
    });
    let peak = live();
    assert!(peak + CHUNK >= TIMERS * 40, "{peak} bytes for the spike");
    for handle in handles.drain(..) {
        assert!(handle.cancel());
    }
    let mut rounds = 0;
    while live() * 8 > peak {
        for _ in 0..1_000 {
            drop(engine.schedule(Duration::ZERO, || {}).unwrap());
        }
        wait_until("the round's timers fire", || engine.pending() == 1);
        rounds += 1;
        assert!(
            rounds <= 2_000,
            "{} of the spike's {peak} bytes still live after {rounds} thousand more timers",
            live()
        );
    }
}

/// `TIMERS` timers scheduled from two threads that then exit, all cancelled from another:
/// with no timer scheduled after them, what the spike took goes back but for an eighth.
fn after_a_spike_from_threads_that_exit_the_memory_goes_back_with_no_more_timers() {
    let engine = TimerEngine::builder().shards(2).build().unwrap();
    drop(engine.schedule(Duration::from_secs(600), || {}).unwrap());
    let before = Counting::live();
    let live = || Counting::live().saturating_sub(before);
    let spike = |_| {
        let engine = engine.clone();
        std::thread::spawn(move || {
            (0..TIMERS / 2)
                .map(|_| engine.schedule(Duration::from_secs(600), || {}).unwrap())
                .collect::<Vec<_>>()
        })
    };
    let threads: Vec<_> = (0..2).map(spike).collect();
    let handles: Vec<_> = threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    let peak = live();
    assert!(peak + CHUNK >= TIMERS * 40, "{peak} bytes for the spike");
    for handle in handles {
        assert!(handle.cancel());
    }
    wait_until("the shards let go of the cancelled timers", || {
        engine.pending() == 1
            && engine
                .stats()
                .shards
                .iter()
                .map(|s| s.in_wheel)
                .sum::<u64>()
                <= 1
    });
    wait_until("the spike's memory goes back", || live() * 8 <= peak);
}
