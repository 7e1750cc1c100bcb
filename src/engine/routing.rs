//! Routing: which shard a timer goes to.
//!
//! A keyed timer goes to the shard its key hashes to, so the timers of one connection share a
//! shard. An unkeyed one goes to the calling thread's home shard, picked by its lane index:
//! each thread's timers then cross to one shard thread only, and a thread that schedules and
//! cancels its own timers touches one lane. The cost is balance: the firing load follows the
//! threads, so a single thread's timers all fire from one shard while the others idle (the
//! callbacks still run on the pool). BENCHMARKS.md has the figures of the choices measured.

/// Spreads a hash over `shards` (Fibonacci hashing: the high bits of a multiply).
#[inline]
pub(super) fn shard_for(hash: u64, shards: usize) -> usize {
    let mixed = hash.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((mixed >> 32) as usize) % shards
}

/// The home shard of the thread with lane index `index`: threads alive at once get
/// consecutive indices, so they spread evenly over the shards.
#[inline]
pub(super) fn home_shard(index: usize, shards: usize) -> usize {
    index % shards
}
