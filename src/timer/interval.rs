//! [`Interval`]: a future-based ticker, one tick every period, on a single engine timer.
//!
//! An interval is a [`Sleep`] and the instant its next tick is due. When the sleep ends (or
//! the engine's clock has reached that instant, whichever is seen first) the tick is yielded,
//! the next due instant is worked out by the [`MissedTickBehavior`], and the same sleep is
//! moved there with `reset_to`: one CAS while its timer is still pending, one new timer once
//! it has fired. Nothing about a tick changes until it is yielded, so dropping a `tick()`
//! future that has not completed loses no tick.
//!
//! The instant a tick yields is the instant it was due, as asked (not rounded to the engine's
//! tick). A tick is never yielded before the engine's clock has reached it: where the engine
//! refuses the timer, the sleep waits (for a place under the cap) or stays pending (after
//! shutdown), and so does the tick.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;

use super::sleep::Sleep;
use crate::shard::Lane;
use crate::sync::Arc;

/// How late a tick may be yielded and still count as on time, beyond the one engine tick by
/// which its timer may fire late (it fires at the first tick boundary at or after its
/// deadline).
const ON_TIME_ALLOWANCE: Duration = Duration::from_millis(5);

/// What an [`Interval`] does after a tick it yields late: when the consumer (or the engine)
/// fell behind, so that the tick was yielded after the following ones should have come.
///
/// Say the tick due at `t` is yielded at `now`, more than an allowance after `t`. The
/// allowance is one engine tick (the timer fires at the first tick boundary at or after its
/// deadline) plus 5 ms; a tick yielded within it counts as on time, and the next is due at
/// `t + period` whatever the behaviour. Otherwise the next tick is due:
///
/// - `Burst` (the default): at `t + period`, as if nothing had been missed. The ticks missed
///   are yielded one after the other at once, each with the instant it was due, until the
///   interval has caught up.
/// - `Delay`: at `now + period`. The rhythm starts over from the late tick; no tick is less
///   than a period after the one before it.
/// - `Skip`: at the first `t + k·period` after `now`. The missed ticks are dropped; the
///   rhythm of the start is kept.
///
/// With a period of 10 ms, ticks due at 0, 10, 20, … ms, and a consumer that takes the tick
/// of 0 ms and then is busy until 35 ms: at 35 ms it is handed the tick of 10 ms at once with
/// any behaviour. The next ticks are, with `Burst`, 20 and 30 ms at once, then 40 ms when the
/// clock reaches it; with `Delay`, 45 ms, then 55 ms; with `Skip`, 40 ms, then 50 ms.
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
    /// The next tick is due one period after the late one was due: the missed ticks come at
    /// once, one after the other.
    #[default]
    Burst,
    /// The next tick is due one period after the late one was yielded.
    Delay,
    /// The next tick is due at the first instant of the original rhythm after the late one
    /// was yielded.
    Skip,
}

impl MissedTickBehavior {
    /// When the tick after one due at `due`, yielded late at `now`, is due (`None`: later than
    /// `Instant` can hold).
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
/// [`TimerEngine::interval_at`].
///
/// Await [`tick`](Self::tick) for each tick, or use the interval as a [`Stream`] of the
/// instants its ticks were due. It holds one engine timer, cancelled when it is dropped, and
/// needs no runtime of its own: it works under any executor.
///
/// - **Never early**: a tick is yielded only once the engine's clock has reached it, and it
///   yields the instant it was due (not the instant it was polled).
/// - **Missed ticks**: a tick yielded late is followed as the [`MissedTickBehavior`] says
///   (`Burst` by default).
/// - **Refusals**: as a [`Sleep`]'s: at the engine's cap a tick waits for a place (and may
///   come late); after shutdown `tick` waits until dropped (its task is woken once), while
///   [`try_tick`](Self::try_tick) returns the refusal and the [`Stream`] ends.
/// - **Far periods**: a tick beyond the engine's [`max_delay`] does not come, as a sleep
///   that long does not end.
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

    /// Completes with the instant the next tick was due, once the engine's clock has reached
    /// it (at once if it has already; never after shutdown, see the type's docs).
    ///
    /// Cancel safe: dropping the future before it completes (a `select!` whose other branch
    /// won, say) consumes no tick; the next call yields the same one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let start = engine.now();
    /// let mut interval = engine.interval(Duration::from_secs(1));
    /// assert_eq!(interval.tick().now_or_never(), Some(start));
    /// assert_eq!(interval.tick().now_or_never(), None); // dropped: no tick lost
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(interval.tick().now_or_never(), Some(start + Duration::from_secs(1)));
    /// ```
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick: `Ready` with the instant it was due, as [`tick`](Self::tick)
    /// completes, or `Pending`, and then the task of `cx` (only the one that polled last) is
    /// woken when the tick comes.
    ///
    /// ```
    /// use std::task::{Context, Poll};
    /// use std::time::Duration;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let start = engine.now();
    /// let mut interval = engine.interval(Duration::from_secs(60));
    /// let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    /// assert_eq!(interval.poll_tick(&mut cx), Poll::Ready(start));
    /// assert_eq!(interval.poll_tick(&mut cx), Poll::Pending);
    /// ```
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

    /// Makes the next tick due one period from now, whatever was due before (and whatever
    /// the [`MissedTickBehavior`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let start = engine.now();
    /// let mut interval = engine.interval(Duration::from_secs(10));
    /// interval.tick().now_or_never().unwrap();
    /// clock.advance(Duration::from_secs(4));
    /// interval.reset(); // due at 14 s, not 10 s
    /// clock.advance(Duration::from_secs(6));
    /// assert_eq!(interval.tick().now_or_never(), None);
    /// clock.advance(Duration::from_secs(4));
    /// assert_eq!(interval.tick().now_or_never(), Some(start + Duration::from_secs(14)));
    /// ```
    pub fn reset(&mut self) {
        let now = self.sleep.clock().now();
        self.move_next(now.checked_add(self.period));
    }

    /// Makes the next tick due now: the next call to [`tick`](Self::tick) completes at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut interval = engine.interval(Duration::from_secs(60));
    /// interval.tick().now_or_never().unwrap();
    /// interval.reset_immediately();
    /// assert!(interval.tick().now_or_never().is_some());
    /// ```
    pub fn reset_immediately(&mut self) {
        let now = self.sleep.clock().now();
        self.move_next(Some(now));
    }

    /// Makes the next tick due at `deadline`, whatever was due before; the ticks after it
    /// follow one period apart. A deadline already past is yielded at once, and is followed
    /// as the [`MissedTickBehavior`] says if it is late.
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let mut interval = engine.interval(Duration::from_secs(10));
    /// interval.tick().now_or_never().unwrap();
    /// let soon = engine.now() + Duration::from_secs(3);
    /// interval.reset_at(soon);
    /// clock.advance(Duration::from_secs(3));
    /// assert_eq!(interval.tick().now_or_never(), Some(soon));
    /// ```
    pub fn reset_at(&mut self, deadline: Instant) {
        self.move_next(Some(deadline));
    }

    /// Makes the next tick due `after` from now, whatever was due before; the ticks after it
    /// follow one period apart (tokio's `Interval::reset_after`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let mut interval = engine.interval(Duration::from_secs(10));
    /// interval.tick().now_or_never().unwrap();
    /// let due = engine.now() + Duration::from_secs(3);
    /// interval.reset_after(Duration::from_secs(3));
    /// clock.advance(Duration::from_secs(3));
    /// assert_eq!(interval.tick().now_or_never(), Some(due));
    /// ```
    pub fn reset_after(&mut self, after: Duration) {
        let now = self.sleep.clock().now();
        self.move_next(now.checked_add(after));
    }

    /// The time between ticks. For an interval made with a zero period, the engine's tick
    /// ([`TimerEngine::tick`](crate::TimerEngine::tick)), which is what it ticks at.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// assert_eq!(engine.interval(Duration::from_secs(2)).period(), Duration::from_secs(2));
    /// assert_eq!(engine.interval(Duration::ZERO).period(), engine.tick());
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What the interval does after a late tick ([`MissedTickBehavior::Burst`] unless set).
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwheel::MissedTickBehavior;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let interval = engine.interval(Duration::from_secs(1));
    /// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Burst);
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets what the interval does after a late tick, from the next tick it yields on.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwheel::MissedTickBehavior;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut interval = engine.interval(Duration::from_secs(1));
    /// interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    /// assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Delay);
    /// ```
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

/// The instants the ticks were due, as [`Interval::tick`] yields them. Unlike `tick`, the
/// stream ends once the engine has shut down, rather than waiting ever after.
///
/// ```
/// use std::time::Duration;
/// use futures::{FutureExt, StreamExt};
/// let clock = shardwheel::ManualClock::new();
/// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
/// let start = engine.now();
/// let mut ticks = engine.interval(Duration::from_secs(1));
/// assert_eq!(ticks.next().now_or_never(), Some(Some(start)));
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(ticks.next().now_or_never(), Some(Some(start + Duration::from_secs(1))));
/// drop(engine.shutdown());
/// assert_eq!(ticks.next().now_or_never(), Some(None));
/// ```
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
