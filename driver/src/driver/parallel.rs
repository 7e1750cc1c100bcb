//! Running the same work on several threads from a common start, and timing it.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, ScopedJoinHandle};
use std::time::{Duration, Instant};

use super::{Context, Failure};

/// How often the progress line is redrawn while workers run.
const REDRAW: Duration = Duration::from_millis(100);

/// Runs `work(index, item)` for every item, each on its own thread, all released at once, and
/// returns the time from the release until the last of them finished. `total` units of work in
/// all (for the progress line, which the workers feed through `ctx.progress.add`).
///
/// The end is the latest instant a worker finished, as the worker itself saw it, so drawing
/// the progress line does not shift it.
pub(crate) fn run_timed<I, F>(
    ctx: &Context,
    label: &str,
    total: u64,
    items: Vec<I>,
    work: F,
) -> Result<Duration, Failure>
where
    I: Send,
    F: Fn(usize, I) -> Result<(), Failure> + Sync,
{
    let gate = Gate::new();
    thread::scope(|scope| {
        let mut workers = Vec::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            let (gate, work) = (&gate, &work);
            let spawned = thread::Builder::new()
                .name(format!("driver-{index}"))
                .spawn_scoped(scope, move || {
                    if !gate.wait() {
                        return Err(Failure::new("the run was called off"));
                    }
                    work(index, item)?;
                    Ok(Instant::now())
                });
            match spawned {
                Ok(worker) => workers.push(worker),
                Err(error) => {
                    // Release the workers already started, so the scope can end.
                    gate.set(Start::CalledOff);
                    return Err(Failure::new(format!("cannot start a thread: {error}")));
                }
            }
        }
        ctx.progress.restart();
        gate.wait_ready(workers.len());
        let start = Instant::now();
        gate.set(Start::Go);
        watch(ctx, label, total, &workers);
        let ends = join_all(workers)?;
        let end = ends.into_iter().max().unwrap_or(start);
        Ok(end.saturating_duration_since(start))
    })
}

/// Draws the progress line until every worker has finished (returns at once if nothing is
/// drawn).
fn watch<T>(ctx: &Context, label: &str, total: u64, workers: &[ScopedJoinHandle<'_, T>]) {
    if !ctx.progress.enabled() {
        return;
    }
    while !workers.iter().all(ScopedJoinHandle::is_finished) {
        ctx.progress.show_count(label, total);
        thread::sleep(REDRAW);
    }
    ctx.progress.clear();
}

/// Joins every worker (all of them, even after a failure) and returns their end instants, or
/// the first failure.
fn join_all(
    workers: Vec<ScopedJoinHandle<'_, Result<Instant, Failure>>>,
) -> Result<Vec<Instant>, Failure> {
    let results: Vec<Result<Instant, Failure>> = workers
        .into_iter()
        .map(|worker| {
            worker
                .join()
                .unwrap_or_else(|_| Err(Failure::new("a worker thread panicked")))
        })
        .collect();
    results.into_iter().collect()
}

/// What the start signal says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Wait,
    Go,
    CalledOff,
}

/// The gate's state: how many workers wait at it, and the signal.
struct GateState {
    ready: usize,
    start: Start,
}

/// The common start signal: a barrier between the workers and the thread that times them.
/// Unlike `std::sync::Barrier` it can be called off, so the workers already started are
/// released if a later one cannot be started.
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    fn new() -> Self {
        Gate {
            state: Mutex::new(GateState {
                ready: 0,
                start: Start::Wait,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait_while<'a>(
        &self,
        state: MutexGuard<'a, GateState>,
        blocked: impl FnMut(&mut GateState) -> bool,
    ) -> MutexGuard<'a, GateState> {
        self.changed
            .wait_while(state, blocked)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker's side: reports ready, then blocks until the signal is given; returns whether
    /// it was `Go`.
    fn wait(&self) -> bool {
        let mut state = self.lock();
        state.ready += 1;
        self.changed.notify_all();
        let state = self.wait_while(state, |state| state.start == Start::Wait);
        state.start == Start::Go
    }

    /// The timing thread's side: blocks until `workers` workers wait at the gate.
    fn wait_ready(&self, workers: usize) {
        let state = self.lock();
        drop(self.wait_while(state, |state| state.ready < workers));
    }

    fn set(&self, start: Start) {
        self.lock().start = start;
        self.changed.notify_all();
    }
}
