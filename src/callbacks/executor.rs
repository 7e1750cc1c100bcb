//! Where fired callbacks run: a rayon pool (the default, through the `relay`), inline on the
//! shard thread, or a user's spawner, one [`Task`] per callback. Every callback runs under
//! `catch_unwind` (see `run`); a panic is counted and the others run on.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::counts::RunsOn;
use super::counts::ShardCallbacks;
use super::relay::{HandOver, Relay};
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
/// [`Builder::spawn_callbacks`](crate::engine::Builder::spawn_callbacks): call [`run`](Task::run) on
/// whatever thread or executor should run it.
///
/// A task is `Send` and runs its callback once; one dropped unrun runs it in its drop, so a
/// spawner that loses tasks loses no timer. A panic is caught and counted in
/// [`Stats::panicked`](crate::stats::Stats::panicked).
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

    /// At each turn: callbacks handed over earlier that still wait get another runner.
    pub(crate) fn look_again(&self) {
        if let Executor::Pool(relay, index) = self {
            relay.look_again(*index);
        }
    }

    /// Whether callbacks go to the pool's runners.
    pub(crate) fn is_pool(&self) -> bool {
        matches!(self, Executor::Pool(..))
    }

    /// Whether handed callbacks still wait to begin, so the shard looks again next tick (only
    /// the pool's can).
    pub(crate) fn has_queued(&self) -> bool {
        match self {
            Executor::Pool(relay, index) => relay.has_queued(*index),
            _ => false,
        }
    }

    /// Runs `batch`, of kind `kind`, counting panics against `shard`. A one-shot keeps its
    /// permit until its callback begins, so the cap bounds what waits for the pool.
    pub(crate) fn run(&self, batch: Vec<Fired>, shard: &Arc<ShardCallbacks>, kind: HandOver) {
        match self {
            Executor::Inline => {
                for callback in batch {
                    run_one(callback, shard, RunsOn::TickThread);
                }
            }
            Executor::Pool(relay, index) => relay.hand_over(*index, batch, kind),
            Executor::Spawner(spawn) => {
                for fired in batch {
                    let task = Task {
                        fired: Some(fired),
                        shard: shard.clone(),
                    };
                    // The spawner is user code on the tick thread: a panic must not unwind
                    // into the shard. A task the unwinding dropped has run.
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
