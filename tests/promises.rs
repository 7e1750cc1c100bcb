//! Promises kept under odd use: what a user who holds the engine in unusual ways can rely on.
//! Each test here was written against a defect and seen to fail before its fix.

#![cfg(not(loom))]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use shardwheel::{ManualClock, ScheduleError, Sleep, TimerEngine, TimerState};

/// Long enough that a pass never waits for it; a failure shows as this wait running out.
const PATIENCE: Duration = Duration::from_secs(60);

fn manual_engine(clock: &ManualClock) -> TimerEngine {
    manual_engine_ticking(clock, Duration::from_millis(1))
}

fn manual_engine_ticking(clock: &ManualClock, tick: Duration) -> TimerEngine {
    TimerEngine::builder()
        .shards(1)
        .pin_threads(false)
        .tick(tick)
        .manual_clock(clock)
        .build()
        .unwrap()
}

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

/// A waker that counts its wakes.
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn dropping_a_pending_sleep_or_timeout_does_not_wake_its_task() {
    let clock = ManualClock::new();
    let engine = manual_engine(&clock);
    let wakes = Arc::new(Counting(AtomicUsize::new(0)));
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);

    let mut sleep = Box::pin(engine.sleep(Duration::from_secs(10)));
    assert!(sleep.as_mut().poll(&mut cx).is_pending());
    drop(sleep);
    assert_eq!(wakes.0.load(Ordering::SeqCst), 0, "woken by its own drop");

    // The RPC pattern: the response comes first, and the timeout is dropped.
    let answered = AtomicBool::new(false);
    let response = std::future::poll_fn(|_| {
        if answered.load(Ordering::SeqCst) {
            Poll::Ready(7)
        } else {
            Poll::Pending
        }
    });
    let mut call = Box::pin(engine.timeout(Duration::from_secs(10), response));
    assert!(call.as_mut().poll(&mut cx).is_pending());
    answered.store(true, Ordering::SeqCst);
    assert_eq!(call.as_mut().poll(&mut cx), Poll::Ready(Ok(7)));
    drop(call);
    clock.advance(Duration::from_secs(20));
    assert_eq!(
        wakes.0.load(Ordering::SeqCst),
        0,
        "a finished timeout woke its task"
    );
}

/// A waker that drops every sleep in a list when woken (tokio's `drop_from_wake` pattern).
struct DropsSleeps(Mutex<Vec<Pin<Box<Sleep>>>>);

impl Wake for DropsSleeps {
    fn wake(self: Arc<Self>) {
        self.0.lock().unwrap().clear();
    }
}

#[test]
fn a_waker_that_drops_sleeps_does_not_deadlock() {
    let clock = ManualClock::new();
    let engine = manual_engine(&clock);
    let sleeps = Arc::new(DropsSleeps(Mutex::new(Vec::new())));
    let waker = Waker::from(sleeps.clone());
    let mut cx = Context::from_waker(&waker);
    {
        let mut list = sleeps.0.lock().unwrap();
        list.push(Box::pin(engine.sleep(Duration::from_millis(10))));
        list.push(Box::pin(engine.sleep(Duration::from_secs(10))));
        for sleep in list.iter_mut() {
            assert!(sleep.as_mut().poll(&mut cx).is_pending());
        }
    }
    let (done, advanced) = mpsc::channel();
    thread::spawn(move || {
        clock.advance(Duration::from_millis(20));
        done.send(()).unwrap();
    });
    advanced
        .recv_timeout(PATIENCE)
        .expect("the clock's advance returned");
    assert!(sleeps.0.lock().unwrap().is_empty());
}

#[test]
fn max_delay_is_accepted_at_every_tick_the_builder_allows() {
    let ticks = [
        Duration::from_micros(1),
        Duration::from_millis(1),
        Duration::from_millis(268),
        Duration::from_millis(269),
        Duration::from_secs(1),
        Duration::from_secs(3600),
    ];
    for tick in ticks {
        let clock = ManualClock::new();
        let engine = manual_engine_ticking(&clock, tick);
        clock.advance(tick * 3 + Duration::from_millis(1));
        let max = engine.max_delay();
        assert!(engine.schedule(max, || {}).is_ok(), "tick {tick:?}");
        assert!(
            engine.schedule_at(engine.now() + max, || {}).is_ok(),
            "tick {tick:?}"
        );
        assert!(engine.sleep(max).deadline().is_some(), "tick {tick:?}");
        assert!(
            matches!(
                engine.schedule(max + tick * 3, || {}),
                Err(ScheduleError::DelayTooLong(_))
            ),
            "tick {tick:?}"
        );
    }
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
    let (accepted, refused) =
        schedule_until_full(&engine, Duration::from_secs(60), 100 * CAP, |timer| {
            assert!(timer.cancel());
        });
    assert!(
        refused,
        "{accepted} timers queued behind a stalled shard under a cap of {CAP}"
    );
    assert!(accepted <= CAP);
    go.send(()).unwrap();
    // Once the shard takes its queues again, the places come back.
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        match engine.schedule(Duration::from_secs(60), || {}) {
            Ok(timer) => {
                timer.cancel();
                break;
            }
            Err(_) if std::time::Instant::now() < deadline => thread::yield_now(),
            Err(_) => panic!("the cap's places never came back"),
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

/// Schedules a batch of `fast` timers and `slow` ones that block until let go, all due at one
/// instant on one shard with a pool of `threads`, and returns how many fast ones ran while the
/// slow ones blocked.
fn fast_run_beside_slow(threads: usize, fast: usize, slow: usize) -> usize {
    let engine = TimerEngine::builder()
        .shards(1)
        .callback_threads(threads)
        .pin_threads(false)
        .build()
        .unwrap();
    // All due at one instant, so the shard fires them in one batch, the slow ones among them.
    let due = std::time::Instant::now() + Duration::from_millis(50);
    let ran = Arc::new(AtomicUsize::new(0));
    let (go, wait_for_go) = mpsc::channel::<()>();
    let wait_for_go = Arc::new(Mutex::new(wait_for_go));
    let every = (fast + slow) / slow;
    for i in 0..fast + slow {
        if i % every == every / 2 {
            let wait = wait_for_go.clone();
            engine
                .schedule_at(due, move || {
                    let _ = wait.lock().unwrap().recv();
                })
                .unwrap();
        } else {
            let ran = ran.clone();
            engine
                .schedule_at(due, move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
        }
    }
    assert!(
        std::time::Instant::now() < due,
        "scheduling ran past the due instant: the batch may have been split"
    );
    let deadline = std::time::Instant::now() + PATIENCE;
    while ran.load(Ordering::SeqCst) < fast && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
    let done = ran.load(Ordering::SeqCst);
    for _ in 0..slow {
        go.send(()).unwrap();
    }
    done
}

#[test]
fn a_slow_callback_holds_up_no_timer_of_its_batch_while_a_pool_thread_is_free() {
    assert_eq!(
        fast_run_beside_slow(2, 1_000, 1),
        1_000,
        "timers waited behind the slow callback of their batch"
    );
}

/// Two slow callbacks on a pool of three threads: once each of the first two runners is stuck
/// in one, with callbacks left behind it, the shard sees callbacks it handed over that have
/// not begun and starts the third runner, which steals the rest.
#[test]
fn two_slow_callbacks_hold_up_no_timer_of_their_batch_while_a_pool_thread_is_free() {
    assert_eq!(
        fast_run_beside_slow(3, 1_000, 2),
        1_000,
        "timers waited behind the two slow callbacks of their batch"
    );
}

#[test]
fn every_shutdown_waits_for_the_callbacks_in_flight() {
    let engine = Arc::new(TimerEngine::builder().pin_threads(false).build().unwrap());
    let finished = Arc::new(AtomicBool::new(false));
    let (started, has_started) = mpsc::channel();
    let f = finished.clone();
    engine
        .schedule(Duration::ZERO, move || {
            started.send(()).unwrap();
            thread::sleep(Duration::from_millis(300));
            f.store(true, Ordering::SeqCst);
        })
        .unwrap();
    has_started.recv_timeout(PATIENCE).unwrap();
    let other = {
        let (engine, finished) = (engine.clone(), finished.clone());
        thread::spawn(move || {
            engine.shutdown();
            finished.load(Ordering::SeqCst)
        })
    };
    engine.shutdown();
    assert!(
        finished.load(Ordering::SeqCst),
        "returned while a callback ran"
    );
    assert!(
        other.join().unwrap(),
        "the other caller returned while a callback ran"
    );
    assert!(engine.is_shutdown());
}

#[test]
fn a_shutdown_begun_in_a_callback_is_finished_by_the_next_caller() {
    let engine = Arc::new(TimerEngine::builder().pin_threads(false).build().unwrap());
    let far = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    let finished = Arc::new(AtomicBool::new(false));
    let (inside, handed_back_inside) = mpsc::channel();
    let (e, f) = (engine.clone(), finished.clone());
    engine
        .schedule(Duration::ZERO, move || {
            inside.send(e.shutdown().len()).unwrap();
            thread::sleep(Duration::from_millis(200));
            f.store(true, Ordering::SeqCst);
        })
        .unwrap();
    assert_eq!(handed_back_inside.recv_timeout(PATIENCE).unwrap(), 0);
    assert!(engine.is_shutdown());
    let unfired = engine.shutdown();
    assert!(
        finished.load(Ordering::SeqCst),
        "returned while the callback ran"
    );
    assert_eq!(
        unfired.len(),
        1,
        "the pending timer is handed to the next caller"
    );
    assert_eq!(unfired[0].timer(), &far);
    assert_eq!(far.state(), TimerState::HandedBack);
    assert!(engine.shutdown().is_empty());
}

#[test]
fn dropping_the_engine_after_a_shutdown_in_its_callback_waits_for_it() {
    let engine = Arc::new(TimerEngine::builder().pin_threads(false).build().unwrap());
    let finished = Arc::new(AtomicBool::new(false));
    let (inside, shut_inside) = mpsc::channel();
    let (weak, f) = (Arc::downgrade(&engine), finished.clone());
    engine
        .schedule(Duration::ZERO, move || {
            if let Some(engine) = weak.upgrade() {
                engine.shutdown();
            }
            inside.send(()).unwrap();
            thread::sleep(Duration::from_millis(200));
            f.store(true, Ordering::SeqCst);
        })
        .unwrap();
    shut_inside.recv_timeout(PATIENCE).unwrap();
    // The callback has let go of its reference: this is the last one.
    while Arc::strong_count(&engine) > 1 {
        thread::yield_now();
    }
    drop(engine);
    assert!(
        finished.load(Ordering::SeqCst),
        "dropped while the callback ran"
    );
}

#[test]
fn handed_back_timers_can_be_matched_to_their_handles() {
    let clock = ManualClock::new();
    let engine = manual_engine(&clock);
    let fired = engine.schedule(Duration::from_secs(1), || {}).unwrap();
    let cancelled = engine.schedule(Duration::from_secs(60), || {}).unwrap();
    let kept: Vec<_> = (0..3)
        .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
        .collect();
    assert_eq!(fired.state(), TimerState::Pending);
    clock.advance(Duration::from_secs(1));
    assert!(cancelled.cancel());
    assert!(!engine.is_shutdown());
    let unfired = engine.shutdown();
    assert!(engine.is_shutdown());
    assert_eq!(fired.state(), TimerState::Fired);
    assert_eq!(cancelled.state(), TimerState::Cancelled);
    assert_eq!(unfired.len(), kept.len());
    for timer in &kept {
        assert_eq!(timer.state(), TimerState::HandedBack);
        assert_eq!(
            unfired.iter().filter(|u| u.timer() == timer).count(),
            1,
            "each kept timer comes back once"
        );
    }
    assert!(unfired
        .iter()
        .all(|u| u.timer() != &fired && u.timer() != &cancelled));
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
        let engine = manual_engine_ticking(&clock, tick);
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
        let mut queue = shardwheel::DelayQueue::new(&engine);
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

#[test]
fn filling_up_to_pending_after_a_cancel_reaches_the_cap_exactly() {
    const CAP: usize = 8;
    let engine = TimerEngine::builder()
        .shards(1)
        .inline_callbacks()
        .max_pending(CAP)
        .build()
        .unwrap();
    // The shard is held, so the cancelled timer below keeps its place until it is let go.
    let go = hold_a_callback_thread(&engine);
    let cancelled = engine.schedule(Duration::from_secs(60), || {}).unwrap();
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
