//! A pinned tick thread whose core does not run it is moved off that core by its neighbour,
//! sent home, and let go of its core when that core is still held (see `shard::moving`). In a binary of its own: the test holds a core with a real-time
//! thread for a while, which would hold up the pinned shards of any test running beside it.
#![cfg(target_os = "linux")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use shardwheel::TimerEngine;

mod common;
use common::pinned_cores;

/// How long the real-time thread holds the core.
const HOLD: Duration = Duration::from_millis(600);

/// A key whose timers go to shard `shard` of `engine` (keyed timers share a shard).
fn key_on(engine: &TimerEngine, shard: usize) -> u64 {
    (0..1_000)
        .find(|&key| {
            let probe = engine
                .schedule_keyed(key, Duration::from_secs(60), || {})
                .unwrap();
            let here = engine.stats().shards[shard].pending == 1;
            probe.cancel();
            here
        })
        .expect("some key among the first thousand goes to each shard")
}

/// Ends the holding thread's loop when dropped, even if the test fails first.
struct Release(Arc<AtomicBool>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_tick_thread_whose_core_does_not_run_it_is_moved_off_it() {
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    if cores.len() < 2 {
        eprintln!("skipped: fewer than two cores to move between");
        return;
    }
    let engine = TimerEngine::builder()
        .shards(2)
        .inline_callbacks()
        .build()
        .unwrap();
    if pinned_cores(&engine) != [Some(cores[0].id), Some(cores[1].id)] {
        eprintln!("skipped: pinning refused here, so nothing to move");
        return;
    }
    // Shard 0 turns every millisecond, and so looks after shard 1 that often.
    let _busy = engine
        .schedule_repeating_keyed(key_on(&engine, 0), Duration::from_millis(1), || {})
        .unwrap();
    let on_shard_1 = key_on(&engine, 1);

    // A real-time thread on shard 1's core: the kernel runs nothing else there while it spins.
    let release = Arc::new(AtomicBool::new(false));
    let (started, holding) = mpsc::channel();
    let holder = {
        let (release, core) = (release.clone(), cores[1]);
        thread::spawn(move || {
            let param = libc::sched_param { sched_priority: 1 };
            // SAFETY: sets the calling thread's scheduling policy; only reads `param`.
            let real_time = core_affinity::set_for_current(core)
                && unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
            started.send(real_time).unwrap();
            let until = Instant::now() + HOLD;
            while real_time && !release.load(Ordering::Relaxed) && Instant::now() < until {
                std::hint::spin_loop();
            }
        })
    };
    let _release = Release(release);
    if !holding.recv().unwrap() {
        eprintln!("skipped: no real-time priority here, so nothing holds the core");
        return;
    }

    // One timer due soon, and one due after the moved thread has been sent home (50 ms
    // later) into the core that is still held.
    let start = Instant::now();
    let (fired, ran) = mpsc::channel();
    for due in [20, 300] {
        let fired = fired.clone();
        engine
            .schedule_keyed(on_shard_1, Duration::from_millis(due), move || {
                let _ = fired.send((due, Instant::now()));
            })
            .unwrap();
    }
    let mut lateness = Vec::new();
    for _ in 0..2 {
        let (due, at) = ran
            .recv_timeout(Duration::from_secs(30))
            .expect("the timer fires");
        lateness.push(at.saturating_duration_since(start + Duration::from_millis(due)));
    }
    drop(_release);
    holder.join().unwrap();
    for late in lateness {
        assert!(
            late < Duration::from_millis(200),
            "fired {late:?} late, behind the thread holding its core for {HOLD:?}"
        );
    }
    assert!(engine.stats().shards[1].moved_off_core >= 1);
}
