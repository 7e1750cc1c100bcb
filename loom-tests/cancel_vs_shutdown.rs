//! Model 10: a cancel after linking racing shutdown, which drains the wheel.

use loom::sync::Arc;
use loom::thread;

use super::{driven_engine, MS};
use crate::entry::EntryRef;

/// The timer is linked in the wheel when a cancel races `shutdown`. Exactly one side wins the
/// timer: the cancel returns true and shutdown hands nothing back, or shutdown hands the
/// timer back and the cancel returns false. Either way the entry is released exactly once:
/// when the cancel finds it LINKED, its unlink request owns the wheel's count, and whichever
/// of the drain and the request comes second releases it (the request may be pushed after
/// shutdown, and is then released with the lane).
///
/// Catches: the drain deciding whether a request is coming from a read of the lifecycle
/// separate from its unmarking (instead of from the word its unmarking replaced): a cancel
/// in between either leaves the count to a request that never comes (a leak) or lets both
/// release it (a double free, which loom reports as a count gone below zero).
#[test]
fn cancel_vs_shutdown() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        let freed = Arc::new(());
        let f = freed.clone();
        let handle = engine.schedule(MS * 100, move || drop(f)).unwrap();
        shard.turn(engine.now_tick()); // link it
        let canceller = thread::spawn(move || (handle.cancel(), handle));
        let unfired = engine.shutdown_driven(vec![shard]);
        let (cancelled, handle) = canceller.join().unwrap();
        assert_eq!(
            unfired.len(),
            usize::from(!cancelled),
            "one side wins the timer"
        );
        drop(unfired);
        drop(engine);
        assert_eq!(Arc::strong_count(&freed), 1, "the callback was freed");
        // A request pushed after shutdown waits on the lane, which the handle keeps alive.
        let waiting = usize::from(handle.lane().has_unlink_request());
        assert_eq!(EntryRef::strong_count(handle.entry()), 1 + waiting);
        let entry = handle.entry().clone();
        drop(handle); // the lane goes, and releases a waiting request
        assert_eq!(
            EntryRef::strong_count(&entry),
            1,
            "the entry is released exactly once"
        );
    });
}
