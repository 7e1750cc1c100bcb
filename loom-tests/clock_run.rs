//! Model 20: a boot or wall timer's run claiming its last run (`Entry::retire`, in
//! `clock::run`) against a cancel.

use loom::sync::atomic::Ordering;
use loom::thread;

use super::{ended, wall_timer_linked, MS};

/// A wall timer's run finds its deadline passed while a cancel races it: the callback runs if
/// and only if the cancel answered false, and the timer ends fired or cancelled accordingly.
///
/// Catches: a run that calls the callback without winning the retire (its answer ignored in
/// `OnClock::call_repeating`): a cancel during the run answers true, and the callback runs
/// all the same.
#[test]
fn a_clock_timer_s_last_run_against_a_cancel() {
    loom::model(|| {
        let (engine, mut shard, clock, tasks, ran, handle) = wall_timer_linked();
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
