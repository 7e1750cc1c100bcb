//! loom models of the engine's protocols, each with the shard's tick loop stepped by the model.
//!
//! They need crate-private parts (an engine whose shards are driven by hand), so the crate
//! pulls them in under `cfg(all(test, loom))`. Run them with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom -C debug-assertions" LOOM_MAX_PREEMPTIONS=2 \
//!     CARGO_TARGET_DIR=target/loom cargo test --release -p shardwheel --lib loom_models
//! ```
//!
//! Every model's doc comment names the bug it catches; each was checked once by hand by
//! putting that bug in and watching the model fail.

mod cancel_vs_fire;
mod cancel_vs_shutdown;
mod cancel_vs_transfer;
mod cap_waiters;
mod claims_steal;
mod clock_reset;
mod clock_run;
mod delay_inbox;
mod lookahead;
mod owner_paths;
mod permits;
mod poll_vs_fire;
mod rearm;
mod relay_handover;
mod reset_vs_fire;
mod schedule_vs_shutdown;
mod shutdown_callers;
mod slab_chunks;
mod sleep_vs_insert;
mod survey;
mod young;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Wake;
use std::time::Duration;

use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;

use crate::engine::Builder;
use crate::shard::Shard;
use crate::ManualClock;
use crate::{TimerEngine, TimerState};

/// An engine with one shard and one lane, inline callbacks and a manual clock, whose shard
/// the model steps by hand.
pub(crate) fn driven_engine() -> (TimerEngine, Shard, ManualClock) {
    driven_engine_with(|builder| builder)
}

/// As [`driven_engine`], with what `tune` adds to its builder.
pub(crate) fn driven_engine_with(
    tune: impl FnOnce(Builder) -> Builder,
) -> (TimerEngine, Shard, ManualClock) {
    let clock = ManualClock::new();
    let builder = TimerEngine::builder()
        .shards(1)
        .lane_capacity(1)
        .inline_callbacks()
        .pin_threads(false)
        .manual_clock(&clock);
    let (engine, mut shards) = tune(builder).build_driven().expect("a valid configuration");
    let shard = shards.pop().expect("one shard");
    (engine, shard, clock)
}

pub(crate) const MS: Duration = Duration::from_millis(1);

/// The fired callbacks a spawner was handed, to run where a model says.
pub(crate) type Spawned = std::sync::Arc<std::sync::Mutex<Vec<crate::engine::Task>>>;

/// A driven engine whose callbacks go to a spawner, with a wall timer due a millisecond ahead,
/// linked in its wheel, that counts its runs: the engine, its shard, its clock, what the
/// spawner was handed, the count and the timer.
pub(crate) fn wall_timer_linked() -> (
    TimerEngine,
    Shard,
    ManualClock,
    Spawned,
    Arc<loom::sync::atomic::AtomicUsize>,
    crate::TimerHandle,
) {
    let tasks = Spawned::default();
    let spawned = tasks.clone();
    let (engine, mut shard, clock) = driven_engine_with(|builder| {
        builder.spawn_callbacks(move |task| spawned.lock().unwrap().push(task))
    });
    let ran = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
    let r = ran.clone();
    let handle = engine
        .schedule_at_wall(clock.wall() + MS, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    shard.turn(engine.now_tick()); // link it
    (engine, shard, clock, tasks, ran, handle)
}

/// A waker that counts its wake-ups, for the models of a task polling while a timer fires.
pub(crate) struct Counting(pub(crate) AtomicUsize);

impl Wake for Counting {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The state a timer ends in after a cancel that answered `cancelled` raced its firing.
pub(crate) fn ended(cancelled: bool) -> TimerState {
    if cancelled {
        TimerState::Cancelled
    } else {
        TimerState::Fired
    }
}

/// Runs `ask` on a new thread (it waits, yielding, for its answer) while this thread calls
/// `step` (the shard's side) until the asker is done; returns what `ask` returned.
pub(crate) fn ask_while_stepping<A: Send + 'static>(
    ask: impl FnOnce() -> A + Send + 'static,
    mut step: impl FnMut(),
) -> A {
    let done = Arc::new(AtomicBool::new(false));
    let asker = {
        let done = done.clone();
        thread::spawn(move || {
            let answer = ask();
            done.store(true, Ordering::SeqCst);
            answer
        })
    };
    while !done.load(Ordering::SeqCst) {
        step();
        thread::yield_now();
    }
    asker.join().unwrap()
}

/// The deadline tick of `timer`'s entry.
pub(crate) fn timer_deadline(timer: &crate::TimerHandle) -> u64 {
    timer.entry().state().deadline()
}
