//! Where expired callbacks run: a rayon pool (the default), inline on the shard thread, or a
//! spawner of the user's own, handed one [`Task`] per callback.
//!
//! A shard hands over the callbacks it fired in one tick as one batch. On the pool that is one
//! job per batch, split down to single callbacks (`with_max_len(1)`) that idle pool threads
//! steal, so a slow callback holds up only itself, never the tick thread and never a callback
//! that shared its batch while another pool thread is free. (Left to split adaptively, rayon
//! handed whole runs of a batch to one thread, and a timer that shared a run with a 100 ms
//! callback waited the 100 ms.) A spawner gets each callback as a `Task` of its own. Every
//! callback runs under `catch_unwind`; a panic is counted and the others run on.

use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use rayon::prelude::*;
use rayon::ThreadPool;

use super::core::ShardCore;
use crate::entry::Fired;
use crate::sync::{Arc, Condvar, Mutex, StdArc};

/// A user's spawner: runs each task it is given, somewhere, some time.
pub(crate) type Spawner = StdArc<dyn Fn(Task) + Send + Sync>;

#[derive(Clone)]
pub(crate) enum Executor {
    Pool(StdArc<ThreadPool>),
    Inline,
    Spawner(Spawner),
}

/// One expired callback, handed to a spawner given to
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
    shard: Arc<ShardCore>,
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
            run_one(fired, &self.shard, Runner::Other);
        }
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task").finish_non_exhaustive()
    }
}

/// Counts batches handed to the pool and not yet finished, so shutdown and a manual clock can
/// wait for callbacks in flight. (Tasks handed to a spawner are not counted: they run when the
/// user's executor runs them, which may need the very thread that would wait.)
pub(crate) struct Inflight {
    batches: Mutex<usize>,
    idle: Condvar,
}

impl Inflight {
    pub(crate) fn new() -> Self {
        Inflight {
            batches: Mutex::new(0),
            idle: Condvar::new(),
        }
    }

    fn begin(&self) {
        *self.batches.lock() += 1;
    }

    fn end(&self) {
        let mut batches = self.batches.lock();
        *batches -= 1;
        if *batches == 0 {
            self.idle.notify_all();
        }
    }

    /// Blocks until no batch is running.
    pub(crate) fn wait_idle(&self) {
        let mut batches = self.batches.lock();
        while *batches > 0 {
            batches = self.idle.wait(batches);
        }
    }
}

impl Executor {
    /// Runs `batch`, counting panics against `shard`. A one-shot timer keeps its place under
    /// the engine's cap until its callback has returned, so the cap also bounds what waits for
    /// a pool thread (a repeating timer keeps its place until it stops, see
    /// `timer::repeating`).
    pub(crate) fn run(&self, batch: Vec<Fired>, shard: &Arc<ShardCore>, inflight: &Arc<Inflight>) {
        match self {
            Executor::Inline => {
                for callback in batch {
                    run_one(callback, shard, Runner::TickThread);
                }
            }
            Executor::Pool(pool) => {
                inflight.begin();
                let shard = shard.clone();
                let inflight = inflight.clone();
                pool.spawn(move || {
                    if batch.len() == 1 {
                        batch
                            .into_iter()
                            .for_each(|callback| run_one(callback, &shard, Runner::Other));
                    } else {
                        batch
                            .into_par_iter()
                            .with_max_len(1)
                            .for_each(|callback| run_one(callback, &shard, Runner::Other));
                    }
                    inflight.end();
                });
            }
            Executor::Spawner(spawn) => {
                for fired in batch {
                    let task = Task {
                        fired: Some(fired),
                        shard: shard.clone(),
                    };
                    // The spawner is the user's code, on the tick thread: a panic must not
                    // unwind into the shard. The task, if the unwinding dropped it, has run.
                    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| spawn(task))) {
                        shard.counts().add_panicked();
                        crate::trace::spawner_panicked();
                        drop_payload(payload);
                    }
                }
            }
        }
    }
}

thread_local! {
    /// The engine whose callback this thread is running (0: none).
    static RUNNING_FOR: Cell<u64> = const { Cell::new(0) };
}

/// Whether the calling thread is inside a callback of engine `engine`.
pub(crate) fn in_callback_of(engine: u64) -> bool {
    RUNNING_FOR.with(|running| running.get() == engine)
}

/// Which thread runs a callback, for the counts of callbacks begun and ended.
#[derive(Clone, Copy)]
enum Runner {
    /// The shard's own tick thread (inline callbacks): counted without read-modify-writes.
    TickThread,
    /// Any other thread.
    Other,
}

fn run_one(fired: Fired, shard: &ShardCore, runner: Runner) {
    let ends = !fired.repeats();
    let outer = RUNNING_FOR.with(|running| running.replace(shard.engine()));
    let on_tick_thread = matches!(runner, Runner::TickThread);
    shard.runs().begin(on_tick_thread);
    let outcome = catch_unwind(AssertUnwindSafe(|| fired.run()));
    shard.runs().end(on_tick_thread);
    RUNNING_FOR.with(|running| running.set(outer));
    if ends {
        // Its place under the cap, held until now (see `Executor::run`); nothing without one.
        shard.release_cap(1);
    }
    if let Err(payload) = outcome {
        shard.counts().add_panicked();
        crate::trace::callback_panicked(&*payload);
        drop_payload(payload);
    }
}

/// How many nested panic payloads `drop_payload` drops before it gives up.
const PAYLOAD_DROPS: usize = 8;

/// Drops a callback's panic payload without letting a panic in its `Drop` unwind into the tick
/// thread or the pool. Such a panic has a payload of its own, which is dropped the same way; a
/// chain of payloads that each panic on drop is cut after `PAYLOAD_DROPS` links, and the last
/// one leaked rather than dropped (the only way to stop a chain that need not end).
fn drop_payload(mut payload: Box<dyn Any + Send>) {
    for _ in 0..PAYLOAD_DROPS {
        match catch_unwind(AssertUnwindSafe(|| drop(payload))) {
            Ok(()) => return,
            Err(next) => payload = next,
        }
    }
    std::mem::forget(payload);
}
