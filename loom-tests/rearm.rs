//! Model 18: a repeating timer's runner handing it back to its shard (`entry::repeat`,
//! `queue::rearm`) while the engine shuts down, or while the shard goes to sleep.

use std::sync::{Arc as StdArc, Mutex as StdMutex};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::{driven_engine_with, MS};
use crate::shard::Announced;
use crate::TimerState;

/// A repeating timer's run (a spawned task, run on a thread of its own) ends while the engine
/// shuts down. The timer ends in one place: handed back by shutdown (its runner stowed it in
/// time), or stopped by its runner (which saw the engine stopped, or the re-arm stack closed);
/// its permit is released once and its callback freed.
///
/// Catches: a push onto a closed re-arm stack (no closed check in `TakeAllStack::push`): the
/// entry lands behind the close, where no one takes it, neither handed back nor stopped.
#[test]
fn a_run_ending_during_shutdown_is_handed_back_or_stopped_once() {
    loom::model(|| {
        let tasks = StdArc::new(StdMutex::new(Vec::new()));
        let spawned = tasks.clone();
        let (engine, mut shard, clock) = driven_engine_with(|builder| {
            builder
                .max_pending(1)
                .spawn_callbacks(move |task| spawned.lock().unwrap().push(task))
        });
        let shared = shard.shared_arc();
        let (runs, freed) = (Arc::new(AtomicUsize::new(0)), Arc::new(()));
        let (r, f) = (runs.clone(), freed.clone());
        let handle = engine
            .repeating(MS)
            .schedule(move || {
                let _kept = &f;
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        shard.turn(engine.now_tick()); // link it
        clock.advance(MS);
        shard.turn(engine.now_tick()); // fire it: its task goes to the spawner
        let task = tasks.lock().unwrap().pop().expect("a fired task");
        let runner = thread::spawn(move || task.run());
        let unfired = engine.shutdown_driven(vec![shard]);
        runner.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let state = if unfired.len() == 1 {
            TimerState::HandedBack
        } else {
            TimerState::Fired
        };
        assert_eq!(handle.state(), state, "{} handed back", unfired.len());
        drop(unfired);
        assert_eq!(shared.cap_used(), Some(0), "the permit is released once");
        assert_eq!(Arc::strong_count(&freed), 1, "the callback is freed");
        let stats = engine.stats();
        assert_eq!(stats.scheduled, stats.fired + stats.handed_back);
    });
}

/// A repeating timer's run ends, and its runner hands it back to its shard, while the shard
/// goes to sleep with nothing in its wheel. No lost wake-up: either the shard sees the stowed
/// entry when it looks at the re-arm stack after announcing the sleep, or the runner's push
/// finds the stack empty and unparks it. A missed wake-up shows as a deadlock.
///
/// Catches: a push onto an empty re-arm stack that does not unpark the shard: the shard looks
/// before the push and sleeps "until woken" while the timer waits on the stack.
#[test]
fn a_run_ending_wakes_a_sleeping_shard() {
    loom::model(|| {
        let tasks = StdArc::new(StdMutex::new(Vec::new()));
        let spawned = tasks.clone();
        let (engine, mut shard, clock) = driven_engine_with(|builder| {
            builder.spawn_callbacks(move |task| spawned.lock().unwrap().push(task))
        });
        let handle = engine.repeating(MS).schedule(|| {}).unwrap();
        shard.turn(engine.now_tick()); // link it
        clock.advance(MS);
        shard.turn(engine.now_tick()); // fire it: its task goes to the spawner
        let task = tasks.lock().unwrap().pop().expect("a fired task");
        shard.shared().signal().set_thread(thread::current());
        (shard.shared().callbacks().rearms()).set_thread(thread::current());
        let runner = thread::spawn(move || task.run());
        if shard.prepare_sleep(engine.now_tick()) != Announced::Awake {
            thread::park();
            shard.shared().signal().awake();
        }
        runner.join().unwrap();
        shard.turn(engine.now_tick());
        assert_eq!(shard.shared().counts().in_wheel(), 1, "re-armed");
        assert!(handle.cancel());
        shard.turn(engine.now_tick());
        assert!(engine.shutdown_driven(vec![shard]).is_empty());
    });
}
