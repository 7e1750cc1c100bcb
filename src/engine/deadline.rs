//! Deadline scopes on an engine's clock, and the clamp of a timeout made inside one (the scope
//! itself: `timer::deadline`).

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use super::api::TimerEngine;
use super::global::with_current;
use crate::timer::{deadline, Clamp, Within};
#[cfg(feature = "tower")]
use {super::error::ScheduleError, crate::timer::Sleep};

impl TimerEngine {
    /// As [`within`], `delay` from now on this engine's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let mut call = Box::pin(engine.within(Duration::from_secs(2), async {
    ///     engine.timeout(Duration::from_secs(60), std::future::pending::<()>()).await
    /// }));
    /// assert!(call.as_mut().now_or_never().is_none());
    /// clock.advance(Duration::from_secs(2));
    /// assert!(call.now_or_never().unwrap().unwrap_err().is_inherited());
    /// ```
    pub fn within<F: IntoFuture>(&self, delay: Duration, future: F) -> Within<F::IntoFuture> {
        // Past the end of `Instant`: no deadline of its own.
        let (at, _) = self.shared().clock.deadline_after(delay);
        deadline::scoped(at, future)
    }

    /// The tick of a timeout due at `tick`, clamped to the current deadline, if any.
    #[inline]
    pub(super) fn clamped(&self, tick: Option<u64>) -> (Option<u64>, Clamp) {
        match deadline::current() {
            None => (tick, Clamp::FREE),
            Some(limit) => self.clamped_to(tick, limit),
        }
    }

    /// As `clamped`, inside a scope. Out of line, so that a timeout made outside every scope
    /// stays small enough to inline: inlined, `timeout` costs 1–4 ns less (BENCHMARKS.md).
    #[cold]
    #[inline(never)]
    fn clamped_to(&self, tick: Option<u64>, limit: Instant) -> (Option<u64>, Clamp) {
        Clamp::of(&self.shared().clock, tick, limit)
    }
}

/// Runs `future` with the deadline `delay` from now ([`now`](crate::now)'s clock) current
/// around each of its polls, the enclosing one where earlier: the timeouts made in its polls
/// end by it (`within(d, async { timeout(t, f).await })`, not `within(d, timeout(t, f))`).
/// It does not end `future`; a [`sleep`](crate::sleep) inside is not shortened.
///
/// ```
/// use std::time::Duration;
/// use shardwheel::deadline::{remaining, within};
/// let left = futures::executor::block_on(within(Duration::from_secs(5), async { remaining() }));
/// assert!(left.unwrap() <= Duration::from_secs(5)); // to send on, as a `grpc-timeout`
/// ```
pub fn within<F: IntoFuture>(delay: Duration, future: F) -> Within<F::IntoFuture> {
    with_current(|engine| engine.within(delay, future))
}

/// The time left to the current deadline on [`now`](crate::now)'s clock: zero once past,
/// `None` outside every scope.
pub fn remaining() -> Option<Duration> {
    let at = deadline::current()?;
    Some(at.saturating_duration_since(with_current(TimerEngine::now)))
}

#[cfg(feature = "tower")]
impl TimerEngine {
    /// A `tower` request's deadline: `own` from now, `incoming` from now or the current
    /// deadline, whichever comes first. Its sleep, unless refused; its clamp (inherited where
    /// `incoming` or the current deadline came first); and the instant, for its scope.
    pub(crate) fn try_request_sleep(
        &self,
        own: Duration,
        incoming: Option<Duration>,
    ) -> Result<(Sleep, Clamp, Option<Instant>), ScheduleError<()>> {
        let clock = &self.shared().clock;
        let (own_at, own_tick) = clock.deadline_after(own);
        let limit = deadline::earlier(
            deadline::current(),
            incoming.and_then(|incoming| clock.deadline_after(incoming).0),
        );
        let (tick, clamp) = match limit {
            Some(limit) => Clamp::of(clock, own_tick, limit),
            None => (own_tick, Clamp::FREE),
        };
        let sleep = Sleep::try_on(self.shared().lane_for_task(), tick)
            .map_err(|refusal| ScheduleError::refused(refusal, ()))?;
        Ok((sleep, clamp, deadline::earlier(own_at, limit)))
    }
}
