//! What a shard shares with producers, cancellers, the executor and the engine (its wheel is
//! in `worker`), and its [`Horizon`]: when a young timer leaves its owner's lane (see
//! `queue::young`).

use crossbeam_utils::CachePadded;

use super::ask::{Answerer, Question};
use super::lateness::LatenessRecorder;
use super::retime::{Reset, Retime, Retimer};
use super::signal::Signal;
use super::survey::Found;
use crate::callbacks::ShardCallbacks;
use crate::entry::EntryRef;
use crate::pinning::Pinning;
use crate::slab::Discards;
use crate::sync::{Arc, AtomicBool, AtomicU64, Cap, Counter, Fenced, Ordering, Permit, StdArc};
use crate::time::{Nanos, Tick, TickClock};

/// What a shard shares with producers, cancellers, the executor and the engine.
pub(crate) struct ShardShared {
    signal: Signal,
    stop: AtomicBool,
    /// Set once the shard's `Taker` is made (see `lane::roles`).
    taker_made: AtomicBool,
    counts: CachePadded<ShardCounts>,
    /// The shard's callbacks handed over, begun and ended, by whichever thread runs them.
    callbacks: Arc<ShardCallbacks>,
    lateness: LatenessRecorder,
    clock: TickClock,
    /// When a young timer leaves its owner's lane.
    horizon: Horizon,
    pinning: Pinning,
    /// A manual clock's question for the earliest deadline in the wheel (see `ask`).
    lookahead: Question<Option<Tick>>,
    /// A snapshot's question for the pending timers in the wheel (see `survey`).
    survey: Question<Found>,
    /// Whether the lanes keep each timer's origin (see `lane::origins`).
    tracking: bool,
    /// What moves the timers on the other clocks, once there are any (see `retime`).
    retimer: Retimer,
    /// The engine's freed chunks waiting for a calm turn (see `slab::discard`).
    discards: StdArc<Discards>,
}

/// Counters of a shard: statistics (`sync::Counter`), exact once the writers are quiet; and
/// `processed` and `turns`, which a manual clock waits on (see `finish_turn`).
#[derive(Default)]
pub(crate) struct ShardCounts {
    handed_back: Counter,
    in_wheel: Counter,
    processed: AtomicU64,
    turns: AtomicU64,
}

impl ShardCounts {
    pub(crate) fn add_handed_back(&self, n: u64) {
        self.handed_back.add(n);
    }
    pub(crate) fn handed_back(&self) -> u64 {
        self.handed_back.get()
    }
    pub(super) fn set_in_wheel(&self, n: u64) {
        self.in_wheel.set(n);
    }
    pub(crate) fn in_wheel(&self) -> u64 {
        self.in_wheel.get()
    }
    /// The tick of the shard's last complete turn (one that emptied every queue).
    pub(crate) fn processed(&self) -> Tick {
        // Acquire: pairs with `finish_turn`; a manual clock seeing the turn sees its batch in
        // flight.
        Tick::new(self.processed.load(Ordering::Acquire))
    }
    /// How many complete turns the shard has made.
    pub(crate) fn turns(&self) -> u64 {
        // Acquire: as `processed`.
        self.turns.load(Ordering::Acquire)
    }
    pub(super) fn finish_turn(&self, tick: Tick) {
        // Release: see `processed`. Only the shard thread writes these.
        self.processed.store(tick.get(), Ordering::Release);
        self.turns.fetch_add(1, Ordering::Release);
    }
}

impl ShardShared {
    /// A shard of engine `engine`, whose callback pool (if any) has `pool_threads` runner
    /// claims; its lanes keep their timers' origins if `tracking`.
    pub(crate) fn new(
        engine: u64,
        clock: TickClock,
        cap: Option<Arc<Cap>>,
        pool_threads: usize,
        tracking: bool,
        discards: StdArc<Discards>,
    ) -> Self {
        ShardShared {
            signal: Signal::new(),
            stop: AtomicBool::new(false),
            taker_made: AtomicBool::new(false),
            counts: CachePadded::new(ShardCounts::default()),
            callbacks: Arc::new(ShardCallbacks::new(engine, cap, pool_threads)),
            lateness: LatenessRecorder::new(),
            horizon: Horizon::new(clock.tick_nanos()),
            clock,
            pinning: Pinning::default(),
            lookahead: Question::default(),
            survey: Question::default(),
            tracking,
            retimer: Retimer::default(),
            discards,
        }
    }

    /// The engine's freed chunks waiting for their discard.
    pub(crate) fn discards(&self) -> &StdArc<Discards> {
        &self.discards
    }

    /// Gives the shard what moves the timers another layer times, if it has none yet.
    pub(crate) fn set_retimer(&self, retime: impl FnOnce() -> std::sync::Weak<dyn Retime>) {
        self.retimer.set(retime);
    }

    /// Moves the timer of `entry` as `to` says if another layer times it: `None` if none does.
    #[inline]
    pub(crate) fn retime(&self, entry: &EntryRef, to: Reset) -> Option<bool> {
        self.retimer.reset(entry, to)
    }

    /// A manual clock's question for the earliest deadline in the wheel (`None`: nothing
    /// pending), and the answer.
    pub(crate) fn lookahead(&self) -> &Question<Option<Tick>> {
        &self.lookahead
    }

    /// A snapshot's question for the timers in the wheel, and the answer (see `survey`).
    pub(crate) fn survey(&self) -> &Question<Found> {
        &self.survey
    }

    /// Whether the lanes keep each timer's origin (see `lane::origins`).
    #[inline]
    pub(crate) fn tracks(&self) -> bool {
        self.tracking
    }

    #[inline]
    pub(crate) fn signal(&self) -> &Signal {
        &self.signal
    }

    pub(crate) fn counts(&self) -> &ShardCounts {
        &self.counts
    }

    /// The shard's callbacks: handed over, begun, ended, panicked.
    pub(crate) fn callbacks(&self) -> &Arc<ShardCallbacks> {
        &self.callbacks
    }

    /// Where the shard's tick thread runs.
    pub(crate) fn pinning(&self) -> &Pinning {
        &self.pinning
    }

    pub(crate) fn lateness(&self) -> &LatenessRecorder {
        &self.lateness
    }

    #[inline]
    pub(crate) fn clock(&self) -> &TickClock {
        &self.clock
    }

    /// When a young timer leaves its owner's lane.
    #[inline]
    pub(super) fn horizon(&self) -> &Horizon {
        &self.horizon
    }

    /// Tells the shard to stop; producers seeing the flag take back what they queue. The
    /// caller wakes the shard and passes a SeqCst fence.
    pub(crate) fn set_stopped(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// The `stop` flag as a producer reads it after its push and `fenced` (the shutdown
    /// hand-off, told in `lane`).
    #[inline]
    pub(super) fn stop_seen(&self, _: &Fenced) -> bool {
        // Relaxed: ordered after the push by the caller's fence.
        self.stop.load(Ordering::Relaxed)
    }

    /// The engine's cap on pending timers, if it has one (see `sync::cap`).
    #[inline]
    pub(crate) fn cap(&self) -> Option<&Cap> {
        self.callbacks.cap()
    }

    /// A permit for a new timer (`None`: the engine has no cap); `Err` if the cap is reached.
    #[inline]
    pub(super) fn take_permit(&self) -> Result<Option<Permit<'_>>, ()> {
        match self.cap() {
            Some(cap) => cap.take().map(Some).ok_or(()),
            None => Ok(None),
        }
    }

    /// Whether the caller is the first to ask: it makes the shard's one `Taker`.
    pub(super) fn claim_taker(&self) -> bool {
        // Relaxed: one caller sees `false`; nothing is published with the flag.
        !self.taker_made.swap(true, Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn is_stopped(&self) -> bool {
        // Acquire: pairs with the SeqCst store in shutdown; the shard exits its loop.
        self.stop.load(Ordering::Acquire)
    }

    /// The permits taken under the engine's cap, if it has one.
    pub(crate) fn cap_used(&self) -> Option<usize> {
        self.cap().map(Cap::used)
    }

    /// Whether a timer would find a permit now (without taking it).
    pub(super) fn has_room(&self) -> bool {
        self.cap().is_none_or(Cap::has_room)
    }

    /// Leaves `waker` for when a permit is released or the engine shuts down; returns whether a
    /// permit is free now.
    pub(crate) fn wait_for_room(&self, waker: &std::task::Waker) -> bool {
        self.cap().is_none_or(|cap| cap.wait_for_room(waker))
    }

    /// Wakes every task waiting for a permit (see `wait_for_room`).
    pub(crate) fn wake_room_waiters(&self) {
        if let Some(cap) = self.cap() {
            cap.wake_waiters();
        }
    }

    /// Whether the engine has a cap on pending timers.
    #[inline]
    pub(super) fn has_cap(&self) -> bool {
        self.cap().is_some()
    }
}

impl Answerer for ShardShared {
    fn is_stopped(&self) -> bool {
        ShardShared::is_stopped(self)
    }

    fn wake(&self) {
        self.signal.wake();
    }
}

/// How old a young timer is when the shard takes it, at least (and at least two ticks).
const TAKE_AFTER: u64 = 2_000_000;

/// How far a young timer's deadline is past the time the shard takes it, at least, in ticks.
const MARGIN_TICKS: u64 = 2;

/// A shard's horizons, spans in nanoseconds of its clock: the owner sends a live young timer
/// `send_after` old, the shard takes one `take_after` old, and a timer due sooner than
/// `shortest` after it was made is not kept young, so each one is in the wheel before its
/// deadline.
#[derive(Clone, Copy, Debug)]
pub(super) struct Horizon {
    tick_nanos: u64,
    send_after: u64,
    take_after: u64,
    shortest: u64,
}

impl Horizon {
    fn new(tick_nanos: u64) -> Self {
        let take_after = TAKE_AFTER.max(tick_nanos.saturating_mul(2));
        Horizon {
            tick_nanos,
            send_after: take_after / 2,
            take_after,
            shortest: take_after.saturating_add(tick_nanos.saturating_mul(MARGIN_TICKS)),
        }
    }

    /// Whether a timer due at `tick`, made at `born`, may be kept young.
    #[inline]
    pub(super) fn keeps(&self, tick: Tick, born: Nanos) -> bool {
        tick.start(self.tick_nanos) >= born.saturating_add(self.shortest)
    }

    /// Whether the owner sends a live young timer made at `born`, `now`.
    #[inline]
    pub(super) fn sends(&self, born: Nanos, now: Nanos) -> bool {
        born.saturating_add(self.send_after) <= now
    }

    /// The latest birth of a young timer the shard takes at tick `now`.
    #[inline]
    pub(super) fn taken_by(&self, now: Tick) -> Nanos {
        now.start(self.tick_nanos).saturating_sub(self.take_after)
    }

    /// The tick by which the shard takes a young timer made at `born`.
    #[inline]
    pub(super) fn take_tick(&self, born: Nanos) -> Tick {
        born.saturating_add(self.take_after)
            .ceil_tick(self.tick_nanos)
    }

    /// Whether a shard asleep until tick `until` sleeps past [`take_tick`](Self::take_tick)
    /// of a young timer made at `born` (without its division).
    #[inline]
    pub(super) fn outsleeps(&self, until: Tick, born: Nanos) -> bool {
        until.saturating_sub(1).start(self.tick_nanos) >= born.saturating_add(self.take_after)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_kept_timer_is_taken_before_its_deadline() {
        for tick_nanos in [100_000, 1_000_000, 3_000_000, 1_000_000_000] {
            let horizon = Horizon::new(tick_nanos);
            for born in [0, 1, 999_999, 1_000_000, 12_345_678_901].map(Nanos::new) {
                let first_kept = (0..)
                    .map(Tick::new)
                    .find(|&tick| horizon.keeps(tick, born))
                    .expect("a far enough tick");
                assert!(
                    horizon.take_tick(born).saturating_add(MARGIN_TICKS) <= first_kept,
                    "tick {tick_nanos} ns, born {born:?}"
                );
                assert!(horizon.taken_by(horizon.take_tick(born)) >= born);
                let take = horizon.take_tick(born).get();
                for until in take.saturating_sub(2)..take + 3 {
                    let outsleeps = horizon.outsleeps(Tick::new(until), born);
                    assert_eq!(outsleeps, until > take);
                }
                let send = born.saturating_add(horizon.take_after / 2);
                assert!(horizon.sends(born, send));
                assert!(!horizon.sends(born, send.saturating_sub(1)));
            }
        }
    }
}
