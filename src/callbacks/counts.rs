//! Per shard: the engine's id and cap, the stack its repeating timers come back on, and counts
//! of callbacks handed over, begun, ended and panicked.

use crossbeam_utils::CachePadded;

use crate::queue::Rearms;
use crate::sync::{thread_number, Arc, Cap, Counter};

/// Which thread runs a callback, for the counts of callbacks begun and ended.
#[derive(Clone, Copy)]
pub(super) enum RunsOn {
    /// The shard's own tick thread (inline callbacks): counted without read-modify-writes.
    TickThread,
    /// The pool runner holding this relay claim: counted without read-modify-writes, as far
    /// as the shard has stripes.
    Pool(usize),
    /// Any other thread.
    Other,
}

/// One shard's callbacks, as every thread that runs them sees them.
pub(crate) struct ShardCallbacks {
    /// The engine's id (see `sync::next_engine_id`), to recognise its own callbacks.
    engine: u64,
    cap: Option<Arc<Cap>>,
    /// Written by the tick thread every turn that fires: a line of its own, apart from `cap`,
    /// which every schedule reads.
    handed_over: CachePadded<Counter>,
    panicked: Counter,
    runs: Runs,
    /// Repeating timers their runners stowed, for the shard to re-arm (see `queue::rearm`).
    rearms: CachePadded<Rearms>,
    /// Repeating timers armed again after a run (counted as scheduled).
    rearmed: Counter,
    /// Repeating timers whose stow met shutdown (refused, as a schedule that met it).
    refused: Counter,
}

impl ShardCallbacks {
    /// A shard's callbacks in `engine`, whose pool has `pool_threads` runner claims.
    pub(crate) fn new(engine: u64, cap: Option<Arc<Cap>>, pool_threads: usize) -> Self {
        ShardCallbacks {
            engine,
            cap,
            handed_over: CachePadded::new(Counter::default()),
            panicked: Counter::default(),
            runs: Runs::new(pool_threads),
            rearms: CachePadded::new(Rearms::new()),
            rearmed: Counter::default(),
            refused: Counter::default(),
        }
    }

    /// The stack the shard's repeating timers come back on after each run.
    pub(crate) fn rearms(&self) -> &Rearms {
        &self.rearms
    }

    /// Counts a repeating timer armed again.
    pub(super) fn add_rearmed(&self) {
        self.rearmed.add(1);
    }

    /// Counts a re-arm that met shutdown as refused instead.
    pub(super) fn refuse_rearm(&self) {
        self.rearmed.add(u64::MAX);
        self.refused.add(1);
    }

    /// Repeating timers armed again after a run.
    pub(crate) fn rearmed(&self) -> u64 {
        self.rearmed.get()
    }

    /// Re-arms refused because the engine had shut down.
    pub(crate) fn rearms_refused(&self) -> u64 {
        self.refused.get()
    }

    /// The id of the engine the shard belongs to.
    pub(crate) fn engine(&self) -> u64 {
        self.engine
    }

    /// The engine's cap on pending timers, if it has one.
    pub(crate) fn cap(&self) -> Option<&Cap> {
        self.cap.as_deref()
    }

    pub(super) fn runs(&self) -> &Runs {
        &self.runs
    }

    pub(super) fn add_panicked(&self) {
        self.panicked.add(1);
    }

    /// Callbacks whose callback or spawner panicked.
    pub(crate) fn panicked(&self) -> u64 {
        self.panicked.get()
    }

    /// Counts `n` callbacks the shard is about to hand over.
    pub(crate) fn add_handed_over(&self, n: u64) {
        self.handed_over.add(n);
    }

    /// Callbacks the shard has handed over (fired).
    pub(crate) fn handed_over(&self) -> u64 {
        self.handed_over.get()
    }

    /// Callbacks handed over that have not begun, and those running: `(queued, running)`.
    pub(crate) fn queued_and_running(&self) -> (u64, u64) {
        // Read opposite to the order they move in (handed, begun, ended); Relaxed reads may
        // still disagree by a callback or two, which saturates to 0.
        let ended = self.runs.ended();
        let (queued, begun) = self.queued_and_begun();
        (queued, begun.saturating_sub(ended))
    }

    /// Callbacks handed over that have not begun (without reading the ended counts).
    pub(crate) fn queued(&self) -> u64 {
        self.queued_and_begun().0
    }

    fn queued_and_begun(&self) -> (u64, u64) {
        let begun = self.runs.begun();
        (self.handed_over().saturating_sub(begun), begun)
    }
}

/// Callbacks begun and ended, counted in stripes so a burst across pool threads does not
/// contend. The tick thread and the first `MAX_POOL_STRIPES` runner claims count alone without
/// read-modify-writes; other threads count in their thread number's stripe.
pub(super) struct Runs {
    tick_thread: CachePadded<Stripe>,
    /// By runner claim: one runner at a time, each ordered after the last by the relay's lock.
    pool: Box<[CachePadded<Stripe>]>,
    stripes: [CachePadded<Stripe>; RUN_STRIPES],
}

/// Shared stripes of `Runs`.
const RUN_STRIPES: usize = 8;

/// The most runner claims with a stripe of their own, per shard.
const MAX_POOL_STRIPES: usize = 64;

#[derive(Default)]
struct Stripe {
    begun: Counter,
    ended: Counter,
}

impl Runs {
    fn new(pool_threads: usize) -> Self {
        Runs {
            tick_thread: CachePadded::new(Stripe::default()),
            pool: (0..pool_threads.min(MAX_POOL_STRIPES))
                .map(|_| CachePadded::new(Stripe::default()))
                .collect(),
            stripes: std::array::from_fn(|_| CachePadded::new(Stripe::default())),
        }
    }

    /// The stripe `runner` counts in, and whether it writes there alone.
    fn stripe(&self, runner: RunsOn) -> (&Stripe, bool) {
        match runner {
            RunsOn::TickThread => (&self.tick_thread, true),
            RunsOn::Pool(claim) if claim < self.pool.len() => (&self.pool[claim], true),
            RunsOn::Pool(_) | RunsOn::Other => {
                (&self.stripes[thread_number() % RUN_STRIPES], false)
            }
        }
    }

    /// A callback begins, run by `runner`.
    pub(super) fn begin(&self, runner: RunsOn) {
        match self.stripe(runner) {
            (stripe, true) => stripe.begun.add_single_writer(1),
            (stripe, false) => stripe.begun.add(1),
        }
    }

    /// A callback ended; as `begin`.
    pub(super) fn end(&self, runner: RunsOn) {
        match self.stripe(runner) {
            (stripe, true) => stripe.ended.add_single_writer(1),
            (stripe, false) => stripe.ended.add(1),
        }
    }

    fn all(&self) -> impl Iterator<Item = &Stripe> {
        std::iter::once(&*self.tick_thread)
            .chain(self.pool.iter().map(|s| &**s))
            .chain(self.stripes.iter().map(|s| &**s))
    }

    fn ended(&self) -> u64 {
        self.all().map(|s| s.ended.get()).sum()
    }

    fn begun(&self) -> u64 {
        self.all().map(|s| s.begun.get()).sum()
    }
}
