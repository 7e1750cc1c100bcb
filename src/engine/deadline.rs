//! Deadline scopes: [`Within`], the future that makes its deadline current around each poll,
//! and the calls that make one (the current deadline itself: `timer::deadline`); the clamp of
//! a timeout made inside one.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::api::TimerEngine;
use super::global::with_current;
use crate::time::TickClock;
use crate::timer::deadline::{self, Deadline};
use crate::timer::Clamp;
#[cfg(feature = "tower")]
use {super::error::ScheduleError, crate::timer::Sleep};

pin_project_lite::pin_project! {
    /// A future whose deadline is [`current`](crate::deadline::current) around each of its
    /// polls: made by [`within`], [`within_at`], [`TimerEngine::within`] and [`carry`]. It
    /// does not end the future.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Within<F> {
        #[pin]
        future: F,
        scope: Scope,
    }
}

/// A scope's deadline.
#[derive(Debug)]
enum Scope {
    /// None of its own: it lends the enclosing one.
    Free,
    /// This long from its first poll, on the clock of the engine current then.
    After(Duration),
    At(Deadline),
}

impl<F> Within<F> {
    /// A scope of `future` with `deadline` (`None`: only the enclosing one).
    pub(crate) fn new(deadline: Option<Deadline>, future: F) -> Self {
        Within {
            future,
            scope: deadline.map_or(Scope::Free, Scope::At),
        }
    }

    /// The scope's own deadline, on its clock: `None` if it has none (it lends the
    /// enclosing one), or, made by [`within`], before its first poll.
    pub fn deadline(&self) -> Option<Instant> {
        match &self.scope {
            Scope::At(deadline) => Some(deadline.at()),
            Scope::Free | Scope::After(_) => None,
        }
    }

    /// The future, out of its scope.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Within<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if let Scope::After(delay) = *this.scope {
            *this.scope = with_current(|engine| after(&engine.shared().clock, delay));
        }
        let deadline = match &*this.scope {
            Scope::At(deadline) => Some(deadline),
            Scope::Free | Scope::After(_) => None,
        };
        // `deadline` is lent while the poll runs: the scope is pinned.
        let _restore = deadline::enter(deadline);
        this.future.poll(cx)
    }
}

impl<F> fmt::Debug for Within<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Within")
            .field("deadline", &self.scope)
            .finish_non_exhaustive()
    }
}

/// The scope `delay` from now on `clock` (none past the end of `Instant`).
fn after(clock: &TickClock, delay: Duration) -> Scope {
    match clock.deadline_after(delay).0 {
        Some(at) => Scope::At(Deadline::on(at, clock)),
        None => Scope::Free,
    }
}

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
        Within {
            future: future.into_future(),
            scope: after(&self.shared().clock, delay),
        }
    }

    /// The tick of a timeout due at `tick`, clamped to the current deadline, if any.
    #[inline]
    pub(super) fn clamped(&self, tick: Option<u64>) -> (Option<u64>, Clamp) {
        match deadline::limit(&self.shared().clock) {
            None => (tick, Clamp::Free),
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

    /// The tick of the current deadline on this engine's clock, if any: where a timeout on
    /// another clock ends at the latest.
    pub(super) fn limit_tick(&self) -> Option<u64> {
        let clock = &self.shared().clock;
        clock.limit_tick(deadline::limit(clock)?)
    }
}

/// Runs `future` with the deadline `delay` from its first poll current around each of its
/// polls, the enclosing one where earlier: the timeouts made in its polls end by it
/// (`within(d, async { timeout(t, f).await })`, not `within(d, timeout(t, f))`). The deadline
/// is on the clock of the engine current at that poll (the one
/// [`TimerEngine::scope`] enters, else the default), and so is [`remaining`] inside it. It
/// does not end `future`; a [`sleep`](crate::sleep) inside is not shortened.
///
/// ```
/// use std::time::Duration;
/// use shardwheel::deadline::{remaining, within};
/// let left = futures::executor::block_on(within(Duration::from_secs(5), async { remaining() }));
/// assert!(left.unwrap() <= Duration::from_secs(5)); // to send on, as a `grpc-timeout`
/// ```
pub fn within<F: IntoFuture>(delay: Duration, future: F) -> Within<F::IntoFuture> {
    Within {
        future: future.into_future(),
        scope: Scope::After(delay),
    }
}

/// Runs `future` with `deadline` current around each of its polls (the enclosing one where
/// earlier), as [`within`], at an instant: needs no engine, and is read on the clock of the
/// engine that reads it.
///
/// ```
/// use std::time::{Duration, Instant};
/// let at = Instant::now() + Duration::from_millis(20);
/// let call = shardwheel::deadline::within_at(at, async {
///     shardwheel::timeout(Duration::from_secs(60), std::future::pending::<()>()).await
/// });
/// assert!(futures::executor::block_on(call).unwrap_err().is_inherited()); // ended at `at`
/// ```
pub fn within_at<F: IntoFuture>(deadline: Instant, future: F) -> Within<F::IntoFuture> {
    Within::new(Some(Deadline::any(deadline)), future.into_future())
}

/// Runs `future` within the current deadline, wherever it is polled: a deadline is current
/// only in the polls of its scope, so a future handed to `tokio::spawn` (or any executor) runs
/// outside it unless carried. Outside every scope it is `future` with no deadline.
///
/// ```
/// use std::time::Duration;
/// use shardwheel::deadline::{carry, remaining, within};
/// let handler = within(Duration::from_secs(5), async {
///     let background = carry(async { remaining() }); // as `tokio::spawn(carry(...))`
///     std::thread::spawn(move || futures::executor::block_on(background)).join().unwrap()
/// });
/// let left = futures::executor::block_on(handler).unwrap();
/// assert!(left <= Duration::from_secs(5));
/// ```
pub fn carry<F: IntoFuture>(future: F) -> Within<F::IntoFuture> {
    Within::new(deadline::carried(), future.into_future())
}

/// The time left to the current deadline on its own clock (that of the engine it was made
/// on; for [`within_at`]'s, [`now`](crate::now)'s): zero once past, `None` outside every
/// scope.
pub fn remaining() -> Option<Duration> {
    deadline::remaining(|| with_current(TimerEngine::now))
}

#[cfg(feature = "tower")]
impl TimerEngine {
    /// A `tower` request's deadline: `own` from now, `incoming` from now or the current
    /// deadline, whichever comes first. Its sleep, unless refused; its clamp (inherited where
    /// `incoming` or the current deadline came first); and the deadline, for its scope.
    pub(crate) fn try_request_sleep(
        &self,
        own: Duration,
        incoming: Option<Duration>,
    ) -> Result<(Sleep, Clamp, Option<Deadline>), ScheduleError<()>> {
        let clock = &self.shared().clock;
        let (own_at, own_tick) = clock.deadline_after(own);
        let incoming = incoming.and_then(|incoming| clock.deadline_after(incoming).0);
        let limit = earlier(deadline::limit(clock), incoming);
        let (tick, clamp) = match limit {
            Some(limit) => Clamp::of(clock, own_tick, limit),
            None => (own_tick, Clamp::Free),
        };
        let sleep = Sleep::try_on(self.shared().lane_for_task(), tick)
            .map_err(|refusal| ScheduleError::refused(refusal, ()))?;
        let scope = earlier(own_at, limit).map(|at| Deadline::on(at, clock));
        Ok((sleep, clamp, scope))
    }
}

/// The earlier of two instants, `None` being none at all.
#[cfg(feature = "tower")]
fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
