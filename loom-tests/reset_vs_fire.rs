//! Models 6 and 7: a reset racing the shard firing the timer, and a cancel racing a repeating
//! timer's re-arm.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::{driven_engine, driven_engine_with, MS};
use crate::TimerState;

/// Reset vs fire: a timer linked and due, a thread resetting it to later while the shard
/// fires it. If the reset returns true the callback does not run at the old deadline, and runs
/// once at the new one; if it returns false the timer had fired. Nothing stays in the wheel.
///
/// Catches: a shard that decides "due" from a read of the deadline made before its
/// PENDING→FIRED CAS, or a CAS that compares only the lifecycle bits (instead of the whole
/// word): a reset landing in between is then ignored and the timer fires at the old deadline.
#[test]
fn reset_vs_fire() {
    loom::model(|| {
        let (engine, mut shard, clock) = driven_engine();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let handle = engine
            .schedule(MS, move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        shard.turn(engine.now_tick()); // link it
        clock.advance(MS);
        let resetter = thread::spawn(move || (handle.reset(MS * 10), handle));
        shard.turn(engine.now_tick()); // fire it, unless moved first
        let (moved, handle) = resetter.join().unwrap();
        if moved {
            assert_eq!(ran.load(Ordering::SeqCst), 0, "fired at the old deadline");
            assert_eq!(handle.state(), TimerState::Pending);
            clock.advance(MS * 10);
            shard.turn(engine.now_tick());
        }
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert_eq!(handle.state(), TimerState::Fired);
        assert_eq!(shard.shared().counts().in_wheel(), 0);
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}

/// Cancel vs re-arm: a repeating timer fires (its callback runs inline on the shard, whose
/// runner stows it, and the shard's next turn re-arms it) while another thread cancels it. The
/// cancel always succeeds (the timer is pending, running or stowed), at most the one due run
/// happens, none after, nothing is left in the wheel or the queues, and the engine releases
/// the timer's permit itself.
///
/// Catches: a cancel that only handles PENDING (a running timer's cancel would return false and
/// the timer go on repeating), or a stow or re-arm that publishes its word without a CAS
/// (it would overwrite the cancel, and the timer would run again after a successful cancel).
#[test]
fn cancel_vs_rearm() {
    loom::model(|| {
        let (engine, mut shard, clock) = driven_engine_with(|builder| builder.max_pending(1));
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let handle = engine
            .repeating(MS)
            .schedule(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        shard.turn(engine.now_tick()); // link it
        clock.advance(MS);
        let canceller = thread::spawn(move || (handle.cancel(), handle));
        shard.turn(engine.now_tick()); // run it (inline) and re-arm it
        let (cancelled, handle) = canceller.join().unwrap();
        assert!(cancelled);
        assert_eq!(handle.state(), TimerState::Cancelled);
        let runs = ran.load(Ordering::SeqCst);
        assert!(runs <= 1);
        clock.advance(MS * 3);
        shard.turn(engine.now_tick());
        shard.turn(engine.now_tick());
        assert_eq!(
            ran.load(Ordering::SeqCst),
            runs,
            "ran after a successful cancel"
        );
        assert_eq!(shard.shared().counts().in_wheel(), 0);
        assert_eq!(shard.shared().cap_used(), Some(0), "the permit is released");
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}
