//! Models 1 and 2: a cancel racing the shard firing the timer, and two cancels racing.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::{driven_engine, ended, MS};

/// Cancel vs fire: exactly one of PENDING→CANCELLED and PENDING→FIRED wins; the callback runs once
/// if and only if `cancel()` returned false; afterwards the wheel holds nothing and the
/// callback is freed either way.
///
/// The timer is linked in the wheel first, so the cancel also pushes an unlink request,
/// racing the shard's slot processing (which may meet the cancelled entry first).
///
/// Catches: a lifecycle change that is not a CAS from Pending (for example `resolve` storing
/// its new word without comparing): then both sides win, and the callback runs after a cancel
/// that returned true.
#[test]
fn cancel_vs_fire() {
    loom::model(|| {
        let (engine, mut shard, clock) = driven_engine();
        let ran = Arc::new(AtomicUsize::new(0));
        let freed = Arc::new(());
        let (r, f) = (ran.clone(), freed.clone());
        let handle = engine
            .schedule(MS, move || {
                drop(f);
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        shard.turn(engine.now_tick()); // link it
        clock.advance(MS);
        let canceller = thread::spawn(move || (handle.cancel(), handle));
        shard.turn(engine.now_tick()); // fire it, unless cancelled first
        let (cancelled, handle) = canceller.join().unwrap();
        shard.turn(engine.now_tick()); // take any unlink request
        assert_eq!(ran.load(Ordering::SeqCst), usize::from(!cancelled));
        assert_eq!(handle.state(), ended(cancelled));
        assert_eq!(shard.shared().counts().in_wheel(), 0);
        assert_eq!(Arc::strong_count(&freed), 1, "the callback was freed");
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}

/// Two threads cancel the same timer: exactly one gets true, and the callback never runs.
///
/// Catches: the same non-CAS lifecycle change as `cancel_vs_fire` (both cancellers would
/// "win", and the callback would be taken twice).
#[test]
fn two_cancels_one_winner() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let handle = Arc::new(
            engine
                .schedule(MS * 10, move || {
                    r.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap(),
        );
        shard.turn(engine.now_tick());
        let other = {
            let handle = handle.clone();
            thread::spawn(move || handle.cancel())
        };
        let mine = handle.cancel();
        let theirs = other.join().unwrap();
        assert!(mine ^ theirs, "exactly one cancel wins");
        shard.turn(engine.now_tick());
        assert_eq!(shard.shared().counts().in_wheel(), 0);
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    });
}
