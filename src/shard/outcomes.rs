//! What a shard's turn does with the entries it handled: fired callbacks for the executor,
//! and dead entries back to their lanes (see `queue::recycle`).

use super::lane::Lane;
use crate::entry::{EntryRef, Fired};
use crate::queue::RETURN_LIMIT;
use crate::sync::{Arc, Permits};
use crate::wheel::Settled;

/// The most dead entries a turn keeps to give back to one lane: a steady flow comes back
/// whole, a spike's does not come back as long as itself.
const KEEP_PER_TURN: usize = 4 * RETURN_LIMIT;

/// What a turn does with the entries it handled.
pub(super) struct Outcomes {
    /// The callbacks fired, for the executor.
    pub(super) fired: Vec<Fired>,
    /// How many were due at each deadline tick, runs counted together (see `lateness`).
    pub(super) due: Vec<(u64, u64)>,
    /// The dead entries, for their lanes to reuse.
    pub(super) spares: Spares,
}

impl Outcomes {
    /// Puts a settled entry where it goes: a fired callback to the batch, a dead one to its
    /// lane's spares.
    pub(super) fn record(&mut self, settled: Settled, index: usize, lane: &Lane) {
        match settled {
            Settled::Fired(fired, deadline) => self.fire(fired, deadline),
            Settled::Dropped(dead) => self.spares.keep(index, lane, dead),
            Settled::Linked | Settled::LeftToUnlink => {}
        }
    }

    /// Records an entry taken from an inbound queue or ring. A cancelled timer keeps its
    /// permit until the shard drops its entry, so the cap bounds a stalled shard's memory:
    /// one cancelled while queued is let go of here (its permit into `released`), one
    /// cancelled while linked when its unlink request is taken. Every arming passes through a
    /// queue once.
    pub(super) fn record_taken(
        &mut self,
        settled: Settled,
        index: usize,
        lane: &Lane,
        released: &mut Permits<'_>,
    ) {
        if let Settled::Dropped(dead) = &settled {
            dead.end_cancelled_hold(released);
        }
        self.record(settled, index, lane);
    }

    /// Records a repeating timer its shard re-armed, as `record_taken` does (its entry, in a
    /// block of its own, goes to no lane's spares).
    pub(super) fn record_rearmed(&mut self, settled: Settled, released: &mut Permits<'_>) {
        match settled {
            Settled::Fired(fired, deadline) => self.fire(fired, deadline),
            Settled::Dropped(dead) => dead.end_cancelled_hold(released),
            Settled::Linked | Settled::LeftToUnlink => {}
        }
    }

    /// Keeps a callback fired for its deadline tick `deadline`, for the executor.
    pub(super) fn fire(&mut self, fired: Fired, deadline: u64) {
        self.fired.push(fired);
        match self.due.last_mut() {
            Some((tick, count)) if *tick == deadline => *count += 1,
            _ => self.due.push((deadline, 1)),
        }
    }
}

/// The dead entries a turn gives back to each lane (indexed as `Shard::lanes`).
#[derive(Default)]
pub(super) struct Spares {
    kept: Vec<Vec<EntryRef>>,
    /// How many entries each lane's stack has been given since the shard last saw it empty.
    given: Vec<usize>,
}

impl Spares {
    /// Makes room for `lanes` lanes.
    pub(super) fn grow(&mut self, lanes: usize) {
        self.kept.resize_with(lanes, Vec::new);
        self.given.resize(lanes, 0);
    }

    /// Keeps `entry` (resolved, out of the wheel) for lane `index` if no one else holds it and
    /// the lane has an owner; otherwise drops it.
    pub(super) fn keep(&mut self, index: usize, lane: &Lane, mut entry: EntryRef) {
        if EntryRef::get_mut(&mut entry).is_none() || !lane.counts().has_owner() {
            return;
        }
        let kept = self.kept[index].len();
        if kept >= KEEP_PER_TURN {
            return;
        }
        if self.given[index] + kept >= RETURN_LIMIT {
            if !lane.spares_drained() {
                return;
            }
            self.given[index] = 0;
        }
        self.kept[index].push(entry);
    }

    /// Pushes each lane's kept entries onto its stack.
    pub(super) fn flush(&mut self, lanes: &[Arc<Lane>]) {
        for ((lane, kept), given) in lanes
            .iter()
            .zip(self.kept.iter_mut())
            .zip(self.given.iter_mut())
        {
            let n = kept.len();
            if n == 0 {
                continue;
            }
            if lane.give_spares(kept) {
                *given = n;
            } else {
                *given += n;
            }
        }
    }
}
