//! `ManualClock::next_deadline` and `advance_to_next`: a test that jumps from one due timer
//! to the next instead of guessing how far to move the clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shardwheel::{ManualClock, TimerEngine};

mod support;
use support::manual;

const SEC: Duration = Duration::from_secs(1);

fn counter() -> (Arc<AtomicUsize>, impl FnOnce() + Send + 'static) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    (count, move || {
        c.fetch_add(1, Ordering::SeqCst);
    })
}

#[test]
fn advance_to_next_fires_one_timer_at_a_time() {
    let (clock, engine) = manual();
    let start = clock.now();
    let (first, bump_first) = counter();
    let (second, bump_second) = counter();
    // On either shard, still queued when asked.
    engine.schedule_keyed(1, 3 * SEC, bump_first).unwrap();
    engine.schedule_keyed(2, 10 * SEC, bump_second).unwrap();
    let next = clock.next_deadline().unwrap();
    assert!(next >= start + 3 * SEC && next - (start + 3 * SEC) < engine.tick());
    assert_eq!(clock.elapsed(), Duration::ZERO, "looking moves nothing");

    assert_eq!(clock.advance_to_next(), Some(start + 3 * SEC));
    assert_eq!(
        (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
        (1, 0)
    );
    assert_eq!(clock.next_deadline(), Some(start + 10 * SEC));

    assert_eq!(clock.advance_to_next(), Some(start + 10 * SEC));
    assert_eq!(
        (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
        (1, 1)
    );

    assert_eq!(clock.advance_to_next(), None);
    assert_eq!(clock.now(), start + 10 * SEC);
}

#[test]
fn with_no_timer_there_is_no_next_deadline_and_the_clock_stays() {
    let (clock, _engine) = manual();
    assert_eq!(clock.next_deadline(), None);
    assert_eq!(clock.advance_to_next(), None);
    assert_eq!(clock.elapsed(), Duration::ZERO);
    // Nor on a clock no engine reads.
    let alone = ManualClock::new();
    assert_eq!(alone.advance_to_next(), None);
}

#[test]
fn a_cancelled_timer_is_never_reported() {
    let (clock, engine) = manual();
    let start = clock.now();
    let queued = engine.schedule(2 * SEC, || {}).unwrap();
    let placed = engine.schedule(3 * SEC, || {}).unwrap();
    engine.schedule(10 * SEC, || {}).unwrap();
    clock.advance(Duration::ZERO); // the shards place all three
    assert_eq!(clock.next_deadline(), Some(start + 2 * SEC));
    // One cancelled while linked in its wheel, one before its shard took it in.
    assert!(placed.cancel());
    assert!(queued.cancel());
    assert_eq!(clock.next_deadline(), Some(start + 10 * SEC));
    let fresh = engine.schedule(SEC, || {}).unwrap();
    assert!(fresh.cancel());
    assert_eq!(clock.next_deadline(), Some(start + 10 * SEC));
    assert_eq!(engine.pending(), 1);
}

#[test]
fn a_deadline_between_ticks_is_reported_at_the_tick_it_fires() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .tick(Duration::from_millis(10))
        .build()
        .unwrap();
    let start = clock.now();
    let (fired, bump) = counter();
    engine.schedule(Duration::from_millis(25), bump).unwrap();
    assert_eq!(
        clock.next_deadline(),
        Some(start + Duration::from_millis(30))
    );
    assert_eq!(
        clock.advance_to_next(),
        Some(start + Duration::from_millis(30))
    );
    assert_eq!(fired.load(Ordering::SeqCst), 1);
}

#[test]
fn a_reset_timer_is_reported_at_its_new_deadline() {
    let (clock, engine) = manual();
    let start = clock.now();
    let later = engine.schedule(3 * SEC, || {}).unwrap();
    let earlier = engine.schedule(3600 * SEC, || {}).unwrap();
    clock.advance(Duration::ZERO);
    assert!(later.reset(5 * SEC));
    assert_eq!(clock.next_deadline(), Some(start + 5 * SEC));
    assert!(earlier.reset(4 * SEC));
    assert_eq!(clock.advance_to_next(), Some(start + 4 * SEC));
    assert!(earlier.is_expired() && later.is_pending());
    assert_eq!(clock.advance_to_next(), Some(start + 5 * SEC));
    assert!(later.is_expired());
}

#[test]
fn advance_to_next_steps_through_a_repeating_timer_and_far_timers() {
    let (clock, engine) = manual();
    let start = clock.now();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let heartbeat = engine
        .schedule_repeating(2 * SEC, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    // Far enough for the wheel's coarse levels, whose slots span many ticks.
    let day = engine.schedule(86_400 * SEC, || {}).unwrap();
    for n in 1..=3 {
        assert_eq!(clock.advance_to_next(), Some(start + 2 * n * SEC));
        assert_eq!(runs.load(Ordering::SeqCst), n as usize);
    }
    assert!(heartbeat.cancel());
    assert_eq!(clock.advance_to_next(), Some(start + 86_400 * SEC));
    assert!(day.is_expired());
    assert_eq!(clock.advance_to_next(), None);
}

#[test]
fn the_earliest_deadline_of_every_engine_on_the_clock_counts() {
    let clock = ManualClock::new();
    let start = clock.now();
    let a = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let b = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    a.schedule(7 * SEC, || {}).unwrap();
    b.schedule(5 * SEC, || {}).unwrap();
    assert_eq!(clock.next_deadline(), Some(start + 5 * SEC));
    drop(b);
    assert_eq!(clock.next_deadline(), Some(start + 7 * SEC));
}
