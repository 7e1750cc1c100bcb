//! Statistics counters: std atomics even under loom, all Relaxed.
//!
//! Nothing is published through a counter, so loom need not model it and a reader wants only a
//! value once true. The one decision on counters (`shard::relay`: have the handed callbacks
//! begun?) compares the shard's own fired count with a begun count that can only lag, so a
//! stale read makes the shard look again a tick later, never miss a waiting callback.

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

    /// Adds `n` with a load and a store, for a counter one thread at a time writes.
    pub(crate) fn add_single_writer(&self, n: u64) {
        // Relaxed: a statistic; the writer reads its own last store, or its predecessor's,
        // ordered before this by the hand-over.
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
