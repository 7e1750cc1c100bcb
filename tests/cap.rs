//! The cap on pending timers (`max_pending`): refusals with `Full`, and what holds a permit.

#![cfg(not(loom))]

mod support;
use support::{wait_until, PATIENCE};

use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use shardwheel::{ScheduleError, TimerEngine};

/// Schedules a callback that holds the thread it runs on until the sender returned is used (or
/// dropped), and waits until it runs.
fn hold_a_callback_thread(engine: &TimerEngine) -> mpsc::Sender<()> {
    let (started, has_started) = mpsc::channel();
    let (go, wait_for_go) = mpsc::channel::<()>();
    engine
        .schedule(Duration::ZERO, move || {
            started.send(()).unwrap();
            let _ = wait_for_go.recv();
        })
        .unwrap();
    has_started.recv_timeout(PATIENCE).unwrap();
    go
}

/// Schedules no-op timers `delay` ahead, at most `tries` of them, handing each to `accepted`,
/// until the engine answers `Full`; returns how many it accepted and whether it refused.
fn schedule_until_full(
    engine: &TimerEngine,
    delay: Duration,
    tries: usize,
    mut accepted: impl FnMut(shardwheel::TimerHandle),
) -> (usize, bool) {
    for n in 0..tries {
        match engine.schedule(delay, || {}) {
            Ok(timer) => accepted(timer),
            Err(ScheduleError::Full(_)) => return (n, true),
            Err(other) => panic!("unexpected refusal: {other}"),
        }
    }
    (tries, false)
}

#[test]
fn the_cap_refuses_with_full_and_keeps_the_count_exact() {
    let engine = TimerEngine::builder().max_pending(3).build().unwrap();
    let handles: Vec<_> = (0..3)
        .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
        .collect();
    assert!(matches!(
        engine.schedule(Duration::from_secs(60), || {}),
        Err(ScheduleError::Full(_))
    ));
    assert_eq!(engine.pending(), 3);
    assert!(handles[0].cancel());
    // The cancelled timer's permit comes back once its shard lets go of it, within a turn.
    let mut again = None;
    wait_until("the cancelled timer's permit comes back", || {
        again = engine.schedule(Duration::from_secs(60), || {}).ok();
        again.is_some()
    });
    let again = again.unwrap();
    assert_eq!(engine.pending(), 3);
    assert!(again.cancel());
    assert_eq!(engine.shutdown().len(), 2);
    assert!(engine.stats().rejected >= 1);
}

/// Due too soon to be kept young: a timer that goes to its shard at once.
const SOON: Duration = Duration::from_millis(1);

#[test]
fn a_cancelled_timer_counts_against_the_cap_until_its_shard_drops_it() {
    const CAP: usize = 8;
    let engine = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .max_pending(CAP)
        .build()
        .unwrap();
    // The shard is held, so the cancelled timer below keeps its permit until it is let go.
    let go = hold_a_callback_thread(&engine);
    let cancelled = engine.schedule(SOON, || {}).unwrap();
    assert!(cancelled.cancel());
    let mut held = Vec::new();
    while engine.pending() < CAP as u64 {
        held.push(engine.schedule(Duration::from_secs(60), || {}).unwrap());
    }
    assert!(matches!(
        engine.schedule(Duration::from_secs(60), || {}),
        Err(ScheduleError::Full(_))
    ));
    assert_eq!(
        held.len(),
        CAP - 1,
        "the cancelled timer counts until its shard drops it"
    );
    go.send(()).unwrap();
    assert_eq!(engine.shutdown().len(), CAP - 1);
}

#[test]
fn a_timer_cancelled_young_gives_its_place_back_with_the_shard_held() {
    const CAP: usize = 4;
    let engine = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .max_pending(CAP)
        .build()
        .unwrap();
    let go = hold_a_callback_thread(&engine);
    // Far timers stay young in this thread's lane: each cancel frees its place at this
    // thread's next schedule, however many there are, while the shard is held.
    let (accepted, refused) =
        schedule_until_full(&engine, Duration::from_secs(60), 100 * CAP, |timer| {
            assert!(timer.cancel());
        });
    assert!(!refused, "refused after {accepted} cancelled young timers");
    assert!(engine.pending() <= 1, "only the last one is not swept yet");
    go.send(()).unwrap();
    assert_eq!(engine.shutdown().len(), 0);
    assert_eq!(engine.stats().pending, 0);
    assert_eq!(engine.stats().cancelled, 100 * CAP as u64);
}

#[test]
fn the_cap_bounds_what_a_stalled_shard_holds() {
    const CAP: usize = 1_000;
    let engine = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .pin_threads(false)
        .max_pending(CAP)
        .build()
        .unwrap();
    // An inline callback that holds the shard until told to go.
    let go = hold_a_callback_thread(&engine);
    let (accepted, refused) = schedule_until_full(&engine, SOON, 100 * CAP, |timer| {
        assert!(timer.cancel());
    });
    assert!(
        refused,
        "{accepted} timers queued behind a stalled shard under a cap of {CAP}"
    );
    assert!(accepted <= CAP);
    go.send(()).unwrap();
    // Once the shard takes its queues again, the permits come back.
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        match engine.schedule(Duration::from_secs(60), || {}) {
            Ok(timer) => {
                timer.cancel();
                break;
            }
            Err(_) if std::time::Instant::now() < deadline => thread::yield_now(),
            Err(_) => panic!("the cap's permits never came back"),
        }
    }
    assert_eq!(engine.shutdown().len(), 0);
    assert_eq!(engine.stats().pending, 0);
}

#[test]
fn the_cap_bounds_callbacks_waiting_for_a_busy_pool() {
    const CAP: usize = 100;
    let engine = TimerEngine::builder()
        .shards(1)
        .callback_threads(1)
        .pin_threads(false)
        .max_pending(CAP)
        .build()
        .unwrap();
    // A callback that holds the pool's one thread until told to go.
    let go = hold_a_callback_thread(&engine);
    let mut fired_before = engine.stats().fired;
    let (_, refused) = schedule_until_full(&engine, Duration::ZERO, 10 * CAP, |_| {
        // Wait until the shard has fired it: its callback now waits for the pool.
        let deadline = std::time::Instant::now() + PATIENCE;
        while engine.stats().fired == fired_before {
            assert!(std::time::Instant::now() < deadline, "never fired");
            thread::yield_now();
        }
        fired_before += 1;
    });
    assert!(
        refused,
        "callbacks piled up behind a busy pool under a cap of {CAP}"
    );
    go.send(()).unwrap();
    assert!(engine.shutdown().is_empty());
    assert_eq!(engine.stats().pending, 0);
}

/// Re-arms a timer from its own callback `runs` times on `engine`, whose cap is one: each
/// callback schedules its successor, the way a heartbeat or an idle check re-arms itself.
fn rearm_from_its_own_callback(engine: TimerEngine, runs: usize) {
    fn arm(engine: Arc<TimerEngine>, left: usize, done: mpsc::Sender<()>) {
        let next = engine.clone();
        // A refusal drops the callback and `done` with it: the receiver sees the channel close.
        let _ = engine.schedule(Duration::from_millis(1), move || {
            if left > 1 {
                arm(next, left - 1, done);
            } else {
                done.send(()).unwrap();
            }
        });
    }
    let engine = Arc::new(engine);
    let (done, finished) = mpsc::channel();
    arm(engine.clone(), runs, done);
    assert_eq!(
        finished.recv_timeout(PATIENCE),
        Ok(()),
        "every re-arming was taken under a cap of one"
    );
}

#[test]
fn a_callback_can_rearm_itself_at_a_cap_of_one_on_the_pool() {
    let engine = TimerEngine::builder()
        .shards(1)
        .max_pending(1)
        .build()
        .unwrap();
    rearm_from_its_own_callback(engine, 10);
}

#[test]
fn a_callback_can_rearm_itself_at_a_cap_of_one_inline() {
    let engine = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .max_pending(1)
        .build()
        .unwrap();
    rearm_from_its_own_callback(engine, 10);
}
