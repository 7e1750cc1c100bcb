//! What `stats()` reports: lateness (its sum and a window), refusals by reason, callbacks
//! queued and running, memory held for entries.

mod support;
use support::{adds_one, capped, one_shard_on, scaled, wait_until};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use shardwheel::{ManualClock, ScheduleError, TimerEngine, TimerHandle};

#[test]
fn lateness_is_counted_from_the_tick_before_the_deadline() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(2)
        .build()
        .unwrap();
    let nothing = engine.stats().lateness;
    assert_eq!((nothing.count(), nothing.p50()), (0, None));

    // 100 timers due at 5 ms, fired at 5 ms: 1 ms from the start of tick 4.
    for _ in 0..100 {
        engine.schedule(Duration::from_millis(5), || {}).unwrap();
    }
    clock.advance(Duration::from_millis(5));
    // One due at 10 ms, fired at 35 ms: 26 ms from the start of tick 9.
    engine.schedule(Duration::from_millis(5), || {}).unwrap();
    clock.advance(Duration::from_millis(30));

    let stats = engine.stats();
    let lateness = &stats.lateness;
    assert_eq!(lateness.count(), 101);
    assert_eq!(lateness.count(), stats.fired);
    // A quantile is the top of its bucket (1 ms lies in [2^19, 2^20) ns), or the max if lower.
    let one_ms_bucket = Duration::from_nanos((1 << 20) - 1);
    assert_eq!(lateness.p50(), Some(one_ms_bucket));
    assert_eq!(lateness.p99(), Some(one_ms_bucket));
    assert_eq!(lateness.p999(), Some(Duration::from_millis(26)));
    assert_eq!(lateness.max(), Duration::from_millis(26));
    assert_eq!(lateness.quantile(0.0), Some(one_ms_bucket));
    assert_eq!(lateness.quantile(f64::NAN), None);
    let buckets: Vec<(Duration, u64)> = lateness.buckets().collect();
    assert_eq!(
        buckets,
        [
            // 26 ms lies in [2^24, 2^25) ns.
            (one_ms_bucket, 100),
            (Duration::from_nanos((1 << 25) - 1), 1),
        ]
    );
    let per_shard: u64 = stats.shards.iter().map(|s| s.lateness.count()).sum();
    assert_eq!(per_shard, 101);
}

#[test]
fn a_timer_fired_as_its_shard_takes_it_counts_in_the_lateness() {
    // Due already when the shard first sees it (a deadline in the past, due at the current
    // tick, 5): fired on arrival rather than from the wheel, and counted all the same, from the
    // start of tick 4.
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(1)
        .build()
        .unwrap();
    clock.advance(Duration::from_millis(5));
    engine
        .schedule_at(clock.now() - Duration::from_millis(3), || {})
        .unwrap();
    clock.advance(Duration::ZERO); // waits for the shard's turn
    let lateness = engine.stats().lateness;
    assert_eq!(lateness.count(), 1);
    assert_eq!(lateness.max(), Duration::from_millis(1));
}

#[test]
fn the_stats_count_the_pools_callbacks_queued_then_running_then_done() {
    const N: usize = 5_000;
    let engine = TimerEngine::builder()
        .shards(2)
        .callback_threads(3)
        .pin_threads(false)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let (release, blocked) = mpsc::channel::<()>();
    engine
        .schedule(Duration::from_millis(10), move || {
            blocked.recv().unwrap();
        })
        .unwrap();
    for _ in 0..N {
        engine
            .schedule(Duration::from_millis(10), adds_one(&ran))
            .unwrap();
    }
    // Every callback has begun and all but the blocked one have ended (a counting callback may
    // still be between its count and its end for a moment, so this is waited for, not read
    // once).
    wait_until("the other callbacks to run beside the blocked one", || {
        let stats = engine.stats();
        ran.load(Ordering::SeqCst) == N
            && (stats.callbacks_queued, stats.callbacks_running) == (0, 1)
    });
    assert_eq!(engine.stats().fired, N as u64 + 1);
    release.send(()).unwrap();
    wait_until("the blocked callback to end", || {
        engine.stats().callbacks_running == 0
    });
    let stats = engine.stats();
    assert_eq!((stats.callbacks_queued, stats.callbacks_running), (0, 0));
}

#[test]
fn the_stats_count_the_memory_held_for_entries_which_is_kept_for_reuse() {
    let clock = ManualClock::new();
    let engine = one_shard_on(&clock);
    assert_eq!(
        engine.stats().entry_bytes,
        0,
        "nothing carved before a timer"
    );
    let timers = scaled(2_000);
    let schedule_all = || -> Vec<TimerHandle> {
        (0..timers)
            .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
            .collect()
    };
    let handles = schedule_all();
    let stats = engine.stats();
    let held = stats.entry_bytes;
    assert_eq!(
        held,
        stats.shards.iter().map(|s| s.entry_bytes).sum::<u64>()
    );
    // Each timer's 40-byte slot, in 64 KiB chunks: no more than a chunk beyond what they need.
    let needed = 40 * timers as u64;
    assert!(
        (needed..needed + 64 * 1024).contains(&held),
        "{held} bytes held for {timers} timers"
    );
    // All cancelled and let go of: the memory stays, and the next timers reuse it.
    for handle in handles {
        assert!(handle.cancel());
    }
    clock.advance(Duration::from_millis(1));
    wait_until("the shard lets go of the cancelled timers", || {
        engine.stats().shards[0].in_wheel == 0
    });
    assert_eq!(
        engine.stats().entry_bytes,
        held,
        "kept after the timers are gone"
    );
    let again = schedule_all();
    assert_eq!(engine.stats().entry_bytes, held, "reused, not grown");
    drop(again);
}

#[test]
fn after_a_spike_the_memory_held_for_entries_goes_back_while_timers_come_and_go() {
    let clock = ManualClock::new();
    let engine = one_shard_on(&clock);
    // A spike of 200 chunks' worth, all cancelled.
    let spike: Vec<TimerHandle> = (0..80_000)
        .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
        .collect();
    let peak = engine.stats().entry_bytes;
    assert!(peak >= 40 * spike.len() as u64, "{peak} bytes at the peak");
    for handle in spike {
        assert!(handle.cancel());
    }
    // Then timers come and go a thousand at a time: the next ones do not need the spike's
    // chunks, which the lane gives up once it has seen them mostly free.
    let mut rounds = 0;
    while engine.stats().entry_bytes * 4 > peak {
        let batch: Vec<TimerHandle> = (0..1_000)
            .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
            .collect();
        for handle in batch {
            assert!(handle.cancel());
        }
        clock.advance(Duration::from_millis(1));
        rounds += 1;
        assert!(
            rounds <= 200,
            "still {} of {peak} bytes held after {rounds} thousand more timers",
            engine.stats().entry_bytes
        );
    }
    assert_eq!(engine.pending(), 0);
}

const MS: Duration = Duration::from_millis(1);

#[test]
fn each_refusal_counts_under_its_reason() {
    let (_clock, engine) = capped(1);
    let _held = engine.schedule(60 * MS, || {}).unwrap();
    assert!(matches!(
        engine.schedule(60 * MS, || {}),
        Err(ScheduleError::Full(_))
    ));
    assert!(matches!(engine.try_sleep(MS), Err(ScheduleError::Full(()))));
    let too_far = engine.max_delay() + engine.tick() * 3;
    assert!(matches!(
        engine.schedule(too_far, || {}),
        Err(ScheduleError::DelayTooLong(_))
    ));
    let stats = engine.stats();
    assert_eq!(
        (
            stats.rejected_full,
            stats.rejected_too_long,
            stats.rejected_shutdown
        ),
        (2, 1, 0)
    );
    assert_eq!(stats.rejected, 3);

    engine.shutdown();
    assert!(matches!(
        engine.schedule(MS, || {}),
        Err(ScheduleError::Shutdown(_))
    ));
    assert!(matches!(
        engine.try_sleep(MS),
        Err(ScheduleError::Shutdown(()))
    ));
    let stats = engine.stats();
    assert_eq!(
        (
            stats.rejected_full,
            stats.rejected_too_long,
            stats.rejected_shutdown
        ),
        (2, 1, 2)
    );
    assert_eq!(stats.rejected, 5);
}

#[test]
fn the_lateness_sum_adds_up_each_timers_lateness() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(2)
        .build()
        .unwrap();
    assert_eq!(engine.stats().lateness.sum(), Duration::ZERO);
    // Counted from the start of the tick before each deadline's: 8, 6 and 6 ms at 10 ms.
    for (key, delay) in [(1, 3 * MS), (2, 5 * MS), (3, 5 * MS)] {
        engine.schedule_keyed(key, delay, || {}).unwrap();
    }
    clock.advance(10 * MS);
    let stats = engine.stats();
    assert_eq!(stats.lateness.count(), 3);
    assert_eq!(stats.lateness.sum(), 20 * MS);
    let per_shard: Duration = stats.shards.iter().map(|s| s.lateness.sum()).sum();
    assert_eq!(per_shard, 20 * MS);
}

#[test]
fn a_window_holds_the_timers_fired_after_the_earlier_snapshot() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    engine.schedule(3 * MS, || {}).unwrap();
    clock.advance(10 * MS); // 8 ms late
    let first = engine.stats().lateness;
    assert_eq!(first.since(&first).count(), 0);
    assert_eq!(first.since(&first).max(), Duration::ZERO);

    // Below the largest so far: the window's max is the top of its bucket.
    engine.schedule(2 * MS, || {}).unwrap();
    clock.advance(4 * MS); // 3 ms late
    let second = engine.stats().lateness;
    let window = second.since(&first);
    assert_eq!((window.count(), window.sum()), (1, 3 * MS));
    assert!(window.max() >= 3 * MS && window.max() < 6 * MS);
    assert!(window.p50().unwrap() >= 3 * MS);

    // Above it: exact.
    engine.schedule(MS, || {}).unwrap();
    clock.advance(20 * MS); // 20 ms late
    let window = engine.stats().lateness.since(&second);
    assert_eq!((window.count(), window.sum()), (1, 20 * MS));
    assert_eq!(window.max(), 20 * MS);
    assert_eq!(engine.stats().lateness.sum(), 31 * MS);
}
