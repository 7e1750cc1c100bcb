//! Shutting the engine down: schedules racing it lose nothing, callbacks in flight are waited
//! for, and dropping the engine from its own callback does not hang.

mod common;
use common::{scaled, wait_until};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use shardwheel::{ScheduleError, TimerEngine};

#[test]
fn schedule_after_shutdown_hands_the_callback_back() {
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
        assert_eq!(stats.fired + stats.returned, stats.scheduled);
        assert_eq!(stats.returned, returned as u64);
        assert_eq!(stats.pending, 0);
    }
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
