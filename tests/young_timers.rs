//! Young timers: a timer due more than a few milliseconds ahead stays in the lane of the thread
//! that scheduled it until it has lived a while. Every promise holds for it as for any other:
//! a thread that stops scheduling does not keep it from firing, shutdown hands it back, a
//! reset moves it, a manual clock sees it, and the counts stay exact.

#![cfg(not(loom))]

mod support;
use support::{manual, PATIENCE};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{TimerEngine, TimerState};

/// Far enough ahead that a timer is kept young, near enough for a test to wait for.
const SOON_BUT_YOUNG: Duration = Duration::from_millis(50);

/// Schedules, on a thread of its own, a timer `delay` ahead that reports when it ran; then the
/// thread blocks until the returned sender is used (or dropped), or exits at once if `exit`.
fn schedule_then_stop(
    engine: &TimerEngine,
    delay: Duration,
    exit: bool,
) -> (mpsc::Receiver<Instant>, mpsc::Sender<()>, Instant) {
    let (ran, has_run) = mpsc::channel();
    let (release, wait) = mpsc::channel::<()>();
    let (scheduled, has_scheduled) = mpsc::channel();
    let engine = engine.clone();
    thread::spawn(move || {
        let at = Instant::now();
        engine
            .schedule(delay, move || {
                let _ = ran.send(Instant::now());
            })
            .unwrap();
        scheduled.send(at).unwrap();
        if !exit {
            let _ = wait.recv();
        }
    });
    let at = has_scheduled.recv_timeout(PATIENCE).unwrap();
    (has_run, release, at)
}

#[test]
fn a_thread_that_blocks_leaves_its_young_timers_to_fire_on_time() {
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let (has_run, _release, at) = schedule_then_stop(&engine, SOON_BUT_YOUNG, false);
    let ran = has_run.recv_timeout(PATIENCE).expect("the shard takes it");
    assert!(ran >= at + SOON_BUT_YOUNG, "never early");
}

#[test]
fn a_thread_that_exits_leaves_its_young_timers_to_fire_on_time() {
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let (has_run, _release, at) = schedule_then_stop(&engine, SOON_BUT_YOUNG, true);
    let ran = has_run.recv_timeout(PATIENCE).expect("the shard takes it");
    assert!(ran >= at + SOON_BUT_YOUNG, "never early");
}

#[test]
fn shutdown_hands_back_the_young_timers_of_a_blocked_thread() {
    const TIMERS: usize = 100;
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let (release, wait) = mpsc::channel::<()>();
    let (scheduled, has_scheduled) = mpsc::channel();
    let owner = {
        let engine = engine.clone();
        thread::spawn(move || {
            let timers: Vec<_> = (0..TIMERS)
                .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
                .collect();
            scheduled.send(()).unwrap();
            let _ = wait.recv();
            timers
        })
    };
    has_scheduled.recv_timeout(PATIENCE).unwrap();
    let unfired = engine.shutdown();
    release.send(()).unwrap();
    let timers = owner.join().unwrap();
    assert_eq!(unfired.len(), TIMERS);
    assert!(timers.iter().all(|t| t.state() == TimerState::HandedBack));
    assert!(timers
        .iter()
        .all(|t| unfired.iter().any(|u| u.timer() == t)));
    assert_eq!(engine.stats().pending, 0);
}

#[test]
fn a_young_timer_reset_earlier_fires_at_its_new_deadline() {
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let (ran, has_run) = mpsc::channel();
    let timer = engine
        .schedule(Duration::from_secs(60), move || {
            let _ = ran.send(Instant::now());
        })
        .unwrap();
    let reset = Instant::now();
    assert!(timer.reset(Duration::from_millis(1)));
    let fired = has_run
        .recv_timeout(PATIENCE)
        .expect("fired at the new deadline");
    assert!(fired >= reset + Duration::from_millis(1), "never early");
    assert_eq!(timer.state(), TimerState::Fired);
}

#[test]
fn a_manual_clock_fires_young_timers_and_finds_their_deadlines() {
    let (clock, engine) = manual();
    let runs = Arc::new(AtomicUsize::new(0));
    let start = clock.now();
    for seconds in [30, 10, 20] {
        let runs = runs.clone();
        engine
            .schedule(Duration::from_secs(seconds), move || {
                runs.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    assert_eq!(clock.next_deadline(), Some(start + Duration::from_secs(10)));
    assert_eq!(
        clock.advance_to_next(),
        Some(start + Duration::from_secs(10))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    clock.advance(Duration::from_secs(20));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[test]
fn young_timers_count_exactly_in_the_stats_and_against_the_cap() {
    const TIMERS: u64 = 1_000;
    let (clock, engine) = support::capped(TIMERS as usize);
    let timers: Vec<_> = (0..TIMERS)
        .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
        .collect();
    assert!(engine.schedule(Duration::from_secs(60), || {}).is_err());
    for timer in timers.iter().step_by(2) {
        assert!(timer.cancel());
    }
    let stats = engine.stats();
    assert_eq!(
        (stats.scheduled, stats.cancelled, stats.pending),
        (TIMERS, TIMERS / 2, TIMERS / 2)
    );
    // Once the shard has taken them in, every cancelled timer's permit is back.
    clock.advance(Duration::ZERO);
    assert_eq!(engine.pending(), TIMERS / 2);
    assert_eq!(engine.stats().pending, TIMERS / 2);
    assert_eq!(engine.shutdown().len() as u64, TIMERS / 2);
}
