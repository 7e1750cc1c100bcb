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
    /// [`TimerEngine::timeout_at`], or by [`TimerEngine::try_timeout`] and
    /// [`TimerEngine::try_timeout_at`] (which return a refusal up front instead).
    ///
    /// Its deadline is a [`Sleep`]'s: at the engine's cap it may come late; after shutdown it
    /// never comes, and the timeout completes with its future's output alone.
    ///
    /// Cancel safe as far as the future it runs is: dropping the timeout drops that future
    /// and cancels the timer, and nothing else.
    ///
    /// [`TimerEngine::timeout`]: crate::TimerEngine::timeout
    /// [`TimerEngine::timeout_at`]: crate::TimerEngine::timeout_at
    /// [`TimerEngine::try_timeout`]: crate::TimerEngine::try_timeout
    /// [`TimerEngine::try_timeout_at`]: crate::TimerEngine::try_timeout_at
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

impl<F> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("sleep", &self.sleep)
            .finish_non_exhaustive()
    }
}

impl<F> Timeout<F> {
    pub(crate) fn new(future: F, sleep: Sleep) -> Self {
        Timeout { future, sleep }
    }

    /// The future the timeout runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let inner = engine.sleep(Duration::from_secs(60));
    /// let timeout = engine.timeout(Duration::from_secs(1), inner);
    /// assert!(!timeout.get_ref().is_elapsed());
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The future the timeout runs, to change it. (A timeout that has been pinned gives this
    /// access only if it is `Unpin`.)
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let inner = engine.sleep(Duration::from_secs(60));
    /// let mut timeout = engine.timeout(Duration::from_secs(1), inner);
    /// timeout.get_mut().reset(Duration::from_secs(120));
    /// let moved = timeout.get_ref().deadline().unwrap();
    /// assert!(moved > engine.now() + Duration::from_secs(60));
    /// ```
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The future the timeout runs, without the timeout (whose timer is cancelled).
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let inner = engine.sleep(Duration::from_secs(60));
    /// let mut timeout = engine.timeout(Duration::from_secs(1), inner);
    /// assert!((&mut timeout).now_or_never().is_none()); // polled: both hold timers
    /// assert_eq!(engine.pending(), 2);
    /// let inner = timeout.into_inner();
    /// assert_eq!(engine.pending(), 1);
    /// # drop(inner);
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }

    /// The instant the timeout gives up at (`None`: beyond the engine's range, so only at
    /// shutdown).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let timeout = engine.timeout(Duration::from_secs(1), std::future::pending::<()>());
    /// assert!(timeout.deadline().unwrap() > Instant::now());
    /// ```
    pub fn deadline(&self) -> Option<Instant> {
        self.sleep.deadline()
    }

    /// Moves the deadline to `delay` from now, as [`Sleep::reset`] moves a sleep's: a timeout
    /// that has elapsed but not yet been polled to its end gives its future that much longer.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut timeout = Box::pin(engine.timeout(Duration::from_secs(1), std::future::pending::<()>()));
    /// timeout.as_mut().reset(Duration::from_secs(60));
    /// assert!(timeout.deadline().unwrap() > engine.now() + Duration::from_secs(30));
    /// ```
    pub fn reset(self: Pin<&mut Self>, delay: Duration) {
        self.project().sleep.reset(delay);
    }

    /// As [`reset`](Self::reset), to an absolute deadline (as [`Sleep::reset_at`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let mut timeout = Box::pin(engine.timeout(Duration::from_secs(1), std::future::pending::<()>()));
    /// let later = engine.now() + Duration::from_secs(60);
    /// timeout.as_mut().reset_at(later);
    /// assert!(timeout.deadline().unwrap() >= later);
    /// ```
    pub fn reset_at(self: Pin<&mut Self>, deadline: Instant) {
        self.project().sleep.reset_at(deadline);
    }

    /// The timeout's sleep, for the engine's refusal.
    pub(crate) fn sleep(&self) -> &Sleep {
        &self.sleep
    }
}

impl<F: Future> Future for Timeout<F> {
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

/// As tokio's: an elapsed timeout is an [`io::ErrorKind::TimedOut`] error, so `?` takes it
/// in code that returns `io::Result`.
///
/// ```
/// use std::time::Duration;
/// let engine = shardwheel::TimerEngine::builder().build().unwrap();
/// let read = async {
///     let answer = engine.timeout(Duration::ZERO, std::future::pending::<()>()).await?;
///     Ok::<(), std::io::Error>(answer)
/// };
/// let error = futures::executor::block_on(read).unwrap_err();
/// assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
/// ```
impl From<Elapsed> for io::Error {
    fn from(elapsed: Elapsed) -> Self {
        io::Error::new(io::ErrorKind::TimedOut, elapsed)
    }
}
