//! [`TimeoutService`]: a service whose every request runs under a deadline.

use std::fmt;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tower_layer::Layer;
use tower_service::Service;

use super::error::Overloaded;
use super::future::ResponseFuture;
use super::incoming::{IncomingDeadline, NoIncoming};
use super::layer::TimeoutLayer;
use super::BoxError;
use crate::engine::global::default_engine;
use crate::engine::{ScheduleError, Scoped, TimerEngine};
use crate::timer::{deadline, Clamp, Sleep, Timeout as Deadline};

/// A service that gives each request of `S` a deadline on a shardwheel engine. Made by
/// [`TimeoutLayer`] or [`TimeoutService::new`].
///
/// `poll_ready` is the inner service's; `call` arms the deadline, then calls the inner
/// service (see the [module](super) for refusals). Not to be confused with [`shardwheel::Timeout`](crate::Timeout), the future that
/// [`TimerEngine::timeout`] makes and that this service's responses run in.
///
/// ```
/// use std::time::{Duration, Instant};
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
#[derive(Clone)]
pub struct TimeoutService<S, I = NoIncoming> {
    inner: S,
    engine: TimerEngine,
    timeout: Duration,
    incoming: I,
}

impl<S> TimeoutService<S> {
    /// Wraps `inner`: each request gets `timeout` from its `call`, on `engine`'s timers.
    pub fn new(inner: S, engine: TimerEngine, timeout: Duration) -> Self {
        TimeoutService {
            inner,
            engine,
            timeout,
            incoming: NoIncoming,
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
}

impl<S, I> TimeoutService<S, I> {
    /// The same service, reading each request's incoming deadline with `incoming`, as
    /// [`TimeoutLayer::incoming`].
    pub fn incoming<J>(self, incoming: J) -> TimeoutService<S, J> {
        TimeoutService {
            inner: self.inner,
            engine: self.engine,
            timeout: self.timeout,
            incoming,
        }
    }

    /// The deadline each request gets (or an earlier one it comes with).
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

impl<S, I> fmt::Debug for TimeoutService<S, I>
where
    S: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeoutService")
            .field("inner", &self.inner)
            .field("engine", &self.engine)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<S, I, Request> Service<Request> for TimeoutService<S, I>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
    I: IncomingDeadline<Request>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> ResponseFuture<S::Future> {
        let engine = self.engine.clone();
        let incoming = self.incoming.incoming(&request);
        // The timer first: a request the engine cannot time never reaches the inner service.
        match request_sleep(&self.engine, self.timeout, incoming) {
            Ok((sleep, clamp, scope)) => {
                // The call, and each poll of its response, inside the request's scope.
                let response = deadline::run_within(scope.as_ref(), || self.inner.call(request));
                let response = Scoped::within(scope, response);
                ResponseFuture::running(Deadline::clamped(response, sleep, clamp), engine)
            }
            Err(refusal) => ResponseFuture::refused(Overloaded::new(refusal), engine),
        }
    }
}

impl<S, I: Clone> Layer<S> for TimeoutLayer<I> {
    type Service = TimeoutService<S, I>;

    fn layer(&self, inner: S) -> TimeoutService<S, I> {
        TimeoutService {
            inner,
            engine: self.engine().clone(),
            timeout: self.timeout(),
            incoming: self.reader().clone(),
        }
    }
}

/// A request's deadline: `own` from now, `incoming` from now or the current deadline,
/// whichever comes first. Its sleep, unless refused; its clamp (inherited where `incoming` or
/// the current deadline came first); and the deadline, for its scope.
fn request_sleep(
    engine: &TimerEngine,
    own: Duration,
    incoming: Option<Duration>,
) -> Result<(Sleep, Clamp, Option<deadline::Deadline>), ScheduleError<()>> {
    let clock = engine.shared().clock();
    let (own_at, own_tick) = clock.deadline_after(own);
    let incoming = incoming.and_then(|incoming| clock.deadline_after(incoming).0);
    let limit = earlier(deadline::limit(clock), incoming);
    let (tick, clamp) = match limit {
        Some(limit) => Clamp::of(clock, own_tick, limit),
        None => (own_tick, Clamp::Free),
    };
    let sleep =
        (engine.shared().try_sleep(tick)).map_err(|kind| ScheduleError::of_kind(kind, ()))?;
    let scope = earlier(own_at, limit).map(|at| deadline::Deadline::on(at, clock));
    Ok((sleep, clamp, scope))
}

/// The earlier of two instants, `None` being none at all.
fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
