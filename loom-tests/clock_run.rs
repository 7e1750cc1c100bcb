//! Model 20: a boot or wall timer's run claiming its last run (`Entry::retire`, in
//! `clock::run`) against a cancel.

use std::sync::{Arc as StdArc, Mutex as StdMutex};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::{driven_engine_with, ended, MS};

/// A wall timer's run finds its deadline passed while a cancel races it: the callback runs if
/// and only if the cancel answered false, and the timer ends fired or cancelled accordingly.
///
/// Catches: a run that calls the callback without winning the retire (its answer ignored in
/// `OnClock::call_repeating`): a cancel during the run answers true, and the callback runs
/// all the same.
#[test]
fn a_clock_timer_s_last_run_against_a_cancel() {
    loom::model(|| {
        let tasks = StdArc::new(StdMutex::new(Vec::new()));
        let spawned = tasks.clone();
        let (engine, mut shard, clock) = driven_engine_with(|builder| {
            builder.spawn_callbacks(move |task| spawned.lock().unwrap().push(task))
        });
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let handle = engine
            .schedule_at_wall(clock.wall() + MS, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        shard.turn(engine.now_tick()); // link it
        clock.advance(MS);
        shard.turn(engine.now_tick()); // fire it: its run goes to the spawner
        let task = tasks.lock().unwrap().pop().expect("a fired run");
        let runner = thread::spawn(move || task.run());
        let cancelled = handle.cancel();
        runner.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), usize::from(!cancelled));
        assert_eq!(handle.state(), ended(cancelled));
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}
