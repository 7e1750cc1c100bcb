//! Deadline scopes: a deadline that passes down a call chain (as Go's `context` deadline),
//! under any executor. A future run [`within`] a deadline makes it [`current`] for what it
//! polls, on any thread; nested, the earlier wins.
//! Every [`timeout`](crate::timeout) made there (any form, and the `tower` layer's) ends by
//! it, its [`Elapsed`](crate::Elapsed) telling which ran out. [`remaining`] is the time to
//! send on, as a `grpc-timeout` header say. A scope does not end its future,
//! nor shorten a sleep, an interval, a callback or a delay queue's value.
//!
//! ```
//! use std::time::Duration;
//! use shardwheel::deadline;
//! async fn callee() -> Result<(), shardwheel::Elapsed> {
//!     let sent = deadline::format_grpc_timeout(deadline::remaining().unwrap()); // "50000u"
//!     assert!(deadline::parse_grpc_timeout(&sent).unwrap() <= Duration::from_millis(50));
//!     shardwheel::timeout(Duration::from_secs(10), std::future::pending::<()>()).await
//! }
//! let call = deadline::within(Duration::from_millis(50), callee());
//! assert!(futures::executor::block_on(call).unwrap_err().is_inherited()); // 50 ms, not 10 s
//! ```
//!
//! Here are the calls that make a scope (its future is [`Scoped`]); the
//! current deadline and the `grpc-timeout` format live with the timers below the engine, which
//! read them, and are re-exported here.

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use super::api::TimerEngine;
use super::global::with_current;
use super::scope::{Scope, Scoped};
use crate::timer::deadline::{self, Deadline};
use crate::timer::Clamp;

pub use crate::timer::deadline::current;
pub use crate::timer::grpc_timeout::{format_grpc_timeout, parse_grpc_timeout, GrpcTimeoutError};

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
    pub fn within<F: IntoFuture>(&self, delay: Duration, future: F) -> Scoped<F::IntoFuture> {
        Scoped::new(
            Scope::after(&self.shared().clock, delay),
            future.into_future(),
        )
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
pub fn within<F: IntoFuture>(delay: Duration, future: F) -> Scoped<F::IntoFuture> {
    Scoped::new(Scope::After(delay), future.into_future())
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
pub fn within_at<F: IntoFuture>(deadline: Instant, future: F) -> Scoped<F::IntoFuture> {
    Scoped::within(Some(Deadline::any(deadline)), future.into_future())
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
pub fn carry<F: IntoFuture>(future: F) -> Scoped<F::IntoFuture> {
    Scoped::within(deadline::carried(), future.into_future())
}

/// The time left to the current deadline on its own clock (that of the engine it was made
/// on; for [`within_at`]'s, [`now`](crate::now)'s): zero once past, `None` outside every
/// scope.
pub fn remaining() -> Option<Duration> {
    deadline::remaining(|| with_current(TimerEngine::now))
}
