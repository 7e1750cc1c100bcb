//! Model 5: the tick thread going to sleep while a producer inserts, or a canceller asks for an
//! unlink.

use loom::thread;

use super::{driven_engine, MS};
use crate::shard::Announced;

/// The shard holds a timer due far away and goes to sleep until it, while a producer schedules
/// a timer due much earlier. No lost wake-up: either the shard sees the insert when it looks at
/// its queues again after announcing the sleep, or the producer sees the announcement and
/// unparks it. The model parks the shard "until woken" whenever it goes to sleep without
/// having taken the new timer, so a missed wake-up shows as a deadlock.
///
/// Catches: announcing the sleep without looking at the queues again afterwards (or without
/// the fences on either side): the producer can read the sleep word before the announcement
/// while the shard read its queues before the push, and the shard sleeps past the insert.
#[test]
fn sleep_vs_insert() {
    sleep_while_a_producer_schedules(true);
}

/// The shard, holding a timer due far away (if `far`) or none, takes its queues and goes to
/// sleep while a producer schedules a timer due soon; it must link that timer.
fn sleep_while_a_producer_schedules(far: bool) {
    loom::model(move || {
        let (engine, mut shard, _clock) = driven_engine();
        let engine = loom::sync::Arc::new(engine);
        let far = far.then(|| engine.schedule(MS * 1000, || {}).unwrap());
        let linked = 1 + u64::from(far.is_some());
        shard.shared().signal().set_thread(thread::current());
        shard.turn(engine.now_tick());
        let producer = {
            let engine = engine.clone();
            thread::spawn(move || engine.schedule(MS * 5, || {}).unwrap())
        };
        shard.turn(engine.now_tick());
        let took_it = shard.shared().counts().in_wheel() == linked;
        if shard.prepare_sleep(engine.now_tick()) != Announced::Awake && !took_it {
            thread::park();
            shard.shared().signal().awake();
        }
        // Woken (or never asleep): the producer's push is done or about to be; once it is,
        // the next turn takes the timer.
        let near = producer.join().unwrap();
        shard.turn(engine.now_tick());
        assert_eq!(
            shard.shared().counts().in_wheel(),
            linked,
            "the shard linked the new timer"
        );
        assert!(near.cancel() && far.is_none_or(|far| far.cancel()));
        shard.turn(engine.now_tick());
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}

/// As `sleep_vs_insert`, for a cancel after linking: the shard sleeps towards a deadline far
/// away while a canceller sends it an unlink request. It must wake and unlink the entry
/// (memory freed within about a tick), not keep it until the deadline.
///
/// Catches: a cancel that pushes its unlink request without notifying the shard.
#[test]
fn sleep_vs_cancel() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        let handle = engine.schedule(MS * 1000, || {}).unwrap();
        shard.turn(engine.now_tick());
        let canceller = thread::spawn(move || {
            assert!(handle.cancel());
            handle
        });
        shard.shared().signal().set_thread(thread::current());
        if shard.prepare_sleep(engine.now_tick()) != Announced::Awake {
            thread::park();
            shard.shared().signal().awake();
        }
        shard.turn(engine.now_tick());
        let _handle = canceller.join().unwrap();
        assert_eq!(
            shard.shared().counts().in_wheel(),
            0,
            "the cancelled entry was unlinked"
        );
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}

/// As `sleep_vs_insert`, for a producer whose schedule is the first through its lane: the
/// shard knows no lane when it goes to sleep, and the producer makes one and pushes onto it
/// (see `shard::lanes`). Either the producer sees the announcement and wakes the shard, or the
/// shard, looking for new lanes after its announcement, finds the lane and the timer on it.
///
/// Catches: a shard that looks for new lanes only at the start of a turn, not again after
/// announcing its sleep (`find_new_lanes` in `Shard::prepare_sleep`): it checks the lanes it
/// knew, finds no work, and sleeps past the timer.
#[test]
fn sleep_vs_first_schedule() {
    sleep_while_a_producer_schedules(false);
}
