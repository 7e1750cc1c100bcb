//! Uniform random delays from a small seeded generator (splitmix64): every run of a workload
//! draws the same delays, each thread from its own fixed seed.

use std::time::Duration;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// A closed range of delays, at microsecond granularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delays {
    min_us: u64,
    max_us: u64,
}

impl Delays {
    /// Delays in `[min, max]` milliseconds.
    pub(crate) const fn millis(min: u64, max: u64) -> Self {
        Delays {
            min_us: min * 1_000,
            max_us: max * 1_000,
        }
    }

    /// Delays in `[min, max]` seconds.
    pub(crate) const fn secs(min: u64, max: u64) -> Self {
        Delays::millis(min * 1_000, max * 1_000)
    }

    /// The longest delay of the range.
    pub(crate) const fn max(self) -> Duration {
        Duration::from_micros(self.max_us)
    }
}

/// A splitmix64 generator.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    /// The generator of thread `thread` of a workload's `stream`: a fixed seed for each pair.
    pub(crate) fn new(stream: u64, thread: usize) -> Self {
        let thread = u64::try_from(thread).unwrap_or(u64::MAX);
        Rng {
            state: stream.wrapping_mul(GOLDEN)
                ^ thread.wrapping_add(1).wrapping_mul(0xBF58_476D_1CE4_E5B9),
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` by multiply-and-shift (its bias, below n / 2^64, is far too small to
    /// matter for the ranges here).
    fn below(&mut self, n: u64) -> u64 {
        let wide = u128::from(self.next_u64()) * u128::from(n);
        u64::try_from(wide >> 64).unwrap_or(0)
    }

    /// A delay drawn uniformly from `delays`, both ends included.
    pub(crate) fn delay(&mut self, delays: Delays) -> Duration {
        let span = delays.max_us - delays.min_us;
        Duration::from_micros(delays.min_us + self.below(span + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_stay_in_range_and_cover_it() {
        let delays = Delays::millis(0, 1);
        let mut rng = Rng::new(7, 0);
        let drawn: Vec<Duration> = (0..100_000).map(|_| rng.delay(delays)).collect();
        assert!(drawn.iter().all(|d| *d <= Duration::from_millis(1)));
        assert!(drawn.contains(&Duration::ZERO));
        assert!(drawn.contains(&Duration::from_millis(1)));
    }

    #[test]
    fn seeds_are_fixed_per_stream_and_thread() {
        let delays = Delays::secs(1, 30);
        let draw = |stream, thread| {
            let mut rng = Rng::new(stream, thread);
            (0..8).map(|_| rng.delay(delays)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1, 0), draw(1, 0));
        assert_ne!(draw(1, 0), draw(1, 1));
        assert_ne!(draw(1, 0), draw(2, 0));
    }
}
