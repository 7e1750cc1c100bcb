//! How late callbacks run (shared by accuracy and slow-callback): timers due within a second,
//! scheduled from one thread, each recording when it ran against when it was due.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shardwheel::TimerEngine;

use super::report::Report;
use super::rng::{Delays, Rng};
use super::{count, slots, wait, Context, Failure};

/// The recorded timers' delays: 0–1000 ms at microsecond granularity.
const DELAYS: Delays = Delays::millis(0, 1000);

/// The seed stream of the recorded timers: the same for accuracy and slow-callback, so both
/// draw the same delays.
const STREAM: u64 = 3;

/// How long to wait for the last callback beyond the longest delay.
const GRACE: Duration = Duration::from_secs(60);

/// Where the callbacks record their lateness.
struct Recorder {
    /// Each timer's lateness in nanoseconds (0 for one that ran early).
    late_ns: Vec<AtomicU64>,
    /// Callbacks that ran before their due instant.
    early: AtomicU64,
    /// Callbacks that have run.
    ran: AtomicU64,
}

impl Recorder {
    fn new(timers: usize) -> Result<Self, Failure> {
        Ok(Recorder {
            late_ns: slots(timers, || AtomicU64::new(0))?,
            early: AtomicU64::new(0),
            ran: AtomicU64::new(0),
        })
    }

    /// Called first thing in timer `index`'s callback.
    fn record(&self, index: usize, due: Instant) {
        let now = Instant::now();
        let late_ns = match now.checked_duration_since(due) {
            Some(late) => u64::try_from(late.as_nanos()).unwrap_or(u64::MAX),
            None => {
                self.early.fetch_add(1, Ordering::Relaxed);
                0
            }
        };
        if let Some(slot) = self.late_ns.get(index) {
            slot.store(late_ns, Ordering::Relaxed);
        }
        // Release: pairs with the Acquire in `ran`, so a reader that sees every callback
        // counted also sees every lateness stored.
        self.ran.fetch_add(1, Ordering::Release);
    }

    fn ran(&self) -> u64 {
        self.ran.load(Ordering::Acquire)
    }

    fn summary(&self) -> Lateness {
        let mut sorted: Vec<u64> = self
            .late_ns
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .collect();
        sorted.sort_unstable();
        Lateness {
            p50_ns: nearest_rank(&sorted, 500),
            p99_ns: nearest_rank(&sorted, 990),
            p999_ns: nearest_rank(&sorted, 999),
            max_ns: sorted.last().copied().unwrap_or(0),
            early: self.early.load(Ordering::Relaxed),
        }
    }
}

/// The lateness percentiles of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lateness {
    p50_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
    max_ns: u64,
    early: u64,
}

impl Lateness {
    /// Adds the figures to `report`: the percentiles in ms with 3 decimals, and `early`.
    pub(crate) fn add_to(self, report: Report) -> Report {
        let ms = |ns: u64| ns as f64 / 1e6;
        report
            .fixed("p50_ms", ms(self.p50_ns), 3)
            .fixed("p99_ms", ms(self.p99_ns), 3)
            .fixed("p999_ms", ms(self.p999_ns), 3)
            .fixed("max_ms", ms(self.max_ns), 3)
            .count("early", self.early)
    }
}

/// Schedules `timers` recorded timers from this thread as fast as it can, waits until every
/// callback has run, and returns their lateness.
pub(crate) fn measure(
    ctx: &Context,
    engine: &TimerEngine,
    timers: usize,
) -> Result<Lateness, Failure> {
    let recorder = Arc::new(Recorder::new(timers)?);
    ctx.progress
        .show(format_args!("scheduling {timers} timers"));
    schedule(engine, &recorder, timers)?;
    let target = count(timers);
    wait::poll_until(ctx, "callbacks to run", DELAYS.max() + GRACE, || {
        let ran = recorder.ran();
        (ran >= target, format!("{ran} of {target} ran"))
    })?;
    Ok(recorder.summary())
}

/// Each timer's due instant is computed once, from the same `Instant::now()` its delay is added
/// to, and given to the engine as is, so the engine and the recorder agree on it exactly.
fn schedule(engine: &TimerEngine, recorder: &Arc<Recorder>, timers: usize) -> Result<(), Failure> {
    let mut rng = Rng::new(STREAM, 0);
    for index in 0..timers {
        let delay = rng.delay(DELAYS);
        let due = Instant::now() + delay;
        let recorder = Arc::clone(recorder);
        engine
            .schedule_at(due, move || recorder.record(index, due))
            .map_err(Failure::schedule)?;
    }
    Ok(())
}

/// The nearest-rank percentile `per_mille` / 1000 of `sorted` (0 if it is empty).
pub(super) fn nearest_rank(sorted: &[u64], per_mille: usize) -> u64 {
    let rank = (sorted.len() * per_mille).div_ceil(1000).max(1);
    sorted.get(rank - 1).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let sorted: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank(&sorted, 500), 500);
        assert_eq!(nearest_rank(&sorted, 990), 990);
        assert_eq!(nearest_rank(&sorted, 999), 999);
        assert_eq!(nearest_rank(&[7], 999), 7);
        assert_eq!(nearest_rank(&[], 500), 0);
    }

    #[test]
    fn early_callbacks_are_counted_not_timed() {
        let recorder = Recorder::new(2).unwrap();
        recorder.record(0, Instant::now() + Duration::from_secs(60));
        recorder.record(1, Instant::now() - Duration::from_millis(2));
        let lateness = recorder.summary();
        assert_eq!(lateness.early, 1);
        assert!(lateness.max_ns >= 2_000_000);
        assert_eq!(recorder.ran(), 2);
    }
}
