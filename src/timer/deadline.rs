//! Deadline scopes. The current deadline is a thread-local `Cell` with a constant initializer
//! and no destructor: one load, what a timeout outside every scope pays. A [`Within`] sets it
//! around each poll to the earlier of its own and the one it found, and a guard puts that one
//! back as the poll returns or unwinds. The deadline lives in the future, the thread-local is
//! only lent: a future moved between threads keeps it. Nothing is shared: no loom model.

use std::cell::Cell;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

thread_local! {
    /// The current deadline of the poll running on this thread, if it runs in a scope.
    static CURRENT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The current deadline: the earliest deadline of the scopes ([`within`], [`within_at`]) that
/// the running poll is inside, or `None` outside every scope.
///
/// ```
/// use std::time::{Duration, Instant};
/// use shardwheel::deadline::{current, within_at};
/// let (soon, later) = (Instant::now(), Instant::now() + Duration::from_secs(1));
/// let inner = within_at(later, async { current() }); // the earlier of its own and the outer
/// assert_eq!(futures::executor::block_on(within_at(soon, inner)), Some(soon));
/// assert_eq!(current(), None);
/// ```
///
/// [`within`]: crate::deadline::within
#[inline]
pub fn current() -> Option<Instant> {
    CURRENT.try_with(Cell::get).ok().flatten()
}

/// The earlier of two deadlines, `None` being none at all.
#[inline]
pub(crate) fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Runs `f` within `deadline` (where earlier), putting the current one back after or unwinding.
#[cfg(any(all(test, not(loom)), feature = "tower"))]
#[inline]
pub(crate) fn run_within<R>(deadline: Option<Instant>, f: impl FnOnce() -> R) -> R {
    let _restore = Restore::set(deadline);
    f()
}

/// The current deadline a scope found, put back as its poll ends or unwinds.
struct Restore(Option<Instant>);

impl Restore {
    /// Makes the earlier of `deadline` and the current deadline current.
    #[inline]
    fn set(deadline: Option<Instant>) -> Restore {
        let found = CURRENT
            .try_with(|current| current.replace(earlier(deadline, current.get())))
            .ok()
            .flatten();
        Restore(found)
    }
}

impl Drop for Restore {
    #[inline]
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|current| current.set(self.0));
    }
}

pin_project_lite::pin_project! {
    /// A future whose deadline is [`current`] around each of its polls: made by
    /// [`within`](crate::deadline::within) or [`within_at`]. It does not end the future.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Within<F> {
        #[pin]
        future: F,
        deadline: Option<Instant>,
    }
}

impl<F> Within<F> {
    /// The scope's own deadline (`None`: it has none, and lends the enclosing one).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
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
        let _restore = Restore::set(*this.deadline);
        this.future.poll(cx)
    }
}

impl<F> fmt::Debug for Within<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Within")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// Runs `future` with `deadline` current around each of its polls (the enclosing one where
/// earlier), as [`within`](crate::deadline::within), at an instant: needs no engine.
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
    scoped(Some(deadline), future)
}

/// A [`Within`] of `future` with `deadline` (`None`: only the enclosing one).
pub(crate) fn scoped<F: IntoFuture>(deadline: Option<Instant>, future: F) -> Within<F::IntoFuture> {
    Within {
        future: future.into_future(),
        deadline,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_earlier_of_two_deadlines_wins_and_none_is_no_deadline() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(earlier(Some(now), Some(later)), Some(now));
        assert_eq!(earlier(Some(later), Some(now)), Some(now));
        assert_eq!(earlier(None, Some(later)), Some(later));
        assert_eq!(earlier(Some(later), None), Some(later));
        assert_eq!(earlier(None, None), None);
    }

    #[test]
    fn run_within_sets_the_earlier_and_restores_the_found_one() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(current(), None);
        run_within(Some(later), || {
            assert_eq!(current(), Some(later));
            run_within(Some(now), || assert_eq!(current(), Some(now)));
            run_within(Some(later + Duration::from_secs(1)), || {
                assert_eq!(current(), Some(later));
            });
            run_within(None, || assert_eq!(current(), Some(later)));
            assert_eq!(current(), Some(later));
        });
        assert_eq!(current(), None);
    }
}
