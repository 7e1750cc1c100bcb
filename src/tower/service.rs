//! [`TimeoutService`]: a service whose every request runs under a deadline.

use std::task::{Context, Poll};
use std::time::Duration;

use tower_layer::Layer;
use tower_service::Service;

use super::error::Overloaded;
use super::future::ResponseFuture;
use super::layer::TimeoutLayer;
use super::BoxError;
use crate::engine::global::default_engine;
use crate::engine::TimerEngine;
use crate::timer::Timeout as Deadline;

/// A service that gives each request of `S` a deadline on a shardwheel engine. Made by
/// [`TimeoutLayer`] or [`TimeoutService::new`].
///
/// `poll_ready` is the inner service's; `call` arms the deadline, then calls the inner
/// service (see the [module](super) for refusals). Not to be confused with [`shardwheel::Timeout`](crate::Timeout), the future that
/// [`TimerEngine::timeout`] makes and that this service's responses run in.
///
/// ```
/// use std::time::Duration;
/// use shardwheel::tower::TimeoutService;
/// use shardwheel::{Elapsed, TimerEngine};
/// use tower::{service_fn, ServiceExt};
///
/// let engine = TimerEngine::builder().build()?;
/// let sleepy = engine.clone();
/// // A service that takes a minute to answer, given a 10 ms deadline.
/// let slow = service_fn(move |()| {
///     let nap = sleepy.sleep(Duration::from_secs(60));
///     async move {
///         nap.await;
///         Ok::<_, std::convert::Infallible>("too late")
///     }
/// });
/// let service = TimeoutService::new(slow, engine, Duration::from_millis(10));
/// let error = futures::executor::block_on(service.oneshot(())).unwrap_err();
/// assert!(error.downcast_ref::<Elapsed>().is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct TimeoutService<S> {
    inner: S,
    engine: TimerEngine,
    timeout: Duration,
}

impl<S> TimeoutService<S> {
    /// Wraps `inner`: each request gets `timeout` from its `call`, on `engine`'s timers.
    pub fn new(inner: S, engine: TimerEngine, timeout: Duration) -> Self {
        TimeoutService {
            inner,
            engine,
            timeout,
        }
    }

    /// As [`new`](Self::new), on the process's [`default_engine`](crate::default_engine).
    ///
    /// # Panics
    /// If the default engine cannot start, as [`default_engine`](crate::default_engine).
    pub fn on_default_engine(inner: S, timeout: Duration) -> Self {
        TimeoutService::new(inner, default_engine().clone(), timeout)
    }

    /// A [`TimeoutLayer`] with these settings, as tower's `TimeoutService::layer`.
    pub fn layer(engine: TimerEngine, timeout: Duration) -> TimeoutLayer {
        TimeoutLayer::new(engine, timeout)
    }

    /// The deadline each request gets.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The engine the deadlines are kept on.
    pub fn engine(&self) -> &TimerEngine {
        &self.engine
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwraps the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Request> Service<Request> for TimeoutService<S>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> ResponseFuture<S::Future> {
        let engine = self.engine.clone();
        // The timer first: a request the engine cannot time never reaches the inner service.
        match self.engine.try_sleep(self.timeout) {
            Ok(sleep) => {
                let response = self.inner.call(request);
                ResponseFuture::running(Deadline::new(response, sleep), engine)
            }
            Err(refusal) => ResponseFuture::refused(Overloaded::new(refusal), engine),
        }
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = TimeoutService<S>;

    fn layer(&self, inner: S) -> TimeoutService<S> {
        TimeoutService::new(inner, self.engine().clone(), self.timeout())
    }
}
