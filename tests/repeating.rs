//! Repeating timers: fixed rate or delay, missed runs, steering and cancelling from the callback.

mod support;
use support::{capped, counting_runs, manual};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use shardwheel::engine::{Repeat, RepeatBuilder};
use shardwheel::{ScheduleError, TimerEngine, TimerHandle, TimerState};

const SEC: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

#[test]
fn a_repeating_timer_keeps_a_fixed_rate_without_drift() {
    let (clock, engine) = manual();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    let period = Duration::from_millis(250);
    let heartbeat = engine
        .repeating(period)
        .schedule(move || r.lock().unwrap().push(c.elapsed()))
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
        stats.fired + stats.cancelled + stats.handed_back
    );
}

#[test]
fn a_repeating_timer_skips_missed_runs_rather_than_queueing_them() {
    let (clock, engine) = manual();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    engine
        .repeating(SEC)
        .schedule(move || r.lock().unwrap().push(c.elapsed()))
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
fn a_callback_that_doubles_its_period_runs_at_the_expected_instants() {
    let (clock, engine) = manual();
    let start = engine.now();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    let timer = engine
        .repeating(SEC)
        .schedule_with(move |run| {
            r.lock()
                .unwrap()
                .push((c.now() - start, run.due() - start, run.period()));
            run.set_period(run.period() * 2);
        })
        .unwrap();
    for _ in 0..20 {
        clock.advance(SEC);
    }
    let runs = runs.lock().unwrap().clone();
    let at = |s: u64| Duration::from_secs(s);
    assert_eq!(
        runs,
        vec![
            (at(1), at(1), at(1)),
            (at(3), at(3), at(2)),
            (at(7), at(7), at(4)),
            (at(15), at(15), at(8)),
        ]
    );
    assert!(timer.cancel());
}

#[test]
fn a_new_period_keeps_a_fixed_rate_from_the_run_that_set_it() {
    let (clock, engine) = manual();
    let start = engine.now();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    engine
        .repeating(SEC)
        .schedule_with(move |run| {
            r.lock().unwrap().push(c.now() - start);
            if run.due() - start == 2 * SEC {
                run.set_period(3 * SEC);
            }
        })
        .unwrap();
    for _ in 0..12 {
        clock.advance(SEC);
    }
    let secs: Vec<u64> = runs.lock().unwrap().iter().map(|d| d.as_secs()).collect();
    assert_eq!(secs, vec![1, 2, 5, 8, 11]);
}

#[test]
fn first_at_runs_first_at_the_chosen_instant() {
    let (clock, engine) = manual();
    let start = engine.now();
    let first = start + Duration::from_millis(2500);
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    let timer = engine
        .repeating(SEC)
        .first_at(first)
        .schedule(move || r.lock().unwrap().push(c.now() - start))
        .unwrap();
    assert_eq!(timer.deadline(), first);
    for _ in 0..9 {
        clock.advance(Duration::from_millis(500));
    }
    let runs = runs.lock().unwrap().clone();
    assert_eq!(
        runs,
        vec![
            Duration::from_millis(2500),
            Duration::from_millis(3500),
            Duration::from_millis(4500)
        ]
    );
    assert!(timer.cancel());
}

#[test]
fn first_at_a_past_instant_runs_at_once_then_on_its_grid() {
    let (clock, engine) = manual();
    clock.advance(10 * SEC);
    let start = engine.now();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    engine
        .repeating(SEC)
        .first_at(start - Duration::from_millis(2500))
        .schedule(move || r.lock().unwrap().push(c.now() - start))
        .unwrap();
    clock.advance(Duration::ZERO);
    clock.advance(Duration::from_millis(499));
    assert_eq!(runs.lock().unwrap().len(), 1);
    clock.advance(MS);
    let runs = runs.lock().unwrap().clone();
    // Due at -2.5 s: runs at once; the grid then says -1.5, -0.5 (missed), 0.5.
    assert_eq!(runs, vec![Duration::ZERO, Duration::from_millis(500)]);
}

/// A repeating timer of period `period`, at a fixed delay or at the default fixed rate.
fn paced(engine: &TimerEngine, period: Duration, fixed_delay: bool) -> RepeatBuilder<'_> {
    let repeating = engine.repeating(period);
    if fixed_delay {
        repeating.fixed_delay()
    } else {
        repeating
    }
}

/// Runs a repeating timer of period 1 s whose first run, at 1 s, lasts 2.5 s of the manual
/// clock (it blocks while another thread advances the clock); returns the instants of its
/// runs, measured from the start, as the clock then moves on in steps of 500 ms up to 6 s.
fn runs_after_a_long_first_run(fixed_delay: bool) -> Vec<Duration> {
    let (clock, engine) = manual();
    let start = engine.now();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (started, has_started) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let (r, c) = (runs.clone(), clock.clone());
    let callback = move || {
        let mut runs = r.lock().unwrap();
        runs.push(c.now() - start);
        if runs.len() == 1 {
            drop(runs);
            started.send(()).unwrap();
            released.recv().unwrap();
        }
    };
    let timer = paced(&engine, SEC, fixed_delay).schedule(callback).unwrap();
    // The first run begins within this advance, which then waits for it to return.
    let first = clock.clone();
    let first = thread::spawn(move || first.advance(SEC));
    has_started.recv_timeout(Duration::from_secs(60)).unwrap();
    // The clock moves at once; the advance then waits for the run too.
    let long = clock.clone();
    let long = thread::spawn(move || long.advance(Duration::from_millis(2500)));
    while clock.now() - start < Duration::from_millis(3500) {
        thread::yield_now();
    }
    release.send(()).unwrap();
    first.join().unwrap();
    long.join().unwrap();
    assert_eq!(runs.lock().unwrap().len(), 1, "no run was due at 3.5 s");
    for _ in 0..5 {
        clock.advance(Duration::from_millis(500));
    }
    assert!(timer.cancel());
    let runs = runs.lock().unwrap().clone();
    runs
}

#[test]
fn fixed_rate_and_fixed_delay_differ_after_a_long_run() {
    let ms = |n: u64| Duration::from_millis(n);
    // Fixed rate: back on the 1 s grid (2 s and 3 s were missed and skipped).
    assert_eq!(
        runs_after_a_long_first_run(false),
        vec![ms(1000), ms(4000), ms(5000), ms(6000)]
    );
    // Fixed delay: 1 s after the long run returned at 3.5 s, then every second.
    assert_eq!(
        runs_after_a_long_first_run(true),
        vec![ms(1000), ms(4500), ms(5500)]
    );
}

#[test]
fn a_fixed_delay_timer_can_change_its_period_and_start_at_an_instant() {
    let (clock, engine) = manual();
    let start = engine.now();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    let timer = engine
        .repeating(SEC)
        .first_at(start + 2 * SEC)
        .fixed_delay()
        .keyed(7)
        .schedule_with(move |run| {
            r.lock().unwrap().push((c.now() - start).as_secs());
            run.set_period(run.period() + SEC);
        })
        .unwrap();
    for _ in 0..12 {
        clock.advance(SEC);
    }
    assert_eq!(*runs.lock().unwrap(), vec![2, 4, 7, 11]);
    assert!(timer.cancel());
}

#[test]
fn a_zero_period_is_refused_at_either_pace_and_set_later_repeats_once_a_tick() {
    for fixed_delay in [false, true] {
        let (clock, engine) = manual();
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let refused = paced(&engine, Duration::ZERO, fixed_delay)
            .schedule(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap_err();
        assert!(matches!(refused, ScheduleError::ZeroPeriod(_)));
        refused.into_inner()();
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "the callback is handed back"
        );
        // Set from inside a run, a zero period is taken as one tick.
        let r = runs.clone();
        let timer = paced(&engine, MS, fixed_delay)
            .schedule_with(move |run| {
                r.fetch_add(1, Ordering::SeqCst);
                run.set_period(Duration::ZERO);
            })
            .unwrap();
        for n in 2..=6 {
            clock.advance(MS);
            assert_eq!(runs.load(Ordering::SeqCst), n, "fixed delay: {fixed_delay}");
        }
        assert!(timer.cancel());
    }
}

#[test]
fn a_repeating_timer_can_cancel_itself_from_its_callback() {
    let (clock, engine) = manual();
    let runs = Arc::new(AtomicUsize::new(0));
    let slot: Arc<Mutex<Option<TimerHandle>>> = Arc::new(Mutex::new(None));
    let (r, s) = (runs.clone(), slot.clone());
    let handle = engine
        .repeating(SEC)
        .schedule(move || {
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
    let state = slot.lock().unwrap().as_ref().unwrap().state();
    assert_eq!(state, TimerState::Cancelled);
}

#[test]
fn a_callback_that_cancels_itself_on_its_third_run_runs_three_times() {
    let (clock, engine) = capped(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let timer = engine
        .repeating(SEC)
        .schedule_with(move |run: &mut Repeat| {
            if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                assert!(run.cancel(), "the first cancel stops the timer");
                assert!(!run.cancel(), "a second one finds it stopped");
                assert!(run.is_cancelled());
            }
        })
        .unwrap();
    for _ in 0..2 {
        clock.advance(SEC);
        assert!(engine.schedule(SEC, || {}).is_err(), "the permit is held");
    }
    for _ in 0..8 {
        clock.advance(SEC);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(timer.state(), TimerState::Cancelled);
    assert!(!timer.cancel());
    assert_eq!(engine.pending(), 0);
    assert!(engine.schedule(SEC, || {}).is_ok(), "the permit came back");
}

#[test]
fn a_slow_repeating_callback_never_overlaps_itself() {
    let engine = TimerEngine::builder().callback_threads(4).build().unwrap();
    let running = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let (busy, o, r) = (running.clone(), overlaps.clone(), runs.clone());
    let timer = engine
        .repeating(Duration::from_millis(5))
        .schedule(move || {
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
fn a_panicking_repeating_callback_stops_its_timer_for_good() {
    let (clock, engine) = capped(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let timer = engine
        .repeating(SEC)
        .schedule(move || {
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
    assert_eq!(timer.state(), TimerState::Fired);
    assert!(!timer.cancel(), "it had already stopped");
    assert!(
        engine.schedule(SEC, || {}).is_ok(),
        "its permit was released"
    );
    assert_eq!(engine.pending(), 1);
}

#[test]
fn a_repeating_timer_holds_one_permit_for_its_whole_life() {
    let (clock, engine) = capped(1);
    let (runs, count) = counting_runs();
    let heartbeat = engine.repeating(SEC).schedule(count).unwrap();
    for _ in 0..5 {
        clock.advance(SEC);
        // Between runs the permit stays taken: no one-shot timer can slip in and stop it.
        assert!(engine.schedule(SEC, || {}).is_err());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 5);
    assert!(heartbeat.cancel());
    // The permit comes back once the shard lets go of the timer, on its next turn.
    clock.advance(Duration::ZERO);
    assert!(
        engine.schedule(SEC, || {}).is_ok(),
        "the permit is free again"
    );
}

#[test]
fn a_refused_repeating_timer_hands_its_callback_back() {
    let (_clock, engine) = manual();
    let too_far = engine.now() + engine.max_delay() * 2;
    let refused = engine
        .repeating(SEC)
        .first_at(too_far)
        .schedule(|| {})
        .unwrap_err();
    assert!(matches!(refused, ScheduleError::DelayTooLong(_)));
    engine.shutdown();
    let refused = engine
        .repeating(SEC)
        .schedule_with(|run: &mut Repeat| {
            run.cancel();
        })
        .unwrap_err();
    assert!(matches!(refused, ScheduleError::Shutdown(_)));
}

#[test]
fn a_repeating_timer_is_handed_back_once_at_shutdown() {
    let (clock, engine) = manual();
    let (runs, count) = counting_runs();
    let handle = engine.repeating(SEC).schedule(count).unwrap();
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
        stats.fired + stats.cancelled + stats.handed_back
    );
}

#[test]
fn a_run_made_after_shutdown_cannot_cancel() {
    let (clock, engine) = manual();
    let start = engine.now();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    engine
        .repeating(SEC)
        .schedule_with(move |run| {
            let due = run.due() - start;
            // The run made after shutdown (due at 2 s) tries to cancel.
            let cancelled = due == 2 * SEC && run.cancel();
            s.lock().unwrap().push((due, cancelled));
        })
        .unwrap();
    clock.advance(SEC);
    let unfired = engine.shutdown();
    assert_eq!(unfired.len(), 1);
    for timer in unfired {
        timer.run();
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, vec![(SEC, false), (2 * SEC, false)]);
}
