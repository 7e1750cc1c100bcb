//! The free functions inside `TimerEngine::enter` and `TimerEngine::scope`: each test gets its
//! own engine on its own manual clock, and the tests of this binary run in parallel, each
//! driving only its own timers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

mod support;
use shardwheel::{ManualClock, TimerEngine, TimerState};
use support::{counting_runs, one_shard_on};

const SEC: Duration = Duration::from_secs(1);

/// An engine of its own on a clock of its own.
fn own_engine() -> (ManualClock, TimerEngine) {
    let clock = ManualClock::new();
    let engine = one_shard_on(&clock);
    (clock, engine)
}

#[test]
fn schedule_on_an_entered_thread_fires_on_its_engines_clock() {
    let (clock, engine) = own_engine();
    let (runs, callback) = counting_runs();
    let _entered = engine.enter();
    let timer = shardwheel::schedule(SEC * 10, callback).unwrap();
    assert_eq!(engine.pending(), 1, "on the entered engine");
    clock.advance(SEC * 9);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "not advanced far enough");
    clock.advance(SEC);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(timer.state(), TimerState::Fired);
}

#[test]
fn a_sleep_in_a_scope_ends_when_its_clock_reaches_it() {
    let (clock, engine) = own_engine();
    let until = clock.now() + SEC * 7;
    let mut task = Box::pin(engine.scope(async move {
        shardwheel::sleep(SEC * 5).await;
        shardwheel::sleep_until(until).await;
    }));
    assert!(task.as_mut().now_or_never().is_none());
    assert_eq!(engine.pending(), 1);
    clock.advance(SEC * 4);
    assert!(task.as_mut().now_or_never().is_none(), "not yet");
    clock.advance(SEC);
    assert!(task.as_mut().now_or_never().is_none(), "on to the second");
    clock.advance(SEC * 2);
    assert!(task.as_mut().now_or_never().is_some());
}

#[test]
fn an_interval_in_a_scope_ticks_on_its_clock() {
    let (clock, engine) = own_engine();
    let start = clock.now();
    let ticks = Arc::new(AtomicUsize::new(0));
    let counted = ticks.clone();
    let mut task = Box::pin(engine.scope(async move {
        let mut interval = shardwheel::interval(SEC * 2);
        loop {
            interval.tick().await;
            counted.fetch_add(1, Ordering::SeqCst);
        }
    }));
    assert!(task.as_mut().now_or_never().is_none());
    assert_eq!(ticks.load(Ordering::SeqCst), 1, "the first tick at once");
    for (next, count) in [(2, 2), (4, 3), (6, 4)] {
        assert_eq!(clock.advance_to_next(), Some(start + SEC * next));
        assert!(task.as_mut().now_or_never().is_none());
        assert_eq!(ticks.load(Ordering::SeqCst), count);
    }
}

#[test]
fn a_timeout_in_a_scope_elapses_on_its_clock() {
    let (clock, engine) = own_engine();
    let mut task = Box::pin(
        engine.scope(async { shardwheel::timeout(SEC * 3, std::future::pending::<()>()).await }),
    );
    assert!(task.as_mut().now_or_never().is_none());
    clock.advance(SEC * 2);
    assert!(task.as_mut().now_or_never().is_none());
    clock.advance(SEC);
    assert!(task.as_mut().now_or_never().unwrap().is_err());
}

#[test]
fn repeating_timers_follow_the_entered_engine() {
    let (clock, engine) = own_engine();
    let (plain, callback) = counting_runs();
    let (built, other) = counting_runs();
    let _entered = engine.enter();
    let every = shardwheel::repeating(SEC).schedule(callback).unwrap();
    let fixed = shardwheel::repeating(SEC * 2)
        .fixed_delay()
        .schedule(other)
        .unwrap();
    assert_eq!(engine.pending(), 2);
    for _ in 0..4 {
        clock.advance(SEC);
    }
    assert_eq!(plain.load(Ordering::SeqCst), 4);
    assert_eq!(built.load(Ordering::SeqCst), 2);
    assert!(every.cancel() && fixed.cancel());
}

#[test]
fn a_scope_keeps_its_engine_on_whatever_thread_polls_it() {
    let (clock, engine) = own_engine();
    let mut task = Box::pin(engine.scope(async { shardwheel::sleep(SEC).await }));
    // First polled on another thread, which has entered nothing.
    let mut task = std::thread::spawn(move || {
        assert!(task.as_mut().now_or_never().is_none());
        task
    })
    .join()
    .unwrap();
    assert_eq!(engine.pending(), 1);
    clock.advance(SEC);
    assert!(task.as_mut().now_or_never().is_some());
}

#[test]
fn entering_nests_and_leaving_puts_back_the_engine_before() {
    let (_outer_clock, outer) = own_engine();
    let (_inner_clock, inner) = own_engine();
    let outer_entered = outer.enter();
    let first = shardwheel::schedule(SEC, || {}).unwrap();
    {
        let _inner_entered = inner.enter();
        let second = shardwheel::schedule(SEC, || {}).unwrap();
        assert_eq!((outer.pending(), inner.pending()), (1, 1));
        assert!(second.cancel());
    }
    let third = shardwheel::schedule(SEC, || {}).unwrap();
    assert_eq!((outer.pending(), inner.pending()), (2, 0));
    drop(outer_entered);
    // Back on the default engine: neither of these sees the timer.
    let on_default = shardwheel::schedule(SEC * 3600, || {}).unwrap();
    assert_eq!((outer.pending(), inner.pending()), (2, 0));
    assert!(on_default.cancel() && first.cancel() && third.cancel());
}

#[test]
fn engines_on_parallel_threads_keep_to_their_own_clocks() {
    let threads: Vec<_> = (1..=4u32)
        .map(|n| {
            std::thread::spawn(move || {
                let (clock, engine) = own_engine();
                let (runs, callback) = counting_runs();
                let _entered = engine.enter();
                shardwheel::schedule(SEC * n, callback).unwrap();
                clock.advance(SEC * n - Duration::from_millis(1));
                assert_eq!(runs.load(Ordering::SeqCst), 0, "engine {n} fired early");
                assert_eq!(clock.advance_to_next(), Some(clock.now()));
                assert_eq!(runs.load(Ordering::SeqCst), 1, "engine {n} did not fire");
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn now_is_the_entered_engines_clock() {
    let (clock, engine) = own_engine();
    let deadline = engine.scope(async {
        // Code under test reads the time as it would from tokio's paused clock.
        shardwheel::now() + SEC * 30
    });
    clock.advance(SEC * 3600);
    let deadline = deadline.now_or_never().unwrap();
    assert_eq!(deadline, clock.now() + SEC * 30);
    let _entered = engine.enter();
    assert_eq!(shardwheel::now(), clock.now());
}

#[test]
fn a_delay_queue_made_by_default_in_a_scope_uses_the_entered_engine() {
    use futures::StreamExt;
    let (clock, engine) = own_engine();
    let _entered = engine.enter();
    let mut queue = shardwheel::delay_queue::DelayQueue::default();
    queue.insert("due", SEC * 5);
    assert!(queue.next().now_or_never().is_none());
    assert_eq!(
        engine.pending(),
        1,
        "the queue's timer is on the entered engine"
    );
    clock.advance(SEC * 5);
    let due = queue
        .next()
        .now_or_never()
        .flatten()
        .expect("due on this clock");
    assert_eq!(due.into_inner(), "due");
}
