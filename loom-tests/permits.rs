//! Model 19: a capped timer's permit against a cancel racing its shard (`entry::permit`).

use loom::thread;

use super::{driven_engine_with, MS};

/// A capped timer due in a tick is cancelled on another thread while the shard takes it,
/// links it and comes to its slot. However the cancel lands (before the shard takes it, after
/// it links it, or once its slot is due, when the wheel meets it before its unlink request),
/// the engine gives its permit back once: on dropping it from its queue, on taking its unlink
/// request, or as its callback begins.
///
/// Catches: a shard that lets go of a cancelled timer twice, for instance recording the entry
/// of an unlink request as one taken from a queue (`Outcomes::record_taken` in the unlink
/// loop of `Shard::turn`): the cap's count wraps, and every later timer is refused as full.
#[test]
fn a_cancel_racing_the_shard_gives_the_permit_back_once() {
    loom::model(|| {
        let (engine, mut shard, clock) = driven_engine_with(|builder| builder.max_pending(1));
        let handle = engine.schedule(MS, || {}).unwrap();
        let canceller = thread::spawn(move || handle.cancel());
        shard.turn(engine.now_tick()); // take it: link it, or drop it cancelled
        clock.advance(MS);
        shard.turn(engine.now_tick()); // its slot: fire it, or meet it cancelled
        canceller.join().unwrap();
        shard.turn(engine.now_tick()); // take a waiting unlink request
        assert_eq!(shard.shared().cap_used(), Some(0), "one permit back");
        assert_eq!(shard.shared().counts().in_wheel(), 0);
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}
