//! A snapshot of the engine's counters.

use super::core::EngineCore;
use crate::sync::barrier;

/// Counters of a whole engine, summed over its shards. Taken without stopping anything: each
/// figure is exact once the threads that move it are quiet, and while they are not, `pending`
/// may lag a timer or two behind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Timers accepted by `schedule` (and its variants). A repeating timer counts once for each
    /// time it is armed: when scheduled, and again each time it re-arms after a run.
    pub scheduled: u64,
    /// Timers whose callbacks were handed to the executor (each run of a repeating timer).
    pub fired: u64,
    /// Timers stopped by a successful `cancel`.
    pub cancelled: u64,
    /// Timers handed back by `shutdown`.
    pub returned: u64,
    /// Timers refused: `schedule` calls (and sleeps) refused with `Full`, `DelayTooLong` or
    /// `Shutdown`, and repeating timers whose re-arm met shutdown.
    pub rejected: u64,
    /// Callbacks that panicked (caught; the engine went on).
    pub panicked: u64,
    /// Timers neither fired, cancelled nor handed back: `scheduled - fired - cancelled - returned`.
    pub pending: u64,
    /// Whether producers wake a sleeping shard without a fence of their own: true where the
    /// system offers `membarrier(2)` (Linux 4.14 and later, unless a sandbox forbids it), so
    /// the shard pays for the barrier when it goes to sleep instead. False means every
    /// schedule and cancel pays a full fence; the engine is correct either way.
    pub asymmetric_barrier: bool,
    /// One entry per shard.
    pub shards: Vec<ShardStats>,
}

/// Counters of one shard.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardStats {
    /// Timers routed to this shard and still pending.
    pub pending: u64,
    /// Entries linked into this shard's wheel, as of its last turn: pending timers it has
    /// placed, plus cancelled ones it has not unlinked yet.
    pub in_wheel: u64,
    /// The core the shard's tick thread is pinned to; `None` if pinning was off or refused, or
    /// if the thread let go of its core because that core was too busy to keep it on time
    /// (then the thread runs unpinned).
    pub pinned_core: Option<usize>,
    /// Turns of the tick thread that began more than 10 ms (and two ticks) after it meant to
    /// wake: a sign of a starved thread. Three in a row make a pinned thread let go of its
    /// core.
    pub late_turns: u64,
}

impl EngineCore {
    /// Adds up the shards' and lanes' counters.
    pub(super) fn stats(&self) -> Stats {
        let mut stats = Stats {
            scheduled: 0,
            fired: 0,
            cancelled: 0,
            returned: 0,
            rejected: 0,
            panicked: 0,
            pending: 0,
            asymmetric_barrier: barrier::is_asymmetric(),
            shards: Vec::with_capacity(self.shards.len()),
        };
        for (shard, lanes) in self.shards_with_lanes() {
            let counts = shard.counts();
            // Read what takes timers away before what adds them, so a snapshot taken while
            // threads are busy does not count a timer as gone before it counts it as scheduled.
            let fired = counts.fired();
            let returned = counts.returned();
            let cancelled: u64 = lanes.iter().map(|lane| lane.counts().cancelled()).sum();
            let scheduled: u64 = lanes.iter().map(|lane| lane.counts().scheduled()).sum();
            let pending = scheduled.saturating_sub(fired + cancelled + returned);
            stats.scheduled += scheduled;
            stats.fired += fired;
            stats.cancelled += cancelled;
            stats.returned += returned;
            stats.rejected += lanes
                .iter()
                .map(|lane| lane.counts().rejected())
                .sum::<u64>();
            stats.panicked += counts.panicked();
            stats.pending += pending;
            stats.shards.push(ShardStats {
                pending,
                in_wheel: counts.in_wheel(),
                pinned_core: shard.pinned_core(),
                late_turns: counts.late_turns(),
            });
        }
        stats
    }
}
