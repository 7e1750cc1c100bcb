//! What a snapshot of the pending timers reports: [`PendingTimers`], each [`PendingTimer`]
//! with its [`Stage`], their [`PendingAges`], and [`SnapshotError`].

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU64;
use std::panic::Location;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::time::{OtherClock, OtherDeadline};

/// The pending timers of an engine, as [`TimerEngine::pending_timers`] found them.
///
/// With [`Builder::track_sites`] each timer comes with its site, age and key, and every timer
/// pending throughout the snapshot is listed. Without, each shard lists the timers linked in
/// its wheel: a timer made in the last few milliseconds (young, or queued for its shard) or in
/// a repeating timer's run is counted in [`unlisted`](Self::unlisted) instead.
///
/// [`TimerEngine::pending_timers`]: crate::TimerEngine::pending_timers
/// [`Builder::track_sites`]: crate::engine::Builder::track_sites
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PendingTimers {
    /// The timers listed, shard by shard, in no order within a shard.
    pub timers: Vec<PendingTimer>,
    /// Timers pending by the engine's counts but not listed: those not in a wheel when its
    /// shard walked it (see above), and those scheduled while the snapshot was taken.
    pub unlisted: u64,
    /// When the snapshot began, on the engine's clock.
    pub taken_at: Instant,
}

/// One pending timer in a [`PendingTimers`] snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PendingTimer {
    /// When it is due: its deadline rounded up to the engine's tick. A boot or wall timer's is
    /// when its shard looks at its clock next (its estimate); its own is in `on_clock`.
    pub deadline: Instant,
    /// A timer on the boot or wall clock ([`schedule_boot`], [`schedule_at_wall`]): its
    /// deadline on that clock. `None` for a timer on the engine's clock.
    ///
    /// [`schedule_boot`]: crate::TimerEngine::schedule_boot
    /// [`schedule_at_wall`]: crate::TimerEngine::schedule_at_wall
    pub on_clock: Option<ClockDeadline>,
    /// Where it is.
    pub stage: Stage,
    /// The shard it was routed to.
    pub shard: usize,
    /// How long before the snapshot it was scheduled (a sleep's timer: when the sleep was
    /// first polled, or polled by another task); `None` without site tracking.
    pub age: Option<Duration>,
    /// The key it was scheduled with ([`schedule_keyed`](crate::TimerEngine::schedule_keyed),
    /// [`RepeatBuilder::keyed`](crate::engine::RepeatBuilder::keyed)); `None` if unkeyed or
    /// without site tracking.
    pub key: Option<u64>,
    /// The line that scheduled it: the caller of `schedule` (and its forms, the boot and wall
    /// ones too), of `RepeatBuilder::schedule`, and of `sleep`, `timeout` and `interval` (and
    /// their forms); `None` without site tracking.
    pub site: Option<&'static Location<'static>>,
}

/// A deadline on the boot or wall clock, as a snapshot lists it ([`PendingTimer::on_clock`]).
/// One word, so that a snapshot of a million timers grows by little for it: the clock in the
/// top bit, and one more than its nanoseconds (since boot, or since the Unix epoch, up to the
/// year 2262) below.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClockDeadline(NonZeroU64);

impl ClockDeadline {
    /// The top bit: a wall deadline.
    const WALL: u64 = 1 << 63;

    fn nanos(self) -> Duration {
        Duration::from_nanos((self.0.get() & !Self::WALL) - 1)
    }

    /// On the boot clock: this long after boot, the time the machine slept included; `None`
    /// for a wall deadline.
    pub fn since_boot(&self) -> Option<Duration> {
        (self.0.get() & Self::WALL == 0).then(|| self.nanos())
    }

    /// On the wall clock; `None` for a boot deadline.
    pub fn wall(&self) -> Option<SystemTime> {
        (self.0.get() & Self::WALL != 0).then(|| UNIX_EPOCH + self.nanos())
    }
}

impl From<OtherDeadline> for ClockDeadline {
    fn from(at: OtherDeadline) -> Self {
        let nanos = at.nanos.min(Self::WALL - 2) + 1;
        let clock = match at.clock {
            OtherClock::Boot => 0,
            OtherClock::Wall => Self::WALL,
        };
        ClockDeadline(NonZeroU64::new(nanos | clock).unwrap_or(NonZeroU64::MIN))
    }
}

impl fmt::Debug for ClockDeadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.since_boot(), self.wall()) {
            (Some(since), _) => f.debug_tuple("SinceBoot").field(&since).finish(),
            (_, wall) => f.debug_tuple("Wall").field(&wall).finish(),
        }
    }
}

/// Where a pending timer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// On its way to its shard's wheel: kept young by the thread that scheduled it, or in a
    /// queue of its shard.
    Queued,
    /// Linked in its shard's wheel.
    Linked,
    /// A repeating timer whose run is under way.
    Running,
    /// A repeating timer back from its run, waiting for its shard to link it again.
    Stowed,
}

/// How many pending timers were scheduled how long ago, in four buckets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PendingAges {
    /// Scheduled less than a second ago.
    pub under_a_second: u64,
    /// A second to a minute ago.
    pub under_a_minute: u64,
    /// A minute to an hour ago.
    pub under_an_hour: u64,
    /// An hour ago or more: the first place to look for a leak.
    pub older: u64,
}

impl PendingAges {
    /// Counts one timer of age `age`.
    pub(crate) fn add(&mut self, age: Duration) {
        let bucket = match age.as_secs() {
            0 => &mut self.under_a_second,
            1..=59 => &mut self.under_a_minute,
            60..=3599 => &mut self.under_an_hour,
            _ => &mut self.older,
        };
        *bucket += 1;
    }

    /// Adds `other`'s counts.
    pub(crate) fn merge(&mut self, other: &PendingAges) {
        self.under_a_second += other.under_a_second;
        self.under_a_minute += other.under_a_minute;
        self.under_an_hour += other.under_an_hour;
        self.older += other.older;
    }

    /// The timers counted.
    pub fn total(&self) -> u64 {
        self.under_a_second + self.under_a_minute + self.under_an_hour + self.older
    }
}

impl PendingTimers {
    /// The timers counted by site, the most first, each with the age of its oldest: where
    /// timers pile up. Without site tracking, one row with no site.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().track_sites(true).build()?;
    /// for _ in 0..3 {
    ///     engine.schedule(Duration::from_secs(60), || {})?; // never cancelled
    /// }
    /// let snapshot = engine.pending_timers()?;
    /// let (site, count, _oldest) = snapshot.by_site()[0];
    /// assert_eq!((site.unwrap().line(), count), (line!() - 4, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn by_site(&self) -> Vec<SiteCount> {
        let mut sites: HashMap<Option<&'static Location<'static>>, (usize, Option<Duration>)> =
            HashMap::new();
        for timer in &self.timers {
            let (count, oldest) = sites.entry(timer.site).or_default();
            *count += 1;
            *oldest = (*oldest).max(timer.age);
        }
        let mut rows: Vec<SiteCount> = sites
            .into_iter()
            .map(|(site, (count, oldest))| (site, count, oldest))
            .collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.2.cmp(&a.2)));
        rows
    }

    /// The listed timers counted by age; `None` without site tracking (no ages).
    pub fn ages(&self) -> Option<PendingAges> {
        let mut ages = PendingAges::default();
        for timer in &self.timers {
            ages.add(timer.age?);
        }
        Some(ages)
    }
}

/// A site, how many pending timers it scheduled, and the age of the oldest
/// ([`PendingTimers::by_site`]).
pub type SiteCount = (Option<&'static Location<'static>>, usize, Option<Duration>);

/// Why [`TimerEngine::pending_timers`](crate::TimerEngine::pending_timers) took no snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The engine has shut down: it holds no timers (shutdown handed them back).
    Shutdown,
    /// A shard did not answer within the bound (a callback running on its thread, say, with
    /// [`inline_callbacks`](crate::engine::Builder::inline_callbacks)).
    TimedOut(Duration),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Shutdown => f.write_str("the timer engine has shut down"),
            SnapshotError::TimedOut(after) => {
                write!(f, "a shard did not list its timers within {after:?}")
            }
        }
    }
}

impl std::error::Error for SnapshotError {}
