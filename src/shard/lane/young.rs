//! A lane owner's young timers: keeping a new timer in its lane, sweeping the front of the young
//! queue on each schedule, and sending the survivors to the shard. The queue and its protocol
//! are `queue::young`; the horizons, `shard::shared::Horizon`.

use super::super::signal::Announced;
use super::{Lane, Owner, Taker};
use crate::entry::{CallbackBox, EntryRef, Lifecycle};
use crate::queue::{Since, Sweep, Take};
use crate::sync::{Fenced, Permit, Permits};
use crate::time::Nanos;

/// The most young timers one schedule sweeps from the front (it adds one).
const SWEEP_MOST: usize = 4;

/// The most young timers a lane keeps before it sends the front one, old or not.
const YOUNG_MOST: usize = 1024;

impl Owner<'_> {
    /// As [`Lane::enqueue`], for the owner's young timer made at `born`: one fence after the
    /// push serves its three Dekker pairs (see `sync::fenced`).
    #[inline]
    pub(super) fn enqueue_young(
        &self,
        entry: &EntryRef,
        queued: EntryRef,
        born: Nanos,
        permit: Option<Permit<'_>>,
    ) -> Result<(), CallbackBox> {
        let lane = self.lane();
        self.count_scheduled();
        // SAFETY: `self` proves the calling thread owns the lane: the young queue's owner.
        let busy = unsafe { lane.young.enter() };
        let young = match busy.push(queued, born) {
            Ok(()) => true,
            Err(entry) => {
                self.send(entry);
                false
            }
        };
        let fenced = Fenced::now();
        Permit::hold(permit);
        if lane.shard.stop_seen(&fenced) {
            drop(busy);
            return lane.take_back(entry);
        }
        let released = busy
            .sweep(&fenced)
            .and_then(|sweep| self.sweep(&sweep, born));
        let signal = lane.shard.signal();
        match signal.announced(&fenced) {
            Announced::Awake => {}
            _ if !young => signal.wake_sleeper(),
            // A shard asleep past the tick it must take this young timer by takes it at once.
            Announced::Until(until) if !lane.shard.horizon().outsleeps(until, born) => {}
            Announced::Until(_) | Announced::UntilWoken => {
                lane.young.hurry();
                signal.wake_sleeper();
            }
        }
        drop(busy);
        // After `busy` clears: a release may wake tasks waiting for a permit.
        drop(released);
        Ok(())
    }

    /// Owner: takes cancelled young timers at the front back into the stash, sends live ones
    /// old or behind too many; returns the permits of those it took back, for the caller to
    /// release.
    fn sweep(&self, sweep: &Sweep<'_>, now: Nanos) -> Option<Permits<'_>> {
        let lane = self.lane();
        let mut released = None;
        for swept in 0..=SWEEP_MOST {
            let Some((front, born, young)) = sweep.front() else {
                break;
            };
            let state = front.state();
            if swept == SWEEP_MOST
                || (state.is_pending()
                    && young <= YOUNG_MOST
                    && !lane.shard.horizon().sends(born, now))
            {
                sweep.mark_oldest(born);
                break;
            }
            let Some(entry) = sweep.pop_front() else {
                break;
            };
            if state.is_pending() {
                self.send(entry);
                continue;
            }
            // Only a cancel resolves a young timer: it is neither in a wheel nor handed back
            // (shutdown waits for `busy`), so it is dead and unlinked.
            debug_assert_eq!(state.lifecycle(), Lifecycle::Cancelled);
            entry
                .end_cancelled_hold(released.get_or_insert_with(|| Permits::new(lane.shard.cap())));
            self.keep_spare(entry);
        }
        released
    }

    /// Owner: sends `entry` to the shard on the ring, or the inbound queue if the ring is full.
    /// The caller passes a fence and checks the sleep word after.
    pub(super) fn send(&self, entry: EntryRef) {
        let lane = self.lane();
        // SAFETY: `self` proves the calling thread owns the lane: the ring's one producer.
        if let Err(full) = unsafe { lane.ring.push(entry) } {
            lane.inserts.push(full);
        }
    }

    /// Owner: keeps a dead young entry for the next schedule, if no handle holds it still.
    fn keep_spare(&self, mut entry: EntryRef) {
        if EntryRef::get_mut(&mut entry).is_some() {
            // SAFETY: `self` proves the calling thread owns the lane: the stash's one user.
            unsafe { self.lane().spares.keep(entry) };
        }
    }
}

impl Lane {
    /// Shard thread: takes the young timers into `out` if the oldest was made at or before
    /// `by`, or the owner asked, or `all` (see `Young::take`).
    pub(in crate::shard) fn take_young(
        &self,
        taker: &Taker,
        by: Nanos,
        all: bool,
        out: &mut Vec<EntryRef>,
    ) -> Take {
        taker.check(self);
        // SAFETY: `taker` is the shard's one taker, and this lane leads into its shard.
        unsafe { self.young.take(by, all, out) }
    }

    /// Whether the lane keeps young timers.
    pub(in crate::shard) fn has_young(&self) -> bool {
        !self.young.is_empty()
    }

    /// When the lane's oldest young timer was made ([`Since::Hurry`] if the shard is asked to
    /// take them at once); `None` if it has none. For the shard, after its sleep announcement's
    /// fence.
    pub(in crate::shard) fn young_since(&self, _: &Fenced) -> Option<Since> {
        self.young.since()
    }

    /// Asks the shard to take the lane's young timers at once and wakes it: a timer among them
    /// was moved to a deadline the horizon may not meet.
    pub(crate) fn hurry_young(&self) {
        self.young.hurry();
        self.shard.signal().notify(&Fenced::now());
    }
}
