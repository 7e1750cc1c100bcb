//! A snapshot of the engine's counters.

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
    /// `schedule` calls refused (`Full`, `DelayTooLong`, `Shutdown`).
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
    /// The core the shard's tick thread is pinned to; `None` if pinning was off or refused
    /// (then the thread runs unpinned).
    pub pinned_core: Option<usize>,
}
