//! Statistics counters: std atomics even under loom.
//!
//! A counter takes part in no protocol: nothing is published through it, so loom need not model
//! it, and leaving it out keeps the models' interleavings to the protocols themselves. Every
//! access is Relaxed for the same reason: a reader wants a value that was true at some moment,
//! not an order with anything else. One decision reads counters: whether the callbacks a
//! shard handed to the pool have all begun (`shard::relay`). The shard reads its own count of
//! what it fired, and a read of what has begun can only lag, so a stale read makes the shard
//! look again a tick later; it never makes it miss a callback that waits.

use std::sync::atomic::{AtomicU64, Ordering};

/// A statistics counter (see the module docs).
#[derive(Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`; any thread.
    pub(crate) fn add(&self, n: u64) {
        // Relaxed: a statistic (module docs).
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds `n` without a read-modify-write, for a counter one thread at a time writes, each
    /// writer ordered after the last (then a load and a store cost less than a locked add, and
    /// lose nothing).
    pub(crate) fn add_single_writer(&self, n: u64) {
        // Relaxed: a statistic (module docs); the writer reads its own last store, or, if the
        // counter passed to it from another thread, the last store of that thread, which the
        // hand-over ordered before this.
        self.0
            .store(self.0.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    /// Raises the counter to `n` if it is lower; for a counter only one thread writes.
    pub(crate) fn raise_single_writer(&self, n: u64) {
        // Relaxed: as `add_single_writer`.
        if n > self.0.load(Ordering::Relaxed) {
            self.0.store(n, Ordering::Relaxed);
        }
    }

    /// Replaces the value (a gauge rather than a count).
    pub(crate) fn set(&self, n: u64) {
        // Relaxed: a statistic (module docs).
        self.0.store(n, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        // Relaxed: a statistic (module docs).
        self.0.load(Ordering::Relaxed)
    }
}
