//! How late a shard fires its timers: a histogram, one bucket per power of two of nanoseconds,
//! written by the tick thread alone and read by `stats`.
//!
//! Lateness counts from the start of the tick *before* the deadline tick to the hand-over of
//! the turn's batch (one clock read; the pool wait is not included). The requested deadline
//! lies in that tick, so the figure is at most a tick above the lateness against it (a zero or
//! past deadline counts from the current tick). A sum is kept in microseconds, rounded up.

use crate::sync::Counter;

/// Bucket 0 holds a lateness of 0; bucket `i` holds `[2^(i-1), 2^i)` nanoseconds.
pub(crate) const BUCKETS: usize = 65;

/// The bucket of a lateness of `nanos` nanoseconds.
fn bucket_of(nanos: u64) -> usize {
    (u64::BITS - nanos.leading_zeros()) as usize
}

/// A shard's lateness histogram as it is recorded, in counters (see the module docs);
/// `stats::Lateness` is a snapshot of it.
pub(crate) struct LatenessRecorder {
    buckets: [Counter; BUCKETS],
    max: Counter,
    /// The sum of the lateness recorded, in microseconds.
    sum_micros: Counter,
}

impl LatenessRecorder {
    pub(super) fn new() -> Self {
        LatenessRecorder {
            buckets: std::array::from_fn(|_| Counter::default()),
            max: Counter::default(),
            sum_micros: Counter::default(),
        }
    }

    /// Records `count` timers fired `nanos` late. The shard thread alone calls it.
    pub(super) fn record(&self, nanos: u64, count: u64) {
        self.buckets[bucket_of(nanos)].add_single_writer(count);
        self.max.raise_single_writer(nanos);
        let micros = (u128::from(nanos) * u128::from(count)).div_ceil(1000);
        self.sum_micros
            .add_single_writer(u64::try_from(micros).unwrap_or(u64::MAX));
    }

    /// The counts per bucket and the largest lateness, in nanoseconds.
    pub(crate) fn snapshot(&self) -> ([u64; BUCKETS], u64) {
        (
            std::array::from_fn(|i| self.buckets[i].get()),
            self.max.get(),
        )
    }

    /// The sum of the lateness recorded, in microseconds.
    pub(crate) fn sum_micros(&self) -> u64 {
        self.sum_micros.get()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 1);
        assert_eq!(bucket_of(2), 2);
        assert_eq!(bucket_of(3), 2);
        assert_eq!(bucket_of(4), 3);
        assert_eq!(bucket_of(1 << 20), 21);
        assert_eq!(bucket_of((1 << 21) - 1), 21);
        assert_eq!(bucket_of(u64::MAX), 64);
    }

    #[test]
    fn records_counts_and_the_max() {
        let lateness = LatenessRecorder::new();
        for nanos in [0, 5, 1_000_000] {
            lateness.record(nanos, 1);
        }
        lateness.record(6, 1);
        let (buckets, max) = lateness.snapshot();
        assert_eq!(buckets[0], 1);
        assert_eq!(buckets[3], 2);
        assert_eq!(buckets[20], 1);
        assert_eq!(buckets.iter().sum::<u64>(), 4);
        assert_eq!(max, 1_000_000);
        assert_eq!(lateness.sum_micros(), 1 + 1_000 + 1);
        lateness.record(1_500, 4);
        assert_eq!(lateness.sum_micros(), 1_002 + 6);
    }
}
