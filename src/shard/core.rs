//! What a shard shares with everyone who reaches it: producers, cancellers, the executor, the
//! engine. The shard thread's own state (its wheel) is in `worker`.

use crossbeam_utils::CachePadded;

use super::cap::Cap;
use super::lateness::Lateness;
use super::moving::Whereabouts;
use super::run::Runner;
use super::signal::Signal;
use crate::sync::{thread_slot, Arc, AtomicBool, AtomicU64, AtomicUsize, Counter, Ordering};
use crate::time::TickClock;

/// What a shard shares with producers, cancellers, the executor and the engine.
pub(crate) struct ShardCore {
    /// The engine's id (see `sync::next_engine_id`), to recognise its own callbacks.
    engine: u64,
    signal: Signal,
    stop: AtomicBool,
    counts: CachePadded<ShardCounts>,
    /// Callbacks begun and ended, by whichever thread runs them (see `Runs`); read for the
    /// statistics and by the relay, to tell whether the shard's callbacks have all begun.
    runs: Runs,
    lateness: Lateness,
    clock: TickClock,
    cap: Option<Arc<Cap>>,
    /// 0 if the thread is not pinned, else the core id plus one.
    pinned: AtomicUsize,
    /// Where the shard thread is in its loop, for the neighbour that looks after it: written
    /// every turn, so on a line of its own, away from what producers read on every schedule.
    whereabouts: CachePadded<Whereabouts>,
}

/// Counters of a shard: statistics (`sync::Counter`), exact once the writers are quiet; and
/// `processed` and `turns`, which a manual clock waits on (see `finish_turn`).
#[derive(Default)]
pub(crate) struct ShardCounts {
    fired: Counter,
    returned: Counter,
    panicked: Counter,
    in_wheel: Counter,
    late_turns: Counter,
    moved: Counter,
    processed: AtomicU64,
    turns: AtomicU64,
}

/// Callbacks of a shard begun and ended (statistics, and what tells the shard whether the
/// callbacks it handed to the pool have all begun), counted in stripes: a burst's callbacks
/// run on many pool threads at once, and one pair of counters that every one of them bumps
/// twice was measured to cost a burst about a sixth of its rate. The shard's own tick thread
/// (running inline callbacks) and each of the first `MAX_POOL_STRIPES` of the pool's runner
/// slots (see `relay`) have a stripe to themselves and count there without read-modify-writes;
/// any other thread counts in the stripe of its thread slot. Readers add them up.
pub(super) struct Runs {
    tick_thread: CachePadded<Stripe>,
    /// By the pool's runner slot: a slot is held by one runner at a time. A runner gives its
    /// slot back under the relay's lock, and the next is started with it only after the lock
    /// was taken again to pop it, so each holder's counts are ordered after the last's.
    pool: Box<[CachePadded<Stripe>]>,
    stripes: [CachePadded<Stripe>; RUN_STRIPES],
}

/// Shared stripes of `Runs`: as many as a pool usually has threads per core pair.
const RUN_STRIPES: usize = 8;

/// The most runner slots with a stripe of their own, per shard: enough for a pool of four
/// threads per core on 16 cores, at 8 KiB a shard.
const MAX_POOL_STRIPES: usize = 64;

#[derive(Default)]
struct Stripe {
    begun: Counter,
    ended: Counter,
}

impl Runs {
    fn new(pool_slots: usize) -> Self {
        Runs {
            tick_thread: CachePadded::new(Stripe::default()),
            pool: (0..pool_slots.min(MAX_POOL_STRIPES))
                .map(|_| CachePadded::new(Stripe::default()))
                .collect(),
            stripes: std::array::from_fn(|_| CachePadded::new(Stripe::default())),
        }
    }
    /// The stripe `runner` counts in, and whether it writes there alone.
    fn stripe(&self, runner: Runner) -> (&Stripe, bool) {
        match runner {
            Runner::TickThread => (&self.tick_thread, true),
            Runner::Pool(slot) if slot < self.pool.len() => (&self.pool[slot], true),
            Runner::Pool(_) | Runner::Other => (&self.stripes[thread_slot() % RUN_STRIPES], false),
        }
    }
    /// A callback begins, run by `runner`.
    pub(super) fn begin(&self, runner: Runner) {
        match self.stripe(runner) {
            (stripe, true) => stripe.begun.add_single_writer(1),
            (stripe, false) => stripe.begun.add(1),
        }
    }
    /// A callback ended; as `begin`.
    pub(super) fn end(&self, runner: Runner) {
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

impl ShardCounts {
    pub(super) fn add_fired(&self, n: u64) {
        self.fired.add(n);
    }
    pub(crate) fn add_returned(&self, n: u64) {
        self.returned.add(n);
    }
    pub(super) fn add_panicked(&self) {
        self.panicked.add(1);
    }
    pub(crate) fn fired(&self) -> u64 {
        self.fired.get()
    }
    pub(crate) fn returned(&self) -> u64 {
        self.returned.get()
    }
    pub(crate) fn panicked(&self) -> u64 {
        self.panicked.get()
    }
    pub(super) fn add_late_turn(&self) {
        self.late_turns.add(1);
    }
    pub(super) fn add_moved(&self) {
        self.moved.add(1);
    }

    /// Times a neighbour moved the shard thread off its core (see `moving`).
    pub(crate) fn moved(&self) -> u64 {
        self.moved.get()
    }

    /// Turns that began late (see `shard::pinning`).
    pub(crate) fn late_turns(&self) -> u64 {
        self.late_turns.get()
    }
    pub(super) fn set_in_wheel(&self, n: u64) {
        self.in_wheel.set(n);
    }
    pub(crate) fn in_wheel(&self) -> u64 {
        self.in_wheel.get()
    }
    /// The tick of the shard's last complete turn (one that emptied every queue).
    pub(crate) fn processed(&self) -> u64 {
        // Acquire: pairs with `finish_turn`, so a manual clock that sees the turn also sees
        // the batch of that turn registered as in flight.
        self.processed.load(Ordering::Acquire)
    }
    /// How many complete turns the shard has made.
    pub(crate) fn turns(&self) -> u64 {
        // Acquire: as `processed`.
        self.turns.load(Ordering::Acquire)
    }
    pub(super) fn finish_turn(&self, tick: u64) {
        // Release: see `processed`. Only the shard thread writes these.
        self.processed.store(tick, Ordering::Release);
        self.turns.fetch_add(1, Ordering::Release);
    }
}

impl ShardCore {
    /// A shard of engine `engine`, whose callback pool (if any) has `pool_slots` runner slots.
    pub(crate) fn new(
        engine: u64,
        clock: TickClock,
        cap: Option<Arc<Cap>>,
        pool_slots: usize,
    ) -> Self {
        ShardCore {
            engine,
            signal: Signal::new(),
            stop: AtomicBool::new(false),
            counts: CachePadded::new(ShardCounts::default()),
            runs: Runs::new(pool_slots),
            lateness: Lateness::new(),
            clock,
            cap,
            pinned: AtomicUsize::new(0),
            whereabouts: CachePadded::new(Whereabouts::new()),
        }
    }

    /// The id of the engine this shard belongs to.
    pub(crate) fn engine(&self) -> u64 {
        self.engine
    }

    pub(super) fn whereabouts(&self) -> &Whereabouts {
        &self.whereabouts
    }

    pub(crate) fn signal(&self) -> &Signal {
        &self.signal
    }

    pub(crate) fn counts(&self) -> &ShardCounts {
        &self.counts
    }

    pub(super) fn runs(&self) -> &Runs {
        &self.runs
    }

    /// Callbacks handed to the executor that have not begun, and those running: `(queued,
    /// running)`.
    pub(crate) fn callbacks_queued_and_running(&self) -> (u64, u64) {
        // Read in the order opposite to the one they move in (fired, then begun, then ended),
        // so each figure is mostly read after the one subtracted from it; Relaxed reads of
        // different counters may still disagree by a callback or two, which saturates to 0.
        let ended = self.runs.ended();
        let (queued, begun) = self.queued_and_begun();
        (queued, begun.saturating_sub(ended))
    }

    /// Callbacks handed to the executor that have not begun: the first half of
    /// `callbacks_queued_and_running`, without reading the ended counts (the relay asks this
    /// every turn).
    pub(crate) fn callbacks_queued(&self) -> u64 {
        self.queued_and_begun().0
    }

    /// Callbacks not yet begun, and those begun; begun read before fired, as
    /// `callbacks_queued_and_running` explains.
    fn queued_and_begun(&self) -> (u64, u64) {
        let begun = self.runs.begun();
        (self.counts.fired().saturating_sub(begun), begun)
    }

    /// Counts `n` callbacks fired, as a turn does before it hands them over (for the models,
    /// which hand batches to the relay by hand).
    #[cfg(all(test, loom))]
    pub(crate) fn count_fired(&self, n: u64) {
        self.counts.add_fired(n);
    }

    pub(crate) fn lateness(&self) -> &Lateness {
        &self.lateness
    }

    pub(crate) fn clock(&self) -> &TickClock {
        &self.clock
    }

    /// Records that the shard thread is pinned to core `core`.
    pub(super) fn set_pinned(&self, core: usize) {
        // Relaxed: a statistic, written by the shard thread alone; `build` waits for the
        // thread to drop a channel's sender after this, which orders it before `build` returns.
        self.pinned.store(core + 1, Ordering::Relaxed);
    }

    /// Records that the shard thread let go of its core (see `shard::pinning`).
    pub(super) fn set_unpinned(&self) {
        // Relaxed: a statistic.
        self.pinned.store(0, Ordering::Relaxed);
    }

    /// Tells the shard to stop: its thread leaves its loop, and producers that see the flag
    /// take back what they queue. The caller wakes the shard and passes the heavy barrier.
    pub(crate) fn set_stopped(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// The `stop` flag as a producer reads it after its push (see `Lane::enqueue`): Relaxed,
    /// ordered by the barrier the producer passed just before.
    pub(super) fn stop_seen_after_barrier(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Takes a place under the engine's cap, if it has one; false if the cap is reached.
    pub(super) fn take_cap(&self) -> bool {
        self.cap.as_ref().is_none_or(|cap| cap.try_take())
    }

    /// The core the shard thread is pinned to, if it is.
    pub(crate) fn pinned_core(&self) -> Option<usize> {
        // Relaxed: a statistic, written by the shard thread alone.
        self.pinned.load(Ordering::Relaxed).checked_sub(1)
    }

    pub(crate) fn is_stopped(&self) -> bool {
        // Acquire: pairs with the SeqCst store in shutdown; the shard exits its loop.
        self.stop.load(Ordering::Acquire)
    }

    /// Whether the engine has a cap on pending timers.
    pub(super) fn has_cap(&self) -> bool {
        self.cap.is_some()
    }

    /// Releases `n` places under the cap (timers the engine is done with).
    pub(crate) fn release_cap(&self, n: usize) {
        if let Some(cap) = &self.cap {
            cap.release(n);
        }
    }
}
