//! A snapshot of the engine's counters.

use std::time::Duration;

use super::pending::PendingAges;
use super::shared::EngineShared;
use crate::shard::{Lane, Refusal, ShardShared, LATENESS_BUCKETS};
use crate::sync::Arc;

/// Counters of a whole engine, summed over its shards, taken without stopping anything: exact
/// once the threads that move them are quiet.
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
    pub handed_back: u64,
    /// Timers refused: `schedule` calls (and sleeps) refused with `Full`, `DelayTooLong` or
    /// `Shutdown`, and repeating timers whose re-arm met shutdown. The sum of the three below.
    pub rejected: u64,
    /// Timers refused with `Full`: the engine held `max_pending` timers.
    pub rejected_full: u64,
    /// Timers refused with `DelayTooLong`: due beyond [`max_delay`](crate::TimerEngine::max_delay).
    pub rejected_too_long: u64,
    /// Timers refused because the engine had shut down (a re-arm that met shutdown included).
    pub rejected_shutdown: u64,
    /// Callbacks that panicked (caught; the engine went on).
    pub panicked: u64,
    /// Timers neither fired, cancelled nor handed back: `scheduled - fired - cancelled - handed_back`.
    pub pending: u64,
    /// The pending timers by how long ago they were scheduled, with
    /// [`Builder::track_sites`](crate::engine::Builder::track_sites) (`None` without): read from
    /// each timer's origin, in time proportional to the pending timers.
    pub pending_ages: Option<PendingAges>,
    /// Callbacks fired and handed to the executor that have not begun to run (waiting for a
    /// pool thread, or in a spawner's queue).
    pub callbacks_queued: u64,
    /// Callbacks running now.
    pub callbacks_running: u64,
    /// How late the shards fired their timers, all shards together.
    pub lateness: Lateness,
    /// Bytes of the chunks the lanes hold for entries, all shards together (see
    /// [`ShardStats::entry_bytes`]).
    pub entry_bytes: u64,
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
    /// linked, plus cancelled ones it has not unlinked yet.
    pub in_wheel: u64,
    /// The cpu the shard's tick thread is pinned to; `None` if pinning was off (the default)
    /// or refused, or once the thread was unpinned because its turns kept beginning late.
    pub pinned_cpu: Option<usize>,
    /// Turns of the tick thread that began more than 10 ms (and two ticks) after it meant to
    /// wake: a sign of a starved thread. Three in a row unpin a pinned thread.
    pub late_turns: u64,
    /// Callbacks this shard fired that have not begun to run.
    pub callbacks_queued: u64,
    /// Callbacks this shard fired that are running now.
    pub callbacks_running: u64,
    /// How late this shard fired its timers.
    pub lateness: Lateness,
    /// Bytes of the chunks (64 KiB each) this shard's lanes carve their owners' entries from:
    /// as many as were needed at once, given back a few at a time after a spike. Not counted:
    /// callbacks' captures, and entries of threads that do not own their lane.
    pub entry_bytes: u64,
}

/// How late timers fired: a histogram with a bucket per power of two of nanoseconds, recorded
/// as each turn hands its timers to the executor (the wait for a pool thread not included).
/// Lateness counts from the start of the tick before the deadline's tick, so it is never below
/// the true lateness and at most a tick above it.
///
/// ```
/// use std::time::Duration;
/// let clock = shardwheel::ManualClock::new();
/// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build()?;
/// engine.schedule(Duration::from_millis(3), || {})?;
/// clock.advance(Duration::from_millis(10)); // the shard fires it 7 ms after its deadline
/// let lateness = engine.stats().lateness;
/// assert_eq!(lateness.count(), 1);
/// assert_eq!(lateness.max(), Duration::from_millis(8)); // from the start of the tick before
/// assert!(lateness.p99().unwrap() >= Duration::from_millis(8));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The histogram counts from the engine's start; [`since`](Self::since) gives the timers fired
/// between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lateness {
    /// Bucket 0: no lateness; bucket `i`: `[2^(i-1), 2^i)` nanoseconds.
    buckets: [u64; LATENESS_BUCKETS],
    max_nanos: u64,
    sum_micros: u64,
}

impl Lateness {
    fn new(buckets: [u64; LATENESS_BUCKETS], max_nanos: u64, sum_micros: u64) -> Self {
        Lateness {
            buckets,
            max_nanos,
            sum_micros,
        }
    }

    fn merge(&mut self, other: &Lateness) {
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *mine += theirs;
        }
        self.max_nanos = self.max_nanos.max(other.max_nanos);
        self.sum_micros += other.sum_micros;
    }

    /// How many timers fired.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The lateness of every timer fired, added up, in whole microseconds (each turn's share
    /// rounded up): with [`count`](Self::count), a mean (and a Prometheus `_sum`).
    pub fn sum(&self) -> Duration {
        Duration::from_micros(self.sum_micros)
    }

    /// The largest lateness recorded (zero if none was).
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.max_nanos)
    }

    /// The timers fired after `earlier`, a snapshot of the same engine (or shard) taken
    /// before this one. Counts and sum are exact; `max` is exact if these timers raised the
    /// largest lateness, else the top of their highest bucket.
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build()?;
    /// engine.schedule(Duration::from_millis(3), || {})?;
    /// clock.advance(Duration::from_millis(10));
    /// let before = engine.stats().lateness;
    /// engine.schedule(Duration::from_millis(1), || {})?;
    /// clock.advance(Duration::from_millis(1));
    /// let window = engine.stats().lateness.since(&before);
    /// assert_eq!(window.count(), 1);
    /// assert_eq!(window.sum(), Duration::from_millis(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn since(&self, earlier: &Lateness) -> Lateness {
        let buckets: [u64; LATENESS_BUCKETS] =
            std::array::from_fn(|i| self.buckets[i].saturating_sub(earlier.buckets[i]));
        let max_nanos = if self.max_nanos > earlier.max_nanos {
            self.max_nanos
        } else {
            buckets
                .iter()
                .rposition(|&n| n > 0)
                .map_or(0, |top| bucket_top(top).min(self.max_nanos))
        };
        let sum_micros = self.sum_micros.saturating_sub(earlier.sum_micros);
        Lateness::new(buckets, max_nanos, sum_micros)
    }

    /// An upper bound on the `q`-quantile (`q` from 0 to 1): the top of the bucket that holds
    /// it, or the largest lateness if that is lower. `None` if nothing fired or `q` is outside
    /// `0..=1`.
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// assert_eq!(engine.stats().lateness.quantile(0.5), None); // nothing fired yet
    /// assert_eq!(engine.stats().lateness.quantile(2.0), None);
    /// ```
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let count = self.count();
        if count == 0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        // The rank of the quantile among `count` values, 1-based; at least the first.
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0;
        for (bucket, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(Duration::from_nanos(bucket_top(bucket).min(self.max_nanos)));
            }
        }
        None
    }

    /// The median: [`quantile(0.5)`](Self::quantile).
    pub fn p50(&self) -> Option<Duration> {
        self.quantile(0.5)
    }

    /// [`quantile(0.99)`](Self::quantile).
    pub fn p99(&self) -> Option<Duration> {
        self.quantile(0.99)
    }

    /// [`quantile(0.999)`](Self::quantile).
    pub fn p999(&self) -> Option<Duration> {
        self.quantile(0.999)
    }

    /// The non-empty buckets, lowest first: the top of each (its largest lateness) and how many
    /// timers fell in it.
    ///
    /// ```
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// assert_eq!(engine.stats().lateness.buckets().count(), 0);
    /// ```
    pub fn buckets(&self) -> impl Iterator<Item = (Duration, u64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(bucket, n)| (Duration::from_nanos(bucket_top(bucket)), *n))
    }
}

/// The largest lateness bucket `bucket` holds, in nanoseconds.
fn bucket_top(bucket: usize) -> u64 {
    match bucket {
        0 => 0,
        64 => u64::MAX,
        b => (1u64 << b) - 1,
    }
}

impl EngineShared {
    /// Adds up the shards' and lanes' counters.
    pub(super) fn stats(&self) -> Stats {
        let mut stats = Stats {
            scheduled: 0,
            fired: 0,
            cancelled: 0,
            handed_back: 0,
            rejected: 0,
            rejected_full: 0,
            rejected_too_long: 0,
            rejected_shutdown: 0,
            panicked: 0,
            pending: 0,
            pending_ages: None,
            callbacks_queued: 0,
            callbacks_running: 0,
            lateness: Lateness::new([0; LATENESS_BUCKETS], 0, 0),
            entry_bytes: 0,
            shards: Vec::with_capacity(self.shards.len()),
        };
        for (shard, lanes) in self.shards_with_lanes() {
            let counts = shard.counts();
            let tally = Tally::of(shard, &lanes);
            let (scheduled, fired, cancelled) = (tally.scheduled, tally.fired, tally.cancelled);
            let (handed_back, pending) = (tally.handed_back, tally.pending());
            if let Some(ages) = self.pending_ages(&lanes) {
                stats
                    .pending_ages
                    .get_or_insert_with(PendingAges::default)
                    .merge(&ages);
            }
            stats.scheduled += scheduled;
            stats.fired += fired;
            stats.cancelled += cancelled;
            stats.handed_back += handed_back;
            let rejected = |refusal| {
                lanes
                    .iter()
                    .map(|lane| lane.counts().rejected_for(refusal))
                    .sum::<u64>()
            };
            let (full, too_long, shutdown) = (
                rejected(Refusal::Full),
                rejected(Refusal::TooLong),
                rejected(Refusal::Shutdown) + shard.callbacks().rearms_refused(),
            );
            stats.rejected += full + too_long + shutdown;
            stats.rejected_full += full;
            stats.rejected_too_long += too_long;
            stats.rejected_shutdown += shutdown;
            stats.panicked += shard.callbacks().panicked();
            stats.pending += pending;
            let (queued, running) = shard.callbacks().queued_and_running();
            stats.callbacks_queued += queued;
            stats.callbacks_running += running;
            let (buckets, max) = shard.lateness().snapshot();
            let lateness = Lateness::new(buckets, max, shard.lateness().sum_micros());
            stats.lateness.merge(&lateness);
            let entry_bytes: u64 = lanes
                .iter()
                .map(|lane| u64::try_from(lane.entry_bytes()).unwrap_or(u64::MAX))
                .sum();
            stats.entry_bytes += entry_bytes;
            stats.shards.push(ShardStats {
                pending,
                in_wheel: counts.in_wheel(),
                pinned_cpu: shard.pinning().pinned_cpu(),
                late_turns: shard.pinning().late_turns(),
                callbacks_queued: queued,
                callbacks_running: running,
                lateness,
                entry_bytes,
            });
        }
        stats
    }
}

/// A shard's counts of timers scheduled and gone, read together.
pub(super) struct Tally {
    scheduled: u64,
    fired: u64,
    cancelled: u64,
    handed_back: u64,
}

impl Tally {
    /// The counts of `shard` and its `lanes`.
    pub(super) fn of(shard: &ShardShared, lanes: &[Arc<Lane>]) -> Self {
        // Read what takes timers away before what adds them, so a snapshot taken while
        // threads are busy does not count a timer as gone before it counts it as scheduled.
        let fired = shard.callbacks().handed_over();
        let handed_back = shard.counts().handed_back();
        let cancelled = lanes.iter().map(|lane| lane.counts().cancelled()).sum();
        let scheduled = shard.callbacks().rearmed()
            + (lanes.iter())
                .map(|lane| lane.counts().scheduled())
                .sum::<u64>();
        Tally {
            scheduled,
            fired,
            cancelled,
            handed_back,
        }
    }

    /// Timers neither fired, cancelled nor handed back.
    pub(super) fn pending(&self) -> u64 {
        (self.scheduled).saturating_sub(self.fired + self.cancelled + self.handed_back)
    }
}
