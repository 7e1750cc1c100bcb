//! [`Timeout`]: a future run under a [`Sleep`]'s deadline, and its [`Elapsed`] error.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::io;
use std::num::NonZeroU64;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::sleep::{Sleep, SleepSite};
use crate::time::TickClock;

pin_project_lite::pin_project! {
    /// A future that gives up at a deadline, never before. Made by [`TimerEngine::timeout`] and
    /// [`TimerEngine::timeout_at`], or [`TimerEngine::try_timeout`] and
    /// [`TimerEngine::try_timeout_at`] (which return a refusal up front); on the boot or wall
    /// clock, with `S` a [`ClockSleep`], by [`TimerEngine::timeout_boot`] and
    /// [`TimerEngine::timeout_at_wall`].
    ///
    /// Its deadline is a [`Sleep`]'s: at the cap it may come late; after shutdown a fallback
    /// thread times it, never early. Made inside a deadline scope ([`deadline`](crate::deadline)), it ends at the
    /// earlier of its own deadline and the scope's. Cancel safe as far as its future is.
    ///
    /// [`TimerEngine::timeout`]: crate::TimerEngine::timeout
    /// [`TimerEngine::timeout_at`]: crate::TimerEngine::timeout_at
    /// [`TimerEngine::try_timeout`]: crate::TimerEngine::try_timeout
    /// [`TimerEngine::try_timeout_at`]: crate::TimerEngine::try_timeout_at
    /// [`TimerEngine::timeout_boot`]: crate::TimerEngine::timeout_boot
    /// [`TimerEngine::timeout_at_wall`]: crate::TimerEngine::timeout_at_wall
    /// [`ClockSleep`]: crate::engine::ClockSleep
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Timeout<F, S = Sleep> {
        #[pin]
        future: F,
        sleep: S,
        clamp: Clamp,
    }
}

/// The deadline scope a timeout was made in, kept so that a reset stays inside it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clamp {
    /// Made outside every scope, or in one whose deadline is beyond the engine's range.
    Free,
    /// Made in a scope whose deadline falls at this limit.
    Scoped(Limit),
}

/// A scope's deadline tick, and whether it comes before the timeout's own (a tie is the
/// timeout's). One word (the tick plus one, bit 63 when inherited), so that a [`Clamp`] is one
/// word too and a timeout made outside every scope is no larger for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limit(NonZeroU64);

impl Limit {
    const INHERITED: u64 = 1 << 63;

    fn new(tick: u64, inherited: bool) -> Self {
        debug_assert!(
            tick < Self::INHERITED - 1,
            "a tick plus one leaves bit 63 free"
        );
        let flag = if inherited { Self::INHERITED } else { 0 };
        Limit(NonZeroU64::MIN.saturating_add(tick) | flag)
    }

    fn tick(self) -> u64 {
        (self.0.get() & !Self::INHERITED) - 1
    }

    fn is_inherited(self) -> bool {
        self.0.get() & Self::INHERITED != 0
    }
}

impl Clamp {
    /// The earlier of the tick `own` and the tick of `limit`, and the clamp that says which.
    #[inline]
    pub(crate) fn of(clock: &TickClock, own: Option<u64>, limit: Instant) -> (Option<u64>, Clamp) {
        match clock.limit_tick(limit) {
            Some(limit) => Clamp::Scoped(Limit::new(limit, false)).apply(own),
            None => (own, Clamp::Free),
        }
    }

    /// `own` clamped to this clamp's scope, if any, and the clamp that says which came first.
    #[inline]
    fn apply(self, own: Option<u64>) -> (Option<u64>, Clamp) {
        let Clamp::Scoped(limit) = self else {
            return (own, Clamp::Free);
        };
        let tick = limit.tick();
        match own {
            Some(own) if own <= tick => (Some(own), Clamp::Scoped(Limit::new(tick, false))),
            _ => (Some(tick), Clamp::Scoped(Limit::new(tick, true))),
        }
    }

    fn is_inherited(self) -> bool {
        matches!(self, Clamp::Scoped(limit) if limit.is_inherited())
    }
}

impl<F, S: fmt::Debug> fmt::Debug for Timeout<F, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("sleep", &self.sleep)
            .finish_non_exhaustive()
    }
}

impl<F, S> Timeout<F, S> {
    /// A timeout on `sleep`, clamped to a deadline scope's as `clamp` says.
    #[inline]
    pub(crate) fn clamped(future: F, sleep: S, clamp: Clamp) -> Self {
        Timeout {
            future,
            sleep,
            clamp,
        }
    }

    /// A timeout on `sleep`, which clamps itself (another clock's).
    pub(crate) fn new(future: F, sleep: S) -> Self {
        Timeout::clamped(future, sleep, Clamp::Free)
    }

    /// Polls the future, then, if it is pending, the sleep through `sleep`: `Ready(true)` if
    /// the deadline passed and it was the enclosing scope's.
    #[inline]
    pub(crate) fn poll_with(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        sleep: impl FnOnce(&mut S, Clamp, &mut Context<'_>) -> Poll<bool>,
    ) -> Poll<Result<F::Output, Elapsed>>
    where
        F: Future,
    {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        sleep(this.sleep, *this.clamp, cx).map(|inherited| Err(Elapsed { inherited }))
    }

    /// The future the timeout runs.
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The future the timeout runs, to change it.
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The future the timeout runs, without the timeout (whose timer is cancelled).
    pub fn into_inner(self) -> F {
        self.future
    }

    /// The timeout's sleep, for the engine's refusal.
    pub(crate) fn sleep(&self) -> &S {
        &self.sleep
    }
}

impl<F> Timeout<F> {
    /// The timeout, its sleep made at `site` (a free function's caller).
    #[inline]
    pub(crate) fn sited(mut self, site: SleepSite) -> Self {
        self.sleep = self.sleep.sited(site);
        self
    }

    /// The instant the timeout gives up at (`None`: beyond the engine's range).
    pub fn deadline(&self) -> Option<Instant> {
        self.sleep.deadline()
    }

    /// Moves the deadline to `delay` from now, as [`Sleep::reset`]; a timeout made in a
    /// deadline scope stays clamped to the scope's deadline.
    pub fn reset(self: Pin<&mut Self>, delay: Duration) {
        let this = self.project();
        let tick = this.sleep.clock().tick_after(delay);
        this.sleep.reset_to(clamp(this.clamp, tick));
    }

    /// As [`reset`](Self::reset), to an absolute deadline (as [`Sleep::reset_at`]).
    pub fn reset_at(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.project();
        let tick = this.sleep.clock().tick_at(deadline);
        this.sleep.reset_to(clamp(this.clamp, tick));
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_with(cx, |sleep, clamp, cx| {
            Pin::new(sleep).poll(cx).map(|()| clamp.is_inherited())
        })
    }
}

/// `tick`, clamped to the deadline scope `clamp` keeps (which it updates), if any.
fn clamp(clamp: &mut Clamp, tick: Option<u64>) -> Option<u64> {
    let (tick, now) = clamp.apply(tick);
    *clamp = now;
    tick
}

/// The error of a [`Timeout`] whose deadline passed before its future completed: its own, or
/// the deadline scope's it was clamped to ([`is_inherited`](Self::is_inherited)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Elapsed {
    inherited: bool,
}

impl Elapsed {
    /// An `Elapsed` of a timeout's own deadline, as tower's `Elapsed::new`: for a service or
    /// a test that reports a timeout of its own.
    ///
    /// ```
    /// assert_eq!(shardwheel::Elapsed::new().to_string(), "deadline has elapsed");
    /// ```
    pub const fn new() -> Self {
        Elapsed { inherited: false }
    }

    /// Whether the deadline that passed was the enclosing [`deadline`](crate::deadline)
    /// scope's, earlier than the timeout's own. Two `Elapsed`s are equal only if this is.
    ///
    /// ```
    /// use std::time::Duration;
    /// let own = shardwheel::timeout(Duration::from_millis(1), std::future::pending::<()>());
    /// assert!(!futures::executor::block_on(own).unwrap_err().is_inherited());
    /// ```
    pub const fn is_inherited(&self) -> bool {
        self.inherited
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inherited {
            false => f.write_str("deadline has elapsed"),
            true => f.write_str("deadline has elapsed (the enclosing scope's)"),
        }
    }
}

impl Error for Elapsed {}

/// As tokio's: an elapsed timeout is an [`io::ErrorKind::TimedOut`] error.
impl From<Elapsed> for io::Error {
    fn from(elapsed: Elapsed) -> Self {
        io::Error::new(io::ErrorKind::TimedOut, elapsed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_clamp_is_one_word_and_keeps_its_tick_and_which_came_first() {
        assert_eq!(std::mem::size_of::<Clamp>(), 8);
        let scoped = Clamp::Scoped(Limit::new(0, false));
        assert_eq!(
            scoped.apply(Some(5)),
            (Some(0), Clamp::Scoped(Limit::new(0, true)))
        );
        assert_eq!(
            scoped.apply(Some(0)),
            (Some(0), scoped),
            "a tie is the timeout's own"
        );
        assert_eq!(scoped.apply(None).0, Some(0));
        assert!(scoped.apply(None).1.is_inherited());
        assert!(!scoped.is_inherited());
        assert_eq!(Clamp::Free.apply(Some(7)), (Some(7), Clamp::Free));
        let far = (1 << 62) - 1;
        assert_eq!(Limit::new(far, true).tick(), far);
    }
}
