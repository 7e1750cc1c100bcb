//! `Stats`: refusals by reason, and the lateness sum and window.

use std::time::Duration;

use shardwheel::{ManualClock, ScheduleError, TimerEngine};

const MS: Duration = Duration::from_millis(1);

#[test]
fn each_refusal_counts_under_its_reason() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .max_pending(1)
        .build()
        .unwrap();
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
