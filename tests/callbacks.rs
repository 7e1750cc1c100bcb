//! Where and how callbacks run: the pool, a spawner, tokio or inline; panics and slow callbacks.

#![cfg(not(loom))]

mod support;
use support::{adds_one, scaled, wait_until, PATIENCE};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::engine::Task;
use shardwheel::{ManualClock, TimerEngine, TimerState};

/// An engine on `clock` that runs its callbacks on the tick thread.
fn inline_on(clock: &ManualClock) -> TimerEngine {
    TimerEngine::builder()
        .manual_clock(clock)
        .inline_callbacks()
        .build()
        .unwrap()
}

/// An engine on a manual clock whose spawner keeps the tasks it is given.
fn holding_engine(clock: &ManualClock) -> (TimerEngine, Arc<Mutex<Vec<Task>>>) {
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    let engine = TimerEngine::builder()
        .manual_clock(clock)
        .shards(1)
        .spawn_callbacks(move |task| keep.lock().unwrap().push(task))
        .build()
        .unwrap();
    (engine, held)
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
fn a_spawner_gets_one_task_per_callback_and_the_stats_count_them_queued_then_running() {
    let clock = ManualClock::new();
    let (engine, held) = holding_engine(&clock);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        engine
            .schedule(Duration::from_millis(5), adds_one(&ran))
            .unwrap();
    }
    clock.advance(Duration::from_millis(5));
    assert_eq!(held.lock().unwrap().len(), 3);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "the spawner has not run them"
    );
    let stats = engine.stats();
    assert_eq!((stats.fired, stats.callbacks_queued), (3, 3));
    assert_eq!(stats.callbacks_running, 0);

    // One runs on a thread of its own and blocks: it is running, the others still queued.
    let (release, blocked) = mpsc::channel::<()>();
    engine
        .schedule(Duration::from_millis(1), move || {
            blocked.recv().unwrap();
        })
        .unwrap();
    clock.advance(Duration::from_millis(1));
    let blocking = held.lock().unwrap().pop().unwrap();
    let runner = thread::spawn(move || blocking.run());
    wait_until("the blocking callback to begin", || {
        engine.stats().callbacks_running == 1
    });
    assert_eq!(engine.stats().callbacks_queued, 3);
    release.send(()).unwrap();
    runner.join().unwrap();

    // The rest run here.
    for task in held.lock().unwrap().drain(..) {
        task.run();
    }
    assert_eq!(ran.load(Ordering::SeqCst), 3);
    let stats = engine.stats();
    assert_eq!((stats.callbacks_queued, stats.callbacks_running), (0, 0));
    assert_eq!(stats.shards[0].callbacks_queued, 0);
}

#[test]
fn a_task_dropped_unrun_runs_its_callback_so_no_timer_is_lost() {
    let clock = ManualClock::new();
    let (engine, held) = holding_engine(&clock);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..4 {
        engine
            .schedule(Duration::from_millis(2), adds_one(&ran))
            .unwrap();
    }
    clock.advance(Duration::from_millis(2));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    held.lock().unwrap().clear();
    assert_eq!(ran.load(Ordering::SeqCst), 4);
    assert_eq!(engine.stats().callbacks_queued, 0);
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_callbacks_run_on_the_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let engine = TimerEngine::builder()
        .tokio_callbacks(runtime.handle().clone())
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    for _ in 0..10 {
        let tx = tx.clone();
        engine
            .schedule(Duration::from_millis(1), move || {
                tx.send(tokio::runtime::Handle::try_current().is_ok())
                    .unwrap();
            })
            .unwrap();
    }
    for _ in 0..10 {
        assert!(rx.recv_timeout(Duration::from_secs(60)).unwrap());
    }
    // A runtime that shut down drops the tasks it is given: their callbacks still run (on the
    // tick thread, which this does not check: it sends a constant to show that it ran).
    runtime.shutdown_background();
    engine
        .schedule(Duration::from_millis(1), move || tx.send(false).unwrap())
        .unwrap();
    assert!(!rx.recv_timeout(Duration::from_secs(60)).unwrap());
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

#[test]
fn panics_in_spawned_callbacks_are_caught_and_counted() {
    let clock = ManualClock::new();
    let (engine, held) = holding_engine(&clock);
    engine
        .schedule(Duration::from_millis(1), || panic!("a callback fails"))
        .unwrap();
    clock.advance(Duration::from_millis(1));
    let task = held.lock().unwrap().pop().unwrap();
    task.run();
    assert_eq!(engine.stats().panicked, 1);
}

#[test]
fn a_panicking_spawner_is_counted_and_its_task_still_runs() {
    let clock = ManualClock::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(1)
        .spawn_callbacks(move |task| {
            if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("the spawner refuses its first task");
            }
            task.run();
        })
        .build()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    engine
        .schedule(Duration::from_millis(1), adds_one(&ran))
        .unwrap();
    clock.advance(Duration::from_millis(1));
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the dropped task ran");
    assert_eq!(engine.stats().panicked, 1);
    // The shard lives on.
    engine
        .schedule(Duration::from_millis(1), adds_one(&ran))
        .unwrap();
    clock.advance(Duration::from_millis(1));
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
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

/// A crowded slot: the first callbacks are handed over while the shard still walks the slot,
/// not after it has fired every timer in it.
#[test]
fn the_first_callbacks_of_a_crowded_slot_run_before_the_rest_are_fired() {
    let clock = ManualClock::new();
    // Every timer of this thread goes to its home shard.
    let engine = inline_on(&clock);
    let timers = scaled(10_000);
    let handles = Arc::new(std::sync::OnceLock::<Vec<shardwheel::TimerHandle>>::new());
    // How many timers were still pending when the first callback ran.
    let pending_at_first = Arc::new(Mutex::new(None));
    let scheduled: Vec<_> = (0..timers)
        .map(|_| {
            let (handles, seen) = (handles.clone(), pending_at_first.clone());
            engine
                .schedule(Duration::from_millis(10), move || {
                    let mut seen = seen.lock().unwrap();
                    if seen.is_none() {
                        let all = handles.get().expect("set before the clock moves");
                        let pending = all.iter().filter(|h| h.state() == TimerState::Pending);
                        let pending = pending.count();
                        *seen = Some(pending);
                    }
                })
                .unwrap()
        })
        .collect();
    assert!(handles.set(scheduled).is_ok());
    clock.advance(Duration::from_millis(10));
    wait_until("every callback runs", || {
        let stats = engine.stats();
        stats.fired == timers as u64 && stats.callbacks_queued + stats.callbacks_running == 0
    });
    let pending = pending_at_first.lock().unwrap().expect("a callback ran");
    assert!(
        pending > 0,
        "all {timers} timers were fired before the first callback ran"
    );
}
