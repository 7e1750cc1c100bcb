//! Model 4: a cancel racing the shard's transfer of the entry from its queue into the wheel.

use loom::sync::Arc;
use loom::thread;

use super::{driven_engine, MS};
use crate::entry::EntryRef;

/// Whichever comes first — the shard linking the entry or the cancel — the entry ends up
/// unlinked and freed exactly once: a cancel that lands before linking costs only the CAS
/// (the shard drops the entry when it finds it cancelled), one that lands after pushes an
/// unlink request for the shard. Nothing stays in the wheel and only the
/// handle's reference is left.
///
/// Catches: the canceller deciding whether to send the unlink request from a read of the
/// link read before its CAS (instead of from the word the CAS replaced) — then a
/// link made between the two is missed and the entry stays linked, cancelled, for ever; and
/// the shard linking an entry without checking that its link CAS succeeded.
#[test]
fn cancel_vs_transfer() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        let freed = Arc::new(());
        let f = freed.clone();
        let handle = engine.schedule(MS * 100, move || drop(f)).unwrap();
        let canceller = thread::spawn(move || {
            assert!(handle.cancel());
            handle
        });
        shard.turn(engine.now_tick()); // transfer (or drop, if already cancelled)
        let handle = canceller.join().unwrap();
        shard.turn(engine.now_tick()); // take the unlink request, if one was sent
        assert_eq!(
            shard.shared().counts().in_wheel(),
            0,
            "the cancelled entry is unlinked"
        );
        assert_eq!(Arc::strong_count(&freed), 1, "the callback was freed");
        assert_eq!(
            EntryRef::strong_count(handle.entry()),
            1,
            "only the handle holds the entry"
        );
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}
