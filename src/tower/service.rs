//! [`Timeout`]: a service whose every request runs under a deadline.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tower_service::Service;

use super::future::ResponseFuture;
use super::layer::TimeoutLayer;
use super::BoxError;
use crate::engine::TimerEngine;

/// A service that gives each request of `S` a deadline on a shardwheel engine. Made by
/// [`TimeoutLayer`] or [`Timeout::new`].
///
/// `poll_ready` is the inner service's (its error boxed into a [`BoxError`]): readiness has no
/// deadline, as in tower. `call` calls the inner service and arms the deadline; the
/// [`ResponseFuture`] yields the response, the inner error boxed, or
/// [`Elapsed`](crate::Elapsed) boxed if the deadline passed first.
///
/// Not to be confused with [`shardwheel::Timeout`](crate::Timeout), the future that
/// [`TimerEngine::timeout`] makes and that this service's responses run in.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use shardwheel::tower::Timeout;
/// use shardwheel::{Elapsed, TimerEngine};
/// use tower::{service_fn, ServiceExt};
///
/// let engine = Arc::new(TimerEngine::builder().build()?);
/// let sleepy = engine.clone();
/// // A service that takes a minute to answer, given a 10 ms deadline.
/// let slow = service_fn(move |()| {
///     let nap = sleepy.sleep(Duration::from_secs(60));
///     async move {
///         nap.await;
///         Ok::<_, std::convert::Infallible>("too late")
///     }
/// });
/// let service = Timeout::new(slow, engine, Duration::from_millis(10));
/// let error = futures::executor::block_on(service.oneshot(())).unwrap_err();
/// assert!(error.downcast_ref::<Elapsed>().is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    engine: Arc<TimerEngine>,
    timeout: Duration,
}

impl<S> Timeout<S> {
    /// Wraps `inner`: each request gets `timeout` from its `call`, on `engine`'s timers.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tower::service_fn;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let echo = service_fn(|x: u32| async move { Ok::<_, std::convert::Infallible>(x) });
    /// let service = shardwheel::tower::Timeout::new(echo, engine, Duration::from_secs(1));
    /// assert_eq!(service.timeout(), Duration::from_secs(1));
    /// ```
    pub fn new(inner: S, engine: Arc<TimerEngine>, timeout: Duration) -> Self {
        Timeout {
            inner,
            engine,
            timeout,
        }
    }

    /// A [`TimeoutLayer`] with these settings, as tower's `Timeout::layer`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let layer = shardwheel::tower::Timeout::<()>::layer(engine, Duration::from_secs(1));
    /// assert_eq!(layer.timeout(), Duration::from_secs(1));
    /// ```
    pub fn layer(engine: Arc<TimerEngine>, timeout: Duration) -> TimeoutLayer {
        TimeoutLayer::new(engine, timeout)
    }

    /// The deadline each request gets.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let service = shardwheel::tower::Timeout::new((), engine, Duration::from_millis(50));
    /// assert_eq!(service.timeout(), Duration::from_millis(50));
    /// ```
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The engine the deadlines are kept on.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let service = shardwheel::tower::Timeout::new((), engine.clone(), Duration::from_secs(1));
    /// assert!(Arc::ptr_eq(service.engine(), &engine));
    /// ```
    pub fn engine(&self) -> &Arc<TimerEngine> {
        &self.engine
    }

    /// The inner service.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let service = shardwheel::tower::Timeout::new(7, engine, Duration::from_secs(1));
    /// assert_eq!(*service.get_ref(), 7);
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let mut service = shardwheel::tower::Timeout::new(7, engine, Duration::from_secs(1));
    /// *service.get_mut() += 1;
    /// assert_eq!(*service.get_ref(), 8);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwraps the inner service.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let service = shardwheel::tower::Timeout::new("inner", engine, Duration::from_secs(1));
    /// assert_eq!(service.into_inner(), "inner");
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Request> Service<Request> for Timeout<S>
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
        let response = self.inner.call(request);
        let deadline = self.engine.timeout(self.timeout, response);
        ResponseFuture::new(deadline, self.engine.clone())
    }
}
