//! `Interval`: the ticks of each missed-tick behaviour, resets, start instants, `Stream`, cap.

#![cfg(not(loom))]

mod support;
use support::{one_shard_ticking, CountingWaker};

use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use shardwheel::{Interval, ManualClock, MissedTickBehavior, ScheduleErrorKind, TimerEngine};

const MS: Duration = Duration::from_millis(1);

fn manual() -> (ManualClock, TimerEngine) {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    (clock, engine)
}

/// The tick `interval` yields without waiting, if any; checks that it is not early.
fn ready_tick(interval: &mut Interval, clock: &ManualClock) -> Option<Instant> {
    let tick = interval.tick().now_or_never();
    if let Some(at) = tick {
        assert!(
            at <= clock.now(),
            "a tick yielded before the clock reached it"
        );
    }
    tick
}

/// Moves `clock` to `at`, checking on the way that `interval` has no tick ready before.
fn no_tick_until(interval: &mut Interval, clock: &ManualClock, at: Instant) {
    assert!(clock.now() < at);
    while clock.now() + MS < at {
        assert_eq!(
            ready_tick(interval, clock),
            None,
            "at {:?}",
            clock.elapsed()
        );
        clock.advance(MS);
    }
    assert_eq!(
        ready_tick(interval, clock),
        None,
        "at {:?}",
        clock.elapsed()
    );
    clock.advance(at - clock.now());
}

/// An interval of 10 ms with `behavior` whose consumer takes the tick of 0 ms, then stalls
/// until 35 ms, and takes the tick of 10 ms there (late, at once).
fn stalled(behavior: MissedTickBehavior) -> (ManualClock, TimerEngine, Interval, Instant) {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut interval = engine.interval(MS * 10);
    interval.set_missed_tick_behavior(behavior);
    assert_eq!(interval.missed_tick_behavior(), behavior);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    clock.advance(MS * 35);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 10));
    (clock, engine, interval, start)
}

#[test]
fn burst_yields_the_missed_ticks_at_once_then_keeps_the_rhythm() {
    let (clock, _engine, mut interval, start) = stalled(MissedTickBehavior::Burst);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 20));
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 30));
    no_tick_until(&mut interval, &clock, start + MS * 40);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 40));
    no_tick_until(&mut interval, &clock, start + MS * 50);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 50));
}

#[test]
fn the_missed_tick_behavior_is_burst_by_default() {
    let (_clock, engine) = manual();
    let interval = engine.interval(MS * 10);
    assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Burst);
    assert_eq!(MissedTickBehavior::default(), MissedTickBehavior::Burst);
}

#[test]
fn delay_starts_the_rhythm_over_from_the_late_tick() {
    let (clock, _engine, mut interval, start) = stalled(MissedTickBehavior::Delay);
    no_tick_until(&mut interval, &clock, start + MS * 45);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 45));
    no_tick_until(&mut interval, &clock, start + MS * 55);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 55));
}

#[test]
fn skip_drops_the_missed_ticks_and_keeps_the_rhythm() {
    let (clock, _engine, mut interval, start) = stalled(MissedTickBehavior::Skip);
    no_tick_until(&mut interval, &clock, start + MS * 40);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 40));
    no_tick_until(&mut interval, &clock, start + MS * 50);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 50));
}

#[test]
fn skip_from_exactly_a_multiple_of_the_period_goes_to_the_next_one() {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut interval = engine.interval(MS * 10);
    interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    clock.advance(MS * 40);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 10));
    // 40 ms is where the clock stands: the next instant of the rhythm after it is 50 ms.
    no_tick_until(&mut interval, &clock, start + MS * 50);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 50));
}

#[test]
fn a_tick_within_the_allowance_is_on_time() {
    // Inside one engine tick (1 ms) plus 5 ms of its deadline a tick counts as on time: the
    // next one stays one period after it. Beyond that, Delay moves the rhythm.
    for (late, next) in [(MS * 6, MS * 20), (MS * 7, MS * 27)] {
        let (clock, engine) = manual();
        let start = engine.now();
        let mut interval = engine.interval(MS * 10);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        assert_eq!(ready_tick(&mut interval, &clock), Some(start));
        clock.advance(MS * 10 + late);
        assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 10));
        no_tick_until(&mut interval, &clock, start + next);
        assert_eq!(ready_tick(&mut interval, &clock), Some(start + next));
    }
}

#[test]
fn the_engine_wakes_the_task_when_the_tick_comes() {
    let (clock, engine) = manual();
    let start = engine.now();
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(counter.clone());
    let mut cx = Context::from_waker(&waker);
    let mut interval = engine.interval(MS * 10);
    assert_eq!(interval.poll_tick(&mut cx), Poll::Ready(start));
    assert_eq!(interval.poll_tick(&mut cx), Poll::Pending);
    clock.advance(MS * 9);
    assert_eq!(counter.count(), 0);
    clock.advance(MS);
    assert!(counter.count() >= 1, "woken by the engine");
    assert_eq!(interval.poll_tick(&mut cx), Poll::Ready(start + MS * 10));
    // The interval holds one timer at a time, taken when it waits.
    assert_eq!(interval.poll_tick(&mut cx), Poll::Pending);
    assert_eq!(engine.pending(), 1);
    drop(interval);
    assert_eq!(engine.pending(), 0);
}

#[test]
fn ticks_under_an_executor_on_the_real_clock_are_never_early() {
    let engine = TimerEngine::builder().build().unwrap();
    let mut interval = engine.interval(MS * 5);
    futures::executor::block_on(async {
        let first = interval.tick().await;
        for n in 1..=4u32 {
            let tick = interval.tick().await;
            assert_eq!(tick, first + MS * 5 * n);
            assert!(Instant::now() >= tick, "never early");
        }
    });
}

#[test]
fn a_dropped_tick_future_loses_no_tick() {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut interval = engine.interval(MS * 10);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    for _ in 0..3 {
        assert_eq!(interval.tick().now_or_never(), None);
    }
    clock.advance(MS * 10);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 10));
}

#[test]
fn reset_makes_the_next_tick_one_period_from_now() {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut interval = engine.interval(MS * 10);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    clock.advance(MS * 4);
    interval.reset();
    no_tick_until(&mut interval, &clock, start + MS * 14);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 14));
    no_tick_until(&mut interval, &clock, start + MS * 24);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 24));
}

#[test]
fn reset_immediately_makes_the_next_tick_now() {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut interval = engine.interval(MS * 10);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    clock.advance(MS * 3);
    interval.reset_immediately();
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 3));
    no_tick_until(&mut interval, &clock, start + MS * 13);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 13));
}

#[test]
fn reset_after_makes_the_next_tick_due_that_long_from_now() {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut interval = engine.interval(MS * 10);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    clock.advance(MS * 2);
    interval.reset_after(MS * 3);
    no_tick_until(&mut interval, &clock, start + MS * 5);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 5));
    no_tick_until(&mut interval, &clock, start + MS * 15);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 15));
}

#[test]
fn reset_at_moves_the_next_tick_later_or_earlier() {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut interval = engine.interval(MS * 10);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    // Later than the tick due at 10 ms.
    interval.reset_at(start + MS * 25);
    no_tick_until(&mut interval, &clock, start + MS * 25);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 25));
    // Earlier than the tick due at 35 ms.
    interval.reset_at(start + MS * 28);
    no_tick_until(&mut interval, &clock, start + MS * 28);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 28));
    no_tick_until(&mut interval, &clock, start + MS * 38);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 38));
}

#[test]
fn reset_at_a_past_instant_yields_it_at_once_and_follows_the_behavior() {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut interval = engine.interval(MS * 10);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    clock.advance(MS * 5);
    interval.reset_at(start + MS * 30); // then moved back into the past
    clock.advance(MS * 3);
    interval.reset_at(start + MS);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS));
    // 7 ms late: Delay counts from 8 ms.
    no_tick_until(&mut interval, &clock, start + MS * 18);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 18));
}

#[test]
fn interval_at_a_future_start_ticks_first_at_that_start() {
    let (clock, engine) = manual();
    let start = engine.now() + MS * 50;
    let mut interval = engine.interval_at(start, MS * 10);
    no_tick_until(&mut interval, &clock, start);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    no_tick_until(&mut interval, &clock, start + MS * 10);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 10));
}

#[test]
fn interval_at_a_past_start_is_late_at_once() {
    let (clock, engine) = manual();
    clock.advance(MS * 100);
    let start = engine.now() - MS * 35;
    let mut interval = engine.interval_at(start, MS * 10);
    interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    no_tick_until(&mut interval, &clock, start + MS * 40);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 40));
}

#[test]
fn a_zero_period_is_one_engine_tick() {
    let clock = ManualClock::new();
    let engine = one_shard_ticking(&clock, MS * 4);
    let start = engine.now();
    let mut interval = engine.interval(Duration::ZERO);
    assert_eq!(interval.period(), MS * 4);
    assert_eq!(interval.period(), engine.tick());
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    for n in 1..=3u32 {
        no_tick_until(&mut interval, &clock, start + MS * 4 * n);
        assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 4 * n));
    }
}

#[test]
fn the_stream_yields_the_ticks() {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut ticks = engine.interval(MS * 10);
    assert_eq!(ticks.next().now_or_never(), Some(Some(start)));
    assert_eq!(ticks.next().now_or_never(), None);
    clock.advance(MS * 30);
    let caught_up: Vec<_> = (0..3).map(|_| ticks.next().now_or_never()).collect();
    let expected: Vec<_> = [10, 20, 30].map(|ms| Some(Some(start + MS * ms))).into();
    assert_eq!(caught_up, expected);
    assert_eq!(ticks.next().now_or_never(), None);
}

#[test]
fn the_stream_ends_when_the_engine_shuts_down() {
    let (clock, engine) = manual();
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(counter.clone());
    let mut cx = Context::from_waker(&waker);
    let mut ticks = engine.interval(MS * 10);
    assert!(matches!(
        ticks.poll_next_unpin(&mut cx),
        Poll::Ready(Some(_))
    ));
    assert_eq!(ticks.poll_next_unpin(&mut cx), Poll::Pending);
    drop(engine.shutdown());
    assert!(counter.count() >= 1, "shutdown wakes the task");
    assert_eq!(ticks.poll_next_unpin(&mut cx), Poll::Ready(None));
    assert_eq!(ticks.poll_next_unpin(&mut cx), Poll::Ready(None));
    clock.advance(MS * 100);
    assert_eq!(ticks.poll_next_unpin(&mut cx), Poll::Ready(None));
    // Collected to its end, it ends.
    assert_eq!(futures::executor::block_on(ticks.collect::<Vec<_>>()), []);
}

#[test]
fn after_shutdown_tick_waits_and_try_tick_says_why() {
    let (_clock, engine) = manual();
    let mut interval = engine.interval(Duration::from_secs(60));
    assert!(interval.tick().now_or_never().is_some());
    assert!(interval.tick().now_or_never().is_none());
    drop(engine.shutdown());
    for _ in 0..3 {
        assert!(interval.tick().now_or_never().is_none(), "never early");
        assert_eq!(
            interval.try_tick().now_or_never(),
            Some(Err(ScheduleErrorKind::Shutdown))
        );
    }
    // One made after shutdown too.
    let mut late = engine.interval_at(engine.now() + Duration::from_secs(60), MS);
    assert!(late.tick().now_or_never().is_none());
    assert!(late.try_tick().now_or_never().unwrap().is_err());
}

#[test]
fn tick_waits_for_a_place_at_the_cap() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .max_pending(1)
        .build()
        .unwrap();
    let start = engine.now();
    engine.schedule(MS * 5, || {}).unwrap(); // takes the only permit
    let mut interval = engine.interval(MS * 10);
    assert_eq!(interval.tick().now_or_never(), Some(start));
    // Refused: the tick waits for a permit, however often it is polled.
    for _ in 0..5 {
        assert_eq!(interval.tick().now_or_never(), None);
    }
    clock.advance(MS * 5); // the timer fires and gives its permit back
    assert_eq!(ready_tick(&mut interval, &clock), None);
    assert_eq!(engine.pending(), 1, "the interval holds its timer");
    no_tick_until(&mut interval, &clock, start + MS * 10);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start + MS * 10));
}

#[test]
fn a_period_beyond_the_engines_range_never_ticks_again() {
    let (clock, engine) = manual();
    let start = engine.now();
    let mut interval = engine.interval(engine.max_delay() * 2);
    let mut forever = engine.interval(Duration::MAX);
    assert_eq!(ready_tick(&mut interval, &clock), Some(start));
    assert_eq!(ready_tick(&mut forever, &clock), Some(start));
    // Waiting for the next tick, each interval holds a stand-in timer at the farthest
    // deadline the engine takes.
    assert_eq!(ready_tick(&mut interval, &clock), None);
    assert_eq!(ready_tick(&mut forever, &clock), None);
    assert_eq!(engine.pending(), 2);
    clock.advance(engine.max_delay() + Duration::from_secs(1));
    assert_eq!(ready_tick(&mut interval, &clock), None);
    assert_eq!(ready_tick(&mut forever, &clock), None);
    // A task waiting for the next tick is woken by the shutdown; the tick never comes.
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(counter.clone());
    let mut cx = Context::from_waker(&waker);
    assert!(interval.poll_tick(&mut cx).is_pending());
    assert!(forever.poll_tick(&mut cx).is_pending());
    drop(engine.shutdown());
    assert_eq!(counter.count(), 2);
    assert!(interval.poll_tick(&mut cx).is_pending());
    assert!(forever.poll_tick(&mut cx).is_pending());
    assert_eq!(
        interval.next().now_or_never(),
        Some(None),
        "the stream ends"
    );
}
