//! Which engine the free functions (`shardwheel::sleep`, `schedule`, …) use: the default
//! engine, unless the calling thread has entered another ([`TimerEngine::enter`]) or the task
//! polls inside a scope ([`TimerEngine::scope`]). The thread keeps a clone of the engine it
//! entered, so what the free functions make there holds no borrow of it.

use std::cell::RefCell;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::api::TimerEngine;

thread_local! {
    /// The engine this thread has entered, if any.
    static ENTERED: RefCell<Option<TimerEngine>> = const { RefCell::new(None) };
}

/// The engine this thread has entered, if any (cloned out, so that the caller runs with the
/// thread-local free: it may enter an engine).
#[inline]
pub(super) fn entered() -> Option<TimerEngine> {
    ENTERED
        .try_with(|entered| entered.borrow().clone())
        .ok()
        .flatten()
}

/// Puts `engine` in the thread-local; returns what was there, or `Err` once the thread-local
/// has been torn down (the thread is ending).
fn swap(engine: Option<TimerEngine>) -> Result<Option<TimerEngine>, ()> {
    ENTERED
        .try_with(|entered| entered.replace(engine))
        .map_err(|_| ())
}

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
    /// A future polled with its engine entered: made by [`TimerEngine::scope`]. It holds a
    /// clone of the engine, so it may be spawned, and moved between threads by the executor.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Scoped<F> {
        #[pin]
        future: F,
        engine: TimerEngine,
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _entered = this.engine.enter();
        this.future.poll(cx)
    }
}

impl<F> fmt::Debug for Scoped<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scoped")
            .field("engine", &self.engine)
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
        Scoped {
            future: future.into_future(),
            engine: self.clone(),
        }
    }
}
