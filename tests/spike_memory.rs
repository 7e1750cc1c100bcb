//! A spike's memory goes back to the system: timers scheduled from threads that then exit,
//! all cancelled, leave the resident set near where it was, whatever the global allocator
//! (here the system's, which keeps freed memory below the top of its heap).

#![cfg(all(target_os = "linux", not(miri)))]

mod support;
use support::wait_until;

use std::time::Duration;

use shardwheel::TimerEngine;

/// The resident set, in bytes (VmRSS of /proc/self/status).
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

// One test, so that no other test's memory moves the resident set while this one reads it.
#[test]
fn a_spike_from_threads_that_exit_gives_its_memory_back() {
    const TIMERS: usize = 1_000_000;
    let engine = TimerEngine::builder().shards(2).build().unwrap();
    drop(engine.schedule(Duration::from_secs(600), || {}).unwrap());
    let mut handles = Vec::with_capacity(TIMERS);
    let before = resident();
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    (0..TIMERS / 2)
                        .map(|_| engine.schedule(Duration::from_secs(600), || {}).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for thread in threads {
            handles.extend(thread.join().unwrap());
        }
    });
    let grown = resident().saturating_sub(before);
    assert!(
        grown >= 30 * TIMERS as u64,
        "the spike took only {grown} bytes"
    );
    for handle in handles.drain(..) {
        assert!(handle.cancel());
    }
    wait_until("half the spike's growth goes back", || {
        resident().saturating_sub(before) * 2 <= grown
    });
}
