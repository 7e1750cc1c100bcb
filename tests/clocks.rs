//! The manual clock: an advance runs what falls due, and `advance_to_next` finds the next timer.

#![cfg(not(loom))]

mod support;
use support::{counting_runs, manual, one_shard_on, one_shard_ticking, scaled};

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use shardwheel::{ManualClock, TimerEngine, TimerState};

const SEC: Duration = Duration::from_secs(1);

#[test]
fn an_advance_waits_for_a_backlog_of_due_timers() {
    let clock = ManualClock::new();
    let engine = one_shard_on(&clock);
    let ran = Arc::new(AtomicUsize::new(0));
    let n = scaled(40_000);
    for _ in 0..n {
        let ran = ran.clone();
        engine
            .schedule(Duration::from_millis(1), move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    clock.advance(Duration::from_millis(1));
    assert_eq!(ran.load(Ordering::SeqCst), n);
}

#[test]
fn advance_waits_for_due_timers_that_callbacks_schedule() {
    let (clock, engine) = manual();
    let engine = Arc::new(engine);
    let ran = Arc::new(AtomicBool::new(false));
    let (e, r) = (Arc::downgrade(&engine), ran.clone());
    engine
        .schedule(SEC, move || {
            let engine = e.upgrade().unwrap();
            let r = r.clone();
            // Due at once: it must run within the same `advance`.
            engine
                .schedule(Duration::ZERO, move || r.store(true, Ordering::SeqCst))
                .unwrap();
        })
        .unwrap();
    clock.advance(SEC);
    assert!(ran.load(Ordering::SeqCst));
}

/// A timer that schedules itself again with a zero delay, each run from the last one's
/// callback: `engine` is held weakly, so the chain ends with the engine (or at `stop`).
fn chain(engine: Weak<TimerEngine>, links: Arc<AtomicUsize>, stop: Arc<AtomicBool>) {
    let Some(strong) = engine.upgrade() else {
        return;
    };
    let _ = strong.schedule(Duration::ZERO, move || {
        links.fetch_add(1, Ordering::SeqCst);
        if !stop.load(Ordering::SeqCst) {
            chain(engine, links, stop);
        }
    });
}

#[test]
fn advance_returns_while_a_timer_keeps_scheduling_itself_due_at_once() {
    let (clock, engine) = manual();
    let engine = Arc::new(engine);
    let (links, stop) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    chain(Arc::downgrade(&engine), links.clone(), stop.clone());
    let (done, returned) = std::sync::mpsc::channel();
    let (advancing, counted) = (clock.clone(), links.clone());
    thread::spawn(move || {
        advancing.advance(Duration::from_millis(1));
        done.send(counted.load(Ordering::SeqCst)).unwrap();
    });
    let waited = returned.recv_timeout(Duration::from_secs(60));
    stop.store(true, Ordering::SeqCst);
    let ran = waited.expect("advance never returned");
    // The advance gives up after 1,024 rounds of a few links each (about three here).
    assert!(ran > 1, "the chain ran within the advance");
    assert!(ran <= 64 * 1024, "advance waited through {ran} links");
}

#[test]
fn a_timer_scheduled_at_the_end_of_manual_time_still_fires() {
    // Below 4.096 µs a tick's 2^51 ticks (the most a deadline can count) end before the manual
    // clock does (at 2^63 ns); a zero or past deadline is due all the same.
    for tick in [
        Duration::from_micros(1),
        Duration::from_nanos(4_095),
        Duration::from_millis(1),
    ] {
        let clock = ManualClock::new();
        let engine = one_shard_ticking(&clock, tick);
        clock.advance(Duration::MAX);
        let ran = Arc::new(AtomicUsize::new(0));
        let (r, s) = (ran.clone(), ran.clone());
        engine
            .schedule(Duration::ZERO, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap_or_else(|e| panic!("a zero delay at a {tick:?} tick: {e}"));
        engine
            .schedule_at(clock.now() - Duration::from_secs(1), move || {
                s.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap_or_else(|e| panic!("a past deadline at a {tick:?} tick: {e}"));
        let mut sleep = Box::pin(engine.sleep(Duration::ZERO));
        let mut queue = shardwheel::delay_queue::DelayQueue::new(&engine);
        queue.insert("due", Duration::ZERO);
        clock.advance(Duration::from_millis(1));
        assert_eq!(ran.load(Ordering::SeqCst), 2, "at a {tick:?} tick");
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(
            sleep.as_mut().poll(&mut cx).is_ready(),
            "a zero sleep, {tick:?}"
        );
        match queue.poll_expired(&mut cx) {
            Poll::Ready(Some(expired)) => assert_eq!(expired.into_inner(), "due"),
            other => panic!("a value due now did not come out at a {tick:?} tick: {other:?}"),
        }
    }
}

#[test]
fn advance_to_next_fires_one_timer_at_a_time() {
    let (clock, engine) = manual();
    let start = clock.now();
    let (first, bump_first) = counting_runs();
    let (second, bump_second) = counting_runs();
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
    let linked = engine.schedule(3 * SEC, || {}).unwrap();
    engine.schedule(10 * SEC, || {}).unwrap();
    clock.advance(Duration::ZERO); // the shards link all three
    assert_eq!(clock.next_deadline(), Some(start + 2 * SEC));
    // One cancelled while linked in its wheel, one before its shard took it in.
    assert!(linked.cancel());
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
    let (fired, bump) = counting_runs();
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
    assert_eq!(
        (earlier.state(), later.state()),
        (TimerState::Fired, TimerState::Pending)
    );
    assert_eq!(clock.advance_to_next(), Some(start + 5 * SEC));
    assert_eq!(later.state(), TimerState::Fired);
}

#[test]
fn advance_to_next_steps_through_a_repeating_timer_and_far_timers() {
    let (clock, engine) = manual();
    let start = clock.now();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let heartbeat = engine
        .repeating(2 * SEC)
        .schedule(move || {
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
    assert_eq!(day.state(), TimerState::Fired);
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

#[test]
fn a_new_clock_stands_still_until_advanced_by_exactly_that_much() {
    let clock = ManualClock::new();
    assert_eq!(clock.elapsed(), Duration::ZERO);
    let before = clock.now();
    clock.advance(Duration::from_millis(5));
    assert_eq!(clock.now() - before, Duration::from_millis(5));
    assert_eq!(clock.elapsed(), Duration::from_millis(5));
}
