//! Model 17: young timers, kept by their lane's owner (see `queue::young`), against a cancel
//! from another thread, the shard taking them, shutdown, and the shard going to sleep. Under
//! loom no thread owns a lane, so each model names the one thread that schedules as the owner
//! (`TimerEngine::schedule_as_owner`). The engine's clock is manual, so its shard takes every
//! young timer on each turn; a timer due a second ahead is kept young.

use loom::sync::Arc;
use loom::thread;

use super::{driven_engine, driven_engine_with, MS};
use crate::shard::Announced;

const FAR: std::time::Duration = std::time::Duration::from_secs(1);

/// The owner's next schedules sweep a timer that another thread cancels while young: its
/// entry goes back into the owner's stash only once that thread let go of its handle, and its
/// permit back to the cap once, by the sweep or by shutdown.
///
/// Catches: reusing a cancelled young entry that a handle still holds (dropping the count
/// check in `Lane::keep_spare`): the canceller may still be taking the callback out of the
/// cell when the owner's next timer, made in the same block, is cancelled in turn, and loom
/// reports the two unordered accesses to the cell. A sweep that takes a cancelled timer back
/// without ending its permit hold (`Entry::end_cancelled_hold` in `Lane::sweep`) leaves the cap
/// full.
#[test]
fn a_timer_cancelled_young_elsewhere_is_reused_once_let_go() {
    loom::model(|| {
        let (engine, shard, _clock) = driven_engine_with(|builder| builder.max_pending(3));
        let shared = shard.shared_arc();
        let engine = Arc::new(engine);
        let first = engine.schedule_as_owner(FAR, || {}).ok().unwrap();
        // The owner's next two schedules, on a thread of their own (the spawn hands it the
        // lane), while this thread cancels the first timer and lets go of its handle.
        let owner = {
            let engine = engine.clone();
            thread::spawn(move || {
                let second = engine.schedule_as_owner(FAR, || {}).ok().unwrap();
                let third = engine.schedule_as_owner(FAR, || {}).ok().unwrap();
                (second, third)
            })
        };
        assert!(first.cancel());
        drop(first);
        let (second, third) = owner.join().unwrap();
        assert!(second.cancel() && third.cancel());
        drop((second, third));
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
        let stats = engine.stats();
        assert_eq!((stats.scheduled, stats.cancelled, stats.pending), (3, 3, 0));
        assert_eq!(shared.cap_used(), Some(0), "each permit is given back once");
    });
}

/// The owner sweeps a young timer old enough to send to the shard while the shard takes the
/// lane's young timers: the two never take the same one, so each timer is linked once.
///
/// Catches: a sweep that does not look at `taking` after its fence (or a take without its
/// fence before reading `busy`): both move `head` over the first timer, which is then sent on
/// the ring and taken as well, and the wheel links it twice.
#[test]
fn the_owner_and_the_shard_never_both_take_a_young_timer() {
    loom::model(|| {
        let (engine, mut shard, clock) = driven_engine();
        let engine = Arc::new(engine);
        let first = engine.schedule_as_owner(FAR, || {}).ok().unwrap();
        // Old enough that the owner's next schedule sends it.
        clock.advance(MS * 2);
        let owner = {
            let engine = engine.clone();
            thread::spawn(move || engine.schedule_as_owner(FAR, || {}).ok().unwrap())
        };
        shard.turn(engine.now_tick());
        let second = owner.join().unwrap();
        shard.turn(engine.now_tick());
        assert_eq!(
            shard.shared().counts().in_wheel(),
            2,
            "each timer linked once"
        );
        assert!(first.cancel() && second.cancel());
        shard.turn(engine.now_tick());
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}

/// The owner schedules (its sweep sending an older young timer to the shard) while the engine
/// shuts down: every timer is handed back or refused, exactly once.
///
/// Catches: shutdown taking the young timers without first waiting out a schedule in progress
/// (`busy` in `Young::take_after_stop`): the owner's sweep sends the older timer to the ring
/// after shutdown emptied it, and that timer is lost. Dropping the owner's look at the stop
/// flag after its fence (`Lane::enqueue_young`) loses the new one the same way.
#[test]
fn shutdown_takes_every_young_timer_once() {
    loom::model(|| {
        let (engine, shard, clock) = driven_engine();
        let engine = Arc::new(engine);
        let first = engine.schedule_as_owner(FAR, || {}).ok().unwrap();
        clock.advance(MS * 2);
        let owner = {
            let engine = engine.clone();
            thread::spawn(move || engine.schedule_as_owner(FAR, || {}).err())
        };
        let unfired = engine.shutdown_driven(vec![shard]);
        let refused = owner.join().unwrap();
        assert_eq!(unfired.len() + usize::from(refused.is_some()), 2);
        assert!(unfired.iter().any(|timer| timer.timer() == &first));
        let stats = engine.stats();
        assert_eq!(stats.pending, 0);
        assert_eq!(stats.handed_back, unfired.len() as u64);
    });
}

/// The shard, its queues empty, goes to sleep while the owner keeps a new timer young. Either
/// the shard sees the young timer when it looks after announcing its sleep, or the owner sees
/// the announcement after its fence and wakes it (asking for the timer to be taken at once).
/// The model parks the shard until woken, so a missed wake-up shows as a deadlock.
///
/// Catches: an owner that keeps a timer young without reading the sleep word after its fence
/// (`Signal::announced` in `Lane::enqueue_young`): the shard sleeps past the timer's horizon.
#[test]
fn a_young_timer_wakes_a_sleeping_shard() {
    loom::model(|| {
        let (engine, mut shard, _clock) = driven_engine();
        let engine = Arc::new(engine);
        shard.shared().signal().set_thread(thread::current());
        shard.turn(engine.now_tick());
        let owner = {
            let engine = engine.clone();
            thread::spawn(move || engine.schedule_as_owner(FAR, || {}).ok().unwrap())
        };
        if shard.prepare_sleep(engine.now_tick()) != Announced::Awake {
            thread::park();
            shard.shared().signal().awake();
        }
        let timer = owner.join().unwrap();
        shard.turn(engine.now_tick());
        assert_eq!(shard.shared().counts().in_wheel(), 1, "the shard took it");
        assert!(timer.cancel());
        shard.turn(engine.now_tick());
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}
