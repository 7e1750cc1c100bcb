//! Scopes: which engine the free functions (`shardwheel::sleep`, `schedule`, …) use, and
//! the current deadline. The engine is the default one unless the calling thread has entered
//! another ([`TimerEngine::enter`]) or the task polls inside a scope that enters one
//! ([`TimerEngine::scope`]); the thread keeps a clone of the engine it entered, so what the
//! free functions make there holds no borrow of it. [`Scoped`], the one scope future, enters
//! its engine or makes its deadline current (see `deadline`) around each poll.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::api::TimerEngine;
use super::entered::swap;
use super::global::with_current;
use crate::time::TickClock;
use crate::timer::deadline::{self, Deadline};

/// The free functions' engine on this thread, while it lives: made by [`TimerEngine::enter`].
/// Dropping it puts back the engine entered before (guards are to be dropped innermost
/// first). It stays on the thread that made it.
#[must_use = "the engine is entered only while the guard lives"]
pub struct EnterGuard<'a> {
    /// What the thread had entered before, if the thread-local could be reached.
    previous: Result<Option<TimerEngine>, ()>,
    _engine: PhantomData<&'a TimerEngine>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for EnterGuard<'_> {
    fn drop(&mut self) {
        if let Ok(previous) = std::mem::replace(&mut self.previous, Err(())) {
            drop(swap(previous));
        }
    }
}

impl fmt::Debug for EnterGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterGuard").finish_non_exhaustive()
    }
}

pin_project_lite::pin_project! {
    /// A future polled in a scope: with an engine entered ([`TimerEngine::scope`]) or a
    /// deadline current ([`within`], [`within_at`], [`TimerEngine::within`], [`carry`])
    /// around each of its polls. It holds what it enters, so it may be spawned and moved
    /// between threads by the executor. It does not end the future.
    ///
    /// [`within`]: crate::deadline::within
    /// [`within_at`]: crate::deadline::within_at
    /// [`carry`]: crate::deadline::carry
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Scoped<F> {
        #[pin]
        future: F,
        scope: Scope,
    }
}

/// What a scope makes current: one enum, not an engine beside a deadline, whose field more
/// made a timeout in a deadline scope 4-5 ns slower (DECISIONS.md).
#[derive(Debug)]
pub(super) enum Scope {
    /// No deadline of its own: it lends the enclosing one.
    Enclosing,
    /// A deadline this long from its first poll, on the clock of the engine current then.
    After(Duration),
    At(Deadline),
    /// An engine entered; the enclosing deadline lent.
    Engine(TimerEngine),
}

impl Scope {
    /// A deadline `delay` from now on `clock` (none past the end of `Instant`).
    pub(super) fn after(clock: &TickClock, delay: Duration) -> Scope {
        match clock.deadline_after(delay).0 {
            Some(at) => Scope::At(Deadline::on(at, clock)),
            None => Scope::Enclosing,
        }
    }
}

impl<F> Scoped<F> {
    /// `future` in `scope`.
    pub(super) fn new(scope: Scope, future: F) -> Self {
        Scoped { future, scope }
    }

    /// `future` in a deadline scope of `deadline` (`None`: only the enclosing one).
    pub(crate) fn within(deadline: Option<Deadline>, future: F) -> Self {
        Scoped::new(deadline.map_or(Scope::Enclosing, Scope::At), future)
    }

    /// The scope's own deadline, on its clock: `None` if it has none (it lends the
    /// enclosing one), or, made by [`within`](crate::deadline::within), before its first
    /// poll.
    pub fn deadline(&self) -> Option<Instant> {
        match &self.scope {
            Scope::At(deadline) => Some(deadline.at()),
            _ => None,
        }
    }

    /// The future, out of its scope.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if let Scope::After(delay) = *this.scope {
            *this.scope = with_current(|engine| Scope::after(&engine.shared().clock, delay));
        }
        // The deadline is lent while the poll runs: the scope is pinned. With none of its own,
        // the enclosing one stays current untouched.
        let (_restore, _entered) = match &*this.scope {
            Scope::At(deadline) => (Some(deadline::enter(Some(deadline))), None),
            Scope::Engine(engine) => (None, Some(engine.enter())),
            Scope::Enclosing | Scope::After(_) => (None, None),
        };
        this.future.poll(cx)
    }
}

impl<F> fmt::Debug for Scoped<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scoped")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl TimerEngine {
    /// Makes the free functions ([`sleep`](crate::sleep), [`schedule`](crate::schedule), …)
    /// use this engine on the calling thread until the guard is dropped; nests.
    ///
    /// ```
    /// use std::time::Duration;
    /// let engine = shardwheel::TimerEngine::builder().build().unwrap();
    /// let _entered = engine.enter();
    /// let timer = shardwheel::schedule(Duration::from_secs(60), || {}).unwrap();
    /// assert_eq!(engine.pending(), 1);
    /// # timer.cancel();
    /// ```
    pub fn enter(&self) -> EnterGuard<'_> {
        EnterGuard {
            previous: swap(Some(self.clone())),
            _engine: PhantomData,
            _not_send: PhantomData,
        }
    }

    /// Runs `future` with this engine entered around each of its polls, on whatever thread
    /// polls it: the free functions it calls use this engine (not those called to build it:
    /// `scope(async { sleep(d).await })`, not `scope(sleep(d))`).
    ///
    /// # Testing on a manual clock
    /// Give each test an engine on its own [`ManualClock`](crate::ManualClock) and run the
    /// code under test in its scope: tests in one binary then run in parallel, each on its own
    /// time. Drive the clock from the test, between polls: [`ManualClock::advance_to_next`]
    /// jumps to the next deadline pending and fires what is due there, and returns `None`
    /// once nothing is pending.
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::FutureExt;
    /// let clock = shardwheel::ManualClock::new();
    /// let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build().unwrap();
    /// let start = clock.now();
    /// let mut backoff = Box::pin(engine.scope(async {
    ///     shardwheel::sleep(Duration::from_secs(1)).await;
    ///     shardwheel::sleep(Duration::from_secs(2)).await;
    /// }));
    /// assert!(backoff.as_mut().now_or_never().is_none());
    /// assert_eq!(clock.advance_to_next(), Some(start + Duration::from_secs(1)));
    /// assert!(backoff.as_mut().now_or_never().is_none());
    /// assert_eq!(clock.advance_to_next(), Some(start + Duration::from_secs(3)));
    /// assert!(backoff.as_mut().now_or_never().is_some());
    /// assert_eq!(clock.advance_to_next(), None);
    /// ```
    ///
    /// [`ManualClock::advance_to_next`]: crate::ManualClock::advance_to_next
    pub fn scope<F: IntoFuture>(&self, future: F) -> Scoped<F::IntoFuture> {
        Scoped::new(Scope::Engine(self.clone()), future.into_future())
    }
}
