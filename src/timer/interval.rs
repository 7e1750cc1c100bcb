//! [`Interval`]: a ticker on one [`Sleep`] and the instant its next tick is due.
//!
//! When the sleep ends (or the clock has reached the due instant) the tick is yielded, the
//! next due instant is set by the [`MissedTickBehavior`], and the sleep is moved there with
//! `reset_to`. Nothing changes until a tick is yielded, so a dropped `tick()` loses no tick.
//! A tick yields the instant it was due and is never yielded before the clock reaches it.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;

use super::sleep::{Sleep, SleepSite};
use crate::shard::Lane;
use crate::sync::Arc;

/// How late past its engine tick a tick may be yielded and still count as on time.
const ON_TIME_ALLOWANCE: Duration = Duration::from_millis(5);

/// What an [`Interval`] does after a tick yielded late (more than one engine tick plus 5 ms
/// after it was due at `t`, yielded at `now`). The next tick is then due:
///
/// - `Burst` (the default): at `t + period`; the missed ticks come at once, one after another.
/// - `Delay`: at `now + period`; the rhythm starts over from the late tick.
/// - `Skip`: at the first `t + k·period` after `now`; the missed ticks are dropped.
///
/// ```
/// use std::time::Duration;
/// use futures::FutureExt;
/// use shardwheel::MissedTickBehavior;
/// let clock = shardwheel::ManualClock::new();
/// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
/// let start = engine.now();
/// let ms = Duration::from_millis(1);
/// let mut interval = engine.interval(ms * 10);
/// interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
/// assert_eq!(interval.tick().now_or_never(), Some(start));
/// clock.advance(ms * 35); // busy
/// assert_eq!(interval.tick().now_or_never(), Some(start + ms * 10)); // late
/// assert_eq!(interval.tick().now_or_never(), None); // 20 and 30 ms are skipped
/// clock.advance(ms * 5);
/// assert_eq!(interval.tick().now_or_never(), Some(start + ms * 40));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MissedTickBehavior {
    /// The next tick is due one period after the late one was due.
    #[default]
    Burst,
    /// The next tick is due one period after the late one was yielded.
    Delay,
    /// The next tick is due at the first instant of the original rhythm after `now`.
    Skip,
}

impl MissedTickBehavior {
    /// When the tick after one due at `due` and yielded late at `now` is due (`None`: beyond
    /// `Instant`).
    fn next_after_late(self, due: Instant, now: Instant, period: Duration) -> Option<Instant> {
        match self {
            MissedTickBehavior::Burst => due.checked_add(period),
            MissedTickBehavior::Delay => now.checked_add(period),
            MissedTickBehavior::Skip => {
                // `now` less the time since the last instant of the rhythm, plus a period.
                let behind = now.saturating_duration_since(due);
                let into_period = behind.as_nanos() % period.as_nanos();
                now.checked_add(period - duration_from_nanos(into_period)?)
            }
        }
    }
}

/// `nanos` as a `Duration`, if it holds them.
fn duration_from_nanos(nanos: u128) -> Option<Duration> {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let secs = u64::try_from(nanos / NANOS_PER_SEC).ok()?;
    let subsec = u32::try_from(nanos % NANOS_PER_SEC).ok()?;
    Some(Duration::new(secs, subsec))
}

/// Ticks at a fixed period, woken by the engine. Made by [`TimerEngine::interval`] and
/// [`TimerEngine::interval_at`]; usable as a [`Stream`] of the instants ticks were due.
///
/// A tick is never early and yields the instant it was due. Refusals are as a [`Sleep`]'s:
/// at the cap a tick waits for a permit; after shutdown `tick` waits until dropped, while
/// [`try_tick`](Self::try_tick) returns the refusal and the [`Stream`] ends. A period beyond
/// [`max_delay`] never ticks again.
///
/// ```
/// use std::time::Duration;
/// let engine = shardwheel::TimerEngine::builder().build().unwrap();
/// let mut interval = engine.interval(Duration::from_millis(5));
/// futures::executor::block_on(async {
///     let first = interval.tick().await; // at once
///     let second = interval.tick().await; // 5 ms later
///     assert_eq!(second - first, Duration::from_millis(5));
/// });
/// ```
///
/// [`TimerEngine::interval`]: crate::TimerEngine::interval
/// [`TimerEngine::interval_at`]: crate::TimerEngine::interval_at
/// [`max_delay`]: crate::TimerEngine::max_delay
#[derive(Debug)]
pub struct Interval {
    /// Ends at `next`.
    sleep: Sleep,
    /// When the next tick is due; `None` once that is later than `Instant` can hold.
    next: Option<Instant>,
    period: Duration,
    missed: MissedTickBehavior,
}

impl Interval {
    /// An interval on `lane`'s shard whose first tick is due at `start`; a zero period is
    /// taken as one engine tick.
    #[track_caller]
    pub(crate) fn new(lane: &Arc<Lane>, start: Instant, period: Duration) -> Interval {
        let clock = lane.shard().clock();
        let period = if period.is_zero() {
            clock.tick()
        } else {
            period
        };
        Interval {
            sleep: Sleep::on(lane, clock.tick_at(start)),
            next: Some(start),
            period,
            missed: MissedTickBehavior::default(),
        }
    }

    /// The same interval, made at `site` (a free function's caller).
    pub(crate) fn sited(mut self, site: SleepSite) -> Interval {
        self.sleep = self.sleep.sited(site);
        self
    }

    /// Completes with the instant the next tick was due, once the clock has reached it.
    /// Cancel safe: a dropped future consumes no tick.
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick, as [`tick`](Self::tick); on `Pending` the last polling task
    /// is woken when the tick comes.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        let Some(due) = self.next else {
            // No tick is left that `Instant` can hold: the sleep is a far one, which never
            // ends.
            ready!(Pin::new(&mut self.sleep).poll(cx));
            return Poll::Ready(self.sleep.clock().now());
        };
        if self.sleep.clock().now() < due {
            // The sleep ends only once the shard has turned the tick `due` rounds up to.
            ready!(Pin::new(&mut self.sleep).poll(cx));
        }
        let now = self.sleep.clock().now();
        let allowance = self.sleep.clock().tick() + ON_TIME_ALLOWANCE;
        let next = if now.saturating_duration_since(due) > allowance {
            self.missed.next_after_late(due, now, self.period)
        } else {
            due.checked_add(self.period)
        };
        self.move_next(next);
        Poll::Ready(due)
    }

    /// Makes the next tick due one period from now.
    pub fn reset(&mut self) {
        let now = self.sleep.clock().now();
        self.move_next(now.checked_add(self.period));
    }

    /// Makes the next tick due now.
    pub fn reset_immediately(&mut self) {
        let now = self.sleep.clock().now();
        self.move_next(Some(now));
    }

    /// Makes the next tick due at `deadline`, the ticks after it one period apart; a past
    /// deadline is yielded at once.
    pub fn reset_at(&mut self, deadline: Instant) {
        self.move_next(Some(deadline));
    }

    /// Makes the next tick due `after` from now, the ticks after it one period apart.
    pub fn reset_after(&mut self, after: Duration) {
        let now = self.sleep.clock().now();
        self.move_next(now.checked_add(after));
    }

    /// The time between ticks; for a zero period, the engine's tick.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What the interval does after a late tick ([`MissedTickBehavior::Burst`] unless set).
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets what the interval does after a late tick, from the next tick on.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }

    /// The interval's sleep, for the engine's refusal.
    pub(crate) fn sleep(&self) -> &Sleep {
        &self.sleep
    }

    /// Makes the next tick due at `next` (`None`: never), moving the sleep there.
    fn move_next(&mut self, next: Option<Instant>) {
        self.next = next;
        let tick = next.and_then(|next| self.sleep.clock().tick_at(next));
        self.sleep.reset_to(tick);
    }
}

/// The instants the ticks were due; unlike `tick`, the stream ends at shutdown.
impl Stream for Interval {
    type Item = Instant;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        let this = self.get_mut();
        if this.sleep.engine_stopped() {
            return Poll::Ready(None);
        }
        let due = ready!(this.poll_tick(cx));
        Poll::Ready(Some(due))
    }
}
