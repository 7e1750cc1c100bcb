//! What the engine's parts share: the shards, their lanes, the clock, the callbacks in flight;
//! and what a manual clock asks of an engine: to catch up, and the earliest deadline pending.

#[cfg(not(loom))]
use std::cell::Cell;
use std::time::{Duration, Instant};

use super::error::{ScheduleError, ScheduleErrorKind};
use super::routing::{home_shard, shard_for};
use crate::callbacks::Inflight;
use crate::clock::ClockTimers;
use crate::shard::{ask_each, Access, Lane, Lanes, Patience, ShardShared};
use crate::sync::{lane_index, thread, Arc, Mutex, StdArc};
use crate::time::{CatchUp, PerClock, TickClock};
use crate::timer::Sleep;

/// What the engine, its builder and its shutdown share.
pub(crate) struct EngineShared {
    /// This engine's id, to recognise a call made from one of its own callbacks.
    pub(super) id: u64,
    pub(super) shards: Box<[Arc<ShardShared>]>,
    /// Each shard's lanes, as `shards`.
    pub(super) lanes: Box<[Arc<Lanes>]>,
    pub(super) clock: TickClock,
    pub(super) inflight: Arc<Inflight>,
    /// The timers and sleeps on the boot and wall clocks.
    pub(super) clocks: StdArc<ClockTimers>,
    /// Held while a snapshot of the pending timers is taken: one at a time (see `snapshot`).
    pub(super) snapshots: Mutex<()>,
}

impl EngineShared {
    /// The calling thread's lane for timers routed by `route`: in the shard the route
    /// hashes to.
    #[inline]
    pub(super) fn lane_for(&self, route: u64) -> &Arc<Lane> {
        let index = lane_index();
        self.lanes[shard_for(route, self.shards.len())].lane(index)
    }

    /// The calling thread's access to its lane for a timer routed by `route`, if keyed, else
    /// unkeyed.
    #[inline]
    pub(super) fn lane(&self, route: Option<u64>) -> Access<'_> {
        Access::of(match route {
            Some(route) => self.lane_for(route),
            None => self.lane_for_task(),
        })
    }

    /// The calling thread's lane for an unkeyed timer: in its home shard (see `routing`), kept
    /// in `HOME_LANE`.
    #[inline]
    pub(super) fn lane_for_task(&self) -> &Arc<Lane> {
        #[cfg(not(loom))]
        {
            let (engine, lane) = HOME_LANE.with(Cell::get);
            if engine == self.id {
                // SAFETY: `HOME_LANE` holds this engine's id (no two engines share one), so `lane`
                // was read from this engine's lane table, which lives while `self` does and
                // never moves or drops a lane it made (see `shard::lanes`).
                return unsafe { &*lane };
            }
        }
        self.find_home()
    }

    #[cold]
    fn find_home(&self) -> &Arc<Lane> {
        let index = lane_index();
        let lane = self.lanes[home_shard(index, self.shards.len())].lane(index);
        #[cfg(not(loom))]
        HOME_LANE.with(|cached| cached.set((self.id, lane)));
        lane
    }

    /// Whether the engine has shut down: every shard is stopped.
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shards.iter().all(|shard| shard.is_stopped())
    }

    /// Each shard with the lanes made so far.
    pub(super) fn shards_with_lanes(
        &self,
    ) -> impl Iterator<Item = (&Arc<ShardShared>, Vec<Arc<Lane>>)> {
        self.shards
            .iter()
            .zip(self.lanes.iter().map(|lanes| lanes.all()))
    }
}

#[cfg(not(loom))]
thread_local! {
    /// The calling thread's home lane in the engine it last scheduled an unkeyed timer on, by
    /// that engine's id (0: none; ids start at 1): one thread-local read on the path of every
    /// such timer instead of the walk through the engine's lane tables, which measured
    /// slower. Whether the thread owns the lane is asked each time (`Access::of`): an owner
    /// that exits gives its lanes up before its last thread-local destructors run. (Not under
    /// loom, whose threads share the OS thread's thread-locals.)
    static HOME_LANE: Cell<(u64, *const Arc<Lane>)> = const { Cell::new((0, std::ptr::null())) };
}

/// The most rounds one catch-up waits through while callbacks schedule timers that are due
/// already: a timer that schedules itself again with a zero delay (or a task sleeping zero in a
/// loop) would otherwise keep `advance` from ever returning. Its later links fire as the shards
/// go on turning.
const MAX_ROUNDS: usize = 1024;

/// Brings an engine on a manual clock up to the clock's time; registered with the clock (which
/// holds it weakly) by the engine, which holds it strongly.
pub(super) struct ClockWatch(pub(super) Arc<EngineShared>);

impl CatchUp for ClockWatch {
    /// Waits for each shard to complete a turn that began after this call (so it read the new
    /// time and found every timer scheduled before the clock moved), and for the callbacks it
    /// fired; again while callbacks keep scheduling timers that are due already, up to
    /// `MAX_ROUNDS` rounds.
    fn catch_up(&self) {
        let engine = &*self.0;
        let target = engine.clock.now_tick();
        for _ in 0..MAX_ROUNDS {
            // Callbacks handed over before this round finish first, so that the timers they
            // schedule are queued before the turns below begin, and those turns fire them.
            engine.inflight.wait_idle();
            // A turn that was already under way when `start` was read may finish without
            // having seen the new time; the one after it cannot.
            let start: Vec<u64> = engine.shards.iter().map(|s| s.counts().turns()).collect();
            let fired_before: u64 = engine
                .shards
                .iter()
                .map(|s| s.callbacks().handed_over())
                .sum();
            loop {
                let caught_up = engine.shards.iter().zip(&start).all(|(shard, &start)| {
                    shard.is_stopped()
                        || (shard.counts().turns() >= start + 2
                            && shard.counts().processed() >= target)
                });
                if caught_up {
                    break;
                }
                // An idle shard sleeps until woken, so wake it for each turn waited for.
                for shard in engine.shards.iter() {
                    shard.signal().wake();
                }
                thread::yield_now();
            }
            engine.inflight.wait_idle();
            // Done once a whole round fired nothing and left nothing queued: callbacks may
            // have scheduled or re-armed timers that are due already.
            let fired_after: u64 = engine
                .shards
                .iter()
                .map(|s| s.callbacks().handed_over())
                .sum();
            let queued = engine.shards_with_lanes().any(|(shard, lanes)| {
                !shard.is_stopped()
                    && (lanes.iter().any(|lane| lane.has_work())
                        || !shard.callbacks().rearms().is_empty())
            });
            if fired_after == fired_before && !queued {
                return;
            }
        }
    }

    /// Re-times every boot and wall timer, then catches up.
    fn clocks_moved(&self) {
        self.0.clocks.round(PerClock::EACH_STEPPED);
        self.catch_up();
    }

    /// After a catch-up, asks each shard thread for the earliest deadline pending in its
    /// wheel (it alone may read it), waking it until it answers; the catch-up left nothing
    /// queued, so the wheels hold every pending timer.
    fn next_deadline(&self) -> Option<Instant> {
        self.catch_up();
        let engine = &*self.0;
        // A manual clock's step waits for the answers: yield, not sleep, between looks.
        let patience = Patience {
            pause: Duration::ZERO,
            most: None,
        };
        let shards = engine.shards.iter().map(|shard| &**shard);
        // Stopped: nothing more will fire.
        let earliest = ask_each(shards, ShardShared::lookahead, patience).ok()?;
        let tick = earliest.into_iter().flatten().min()?;
        Some(engine.clock.instant_of(tick.get()))
    }
}

impl EngineShared {
    /// A sleep until `tick` (`None`: until shutdown) on the calling task's lane, or why the
    /// engine refused it.
    pub(crate) fn try_sleep(&self, tick: Option<u64>) -> Result<Sleep, ScheduleErrorKind> {
        Sleep::try_on(self.lane_for_task(), tick)
            .map_err(|refusal| ScheduleError::refused(refusal, ()).kind())
    }

    /// Moves `sleep` to `tick` (`None`: until shutdown); a refused new timer ends it.
    pub(crate) fn reset_sleep(
        sleep: &mut Sleep,
        tick: Option<u64>,
    ) -> Result<(), ScheduleErrorKind> {
        sleep
            .try_reset_to(tick)
            .map_err(|refusal| ScheduleError::refused(refusal, ()).kind())
    }

    /// The engine's clock.
    pub(crate) fn clock(&self) -> &TickClock {
        &self.clock
    }

    /// As [`TimerEngine::now`](crate::TimerEngine::now).
    pub(crate) fn now(&self) -> Instant {
        self.clock.now()
    }
}
