//! Where fired callbacks run: a rayon pool (the default), inline on the shard thread, or a
//! spawner of the user's own, handed one [`Task`] per callback.
//!
//! A shard hands over the callbacks it fired in one tick as one batch. To the pool it goes
//! through the `relay`: onto the shard's queue, from which runners on pool threads take it
//! into a range of their own and run one callback at a time, while other runners steal halves
//! of the range. So a slow callback holds up only itself, never the tick thread; a callback
//! behind it waits about a tick for another runner while the pool has a thread free. A
//! spawner gets each callback as a `Task` of its own. Every callback runs under
//! `catch_unwind` (see `run`); a panic is counted and the others run on.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::counts::RunsOn;
use super::counts::ShardCallbacks;
use super::relay::Relay;
use super::run::{drop_payload, run_one};
use crate::entry::Fired;
use crate::sync::{Arc, StdArc};

/// A user's spawner: runs each task it is given, somewhere, some time.
pub(crate) type Spawner = StdArc<dyn Fn(Task) + Send + Sync>;

#[derive(Clone)]
pub(crate) enum Executor {
    /// The pool, through its relay: with the shard's index there.
    Pool(StdArc<Relay>, usize),
    Inline,
    Spawner(Spawner),
}

/// One fired callback, handed to a spawner given to
/// [`Builder::spawn_callbacks`](crate::Builder::spawn_callbacks): call [`run`](Task::run) on
/// whatever thread or executor should run it.
///
/// A task is `Send` and runs its callback once. A task dropped without being run runs its
/// callback in its drop, so a spawner that loses a task (an executor shutting down drops the
/// work it holds) loses no timer. A panic in the callback is caught and counted in
/// [`Stats::panicked`](crate::Stats::panicked).
///
/// ```
/// use std::time::Duration;
/// let (tx, rx) = std::sync::mpsc::channel();
/// let engine = shardwheel::TimerEngine::builder()
///     .spawn_callbacks(|task| {
///         std::thread::spawn(move || task.run());
///     })
///     .build()?;
/// engine.schedule(Duration::from_millis(1), move || tx.send("ran").unwrap())?;
/// assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), "ran");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Task {
    fired: Option<Fired>,
    shard: Arc<ShardCallbacks>,
}

impl Task {
    /// Runs the callback on the calling thread.
    pub fn run(self) {
        // Running is what the drop does.
        drop(self);
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        // Run, or dropped unrun: either way the callback runs here, once (see `Task`).
        if let Some(fired) = self.fired.take() {
            run_one(fired, &self.shard, RunsOn::Other);
        }
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task").finish_non_exhaustive()
    }
}

impl Executor {
    /// The executor of shard `index`: the pool's is told which queue is the shard's.
    pub(crate) fn for_shard(&self, index: usize) -> Self {
        match self {
            Executor::Pool(relay, _) => Executor::Pool(relay.clone(), index),
            other => other.clone(),
        }
    }

    /// Called by the shard at each turn: callbacks handed over in an earlier turn that still
    /// wait to begin get another runner (see `relay`).
    pub(crate) fn look_again(&self) {
        if let Executor::Pool(relay, index) = self {
            relay.look_again(*index);
        }
    }

    /// Whether callbacks this shard handed over still wait to begin, so that the shard must
    /// look again next tick (see `relay`). Only the pool's can wait on the shard.
    pub(crate) fn has_queued(&self) -> bool {
        match self {
            Executor::Pool(relay, index) => relay.has_queued(*index),
            _ => false,
        }
    }

    /// Runs `batch`, counting panics against `shard`. A one-shot timer keeps its permit under
    /// the engine's cap until its callback begins, so the cap also bounds what waits for
    /// a pool thread (a repeating timer keeps its permit until it stops, see
    /// `timer::repeating`).
    pub(crate) fn run(&self, batch: Vec<Fired>, shard: &Arc<ShardCallbacks>) {
        match self {
            Executor::Inline => {
                for callback in batch {
                    run_one(callback, shard, RunsOn::TickThread);
                }
            }
            Executor::Pool(relay, index) => relay.hand_over(*index, batch),
            Executor::Spawner(spawn) => {
                for fired in batch {
                    let task = Task {
                        fired: Some(fired),
                        shard: shard.clone(),
                    };
                    // The spawner is the user's code, on the tick thread: a panic must not
                    // unwind into the shard. The task, if the unwinding dropped it, has run.
                    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| spawn(task))) {
                        shard.add_panicked();
                        crate::trace::spawner_panicked();
                        drop_payload(payload);
                    }
                }
            }
        }
    }
}
