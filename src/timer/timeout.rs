//! [`Timeout`]: a future run under a [`Sleep`]'s deadline, and its [`Elapsed`] error.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::sleep::Sleep;

pin_project_lite::pin_project! {
    /// A future that gives up at a deadline, never before. Made by [`TimerEngine::timeout`] and
    /// [`TimerEngine::timeout_at`], or [`TimerEngine::try_timeout`] and
    /// [`TimerEngine::try_timeout_at`] (which return a refusal up front); on the boot or wall
    /// clock, with `S` a [`ClockSleep`], by [`TimerEngine::timeout_boot`] and
    /// [`TimerEngine::timeout_at_wall`].
    ///
    /// Its deadline is a [`Sleep`]'s: at the cap it may come late; after shutdown it never
    /// comes. Cancel safe as far as its future is.
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
    pub(crate) fn new(future: F, sleep: S) -> Self {
        Timeout { future, sleep }
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
    /// The instant the timeout gives up at (`None`: beyond the engine's range).
    pub fn deadline(&self) -> Option<Instant> {
        self.sleep.deadline()
    }

    /// Moves the deadline to `delay` from now, as [`Sleep::reset`].
    pub fn reset(self: Pin<&mut Self>, delay: Duration) {
        self.project().sleep.reset(delay);
    }

    /// As [`reset`](Self::reset), to an absolute deadline (as [`Sleep::reset_at`]).
    pub fn reset_at(self: Pin<&mut Self>, deadline: Instant) {
        self.project().sleep.reset_at(deadline);
    }
}

impl<F: Future, S: Future<Output = ()> + Unpin> Future for Timeout<F, S> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match Pin::new(this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The error of a [`Timeout`] whose deadline passed before its future completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Elapsed(());

impl Elapsed {
    /// An `Elapsed`, as tower's `Elapsed::new`: for a service or a test that reports a
    /// timeout of its own.
    ///
    /// ```
    /// assert_eq!(shardwheel::Elapsed::new().to_string(), "deadline has elapsed");
    /// ```
    pub const fn new() -> Self {
        Elapsed(())
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl Error for Elapsed {}

/// As tokio's: an elapsed timeout is an [`io::ErrorKind::TimedOut`] error.
impl From<Elapsed> for io::Error {
    fn from(elapsed: Elapsed) -> Self {
        io::Error::new(io::ErrorKind::TimedOut, elapsed)
    }
}
