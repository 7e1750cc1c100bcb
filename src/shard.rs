//! A shard: one wheel, the thread that alone touches it, and the state others share with it.
//!
//! The tick loop, one [`Shard::turn`] at a time:
//! 1. take the timers cancelled after placement off every lane's unlink stack and unlink them
//!    (so their memory is freed within about a tick, see [`crate::unlink`]), and move the ones
//!    reset to an earlier deadline (the `changes` queue);
//! 2. take new timers off every lane's owner ring and `inserts` queue and place them (a timer
//!    cancelled while still queued is dropped here, having cost its canceller one CAS);
//! 3. advance the wheel to the current tick, winning INIT→EXPIRED for each due timer;
//! 4. hand the callbacks fired in this turn to the executor as one batch, and the entries it
//!    found dead and unshared back to their lanes for reuse (see [`crate::recycle`]).
//!
//! Between turns the thread polls once a tick while work keeps arriving or a slot is due by the
//! next tick, and otherwise sleeps until the wheel's next deadline (see [`crate::signal`]).

use crossbeam_utils::CachePadded;

use crate::callback::Fired;
use crate::cap::Cap;
use crate::clock::TickClock;
use crate::entry::EntryRef;
use crate::executor::{Executor, Inflight};
use crate::inbound::Pop;
use crate::lane::Lane;
use crate::recycle::RETURN_LIMIT;
use crate::signal::Signal;
use crate::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::unlink::Requests;
use crate::wheel::{Settled, Wheel};

/// At most this many new timers are taken from one lane per turn, so a flood of inserts cannot
/// hold back firing for long.
const INSERT_BUDGET: usize = 16_384;

/// Changed timers are taken this many at a time, and loaded before any is unlinked (see
/// `Wheel::warm`).
const WARM_BATCH: usize = 32;

/// What a shard shares with producers, cancellers, the executor and the engine.
pub(crate) struct ShardShared {
    /// The engine's id (see `sync::next_engine_id`), to recognise its own callbacks.
    pub(crate) engine: u64,
    pub(crate) signal: Signal,
    pub(crate) stop: AtomicBool,
    pub(crate) counts: CachePadded<ShardCounts>,
    pub(crate) clock: TickClock,
    pub(crate) cap: Option<Arc<Cap>>,
    /// 0 if the thread is not pinned, else the core id plus one.
    pinned: AtomicUsize,
}

/// Counters of a shard. Relaxed throughout: statistics, exact once the writers are quiet;
/// `processed` and `turns` are the exception (see `finish_turn`).
#[derive(Default)]
pub(crate) struct ShardCounts {
    fired: AtomicU64,
    returned: AtomicU64,
    panicked: AtomicU64,
    in_wheel: AtomicU64,
    processed: AtomicU64,
    turns: AtomicU64,
}

impl ShardCounts {
    pub(crate) fn add_fired(&self, n: u64) {
        self.fired.fetch_add(n, Ordering::Relaxed);
    }
    pub(crate) fn add_returned(&self, n: u64) {
        self.returned.fetch_add(n, Ordering::Relaxed);
    }
    pub(crate) fn add_panicked(&self) {
        self.panicked.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn fired(&self) -> u64 {
        self.fired.load(Ordering::Relaxed)
    }
    pub(crate) fn returned(&self) -> u64 {
        self.returned.load(Ordering::Relaxed)
    }
    pub(crate) fn panicked(&self) -> u64 {
        self.panicked.load(Ordering::Relaxed)
    }
    pub(crate) fn in_wheel(&self) -> u64 {
        self.in_wheel.load(Ordering::Relaxed)
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
    fn finish_turn(&self, tick: u64) {
        // Release: see `processed`. Only the shard thread writes these.
        self.processed.store(tick, Ordering::Release);
        self.turns.fetch_add(1, Ordering::Release);
    }
}

impl ShardShared {
    pub(crate) fn new(engine: u64, clock: TickClock, cap: Option<Arc<Cap>>) -> Self {
        ShardShared {
            engine,
            signal: Signal::new(),
            stop: AtomicBool::new(false),
            counts: CachePadded::new(ShardCounts::default()),
            clock,
            cap,
            pinned: AtomicUsize::new(0),
        }
    }

    /// The core the shard thread is pinned to, if it is.
    pub(crate) fn pinned_core(&self) -> Option<usize> {
        // Relaxed: a statistic written once at thread start.
        self.pinned.load(Ordering::Relaxed).checked_sub(1)
    }

    pub(crate) fn is_stopped(&self) -> bool {
        // Acquire: pairs with the SeqCst store in shutdown; the shard exits its loop.
        self.stop.load(Ordering::Acquire)
    }

    pub(crate) fn release_cap(&self, n: usize) {
        if let Some(cap) = &self.cap {
            cap.release(n);
        }
    }
}

/// The shard thread's own state: its wheel, its lanes, and the callbacks of the current turn.
pub(crate) struct Shard {
    /// Declared before `lanes`, so that a shard dropped while unwinding drains its wheel
    /// before it lets go of its lanes (see [`Stopped`]).
    wheel: Wheel,
    pub(crate) shared: Arc<ShardShared>,
    lanes: Box<[Arc<Lane>]>,
    executor: Executor,
    inflight: Arc<Inflight>,
    outcomes: Outcomes,
    /// Reused buffer for the entries taken from a ring or a `changes` queue.
    fresh: Vec<EntryRef>,
    /// Reused buffer for the entries taken from an unlink stack.
    unlinked: Requests,
}

/// A stopped shard: its wheel, for shutdown to empty, and its lanes, kept until the wheel is
/// gone. The fields drop in order, wheel first: the wheel leaves the counts of cancelled
/// entries to their unlink requests, which the lanes release when they go (see
/// [`crate::unlink`]), so the lanes must not go first.
pub(crate) struct Stopped {
    pub(crate) wheel: Wheel,
    _lanes: Box<[Arc<Lane>]>,
}

/// What a turn does with the entries it handled.
struct Outcomes {
    /// The callbacks fired, for the executor.
    fired: Vec<Fired>,
    /// The dead entries, for their lanes to reuse.
    spares: Spares,
}

impl Outcomes {
    fn file(&mut self, settled: Settled, index: usize, lane: &Lane) {
        match settled {
            Settled::Fired(fired) => self.fired.push(fired),
            Settled::Dropped(dead) => self.spares.keep(index, lane, dead),
            Settled::Placed | Settled::LeftToUnlink => {}
        }
    }
}

/// The dead entries a turn gives back to each lane (indexed as `Shard::lanes`).
struct Spares {
    kept: Box<[Vec<EntryRef>]>,
    /// How many entries each lane's stack has been given since the shard last saw it empty.
    given: Box<[usize]>,
}

impl Spares {
    fn new(lanes: usize) -> Self {
        Spares {
            kept: (0..lanes).map(|_| Vec::new()).collect(),
            given: vec![0; lanes].into_boxed_slice(),
        }
    }

    /// Keeps `entry`, resolved and out of the wheel, to give back to lane `index` if no one
    /// else holds it and the lane has an owner to reuse it; otherwise lets it go.
    fn keep(&mut self, index: usize, lane: &Lane, mut entry: EntryRef) {
        if EntryRef::get_mut(&mut entry).is_none() || !lane.counts.has_owner() {
            return;
        }
        if self.given[index] + self.kept[index].len() >= RETURN_LIMIT {
            if !lane.spares.is_drained() {
                return;
            }
            self.given[index] = 0;
        }
        self.kept[index].push(entry);
    }

    /// Pushes each lane's kept entries onto its stack.
    fn give_back(&mut self, lanes: &[Arc<Lane>]) {
        for ((lane, kept), given) in lanes
            .iter()
            .zip(self.kept.iter_mut())
            .zip(self.given.iter_mut())
        {
            let n = kept.len();
            if n == 0 {
                continue;
            }
            if lane.spares.give(kept) {
                *given = n;
            } else {
                *given += n;
            }
        }
    }
}

/// Aborts the process if the shard thread unwinds out of its loop. A panic there is a bug in
/// the engine, not in a callback (callbacks run under `catch_unwind`), and unwinding past a
/// wheel half-way through a turn could release a count that belongs to an unlink request (see
/// [`crate::unlink`]): a loud stop is better than freeing a timer twice.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("shardwheel: a shard thread panicked, a bug in the engine; aborting");
            std::process::abort();
        }
    }
}

/// What a turn found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Turn {
    /// The queues were empty.
    Idle,
    /// Work came in; poll again next tick.
    Busy,
    /// Work is left in a queue (more than one turn's budget, or a producer half-way through a
    /// push); go round again at once.
    Backlog,
}

impl Shard {
    pub(crate) fn new(
        shared: Arc<ShardShared>,
        lanes: Box<[Arc<Lane>]>,
        executor: Executor,
        inflight: Arc<Inflight>,
    ) -> Self {
        Shard {
            shared,
            outcomes: Outcomes {
                fired: Vec::new(),
                spares: Spares::new(lanes.len()),
            },
            fresh: Vec::new(),
            unlinked: Requests::default(),
            lanes,
            wheel: Wheel::new(),
            executor,
            inflight,
        }
    }

    /// One pass of the tick loop at tick `now` (see the module documentation).
    pub(crate) fn turn(&mut self, now: u64) -> Turn {
        let mut turn = Turn::Idle;
        let mut fresh = std::mem::take(&mut self.fresh);
        for (index, lane) in self.lanes.iter().enumerate() {
            let unlinked = &mut self.unlinked.0;
            if lane.unlinks.take_all(unlinked) > 0 {
                turn = turn.max(Turn::Busy);
            }
            while !unlinked.is_empty() {
                let batch = unlinked.len().saturating_sub(WARM_BATCH);
                // SAFETY: the entries came off this shard's unlink stack.
                unsafe { self.wheel.warm(&unlinked[batch..]) };
                for entry in unlinked.drain(batch..) {
                    // SAFETY: as above.
                    let dead = unsafe { self.wheel.unlink_cancelled(entry) };
                    self.outcomes.file(Settled::Dropped(dead), index, lane);
                }
            }
            while let Some(entry) = lane.changes.pop() {
                turn = turn.max(Turn::Busy);
                let settled = self.wheel.reconsider(entry);
                self.outcomes.file(settled, index, lane);
            }
            // SAFETY: the shard thread is the only consumer of its lanes' rings.
            if unsafe { lane.ring.take(usize::MAX, &mut fresh) } > 0 {
                turn = turn.max(Turn::Busy);
            }
            for entry in fresh.drain(..) {
                let settled = self.wheel.settle(entry);
                self.outcomes.file(settled, index, lane);
            }
            for taken in 0.. {
                if taken == INSERT_BUDGET {
                    turn = Turn::Backlog;
                    break;
                }
                // SAFETY: the shard thread is the only consumer of its lanes' inbound queues.
                let entry = match unsafe { lane.inserts.pop() } {
                    Pop::Entry(entry) => entry,
                    Pop::Empty => break,
                    Pop::Busy => {
                        // A producer is mid-push: take the rest on the next turn.
                        turn = Turn::Backlog;
                        break;
                    }
                };
                turn = turn.max(Turn::Busy);
                let settled = self.wheel.settle(entry);
                self.outcomes.file(settled, index, lane);
            }
        }
        self.fresh = fresh;
        let batch = &mut self.outcomes.fired;
        self.wheel.advance(now, |_, fired| batch.push(fired));
        self.outcomes.spares.give_back(&self.lanes);
        self.publish(now, turn != Turn::Backlog);
        turn
    }

    /// Hands the turn's callbacks to the executor and publishes the counters; a `complete`
    /// turn (every queue emptied) also counts as having handled tick `now`.
    fn publish(&mut self, now: u64, complete: bool) {
        let counts = &self.shared.counts;
        // Relaxed: a statistic (see `ShardCounts`).
        counts
            .in_wheel
            .store(self.wheel.len() as u64, Ordering::Relaxed);
        if !self.outcomes.fired.is_empty() {
            let fired = self.outcomes.fired.len();
            counts.add_fired(fired as u64);
            // A repeating timer keeps its cap place until it ends (see `periodic`).
            let ended = self
                .outcomes
                .fired
                .iter()
                .filter(|f| f.repeat.is_none())
                .count();
            self.shared.release_cap(ended);
            let batch = std::mem::take(&mut self.outcomes.fired);
            self.executor.run(batch, &self.shared, &self.inflight);
        }
        if complete {
            counts.finish_turn(now);
        }
    }

    /// Whether the wheel has a slot due by tick `now + 1`.
    fn due_by_next_tick(&self, now: u64) -> bool {
        self.wheel
            .next_expiration()
            .is_some_and(|next| next.deadline <= now.saturating_add(1))
    }

    /// Announces a sleep until the wheel's next deadline and returns it (`None`: until woken),
    /// or returns `Err(())` without sleeping if work arrived or the shard was stopped.
    pub(crate) fn prepare_sleep(&self) -> Result<Option<u64>, ()> {
        let until = self.wheel.next_expiration().map(|e| e.deadline);
        self.shared.signal.announce_sleep(until);
        if self.shared.is_stopped() || self.lanes.iter().any(|lane| lane.has_work()) {
            self.shared.signal.awake();
            return Err(());
        }
        Ok(until)
    }

    /// The tick thread: turns, polls and sleeps until stopped; returns the wheel for shutdown
    /// to empty.
    pub(crate) fn run(mut self) -> Stopped {
        let _abort = AbortOnUnwind;
        self.shared
            .signal
            .set_thread(crate::sync::thread::current());
        let clock = self.shared.clock.clone();
        while !self.shared.is_stopped() {
            let now = clock.now_tick();
            match self.turn(now) {
                Turn::Backlog => crate::sync::thread::yield_now(),
                Turn::Busy => clock.sleep_one_tick(now),
                // Due again by the next tick: poll, as when busy. Nothing queued now can come due
                // sooner, so there is no need to announce the sleep (and pay for the heavy
                // barrier of `signal`) for so short a nap.
                Turn::Idle if self.due_by_next_tick(now) => clock.sleep_one_tick(now),
                Turn::Idle => {
                    if let Ok(until) = self.prepare_sleep() {
                        clock.sleep_until(until);
                        self.shared.signal.awake();
                    }
                }
            }
        }
        self.stop()
    }

    /// Pins the calling thread to `core`, recording the outcome for the stats.
    pub(crate) fn pin(&self, core: core_affinity::CoreId) -> bool {
        let pinned = core_affinity::set_for_current(core);
        if pinned {
            // Relaxed: a statistic, written once.
            self.shared.pinned.store(core.id + 1, Ordering::Relaxed);
        }
        pinned
    }

    pub(crate) fn stop(self) -> Stopped {
        Stopped {
            wheel: self.wheel,
            _lanes: self.lanes,
        }
    }
}
