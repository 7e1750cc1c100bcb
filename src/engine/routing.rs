//! Routing: which shard a timer goes to.
//!
//! A keyed timer goes to the shard its key hashes to, so the timers of one connection share a
//! shard. An unkeyed one goes by a task hash that spreads a thread's timers over the shards.

use std::cell::Cell;

use crate::sync::thread_slot;

/// Spreads a hash over `shards` (Fibonacci hashing: the high bits of a multiply).
#[inline]
pub(super) fn shard_for(hash: u64, shards: usize) -> usize {
    let mixed = hash.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((mixed >> 32) as usize) % shards
}

/// The hash of an unkeyed task: the calling thread's slot and its count of tasks so far.
#[inline]
pub(super) fn task_hash() -> u64 {
    thread_local! {
        static TASKS: Cell<u64> = const { Cell::new(0) };
    }
    let n = TASKS.with(|tasks| {
        let n = tasks.get();
        tasks.set(n.wrapping_add(1));
        n
    });
    n ^ ((thread_slot() as u64) << 40)
}
