//! Model 22: a boot or wall timer's reset (`ClockTimers::reset_timer`, in `clock::timers`)
//! against its shard firing it and its run looking at its clock.

use std::time::Duration;

use loom::sync::atomic::Ordering;
use loom::thread;

use super::{wall_timer_linked, MS};
use crate::TimerState;

/// A wall timer comes due while another thread resets it a second later: the callback runs
/// if and only if the reset answered false, and a `true` reset leaves it pending.
///
/// Catches: a reset that moves the timer's deadline on its clock before (or without) moving
/// its entry (`reset_timer`'s order): a reset that finds the timer fired answers false, yet
/// its run reads the new deadline, re-arms, and the callback never runs.
#[test]
fn a_clock_timer_s_reset_against_its_firing_and_run() {
    loom::model(|| {
        let (engine, mut shard, clock, tasks, ran, handle) = wall_timer_linked();
        clock.advance(MS);
        let resetter = {
            let handle = handle.clone();
            thread::spawn(move || handle.reset(Duration::from_secs(1)))
        };
        shard.turn(engine.now_tick()); // fire it, unless the reset came first
        let task = tasks.lock().unwrap().pop();
        if let Some(task) = task {
            task.run();
        }
        let reset = resetter.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), usize::from(!reset));
        let state = if reset {
            TimerState::Pending
        } else {
            TimerState::Fired
        };
        assert_eq!(handle.state(), state);
        let handed_back = engine.shutdown_driven(vec![shard]);
        assert_eq!(handed_back.len(), usize::from(reset));
    });
}
