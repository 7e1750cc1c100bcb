//! The threads an engine starts, as `ps` and `/proc` show them: tick threads and callback
//! threads named apart, and the shared callback pool started only when a timer first fires.
//! Its own binary: the shared pool is the process's.

#![cfg(all(target_os = "linux", not(loom), not(miri)))]

mod support;

use std::sync::mpsc;
use std::time::Duration;

use shardwheel::TimerEngine;

/// The names of the process's threads, as `/proc/self/task/*/comm` gives them.
fn thread_names() -> Vec<String> {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    let names = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok());
    names.map(|name| name.trim_end().to_owned()).collect()
}

/// Held by each test: the threads counted are the whole process's.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn count(prefix: &str) -> usize {
    thread_names()
        .iter()
        .filter(|name| name.starts_with(prefix))
        .count()
}

#[test]
fn tick_and_callback_threads_are_named_apart_and_the_pool_starts_when_a_timer_fires() {
    let _alone = ALONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let engine = TimerEngine::builder().shards(2).build().unwrap();
    assert_eq!(count("sw-tick-"), 2, "{:?}", thread_names());
    for _ in 0..1000 {
        assert!(engine
            .schedule(Duration::from_secs(5), || {})
            .unwrap()
            .cancel());
    }
    futures::executor::block_on(engine.timeout(Duration::from_secs(5), async {})).unwrap();
    assert_eq!(
        count("sw-callback-"),
        0,
        "no timer fired: {:?}",
        thread_names()
    );
    let (fired, ran) = mpsc::channel();
    engine
        .schedule(Duration::from_millis(1), move || fired.send(()).unwrap())
        .unwrap();
    ran.recv_timeout(support::PATIENCE).unwrap();
    assert!(count("sw-callback-") >= 1, "{:?}", thread_names());
    drop(engine);
}

#[test]
fn after_shutdown_a_wall_sleep_ends_at_its_deadline_and_starts_no_clock_thread() {
    let _alone = ALONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let engine = TimerEngine::builder().shards(1).build().unwrap();
    drop(engine.shutdown());
    let before = count("sw-clocks");
    let at = std::time::SystemTime::now() + Duration::from_millis(20);
    futures::executor::block_on(engine.sleep_until_wall(at));
    assert!(std::time::SystemTime::now() >= at, "early");
    assert_eq!(count("sw-clocks"), before, "{:?}", thread_names());
}
