//! Scheduling one-shot timers and cancelling them: when they fire, what `cancel` answers.

#![cfg(not(loom))]

mod support;
use support::{one_shard_ticking, scaled, wait_until, SplitMix};

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{ManualClock, ScheduleError, TimerEngine, TimerHandle, TimerState};

#[test]
fn handles_and_engine_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<TimerHandle>();
    check::<TimerEngine>();
}

/// Many threads schedule and cancel; afterwards every timer fired once, or was cancelled (and
/// never ran), or was handed back at shutdown: fired + cancelled + handed back = scheduled.
#[test]
fn every_timer_fires_once_or_is_cancelled_or_is_handed_back() {
    const THREADS: usize = 4;
    let per_thread = scaled(5_000);
    let total = THREADS * per_thread;
    let engine = Arc::new(TimerEngine::builder().shards(2).build().unwrap());
    let runs: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
    let early = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(THREADS));
    let producers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (engine, runs, early, barrier) =
                (engine.clone(), runs.clone(), early.clone(), barrier.clone());
            thread::spawn(move || {
                let mut rng = SplitMix(t as u64);
                let mut handles = Vec::with_capacity(per_thread);
                barrier.wait();
                for i in 0..per_thread {
                    let id = t * per_thread + i;
                    // Most fire within 30 ms; some are still pending at shutdown.
                    let delay = if rng.below(10) == 0 {
                        Duration::from_secs(600)
                    } else {
                        Duration::from_micros(rng.below(30_000))
                    };
                    let due = Instant::now() + delay;
                    let (runs, early) = (runs.clone(), early.clone());
                    let handle = engine
                        .schedule_at(due, move || {
                            if Instant::now() < due {
                                early.fetch_add(1, Ordering::SeqCst);
                            }
                            runs[id].fetch_add(1, Ordering::SeqCst);
                        })
                        .unwrap();
                    handles.push((id, handle));
                }
                handles
            })
        })
        .collect();
    let handles: Vec<(usize, TimerHandle)> = producers
        .into_iter()
        .flat_map(|p| p.join().unwrap())
        .collect();

    // Cancel every third timer, from two threads racing over the same handles.
    let handles = Arc::new(handles);
    let cancelled: Vec<usize> = {
        let cancellers: Vec<_> = (0..2)
            .map(|_| {
                let handles = handles.clone();
                thread::spawn(move || {
                    handles
                        .iter()
                        .step_by(3)
                        .filter(|(_, h)| h.cancel())
                        .map(|(id, _)| *id)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        cancellers
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    };
    let mut cancelled_once = cancelled.clone();
    cancelled_once.sort_unstable();
    cancelled_once.dedup();
    assert_eq!(
        cancelled_once.len(),
        cancelled.len(),
        "a cancel succeeded twice"
    );

    thread::sleep(Duration::from_millis(100));
    let unfired = engine.shutdown();
    let stats = engine.stats();
    let fired: usize = runs
        .iter()
        .filter(|r| r.load(Ordering::SeqCst) == 1)
        .count();
    assert!(
        runs.iter().all(|r| r.load(Ordering::SeqCst) <= 1),
        "a callback ran twice"
    );
    for id in &cancelled {
        assert_eq!(
            runs[*id].load(Ordering::SeqCst),
            0,
            "ran after a successful cancel"
        );
    }
    assert_eq!(fired + cancelled.len() + unfired.len(), total);
    assert_eq!(stats.scheduled, total as u64);
    assert_eq!(stats.fired, fired as u64);
    assert_eq!(stats.cancelled, cancelled.len() as u64);
    assert_eq!(stats.handed_back, unfired.len() as u64);
    assert_eq!(stats.pending, 0);
    assert_eq!(early.load(Ordering::SeqCst), 0, "a timer fired early");

    // The handed-back timers are exactly the ones that neither ran nor were cancelled.
    for timer in unfired {
        timer.run();
    }
    for (id, handle) in handles.iter() {
        let ran = runs[*id].load(Ordering::SeqCst);
        let cancelled = handle.state() == TimerState::Cancelled;
        assert_eq!(ran, u8::from(!cancelled), "timer {id}");
    }
}

#[test]
fn with_a_manual_clock_timers_fire_exactly_when_due() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(2)
        .build()
        .unwrap();
    let fired = Arc::new(Mutex::new(Vec::new()));
    for ms in [1u64, 5, 64, 65, 4096, 5000, 300_000] {
        let (fired, clock2) = (fired.clone(), clock.clone());
        engine
            .schedule(Duration::from_millis(ms), move || {
                fired.lock().unwrap().push((ms, clock2.elapsed()));
            })
            .unwrap();
    }
    let mut seen = 0;
    let mut steps: Vec<u64> = vec![
        1, 4, 5, 63, 64, 65, 4095, 4096, 4999, 5000, 299_999, 300_000,
    ];
    if !cfg!(miri) {
        steps.extend((997..300_000).step_by(997));
    }
    steps.sort_unstable();
    for step in steps {
        clock.advance(Duration::from_millis(step) - clock.elapsed());
        let fired = fired.lock().unwrap();
        for (ms, at) in fired.iter() {
            assert!(
                *at >= Duration::from_millis(*ms),
                "{ms} ms timer ran at {at:?}"
            );
        }
        let due = [1u64, 5, 64, 65, 4096, 5000, 300_000]
            .iter()
            .filter(|ms| **ms <= step)
            .count();
        assert_eq!(fired.len(), due, "at {step} ms");
        seen = fired.len();
    }
    assert_eq!(seen, 7);
    assert_eq!(engine.pending(), 0);
}

#[test]
fn zero_and_past_delays_fire_on_the_next_tick() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let fired = Arc::new(AtomicUsize::new(0));
    let (a, b) = (fired.clone(), fired.clone());
    engine
        .schedule(Duration::ZERO, move || {
            a.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    engine
        .schedule_at(clock.now() - Duration::from_secs(5), move || {
            b.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(Duration::from_millis(1));
    assert_eq!(fired.load(Ordering::SeqCst), 2);
}

/// At a tick boundary a zero delay is due at once: an advance that stays within the tick must
/// still run it (the shard's last turn at this tick happened before it was scheduled).
#[test]
fn a_zero_delay_timer_runs_on_a_sub_tick_advance() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    for _ in 0..3 {
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        engine
            .schedule(Duration::ZERO, move || r.store(true, Ordering::SeqCst))
            .unwrap();
        clock.advance(Duration::from_micros(100));
        assert!(ran.load(Ordering::SeqCst));
        // On to the next tick boundary.
        clock.advance(Duration::from_micros(900));
    }
}

#[test]
fn a_delay_too_long_is_refused_and_hands_the_callback_back() {
    let engine = TimerEngine::builder().build().unwrap();
    let token = Arc::new(());
    let t = token.clone();
    match engine.schedule(Duration::MAX, move || drop(t)) {
        Err(ScheduleError::DelayTooLong(callback)) => {
            assert_eq!(
                Arc::strong_count(&token),
                2,
                "the callback came back intact"
            );
            drop(callback);
        }
        other => panic!("expected DelayTooLong, got {other:?}"),
    }
    assert_eq!(Arc::strong_count(&token), 1);
    let too_far = engine.max_delay() + engine.tick() * 3;
    assert!(matches!(
        engine.schedule(too_far, || {}),
        Err(ScheduleError::DelayTooLong(_))
    ));
    let at_max = engine.schedule(engine.max_delay(), || {}).unwrap();
    assert!(at_max.cancel());
    assert_eq!(engine.stats().rejected, 2);
    assert_eq!(engine.pending(), 0);
}

#[test]
fn max_delay_is_accepted_and_beyond_it_refused_at_every_tick() {
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
        let engine = one_shard_ticking(&clock, tick);
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
fn cancel_succeeds_once_and_only_on_a_pending_timer() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let fired = engine.schedule(Duration::from_millis(1), || {}).unwrap();
    let twice = engine.schedule(Duration::from_secs(1), || {}).unwrap();
    let late = engine.schedule(Duration::from_secs(1), || {}).unwrap();
    clock.advance(Duration::from_millis(1));
    assert_eq!(fired.state(), TimerState::Fired);
    assert!(!fired.cancel(), "cancel after fire");
    assert!(twice.cancel());
    assert!(!twice.cancel(), "cancel twice");
    assert_eq!(twice.state(), TimerState::Cancelled);
    let unfired = engine.shutdown();
    assert_eq!(unfired.len(), 1);
    assert!(!late.cancel(), "cancel after shutdown handed it back");
    assert_eq!(late.state(), TimerState::HandedBack);
}

#[test]
fn racing_cancels_have_exactly_one_winner() {
    let engine = Arc::new(TimerEngine::builder().build().unwrap());
    for _ in 0..scaled(200) {
        let handle = Arc::new(engine.schedule(Duration::from_millis(2), || {}).unwrap());
        let barrier = Arc::new(Barrier::new(4));
        let wins: usize = (0..4)
            .map(|_| {
                let (handle, barrier) = (handle.clone(), barrier.clone());
                thread::spawn(move || {
                    barrier.wait();
                    usize::from(handle.cancel())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .sum();
        // Either one canceller won, or the timer fired first and none did.
        assert!(wins <= 1);
        assert_eq!(wins == 1, handle.state() == TimerState::Cancelled);
    }
}

#[test]
fn dropping_a_handle_neither_cancels_nor_leaks() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let token = Arc::new(());
    let t = token.clone();
    drop(
        engine
            .schedule(Duration::from_millis(3), move || drop(t))
            .unwrap(),
    );
    assert_eq!(Arc::strong_count(&token), 2);
    clock.advance(Duration::from_millis(3));
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "the callback ran and was freed"
    );
}

#[test]
fn a_cancelled_timer_frees_its_callback_at_once() {
    let engine = TimerEngine::builder().build().unwrap();
    let token = Arc::new(());
    let t = token.clone();
    let handle = engine
        .schedule(Duration::from_secs(60), move || drop(t))
        .unwrap();
    assert!(handle.cancel());
    assert_eq!(Arc::strong_count(&token), 1);
}

#[test]
fn a_cancel_after_placement_is_unlinked_within_a_few_ticks() {
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let handles: Vec<_> = (0..scaled(1_000))
        .map(|_| engine.schedule(Duration::from_secs(60), || {}).unwrap())
        .collect();
    let n = handles.len() as u64;
    wait_until("placement", || engine.stats().shards[0].in_wheel == n);
    for h in &handles {
        assert!(h.cancel());
    }
    assert_eq!(engine.pending(), 0);
    wait_until("unlinking", || engine.stats().shards[0].in_wheel == 0);
}

/// A callback whose captures panic when dropped: the cancel that drops it panics, but the
/// engine's side of the cancel is done first, so the timer is still unlinked and counted.
#[test]
fn a_cancel_whose_callback_panics_on_drop_still_unlinks_the_timer() {
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("a capture that panics when dropped");
        }
    }
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    let guard = PanicsOnDrop;
    let handle = engine
        .schedule(Duration::from_secs(60), move || drop(guard))
        .unwrap();
    wait_until("placement", || engine.stats().shards[0].in_wheel == 1);
    let cancelled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle.cancel()));
    assert!(cancelled.is_err(), "the capture's panic reaches the caller");
    assert_eq!(handle.state(), TimerState::Cancelled);
    assert_eq!(engine.pending(), 0);
    wait_until("unlinking", || engine.stats().shards[0].in_wheel == 0);
}

#[test]
fn keyed_timers_share_a_shard() {
    let engine = TimerEngine::builder().shards(4).build().unwrap();
    let _handles: Vec<_> = (0..20)
        .map(|_| {
            engine
                .schedule_keyed(77, Duration::from_secs(60), || {})
                .unwrap()
        })
        .collect();
    let shards = engine.stats().shards;
    assert_eq!(shards.iter().filter(|s| s.pending > 0).count(), 1);
    assert_eq!(shards.iter().map(|s| s.pending).sum::<u64>(), 20);
}
