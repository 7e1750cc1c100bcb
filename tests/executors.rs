//! Where callbacks run (a spawner of the caller's own, tokio), and what the stats say about
//! them: callbacks queued and running (on a spawner and on the pool), and how late timers fired.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use shardwheel::{ManualClock, Task, TimerEngine};

mod common;
use common::wait_until;

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

fn counting(ran: &Arc<AtomicUsize>) -> impl FnOnce() + Send + 'static {
    let ran = ran.clone();
    move || {
        ran.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_spawner_gets_one_task_per_callback_and_the_stats_count_them_queued_then_running() {
    let clock = ManualClock::new();
    let (engine, held) = holding_engine(&clock);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        engine
            .schedule(Duration::from_millis(5), counting(&ran))
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
            .schedule(Duration::from_millis(2), counting(&ran))
            .unwrap();
    }
    clock.advance(Duration::from_millis(2));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    held.lock().unwrap().clear();
    assert_eq!(ran.load(Ordering::SeqCst), 4);
    assert_eq!(engine.stats().callbacks_queued, 0);
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
        .schedule(Duration::from_millis(1), counting(&ran))
        .unwrap();
    clock.advance(Duration::from_millis(1));
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the dropped task ran");
    assert_eq!(engine.stats().panicked, 1);
    // The shard lives on.
    engine
        .schedule(Duration::from_millis(1), counting(&ran))
        .unwrap();
    clock.advance(Duration::from_millis(1));
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
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
fn lateness_is_counted_from_the_tick_before_the_deadline() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(2)
        .build()
        .unwrap();
    let nothing = engine.stats().lateness;
    assert_eq!((nothing.count(), nothing.p50()), (0, None));

    // 100 timers due at 5 ms, fired at 5 ms: 1 ms from the start of tick 4.
    for _ in 0..100 {
        engine.schedule(Duration::from_millis(5), || {}).unwrap();
    }
    clock.advance(Duration::from_millis(5));
    // One due at 10 ms, fired at 35 ms: 26 ms from the start of tick 9.
    engine.schedule(Duration::from_millis(5), || {}).unwrap();
    clock.advance(Duration::from_millis(30));

    let stats = engine.stats();
    let lateness = &stats.lateness;
    assert_eq!(lateness.count(), 101);
    assert_eq!(lateness.count(), stats.fired);
    // A quantile is the top of its bucket (1 ms lies in [2^19, 2^20) ns), or the max if lower.
    let one_ms_bucket = Duration::from_nanos((1 << 20) - 1);
    assert_eq!(lateness.p50(), Some(one_ms_bucket));
    assert_eq!(lateness.p99(), Some(one_ms_bucket));
    assert_eq!(lateness.p999(), Some(Duration::from_millis(26)));
    assert_eq!(lateness.max(), Duration::from_millis(26));
    assert_eq!(lateness.quantile(0.0), Some(one_ms_bucket));
    assert_eq!(lateness.quantile(f64::NAN), None);
    let buckets: Vec<(Duration, u64)> = lateness.buckets().collect();
    assert_eq!(
        buckets,
        [
            // 26 ms lies in [2^24, 2^25) ns.
            (one_ms_bucket, 100),
            (Duration::from_nanos((1 << 25) - 1), 1),
        ]
    );
    let per_shard: u64 = stats.shards.iter().map(|s| s.lateness.count()).sum();
    assert_eq!(per_shard, 101);
}

#[test]
fn a_timer_fired_as_its_shard_takes_it_is_counted_too() {
    // Due already when the shard first sees it (a deadline in the past, due at the current
    // tick, 5): fired on arrival rather than from the wheel, and counted all the same, from the
    // start of tick 4.
    let clock = ManualClock::new();
    let engine = TimerEngine::builder()
        .manual_clock(&clock)
        .shards(1)
        .build()
        .unwrap();
    clock.advance(Duration::from_millis(5));
    engine
        .schedule_at(clock.now() - Duration::from_millis(3), || {})
        .unwrap();
    clock.advance(Duration::ZERO); // waits for the shard's turn
    let lateness = engine.stats().lateness;
    assert_eq!(lateness.count(), 1);
    assert_eq!(lateness.max(), Duration::from_millis(1));
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
fn the_stats_count_the_pools_callbacks_queued_then_running_then_done() {
    const N: usize = 5_000;
    let engine = TimerEngine::builder()
        .shards(2)
        .callback_threads(3)
        .pin_threads(false)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let (release, blocked) = mpsc::channel::<()>();
    engine
        .schedule(Duration::from_millis(10), move || {
            blocked.recv().unwrap();
        })
        .unwrap();
    for _ in 0..N {
        engine
            .schedule(Duration::from_millis(10), counting(&ran))
            .unwrap();
    }
    // Every callback has begun and all but the blocked one have ended (a counting callback may
    // still be between its count and its end for a moment, so this is waited for, not read
    // once).
    wait_until("the other callbacks to run beside the blocked one", || {
        let stats = engine.stats();
        ran.load(Ordering::SeqCst) == N
            && (stats.callbacks_queued, stats.callbacks_running) == (0, 1)
    });
    assert_eq!(engine.stats().fired, N as u64 + 1);
    release.send(()).unwrap();
    wait_until("the blocked callback to end", || {
        engine.stats().callbacks_running == 0
    });
    let stats = engine.stats();
    assert_eq!((stats.callbacks_queued, stats.callbacks_running), (0, 0));
}
