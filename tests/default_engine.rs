//! The default engine and the free functions on it, and engine handles that are clones.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use futures::executor::block_on;
use shardwheel::{BuildError, DelayQueue, TimerEngine, TimerState};

/// Long enough that a pass never waits for it.
const PATIENCE: Duration = Duration::from_secs(60);

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
    let repeating = shardwheel::schedule_repeating(Duration::from_millis(1), move || {
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
    assert!(std::ptr::eq(
        engine,
        shardwheel::try_default_engine().unwrap()
    ));
    assert!(engine.stats().fired >= 5);
    assert!(!engine.is_shutdown());
}

#[test]
fn configuring_the_default_engine_after_it_started_is_an_error() {
    shardwheel::default_engine();
    assert!(matches!(
        TimerEngine::builder().build_global(),
        Err(BuildError::GlobalAlreadyBuilt)
    ));
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
