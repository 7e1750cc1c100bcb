//! The shard thread: its wheel, which it alone touches, and its tick loop.
//!
//! Each [`Shard::turn`]:
//! 1. re-arms the repeating timers their runners stowed (see `queue::rearm`), unlinks the
//!    timers cancelled after linking (every lane's unlink stack, see `queue::unlink`) and
//!    moves those reset earlier (the `changes` queue);
//! 2. links new timers from every lane's ring and `inserts` queue, and the young timers of a
//!    lane whose oldest has passed the horizon (see `queue::young`), dropping those cancelled
//!    while queued;
//! 3. advances the wheel to now, winning PENDING→FIRED for each due timer, and hands the
//!    callbacks to the executor in batches as it goes ([`FIRST_HAND_OVER`]);
//! 4. gives dead unshared entries back to their lanes (see `queue::recycle`) and, on a calm
//!    turn, frees a few chunks (see `slab::discard`).
//!
//! Between turns it polls once a tick while work arrives, a slot is due next tick, handed
//! callbacks wait to begin or a survey is under way (see `survey`); otherwise it sleeps until
//! the wheel's next deadline or a young timer's horizon (see `between`).

mod between;

use super::lane::{Lane, Taker};
use super::lanes::Lanes;
use super::outcomes::{Outcomes, Spares};
use super::shared::ShardShared;
use super::survey::Surveying;
use crate::callbacks::{Executor, HandOver};
use crate::entry::EntryRef;
use crate::pinning::LagWatch;
use crate::queue::{Pop, Requests, Take};
use crate::sync::{thread, Arc, Permits};
use crate::time::Tick;
use crate::wheel::{Settled, Wheel};

/// The most new timers taken from one lane's inbound queue per turn, so a flood of inserts
/// cannot hold back firing (the ring is taken whole).
const INSERT_BUDGET: usize = 16_384;

/// Unlink requests handled at a time, their neighbours loaded first (see `Wheel::warm`).
const WARM_BATCH: usize = 32;

/// The first batch of fired callbacks a turn hands over: small, so that the first callbacks
/// of a crowded slot begin at once rather than after the whole slot is walked.
const FIRST_HAND_OVER: usize = 64;

/// The largest batch a turn hands over while it walks its due slots; each one after the first
/// doubles up to it, so a storm is handed over in a few hundred batches.
const MOST_HAND_OVER: usize = 4096;

/// The chunks this shard freed that a calm turn discards and frees (see `slab::discard`): a
/// few while work comes in, more when the shard would sleep, which it does not while any wait.
const BUSY_DISCARDS: usize = 4;
const IDLE_DISCARDS: usize = 64;

/// A reused buffer a spike grew past this is shrunk back once a turn needs a quarter of it or
/// less; a steady flow does not reallocate it every turn.
const BUFFER_KEEP: usize = 4096;

/// Shrinks `buffer`, emptied after a turn that put `used` items in it (see [`BUFFER_KEEP`]).
fn shrink_after_spike<T>(buffer: &mut Vec<T>, used: usize) {
    if buffer.capacity() > BUFFER_KEEP && used <= buffer.capacity() / 4 {
        buffer.shrink_to(used.max(BUFFER_KEEP));
    }
}

/// The shard thread's own state: its wheel, its lanes, and the callbacks of the current turn.
pub(crate) struct Shard {
    /// Declared before `lanes`, so that a shard dropped while unwinding drains its wheel
    /// before it drops its lanes (see [`Stopped`]).
    wheel: Wheel,
    shared: Arc<ShardShared>,
    /// The lanes made so far, as `table` lists them, brought up to date each turn.
    lanes: Vec<Arc<Lane>>,
    table: Arc<Lanes>,
    /// This thread's proof that it alone takes from the lanes.
    taker: Taker,
    executor: Executor,
    outcomes: Outcomes,
    /// Reused buffer for the entries taken from a ring.
    fresh: Vec<EntryRef>,
    /// Reused buffer for the entries taken from an unlink stack.
    unlinked: Requests,
    /// How late turns begin, to unpin a pinned thread that its cpu cannot keep on time.
    lag: LagWatch,
    /// On a manual clock, which jumps: take every young timer each turn.
    take_all_young: bool,
    /// A snapshot's survey of the wheel under way (see `survey`).
    surveying: Surveying,
}

/// A stopped shard: its wheel and lanes, for shutdown to empty; its holder is the only
/// consumer of the shard's queues. Fields drop wheel first: the wheel leaves cancelled
/// entries' counts to their unlink requests, which the lanes drop (see `queue::unlink`).
pub(crate) struct Stopped {
    wheel: Wheel,
    shared: Arc<ShardShared>,
    lanes: Vec<Arc<Lane>>,
    taker: Taker,
}

impl Stopped {
    /// Takes every entry out of the wheel, the lanes' queues and the re-arm stack (closing it)
    /// into `out` (cancelled ones are left to their released unlink requests), and frees the
    /// lanes' spare entries.
    pub(crate) fn empty_into(mut self, out: &mut Vec<EntryRef>) {
        self.wheel.drain(out);
        self.shared.callbacks().rearms().close(out);
        // The permits of the timers cancelled while linked whose requests were still waiting.
        let mut released = Permits::new(self.shared.cap());
        for lane in self.lanes.iter() {
            // SAFETY: a `Stopped` exists only once its shard thread has left its loop for good,
            // and the wheel has just been drained, which unlinked and unmarked every entry.
            unsafe { lane.empty_after_stop(&self.taker, out, &mut released) };
        }
    }
}

/// What a turn found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Turn {
    /// The queues were empty.
    Idle,
    /// Work came in; poll again next tick.
    Worked,
    /// Work is left (over the turn's budget, or a push half-way): go round again at once.
    Backlog,
}

/// Hands the callbacks fired so far to the executor as one batch, recording their lateness;
/// the next batch starts with room for `next` callbacks, so it does not grow by steps. `more`:
/// the turn handed a batch over before this one.
fn hand_over(
    outcomes: &mut Outcomes,
    executor: &Executor,
    shared: &ShardShared,
    next: usize,
    kind: HandOver,
) {
    if outcomes.fired.is_empty() {
        return;
    }
    let fired = outcomes.fired.len();
    shared.callbacks().add_handed_over(fired as u64);
    let clock = shared.clock();
    let handed_over = clock.now_nanos();
    for (deadline, count) in outcomes.due.drain(..) {
        // From the start of the tick before the deadline tick (see `shard::lateness`).
        let due = clock.nanos_of_tick(Tick::new(deadline).saturating_sub(1));
        let late = handed_over.saturating_since(due);
        shared.lateness().record(late, count);
    }
    let batch = std::mem::replace(&mut outcomes.fired, Vec::with_capacity(next));
    executor.run(batch, shared.callbacks(), kind);
}

impl Shard {
    pub(crate) fn new(table: Arc<Lanes>, executor: Executor) -> Self {
        let shared = table.shard().clone();
        let lag = LagWatch::new(shared.clock().tick_nanos());
        let take_all_young = shared.clock().manual().is_some();
        let Some(taker) = Taker::of(&shared) else {
            unreachable!("the builder makes one shard per `ShardShared`")
        };
        Shard {
            taker,
            take_all_young,
            shared,
            outcomes: Outcomes {
                fired: Vec::new(),
                due: Vec::new(),
                spares: Spares::default(),
            },
            fresh: Vec::new(),
            unlinked: Requests::default(),
            lag,
            lanes: Vec::new(),
            table,
            wheel: Wheel::new(),
            executor,
            surveying: Surveying::default(),
        }
    }

    /// One pass of the tick loop at tick `now` (see the module documentation).
    pub(crate) fn turn(&mut self, now: Tick) -> Turn {
        let mut turn = Turn::Idle;
        self.find_new_lanes();
        let mut fresh = std::mem::take(&mut self.fresh);
        // The most unlink requests one lane had: what the shared buffer must hold a turn.
        let mut most_requests = 0;
        let young_by = self.shared.horizon().taken_by(now);
        // The permits of the timers this turn lets go of cancelled, released as it ends.
        let mut released = Permits::new(self.shared.cap());
        if self.shared.callbacks().rearms().take_all(&mut fresh) > 0 {
            turn = Turn::Worked;
        }
        for entry in fresh.drain(..) {
            match entry.rearm() {
                Ok(()) => {
                    let settled = self.wheel.settle_rearmed(entry);
                    self.outcomes.record_rearmed(settled, &mut released);
                }
                // Cancelled since its runner stowed it: the shard drops it.
                Err(_) => entry.end_cancelled_hold(&mut released),
            }
        }
        for (index, lane) in self.lanes.iter().enumerate() {
            let unlinked = &mut self.unlinked.0;
            let requests = lane.take_unlinks(unlinked);
            if requests > 0 {
                turn = turn.max(Turn::Worked);
            }
            most_requests = most_requests.max(requests);
            while !unlinked.is_empty() {
                let batch = unlinked.len().saturating_sub(WARM_BATCH);
                self.wheel.warm(&unlinked[batch..]);
                for request in unlinked.drain(batch..) {
                    let dead = Settled::Dropped(self.wheel.unlink_cancelled(request));
                    (self.outcomes).record_taken(dead, index, lane, &mut released);
                }
            }
            while let Some(entry) = lane.take_change() {
                turn = turn.max(Turn::Worked);
                let settled = self.wheel.reconsider(entry);
                self.outcomes.record(settled, index, lane);
            }
            match lane.take_young(&self.taker, young_by, self.take_all_young, &mut fresh) {
                // The owner is scheduling: come back next tick.
                Take::Took | Take::Busy => turn = turn.max(Turn::Worked),
                Take::Young(_) | Take::Empty => {}
            }
            if lane.take_from_ring(&self.taker, &mut fresh) > 0 {
                turn = turn.max(Turn::Worked);
            }
            for entry in fresh.drain(..) {
                let settled = self.wheel.settle(entry);
                self.outcomes
                    .record_taken(settled, index, lane, &mut released);
            }
            for taken in 0.. {
                if taken == INSERT_BUDGET {
                    turn = Turn::Backlog;
                    break;
                }
                let entry = match lane.pop_insert(&self.taker) {
                    Pop::Entry(entry) => entry,
                    Pop::Empty => break,
                    Pop::MidPush => {
                        // A producer is mid-push: take the rest on the next turn.
                        turn = Turn::Backlog;
                        break;
                    }
                };
                turn = turn.max(Turn::Worked);
                let settled = self.wheel.settle(entry);
                self.outcomes
                    .record_taken(settled, index, lane, &mut released);
            }
        }
        self.fresh = fresh;
        shrink_after_spike(&mut self.unlinked.0, most_requests);
        // Before any callback of the turn runs, so that it can schedule at the cap.
        drop(released);
        let (outcomes, executor, shared) = (&mut self.outcomes, &self.executor, &self.shared);
        let (mut goal, mut kind) = (FIRST_HAND_OVER, HandOver::First);
        self.wheel.advance(now.get(), |_, deadline, fired| {
            outcomes.fire(fired, deadline);
            if outcomes.fired.len() >= goal {
                goal = (goal * 2).min(MOST_HAND_OVER);
                hand_over(outcomes, executor, shared, goal, kind);
                if kind == HandOver::First && executor.is_pool() {
                    // A crowded slot: let a woken runner have this cpu now if every other
                    // is busy, rather than when this thread's time slice runs out.
                    thread::yield_now();
                }
                kind = HandOver::Later;
            }
        });
        self.outcomes.spares.flush(&self.lanes);
        self.publish(now, turn, kind);
        // A turn that handed over more than its first batch.
        let crowded = kind == HandOver::Later;
        // No storm fired on this thread or drained by the pool: a discard's TLB flush
        // interrupts every cpu of the process.
        if !crowded && turn != Turn::Backlog && !self.executor.has_queued() {
            // Time for a few freed chunks (see `slab::discard`).
            let most = if turn == Turn::Idle {
                IDLE_DISCARDS
            } else {
                BUSY_DISCARDS
            };
            if self.shared.discards().discard_some(most) {
                turn = turn.max(Turn::Worked);
            }
        }
        turn
    }

    /// Hands the turn's last callbacks to the executor, as a batch of kind `kind`, and
    /// publishes the counters; a turn that left no backlog also counts tick `now` as handled.
    fn publish(&mut self, now: Tick, turn: Turn, kind: HandOver) {
        self.executor.look_again();
        let counts = self.shared.counts();
        counts.set_in_wheel(self.wheel.len() as u64);
        let (outcomes, executor) = (&mut self.outcomes, &self.executor);
        hand_over(outcomes, executor, &self.shared, FIRST_HAND_OVER, kind);
        if turn != Turn::Backlog {
            counts.finish_turn(now);
        }
    }

    /// Adds the lanes threads made since the last look (see `shard::lanes`).
    fn find_new_lanes(&mut self) {
        if self.table.refresh(&mut self.lanes) {
            self.outcomes.spares.grow(self.lanes.len());
        }
    }

    /// Pins the calling thread to `cpu`; `all` are the cpus to widen to if its turns keep
    /// beginning late (see `pinning::watch`).
    pub(crate) fn pin(&mut self, cpu: usize, all: Vec<usize>) {
        self.lag.pin(cpu, all, self.shared.pinning());
    }

    /// How many unlink requests the shard's buffer holds without growing (for the tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn unlink_capacity(&self) -> usize {
        self.unlinked.0.capacity()
    }

    /// What the shard shares with the rest of the engine (for the models and tests).
    #[cfg(test)]
    pub(crate) fn shared(&self) -> &ShardShared {
        &self.shared
    }

    /// The same, to hand to another thread (for the models).
    #[cfg(all(test, loom))]
    pub(crate) fn shared_arc(&self) -> Arc<ShardShared> {
        self.shared.clone()
    }

    pub(crate) fn stop(self) -> Stopped {
        // Every lane, those made since the last turn included: no turn will look again.
        Stopped {
            wheel: self.wheel,
            shared: self.shared,
            lanes: self.table.all(),
            taker: self.taker,
        }
    }
}
