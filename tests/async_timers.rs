//! `sleep` and `timeout` under three executors (tokio, async-executor as smol uses it, and
//! `futures::executor`), plus wake-up behaviour under a manual clock.

#![cfg(not(loom))]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use shardwheel::{Elapsed, ManualClock, TimerEngine};

const MS: Duration = Duration::from_millis(1);

/// The behaviour every executor must show: a sleep lasts at least its delay; a timeout
/// returns a quick future's output and gives up on a slow one; a thousand sleeps all end.
async fn exercise(engine: Arc<TimerEngine>) {
    let start = Instant::now();
    engine.sleep(MS * 20).await;
    assert!(start.elapsed() >= MS * 20);

    assert_eq!(engine.timeout(MS * 5_000, async { 42 }).await, Ok(42));
    let start = Instant::now();
    let slow = engine.sleep(Duration::from_secs(60));
    let gave_up: Result<(), Elapsed> = engine.timeout(MS * 10, slow).await;
    assert_eq!(gave_up.unwrap_err().to_string(), "deadline has elapsed");
    assert!(start.elapsed() >= MS * 10);

    let sleeps: Vec<_> = (0..1000u32).map(|i| engine.sleep(MS * (i % 25))).collect();
    for sleep in sleeps {
        sleep.await;
    }
}

#[test]
fn under_tokio() {
    let engine = Arc::new(TimerEngine::builder().build().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..4)
        .map(|_| runtime.spawn(exercise(engine.clone())))
        .collect();
    runtime.block_on(async {
        for task in tasks {
            task.await.unwrap();
        }
    });
}

#[test]
fn under_async_executor() {
    let engine = Arc::new(TimerEngine::builder().build().unwrap());
    let executor = async_executor::Executor::new();
    let tasks: Vec<_> = (0..4)
        .map(|_| executor.spawn(exercise(engine.clone())))
        .collect();
    futures_lite::future::block_on(executor.run(async {
        for task in tasks {
            task.await;
        }
    }));
}

#[test]
fn under_futures_executor() {
    let engine = Arc::new(TimerEngine::builder().build().unwrap());
    futures::executor::block_on(exercise(engine.clone()));
    let mut pool = futures::executor::LocalPool::new();
    use futures::task::LocalSpawnExt;
    for _ in 0..4 {
        pool.spawner()
            .spawn_local(exercise(engine.clone()))
            .unwrap();
    }
    pool.run();
}

/// A waker that counts its wake-ups.
struct Counting(AtomicUsize);
impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll_once<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

#[test]
fn the_engine_wakes_the_task_exactly_when_due() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let counter = Arc::new(Counting(AtomicUsize::new(0)));
    let waker = Waker::from(counter.clone());
    let mut sleep = engine.sleep(MS * 10);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS * 9);
    assert_eq!(counter.0.load(Ordering::SeqCst), 0);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert_eq!(counter.0.load(Ordering::SeqCst), 1, "woken by the engine");
    assert!(sleep.is_elapsed());
    assert!(poll_once(&mut sleep, &waker).is_ready());
}

#[test]
fn reset_moves_a_sleep_and_restarts_an_elapsed_one() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let waker = Waker::from(Arc::new(Counting(AtomicUsize::new(0))));
    let mut sleep = engine.sleep(MS * 10);
    clock.advance(MS * 5);
    sleep.reset(MS * 10); // now due at 15 ms
    clock.advance(MS * 9);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert!(poll_once(&mut sleep, &waker).is_ready());
    sleep.reset(MS * 3); // elapsed: starts over
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS * 3);
    assert!(poll_once(&mut sleep, &waker).is_ready());
}

#[test]
fn dropping_a_sleep_cancels_its_timer() {
    let engine = TimerEngine::builder().build().unwrap();
    let sleeps: Vec<_> = (0..100)
        .map(|_| engine.sleep(Duration::from_secs(60)))
        .collect();
    assert_eq!(engine.pending(), 100);
    drop(sleeps);
    assert_eq!(engine.pending(), 0);
    assert_eq!(engine.stats().cancelled, 100);
}

#[test]
fn a_sleep_ends_when_its_engine_shuts_down() {
    let engine = TimerEngine::builder().build().unwrap();
    let waker = Waker::from(Arc::new(Counting(AtomicUsize::new(0))));
    let mut sleep = engine.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut sleep, &waker).is_pending());
    drop(engine.shutdown());
    assert!(poll_once(&mut sleep, &waker).is_ready());
    // And a sleep asked of a stopped engine ends at once.
    let mut late = engine.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut late, &waker).is_ready());
}

#[test]
fn reset_revives_a_sleep_the_engine_did_not_hold() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let waker = Waker::from(Arc::new(Counting(AtomicUsize::new(0))));
    // Beyond the engine's range: never ends, until reset to something it can hold.
    let mut sleep = engine.sleep(Duration::MAX);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    sleep.reset(MS * 10);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS * 10);
    assert!(poll_once(&mut sleep, &waker).is_ready());
}

#[test]
fn a_reset_after_firing_keeps_the_registered_waker() {
    let clock = ManualClock::new();
    let engine = TimerEngine::builder().manual_clock(&clock).build().unwrap();
    let counter = Arc::new(Counting(AtomicUsize::new(0)));
    let waker = Waker::from(counter.clone());
    let mut sleep = engine.sleep(MS);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    clock.advance(MS);
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    sleep.reset(MS * 5); // not polled again before it fires
    clock.advance(MS * 5);
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        2,
        "the task is woken again"
    );
}
