//! The default engine and the free functions that schedule on it.

#![cfg(not(loom))]

mod support;
use support::PATIENCE;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use futures::executor::block_on;
use shardwheel::delay_queue::DelayQueue;
use shardwheel::engine::BuildError;
use shardwheel::TimerEngine;

const SEC: Duration = Duration::from_secs(1);

#[test]
fn the_free_functions_run_on_one_default_engine() {
    let (tx, rx) = mpsc::channel();
    shardwheel::schedule(Duration::from_millis(1), move || tx.send("fired").unwrap()).unwrap();
    assert_eq!(rx.recv_timeout(PATIENCE), Ok("fired"));

    let start = Instant::now();
    block_on(shardwheel::sleep(Duration::from_millis(10)));
    assert!(start.elapsed() >= Duration::from_millis(10));
    block_on(shardwheel::sleep_until(
        Instant::now() + Duration::from_millis(1),
    ));

    assert_eq!(block_on(shardwheel::timeout(PATIENCE, async { 7 })), Ok(7));
    let late = shardwheel::timeout(Duration::from_millis(1), shardwheel::sleep(PATIENCE));
    assert!(block_on(late).is_err());
    let at = Instant::now() + Duration::from_millis(1);
    assert!(block_on(shardwheel::timeout_at(at, shardwheel::sleep(PATIENCE))).is_err());

    let mut interval = shardwheel::interval(Duration::from_millis(1));
    let first = block_on(interval.tick());
    assert!(block_on(interval.tick()) > first);
    let mut later = shardwheel::interval_at(Instant::now(), Duration::from_millis(1));
    block_on(later.tick());

    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let repeating = shardwheel::repeating(Duration::from_millis(1))
        .schedule(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while runs.load(Ordering::SeqCst) < 3 {
        assert!(Instant::now() < deadline, "the repeating timer stopped");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(repeating.cancel());

    let (tx, rx) = mpsc::channel();
    let at = Instant::now() + Duration::from_millis(1);
    shardwheel::schedule_at(at, move || tx.send(()).unwrap()).unwrap();
    rx.recv_timeout(PATIENCE).unwrap();

    let mut queue = DelayQueue::default();
    queue.insert("value", Duration::from_millis(1));
    use futures::StreamExt;
    assert_eq!(
        block_on(queue.next()).map(|e| e.into_inner()),
        Some("value")
    );

    // All of it ran on one engine, which is never shut down.
    let engine = shardwheel::default_engine();
    assert!(std::ptr::eq(engine, shardwheel::default_engine()));
    assert!(engine.stats().fired >= 5);
    assert!(!engine.is_shutdown());
}

#[test]
fn the_free_function_schedules_every_form_of_repeating_timer() {
    let first = Instant::now() + Duration::from_secs(3600);
    let at = shardwheel::repeating(SEC)
        .first_at(first)
        .schedule(|| {})
        .unwrap();
    assert!(at.deadline() >= first);
    let with = shardwheel::repeating(SEC)
        .schedule_with(|run| {
            run.cancel();
        })
        .unwrap();
    let delay = shardwheel::repeating(SEC)
        .fixed_delay()
        .schedule(|| {})
        .unwrap();
    assert!(at.cancel());
    assert!(delay.cancel());
    let _ = with.cancel();
}

#[test]
fn build_global_after_the_default_engine_started_is_refused() {
    shardwheel::default_engine();
    assert!(matches!(
        TimerEngine::builder().build_global(),
        Err(BuildError::GlobalAlreadyBuilt)
    ));
}
