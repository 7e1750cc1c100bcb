//! Shutting the engine down: what is handed back, callbacks in flight, shutdown from a callback.

#![cfg(not(loom))]

mod support;
use support::{one_shard_on, scaled, wait_until, PATIENCE};

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{ManualClock, ScheduleError, TimerEngine, TimerState};

#[test]
fn a_schedule_after_shutdown_is_refused_and_hands_the_callback_back() {
    let engine = TimerEngine::builder().build().unwrap();
    engine.shutdown();
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let err = engine
        .schedule(Duration::from_millis(1), move || {
            r.store(true, Ordering::SeqCst)
        })
        .unwrap_err();
    assert!(matches!(err, ScheduleError::Shutdown(_)));
    err.into_inner()();
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(engine.stats().rejected, 1);
}

/// Producers keep scheduling while another thread shuts the engine down: each timer is
/// refused (and its callback handed back), fired, or in the shutdown list — exactly once.
#[test]
fn schedule_racing_shutdown_loses_nothing() {
    for round in 0..scaled(20) {
        let engine = Arc::new(TimerEngine::builder().shards(2).build().unwrap());
        let runs: Arc<Vec<AtomicU8>> = Arc::new((0..2 * 2_000).map(|_| AtomicU8::new(0)).collect());
        let start = Arc::new(Barrier::new(3));
        let producers: Vec<_> = (0..2)
            .map(|t| {
                let (engine, runs, start) = (engine.clone(), runs.clone(), start.clone());
                thread::spawn(move || {
                    start.wait();
                    let mut refused = 0;
                    for i in 0..2_000 {
                        let id = t * 2_000 + i;
                        let runs2 = runs.clone();
                        let delay = Duration::from_micros((i % 7) as u64 * 300);
                        match engine.schedule(delay, move || {
                            runs2[id].fetch_add(1, Ordering::SeqCst);
                        }) {
                            Ok(_) => {}
                            Err(ScheduleError::Shutdown(callback)) => {
                                refused += 1;
                                callback();
                            }
                            Err(other) => panic!("unexpected {other:?}"),
                        }
                    }
                    refused
                })
            })
            .collect();
        start.wait();
        thread::sleep(Duration::from_micros(200 * (round % 5) as u64));
        let unfired = engine.shutdown();
        let returned = unfired.len();
        for timer in unfired {
            timer.run();
        }
        let refused: usize = producers.into_iter().map(|p| p.join().unwrap()).sum();
        let stats = engine.stats();
        assert!(
            runs.iter().all(|r| r.load(Ordering::SeqCst) == 1),
            "round {round}"
        );
        assert_eq!(stats.scheduled + refused as u64, 4_000);
        assert_eq!(stats.fired + stats.handed_back, stats.scheduled);
        assert_eq!(stats.handed_back, returned as u64);
        assert_eq!(stats.pending, 0);
    }
}

#[test]
fn handed_back_timers_can_be_matched_to_their_handles() {
    let clock = ManualClock::new();
    let engine = one_shard_on(&clock);
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
fn shutdown_waits_for_callbacks_in_flight() {
    let engine = TimerEngine::builder().build().unwrap();
    let started = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (s, f) = (started.clone(), finished.clone());
    engine
        .schedule(Duration::ZERO, move || {
            s.store(true, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(100));
            f.store(true, Ordering::SeqCst);
        })
        .unwrap();
    wait_until("the callback to start", || started.load(Ordering::SeqCst));
    engine.shutdown();
    assert!(finished.load(Ordering::SeqCst));
}

#[test]
fn every_caller_of_shutdown_waits_for_the_callbacks_in_flight() {
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

/// The last reference to the engine dropped inside one of its own callbacks: neither the pool
/// nor the tick thread may wait for itself.
#[test]
fn dropping_the_engine_from_its_own_callback_does_not_hang() {
    for inline in [false, true] {
        let builder = TimerEngine::builder();
        let builder = if inline {
            builder.inline_callbacks()
        } else {
            builder.callback_threads(2)
        };
        let engine = Arc::new(builder.build().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        let held = Mutex::new(Some(engine.clone()));
        engine.schedule(Duration::from_secs(60), || {}).unwrap();
        engine
            .schedule(Duration::from_millis(1), move || {
                let engine = held.lock().unwrap().take().unwrap();
                // Explicit shutdown from inside: it cannot wait for itself, so it finishes in
                // the background and hands back nothing here.
                assert!(engine.shutdown().is_empty());
                drop(engine);
                tx.send(()).unwrap();
            })
            .unwrap();
        drop(engine);
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the callback finished");
    }
}

#[test]
fn a_clone_is_the_same_engine_and_the_last_drop_shuts_it_down() {
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let clone = engine.clone();
    let timer = clone.schedule(Duration::from_secs(60), || {}).unwrap();
    assert_eq!(engine.pending(), 1, "scheduled through the clone");
    drop(clone);
    assert!(
        !engine.is_shutdown(),
        "a clone's drop leaves the engine running"
    );
    assert_eq!(timer.state(), TimerState::Pending);
    let (tx, rx) = mpsc::channel();
    let last = engine.clone();
    drop(engine);
    last.schedule(Duration::from_millis(1), move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE).unwrap();
    drop(last);
    assert_eq!(
        timer.state(),
        TimerState::HandedBack,
        "the last clone's drop handed the timer back"
    );
}

#[test]
fn after_shutdown_a_sleep_and_a_timeout_end_at_their_deadlines_never_early() {
    let engine = TimerEngine::builder().build().unwrap();
    let ten = Duration::from_millis(10);
    let mut in_flight = Box::pin(engine.sleep(ten * 5));
    let (_, waker) = support::counting();
    assert!(support::poll_once(&mut in_flight, &waker).is_pending());
    drop(engine.shutdown());
    let start = Instant::now();
    let sleep = engine.sleep(ten);
    assert_eq!(
        sleep.refused(),
        Some(shardwheel::ScheduleErrorKind::Shutdown)
    );
    futures::executor::block_on(sleep);
    assert!(start.elapsed() >= ten, "early: {:?}", start.elapsed());
    let start = Instant::now();
    let timeout = engine.timeout(ten, std::future::pending::<()>());
    assert!(futures::executor::block_on(timeout).is_err());
    assert!(start.elapsed() >= ten, "early: {:?}", start.elapsed());
    // A sleep in flight when the engine shut down ends at its deadline too.
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        futures::executor::block_on(in_flight);
        done.send(()).unwrap();
    });
    ended
        .recv_timeout(support::PATIENCE)
        .expect("the drain hung on a sleep");
}

#[test]
fn after_shutdown_a_sleep_on_a_manual_clock_ends_as_the_clock_reaches_it() {
    use futures::FutureExt;
    let (clock, engine) = support::manual();
    let mut before = Box::pin(engine.sleep(Duration::from_secs(5)));
    assert!(before.as_mut().now_or_never().is_none());
    drop(engine.shutdown());
    let mut after = Box::pin(engine.timeout(Duration::from_secs(3), std::future::pending::<()>()));
    let (count, waker) = support::counting();
    assert!(support::poll_once(&mut after, &waker).is_pending());
    assert!(before.as_mut().now_or_never().is_none());
    clock.advance(Duration::from_secs(3) - Duration::from_millis(1));
    assert!(
        support::poll_once(&mut after, &waker).is_pending(),
        "never early"
    );
    let woken = count.count();
    clock.advance(Duration::from_millis(1));
    assert!(count.count() > woken, "the clock's move woke it");
    assert!(matches!(
        support::poll_once(&mut after, &waker),
        std::task::Poll::Ready(Err(_))
    ));
    assert!(before.as_mut().now_or_never().is_none(), "never early");
    clock.advance(Duration::from_secs(2));
    assert!(before.now_or_never().is_some());
}
