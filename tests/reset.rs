//! Moving a timer or a sleep to a new deadline: `TimerHandle::reset`, `Sleep::reset`, `reset_at`.

#![cfg(not(loom))]

mod support;
use support::{capped, manual, on_manual_clock, one_shard_ticking, poll_once, CountingWaker};

use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{ManualClock, TimerEngine, TimerHandle, TimerState};

const SEC: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

/// A timer whose callback records the clock's elapsed time when it runs.
fn recording(
    engine: &TimerEngine,
    clock: &ManualClock,
    delay: Duration,
) -> (TimerHandle, Arc<Mutex<Vec<Duration>>>) {
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    let handle = engine
        .schedule(delay, move || r.lock().unwrap().push(c.elapsed()))
        .unwrap();
    (handle, runs)
}

#[test]
fn a_timer_reset_later_never_fires_at_the_old_deadline() {
    let (clock, engine) = manual();
    let (timer, runs) = recording(&engine, &clock, 10 * SEC);
    clock.advance(5 * SEC);
    assert!(timer.reset(20 * SEC)); // now due at 25 s
    clock.advance(5 * SEC); // 10 s: the old deadline
    assert!(runs.lock().unwrap().is_empty());
    clock.advance(14 * SEC); // 24 s
    assert!(runs.lock().unwrap().is_empty());
    clock.advance(SEC); // 25 s
    assert_eq!(*runs.lock().unwrap(), vec![25 * SEC]);
    assert_eq!(engine.pending(), 0);
}

#[test]
fn a_timer_reset_earlier_fires_at_the_new_deadline() {
    let (clock, engine) = manual();
    // One timer linked in a coarse wheel level (an hour away), one still queued.
    let (linked, linked_runs) = recording(&engine, &clock, 3600 * SEC);
    clock.advance(Duration::from_millis(1)); // the shards link it
    assert!(linked.reset(2 * SEC));
    let (queued, queued_runs) = recording(&engine, &clock, 3600 * SEC);
    assert!(queued.reset(3 * SEC));
    clock.advance(SEC);
    assert!(linked_runs.lock().unwrap().is_empty());
    clock.advance(SEC + Duration::from_millis(1));
    assert_eq!(linked_runs.lock().unwrap().len(), 1);
    assert!(linked_runs.lock().unwrap()[0] >= 2 * SEC);
    clock.advance(SEC);
    assert_eq!(queued_runs.lock().unwrap().len(), 1);
    assert!(queued_runs.lock().unwrap()[0] >= 3 * SEC);
}

#[test]
fn reset_answers_false_when_there_is_nothing_to_move() {
    let (clock, engine) = manual();
    let (fired, _) = recording(&engine, &clock, SEC);
    let (cancelled, _) = recording(&engine, &clock, SEC);
    let (far, _) = recording(&engine, &clock, SEC);
    assert!(cancelled.cancel());
    assert!(!cancelled.reset(SEC));
    assert!(!far.reset(Duration::MAX));
    assert!(!far.reset(engine.max_delay() * 2));
    clock.advance(SEC);
    assert!(!fired.reset(SEC));
    assert_eq!(engine.pending(), 0);
}

#[test]
fn a_timer_reset_on_every_read_fires_exactly_after_the_last_reset() {
    // An idle timeout pushed forward on every "read" for a while, then left to expire.
    let (clock, engine) = manual();
    let (idle, runs) = recording(&engine, &clock, 30 * SEC);
    for _ in 0..100 {
        clock.advance(SEC);
        assert!(idle.reset(30 * SEC));
    }
    clock.advance(29 * SEC);
    assert!(runs.lock().unwrap().is_empty());
    clock.advance(SEC);
    assert_eq!(*runs.lock().unwrap(), vec![130 * SEC]);
}

/// A reset racing the shard firing the timer: when the reset wins (returns true), the timer
/// fires at the new deadline, never the old one.
#[test]
fn a_reset_racing_the_fire_either_moves_the_timer_or_finds_it_fired() {
    let engine = TimerEngine::builder().build().unwrap();
    for round in 0..200u64 {
        let fired_at = Arc::new(Mutex::new(None));
        let f = fired_at.clone();
        let delay = Duration::from_micros(500 + (round % 7) * 200);
        let timer = engine
            .schedule(delay, move || *f.lock().unwrap() = Some(Instant::now()))
            .unwrap();
        thread::sleep(delay);
        let asked = Instant::now();
        let moved = timer.reset(Duration::from_millis(30));
        if moved {
            let deadline = asked + Duration::from_millis(30);
            while fired_at.lock().unwrap().is_none() {
                thread::sleep(Duration::from_millis(1));
            }
            let at = fired_at.lock().unwrap().unwrap();
            assert!(
                at >= deadline,
                "round {round}: fired {:?} early",
                deadline - at
            );
        } else {
            assert_eq!(timer.state(), TimerState::Fired, "round {round}");
        }
    }
}

#[test]
fn a_sleep_reset_moves_it_and_restarts_it_once_elapsed() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let mut sleep = engine.sleep(MS * 10);
    clock.advance(MS * 5);
    sleep.reset(MS * 10); // now due at 15 ms
    clock.advance(MS * 9);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert!(poll_once(&mut sleep, &waker).is_ready());
    sleep.reset(MS * 3); // elapsed: starts over
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS * 3);
    assert!(poll_once(&mut sleep, &waker).is_ready());
}

#[test]
fn a_sleep_beyond_the_range_ends_once_reset_within_it() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    // Beyond the engine's range: never ends, until reset to something it can hold.
    let mut sleep = engine.sleep(Duration::MAX);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    sleep.reset(MS * 10);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS * 10);
    assert!(poll_once(&mut sleep, &waker).is_ready());
}

#[test]
fn a_sleep_reset_keeps_its_waker_until_the_timer_fires() {
    let (clock, engine, waker, woken) = on_manual_clock();
    let mut sleep = engine.sleep(MS * 3);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    // Moved earlier while pending, not polled again: the timer moves with its waker.
    sleep.reset(MS);
    clock.advance(MS);
    assert_eq!(woken(), 1, "woken at the new deadline");
    assert!(poll_once(&mut sleep, &waker).is_ready());
    // Reset after firing, the sleep starts over and takes a timer when polled again.
    sleep.reset(MS * 5);
    assert!(!sleep.is_elapsed());
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS * 5);
    assert_eq!(woken(), 2, "the task is woken again");
    assert!(poll_once(&mut sleep, &waker).is_ready());
}

#[test]
fn a_sleep_moved_later_wakes_once_at_its_old_timer_then_at_its_deadline() {
    let (clock, engine, waker, woken) = on_manual_clock();
    let mut sleep = engine.sleep(MS * 2);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    // Moved later twice: the timer stays at 2 ms, the deadline goes to 6 ms.
    sleep.reset(MS * 4);
    sleep.reset(MS * 6);
    assert_eq!(engine.pending(), 1);
    clock.advance(MS * 2);
    assert_eq!(woken(), 1, "the timer left at 2 ms wakes the task");
    assert!(!sleep.is_elapsed());
    assert!(poll_once(&mut sleep, &waker).is_pending(), "not over");
    assert_eq!(engine.pending(), 1, "the poll took a timer at the deadline");
    clock.advance(MS * 3);
    assert_eq!(woken(), 1);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert_eq!(woken(), 2, "woken at the deadline");
    assert!(sleep.is_elapsed());
    assert!(poll_once(&mut sleep, &waker).is_ready());
    assert_eq!(engine.pending(), 0);
    assert_eq!(
        engine.stats().cancelled,
        0,
        "no timer was cancelled on the way"
    );
}

#[test]
fn a_sleep_reset_at_moves_the_deadline_earlier_or_later() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(counter.clone());
    let start = engine.now();

    // Earlier: from 50 ms to 10 ms.
    let mut sleep = engine.sleep(MS * 50);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    sleep.reset_at(start + MS * 10);
    assert_eq!(sleep.deadline(), Some(start + MS * 10));
    clock.advance(MS * 9);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert_eq!(counter.count(), 1, "woken at the new deadline");
    assert!(poll_once(&mut sleep, &waker).is_ready());

    // Later: from 20 ms to 40 ms (it is 10 ms now).
    let mut sleep = engine.sleep(MS * 10);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    sleep.reset_at(start + MS * 40);
    clock.advance(MS * 10);
    assert!(
        poll_once(&mut sleep, &waker).is_pending(),
        "not at the old deadline"
    );
    clock.advance(MS * 19);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert!(poll_once(&mut sleep, &waker).is_ready());

    // An elapsed sleep starts over.
    sleep.reset_at(start + MS * 45);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS * 4);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert!(poll_once(&mut sleep, &waker).is_ready());
    assert_eq!(engine.pending(), 0);
}

#[test]
fn a_sleep_pushed_later_under_a_cap_keeps_its_place_and_its_deadline() {
    let (clock, engine) = capped(1);
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let mut sleep = engine.sleep(MS * 2);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    sleep.reset(MS * 6);
    clock.advance(MS * 2);
    // Had the sleep let its timer fire at 2 ms, this timer would take its permit, and the
    // sleep would find none for its deadline.
    assert!(
        engine.schedule(MS * 10, || {}).is_err(),
        "the sleep holds the one permit"
    );
    assert!(
        poll_once(&mut sleep, &waker).is_pending(),
        "not ended early"
    );
    clock.advance(MS * 4);
    assert!(poll_once(&mut sleep, &waker).is_ready());
}

#[test]
fn a_timer_reset_at_is_due_at_that_deadline_rounded_up_to_the_tick() {
    let clock = ManualClock::new();
    let engine = one_shard_ticking(&clock, MS * 4);
    let start = engine.now();
    let timer = engine.schedule_at(start + MS * 5, || {}).unwrap();
    assert_eq!(timer.deadline(), start + MS * 8);
    assert!(timer.reset_at(start + MS * 9));
    assert_eq!(timer.deadline(), start + MS * 12);
    clock.advance(MS * 8);
    assert_eq!(timer.state(), TimerState::Pending);
    clock.advance(MS * 4);
    assert_eq!(timer.state(), TimerState::Fired);
}
