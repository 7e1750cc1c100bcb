//! Timers as servers use them: reset (idle timeouts pushed forward on every read) and
//! repeating timers (heartbeats), mostly under a manual clock.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{ManualClock, TimerEngine, TimerHandle};

mod support;
use support::{capped, manual};

const SEC: Duration = Duration::from_secs(1);

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
fn reset_later_never_fires_at_the_old_deadline() {
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
fn reset_earlier_fires_at_the_new_deadline() {
    let (clock, engine) = manual();
    // One timer placed in a coarse wheel level (an hour away), one still queued.
    let (placed, placed_runs) = recording(&engine, &clock, 3600 * SEC);
    clock.advance(Duration::from_millis(1)); // the shards place it
    assert!(placed.reset(2 * SEC));
    let (queued, queued_runs) = recording(&engine, &clock, 3600 * SEC);
    assert!(queued.reset(3 * SEC));
    clock.advance(SEC);
    assert!(placed_runs.lock().unwrap().is_empty());
    clock.advance(SEC + Duration::from_millis(1));
    assert_eq!(placed_runs.lock().unwrap().len(), 1);
    assert!(placed_runs.lock().unwrap()[0] >= 2 * SEC);
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
fn resets_are_exact_over_many_reads() {
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
fn reset_racing_fire_never_fires_at_the_old_deadline() {
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
            assert!(timer.is_expired(), "round {round}");
        }
    }
}

#[test]
fn a_repeating_timer_keeps_a_fixed_rate_without_drift() {
    let (clock, engine) = manual();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    let period = Duration::from_millis(250);
    let heartbeat = engine
        .schedule_repeating(period, move || r.lock().unwrap().push(c.elapsed()))
        .unwrap();
    for _ in 0..1000 {
        clock.advance(period);
    }
    let runs = runs.lock().unwrap().clone();
    assert_eq!(runs.len(), 1000);
    for (n, at) in runs.iter().enumerate() {
        assert_eq!(
            *at,
            period * (n as u32 + 1),
            "run {n} is due at start + n·period"
        );
    }
    assert!(heartbeat.cancel());
    clock.advance(period * 4);
    assert_eq!(engine.pending(), 0);
    let stats = engine.stats();
    assert_eq!(
        stats.scheduled,
        stats.fired + stats.cancelled + stats.returned
    );
}

#[test]
fn missed_runs_are_skipped_not_queued_up() {
    let (clock, engine) = manual();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    engine
        .schedule_repeating(SEC, move || r.lock().unwrap().push(c.elapsed()))
        .unwrap();
    clock.advance(SEC);
    // The engine "was busy" for 3.5 periods: one late run, then back on the 1 s grid.
    clock.advance(Duration::from_millis(3500));
    assert_eq!(runs.lock().unwrap().len(), 2);
    clock.advance(Duration::from_millis(499));
    assert_eq!(runs.lock().unwrap().len(), 2);
    clock.advance(Duration::from_millis(1));
    let runs = runs.lock().unwrap().clone();
    assert_eq!(
        runs,
        vec![SEC, Duration::from_millis(4500), Duration::from_secs(5)]
    );
}

#[test]
fn a_repeating_timer_can_cancel_itself_from_its_callback() {
    let (clock, engine) = manual();
    let runs = Arc::new(AtomicUsize::new(0));
    let slot: Arc<Mutex<Option<TimerHandle>>> = Arc::new(Mutex::new(None));
    let (r, s) = (runs.clone(), slot.clone());
    let handle = engine
        .schedule_repeating(SEC, move || {
            if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                let cancelled = s.lock().unwrap().as_ref().unwrap().cancel();
                assert!(
                    cancelled,
                    "cancel from inside stops the runs after this one"
                );
            }
        })
        .unwrap();
    *slot.lock().unwrap() = Some(handle);
    for _ in 0..10 {
        clock.advance(SEC);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(engine.pending(), 0);
    assert!(slot.lock().unwrap().as_ref().unwrap().is_cancelled());
}

#[test]
fn a_slow_repeating_callback_never_overlaps_itself() {
    let engine = TimerEngine::builder().callback_threads(4).build().unwrap();
    let running = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let (busy, o, r) = (running.clone(), overlaps.clone(), runs.clone());
    let timer = engine
        .schedule_repeating(Duration::from_millis(5), move || {
            if busy.swap(true, Ordering::SeqCst) {
                o.fetch_add(1, Ordering::SeqCst);
            }
            r.fetch_add(1, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(12));
            busy.store(false, Ordering::SeqCst);
        })
        .unwrap();
    thread::sleep(Duration::from_millis(300));
    assert!(timer.cancel());
    thread::sleep(Duration::from_millis(50));
    let made = runs.load(Ordering::SeqCst);
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    // 300 ms of a 5 ms rhythm is 60 slots; a 12 ms callback can use at most one in three
    // (loose bounds: the machine may be busy).
    assert!((3..=30).contains(&made), "{made} runs");
    thread::sleep(Duration::from_millis(30));
    assert_eq!(runs.load(Ordering::SeqCst), made, "no run after the cancel");
}

#[test]
fn a_repeating_timer_is_handed_back_once_at_shutdown() {
    let (clock, engine) = manual();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let handle = engine
        .schedule_repeating(SEC, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(SEC);
    clock.advance(SEC);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let unfired = engine.shutdown();
    assert_eq!(unfired.len(), 1);
    for timer in unfired {
        timer.run(); // runs it once more, here
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert!(!handle.cancel());
    let stats = engine.stats();
    assert_eq!(stats.pending, 0);
    assert_eq!(
        stats.scheduled,
        stats.fired + stats.cancelled + stats.returned
    );
}

#[test]
fn a_repeating_timer_holds_one_cap_place_for_its_whole_life() {
    let (clock, engine) = capped(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let heartbeat = engine
        .schedule_repeating(SEC, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    for _ in 0..5 {
        clock.advance(SEC);
        // Between runs the place stays taken: no one-shot timer can slip in and stop it.
        assert!(engine.schedule(SEC, || {}).is_err());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 5);
    assert!(heartbeat.cancel());
    // The place comes back once the shard lets go of the timer, on its next turn.
    clock.advance(Duration::ZERO);
    assert!(
        engine.schedule(SEC, || {}).is_ok(),
        "the place is free again"
    );
}

#[test]
fn a_panicking_repeating_callback_stops_its_timer_for_good() {
    let (clock, engine) = capped(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let timer = engine
        .schedule_repeating(SEC, move || {
            if r.fetch_add(1, Ordering::SeqCst) == 1 {
                panic!("the second run panics on purpose");
            }
        })
        .unwrap();
    for _ in 0..5 {
        clock.advance(SEC);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(engine.stats().panicked, 1);
    assert!(timer.is_expired());
    assert!(!timer.cancel(), "it had already stopped");
    assert!(
        engine.schedule(SEC, || {}).is_ok(),
        "its cap place was given back"
    );
    assert_eq!(engine.pending(), 1);
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
fn chain(engine: std::sync::Weak<TimerEngine>, links: Arc<AtomicUsize>, stop: Arc<AtomicBool>) {
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
    // The advance gives up after 1,024 rounds of a few links each (about three here; without
    // the bound it went on for hundreds of thousands, until a round happened to miss one).
    assert!(ran > 1, "the chain ran within the advance");
    assert!(ran <= 64 * 1024, "advance waited through {ran} links");
}
