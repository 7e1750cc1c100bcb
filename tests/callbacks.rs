//! Where and how the engine runs callbacks: on its pool, a user's pool or inline, past
//! panicking and slow callbacks. Time bounds are generous; a manual clock is used where it can be.

mod common;
use common::{scaled, wait_until};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::{ManualClock, TimerEngine};

/// An engine on `clock` that runs its callbacks on the tick thread.
fn inline_on(clock: &ManualClock) -> TimerEngine {
    TimerEngine::builder()
        .manual_clock(clock)
        .inline_callbacks()
        .build()
        .unwrap()
}

#[test]
fn a_panicking_callback_does_not_stop_the_others() {
    let engine = TimerEngine::builder().callback_threads(2).build().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let n = scaled(200);
    for i in 0..n {
        let ran = ran.clone();
        engine
            .schedule(Duration::from_millis((i % 20) as u64), move || {
                if i % 10 == 0 {
                    panic!("callback {i} panics on purpose");
                }
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
    }
    wait_until("the callbacks", || engine.stats().fired == n as u64);
    engine.shutdown();
    assert_eq!(ran.load(Ordering::SeqCst), n - n.div_ceil(10));
    assert_eq!(engine.stats().panicked, n.div_ceil(10) as u64);
}

#[test]
fn a_panicking_inline_callback_does_not_stop_the_shard() {
    let clock = ManualClock::new();
    let engine = inline_on(&clock);
    let ran = Arc::new(AtomicUsize::new(0));
    engine
        .schedule(Duration::from_millis(1), || panic!("on purpose"))
        .unwrap();
    let r = ran.clone();
    engine
        .schedule(Duration::from_millis(2), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(Duration::from_millis(2));
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(engine.stats().panicked, 1);
}

#[test]
fn callbacks_run_on_a_user_pool_and_inline() {
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap(),
    );
    for builder in [
        TimerEngine::builder().spawn_callbacks(move |task| pool.spawn(move || task.run())),
        TimerEngine::builder().inline_callbacks(),
    ] {
        let engine = builder.build().unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..10 {
            let ran = ran.clone();
            engine
                .schedule(Duration::from_millis(1), move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
        }
        wait_until("callbacks", || ran.load(Ordering::SeqCst) == 10);
    }
}

#[test]
fn a_slow_callback_does_not_hold_up_the_others() {
    let engine = TimerEngine::builder().callback_threads(4).build().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    engine
        .schedule(Duration::ZERO, || thread::sleep(Duration::from_secs(3)))
        .unwrap();
    thread::sleep(Duration::from_millis(20));
    let start = Instant::now();
    engine
        .schedule(Duration::from_millis(5), move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(Duration::from_secs(2))
        .expect("a fast timer waited for a slow callback");
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_callback_behind_a_stuck_runner_does_not_wait_for_a_coarse_tick() {
    // A five-second tick. The first callback blocks its runner; the second fires a tick later,
    // finds no runner free, and would wait another whole tick if the shard looked for stuck
    // runners only once a tick.
    let tick = Duration::from_secs(5);
    let engine = TimerEngine::builder()
        .shards(1)
        .tick(tick)
        .callback_threads(4)
        .build()
        .unwrap();
    let start = Instant::now();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (started, first_began) = std::sync::mpsc::channel();
    engine
        .schedule(Duration::ZERO, move || {
            started.send(()).unwrap();
            let _ = released.recv_timeout(Duration::from_secs(60));
        })
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    // Due at the engine's first tick boundary (the engine began just before `start`).
    engine
        .schedule(tick - Duration::from_millis(500), move || {
            tx.send(Instant::now()).unwrap()
        })
        .unwrap();
    first_began
        .recv_timeout(Duration::from_secs(20))
        .expect("the first callback ran");
    let second = rx.recv_timeout(Duration::from_secs(30));
    drop(release);
    let ran = second.expect("the second callback ran") - start;
    assert!(
        ran < tick + tick / 2,
        "the second callback waited behind the first until {ran:?}"
    );
}

#[test]
fn a_slow_callback_holds_up_none_of_its_batch() {
    // One shard and two pool threads: every timer fires in the same batch, and the first to
    // run waits until all the others have run, which they can only do beside it.
    let engine = TimerEngine::builder()
        .shards(1)
        .callback_threads(2)
        .build()
        .unwrap();
    let others = 50;
    let ran = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let due = Instant::now() + Duration::from_millis(20);
    let first = Arc::new(AtomicBool::new(true));
    for _ in 0..=others {
        let (ran, first, tx) = (ran.clone(), first.clone(), tx.clone());
        engine
            .schedule_at(due, move || {
                if first.swap(false, Ordering::SeqCst) {
                    let give_up = Instant::now() + Duration::from_secs(10);
                    while ran.load(Ordering::SeqCst) < others && Instant::now() < give_up {
                        thread::sleep(Duration::from_millis(1));
                    }
                    tx.send(ran.load(Ordering::SeqCst)).unwrap();
                } else {
                    ran.fetch_add(1, Ordering::SeqCst);
                }
            })
            .unwrap();
    }
    let seen = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        seen, others,
        "the rest of the batch ran while the first blocked"
    );
}

#[test]
fn a_panic_whose_payload_panics_on_drop_is_contained() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("the payload's drop panics too");
        }
    }
    let clock = ManualClock::new();
    let engine = inline_on(&clock);
    engine
        .schedule(Duration::from_millis(1), || std::panic::panic_any(Bomb))
        .unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    engine
        .schedule(Duration::from_millis(2), move || {
            r.store(true, Ordering::SeqCst)
        })
        .unwrap();
    clock.advance(Duration::from_millis(2));
    assert!(ran.load(Ordering::SeqCst), "the shard kept ticking");
    assert_eq!(engine.stats().panicked, 1);
}
