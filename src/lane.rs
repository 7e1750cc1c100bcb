//! Lanes: the inbound side of a shard.
//!
//! Each shard has a few lanes, and each producer thread uses the lane its thread slot picks.
//! A lane carries two lock-free queues into the shard: `inserts` (new timers, an intrusive
//! queue through the entries themselves, see [`crate::inbound`]) and `changes` (timers
//! cancelled after the shard placed them, which it must unlink; crossbeam's `SegQueue`, since
//! a placed entry's links belong to the wheel). A timer handle keeps
//! its lane alive, so a cancel can reach the shard even after the engine is gone.
//!
//! Lanes exist to keep the hot path uncontended: a handle's reference count, the queue tails
//! and the `scheduled`/`cancelled` counters are touched mostly by one thread each, instead of
//! by every producer of the shard.

use crossbeam_utils::CachePadded;

use crate::entry::EntryRef;
use crate::inbound::Inbound;
use crate::shard::ShardShared;
use crate::sync::{Arc, AtomicU64, Ordering, Queue};

pub(crate) struct Lane {
    pub(crate) inserts: Inbound,
    pub(crate) changes: Queue<EntryRef>,
    pub(crate) counts: CachePadded<LaneCounts>,
    pub(crate) shard: Arc<ShardShared>,
}

/// Counters written by the threads that schedule and cancel through a lane. Relaxed
/// throughout: they are statistics, exact once the threads that wrote them are quiet.
#[derive(Default)]
pub(crate) struct LaneCounts {
    scheduled: AtomicU64,
    cancelled: AtomicU64,
    rejected: AtomicU64,
}

impl LaneCounts {
    pub(crate) fn add_scheduled(&self) {
        self.scheduled.fetch_add(1, Ordering::Relaxed);
    }

    /// A schedule that raced shutdown and got its callback back: it counts as rejected.
    pub(crate) fn unschedule(&self) {
        self.scheduled.fetch_sub(1, Ordering::Relaxed);
        self.add_rejected();
    }

    pub(crate) fn add_cancelled(&self) {
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn scheduled(&self) -> u64 {
        self.scheduled.load(Ordering::Relaxed)
    }

    pub(crate) fn cancelled(&self) -> u64 {
        self.cancelled.load(Ordering::Relaxed)
    }

    pub(crate) fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }
}

impl Lane {
    pub(crate) fn new(shard: Arc<ShardShared>) -> Self {
        Lane {
            inserts: Inbound::new(),
            changes: Queue::new(),
            counts: CachePadded::new(LaneCounts::default()),
            shard,
        }
    }

    pub(crate) fn has_work(&self) -> bool {
        !self.inserts.is_empty() || !self.changes.is_empty()
    }
}
