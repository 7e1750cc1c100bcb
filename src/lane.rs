//! Lanes: the inbound side of a shard.
//!
//! Each shard has a few lanes, and each producer thread uses the lane its thread slot picks.
//! A lane carries the lock-free queues into the shard: `inserts` (new timers, an intrusive
//! queue through the entries themselves, see [`crate::inbound`]), `unlinks` (timers cancelled
//! after the shard placed them, which it must unlink, see [`crate::unlink`]) and `changes`
//! (timers reset to an earlier deadline, which it must move; crossbeam's `SegQueue`, since a
//! placed entry's links belong to the wheel and its callback is still in place).
//!
//! Lanes exist to keep the hot path uncontended: the queue tails and the counters are touched
//! mostly by one thread each, instead of by every producer of the shard. The first thread that
//! schedules through a lane becomes its *owner* for good. The owner counts with a plain load and
//! store where every other thread needs a read-modify-write, and it alone reuses the lane's
//! spare entries (see [`crate::recycle`]). A timer handle keeps its lane alive, so a cancel
//! can reach the shard even after the engine is gone.

use crossbeam_utils::CachePadded;

use crate::entry::EntryRef;
use crate::inbound::Inbound;
use crate::recycle::Recycler;
use crate::ring::Ring;
use crate::shard::ShardShared;
use crate::sync::{owner_slot, Arc, AtomicU64, AtomicUsize, Ordering, Queue};
use crate::unlink::Unlinks;

pub(crate) struct Lane {
    /// New timers from the lane's owner (see [`crate::ring`]).
    pub(crate) ring: Ring,
    /// New timers from every other thread, and from the owner when its ring is full.
    pub(crate) inserts: Inbound,
    pub(crate) unlinks: Unlinks,
    pub(crate) changes: Queue<EntryRef>,
    pub(crate) counts: LaneCounts,
    pub(crate) spares: Recycler,
    pub(crate) shard: Arc<ShardShared>,
}

/// `owner` before any thread has claimed the lane.
const NO_OWNER: usize = usize::MAX;

/// Counters written by the threads that schedule and cancel through a lane, and the lane's
/// owner. The owner's counts go to `own`, which no other thread writes; everyone else's go to
/// `others`; a reader adds the two. Relaxed throughout: they are statistics, exact once the
/// threads that wrote them are quiet. Each part has a cache line of its own: `owner` is read
/// on every call and written once, `own` is written by the owner alone, `others` by any thread.
pub(crate) struct LaneCounts {
    /// The thread slot of the lane's owner, or `NO_OWNER`.
    owner: CachePadded<AtomicUsize>,
    own: CachePadded<Tally>,
    others: CachePadded<Tally>,
}

#[derive(Default)]
struct Tally {
    scheduled: AtomicU64,
    cancelled: AtomicU64,
    rejected: AtomicU64,
}

/// Which counter of a [`Tally`].
#[derive(Clone, Copy)]
enum Count {
    Scheduled,
    Cancelled,
    Rejected,
}

impl Tally {
    fn get(&self, count: Count) -> &AtomicU64 {
        match count {
            Count::Scheduled => &self.scheduled,
            Count::Cancelled => &self.cancelled,
            Count::Rejected => &self.rejected,
        }
    }
}

impl LaneCounts {
    fn new() -> Self {
        LaneCounts {
            owner: CachePadded::new(AtomicUsize::new(NO_OWNER)),
            own: CachePadded::new(Tally::default()),
            others: CachePadded::new(Tally::default()),
        }
    }

    /// Whether the calling thread owns the lane; the first thread to ask claims it.
    #[inline]
    pub(crate) fn is_mine(&self) -> bool {
        let Some(me) = owner_slot() else {
            return false;
        };
        // Relaxed: ownership decides only which cells this thread writes; slots are unique per
        // thread, so only the claiming thread ever matches.
        match self.owner.load(Ordering::Relaxed) {
            owner if owner == me => true,
            NO_OWNER => self
                .owner
                .compare_exchange(NO_OWNER, me, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok(),
            _ => false,
        }
    }

    /// Whether some thread owns the lane (and so may reuse its spare entries).
    pub(crate) fn has_owner(&self) -> bool {
        // Relaxed: a hint; a lane claimed just now merely misses a few spares.
        self.owner.load(Ordering::Relaxed) != NO_OWNER
    }

    #[inline]
    fn add(&self, count: Count, delta: u64) {
        self.add_as(self.is_mine(), count, delta);
    }

    /// Adds `delta` to `count`, into the owner's cells if `mine`.
    #[inline]
    fn add_as(&self, mine: bool, count: Count, delta: u64) {
        if mine {
            let cell = self.own.get(count);
            // Relaxed load and store: only the owner writes `own`, so no update is lost.
            cell.store(
                cell.load(Ordering::Relaxed).wrapping_add(delta),
                Ordering::Relaxed,
            );
        } else {
            self.others.get(count).fetch_add(delta, Ordering::Relaxed);
        }
    }

    fn read(&self, count: Count) -> u64 {
        let own = self.own.get(count).load(Ordering::Relaxed);
        own.wrapping_add(self.others.get(count).load(Ordering::Relaxed))
    }

    /// Counts a timer scheduled by the calling thread, `mine` telling whether it owns the
    /// lane (see [`is_mine`](Self::is_mine)).
    pub(crate) fn add_scheduled(&self, mine: bool) {
        self.add_as(mine, Count::Scheduled, 1);
    }

    /// A schedule that raced shutdown and got its callback back: it counts as rejected.
    pub(crate) fn unschedule(&self) {
        self.add(Count::Scheduled, u64::MAX);
        self.add_rejected();
    }

    pub(crate) fn add_cancelled(&self) {
        self.add(Count::Cancelled, 1);
    }

    pub(crate) fn add_rejected(&self) {
        self.add(Count::Rejected, 1);
    }

    pub(crate) fn scheduled(&self) -> u64 {
        self.read(Count::Scheduled)
    }

    pub(crate) fn cancelled(&self) -> u64 {
        self.read(Count::Cancelled)
    }

    pub(crate) fn rejected(&self) -> u64 {
        self.read(Count::Rejected)
    }
}

impl Lane {
    pub(crate) fn new(shard: Arc<ShardShared>) -> Self {
        Lane {
            ring: Ring::new(),
            inserts: Inbound::new(),
            unlinks: Unlinks::new(),
            changes: Queue::new(),
            counts: LaneCounts::new(),
            spares: Recycler::new(),
            shard,
        }
    }

    pub(crate) fn has_work(&self) -> bool {
        !self.ring.is_empty()
            || !self.inserts.is_empty()
            || !self.unlinks.is_empty()
            || !self.changes.is_empty()
    }

    /// A spare entry for the calling thread to reuse, if it owns the lane and the lane has one.
    ///
    /// # Safety
    /// The caller is inside a call on the lane's engine (so the engine is not being dropped).
    #[inline]
    pub(crate) unsafe fn spare(&self) -> Option<EntryRef> {
        if !self.counts.is_mine() {
            return None;
        }
        // SAFETY: the calling thread owns the lane, and by this function's contract it is
        // inside a call on the engine.
        unsafe { self.spares.take() }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn owner_and_other_threads_add_up() {
        let counts = Arc::new(LaneCounts::new());
        assert!(!counts.has_owner());
        counts.add_scheduled(counts.is_mine());
        assert!(counts.has_owner() && counts.is_mine());
        let other = counts.clone();
        std::thread::spawn(move || {
            assert!(!other.is_mine());
            for _ in 0..3 {
                other.add_scheduled(other.is_mine());
            }
            other.add_cancelled();
            other.unschedule();
        })
        .join()
        .unwrap();
        counts.add_cancelled();
        counts.unschedule();
        assert_eq!(counts.scheduled(), 2);
        assert_eq!(counts.cancelled(), 2);
        assert_eq!(counts.rejected(), 2);
    }
}
