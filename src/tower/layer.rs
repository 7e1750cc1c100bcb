//! [`TimeoutLayer`]: wraps services in [`TimeoutService`](super::TimeoutService)s.

use std::fmt;
use std::time::Duration;

use super::incoming::NoIncoming;
use crate::engine::global::default_engine;
use crate::engine::TimerEngine;

/// Puts a deadline on every request of the services it wraps, each a [`TimeoutService`](super::TimeoutService) on the same
/// engine: its timeout, or an earlier one the request came with (see [`incoming`](Self::incoming)).
///
/// The layer holds a clone of the engine (one reference count), as does every service it
/// makes and every response future of those, so the engine runs until the last of them is
/// dropped, even if the caller drops its own clone first.
///
/// ```
/// use std::time::Duration;
/// use shardwheel::tower::TimeoutLayer;
/// use shardwheel::TimerEngine;
/// use tower::{service_fn, ServiceBuilder, ServiceExt};
///
/// let engine = TimerEngine::builder().build()?;
/// let service = ServiceBuilder::new()
///     .layer(TimeoutLayer::new(engine.clone(), Duration::from_secs(5)))
///     .service_fn(|name: &'static str| async move {
///         Ok::<_, std::convert::Infallible>(format!("hello, {name}"))
///     });
/// let reply = futures::executor::block_on(service.oneshot("world"));
/// assert_eq!(reply.unwrap(), "hello, world");
/// // The response was ready when first polled: its deadline needed no timer.
/// assert_eq!(engine.stats().scheduled, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[must_use = "a TimeoutLayer does nothing until it wraps a service"]
pub struct TimeoutLayer<I = NoIncoming> {
    engine: TimerEngine,
    timeout: Duration,
    incoming: I,
}

impl TimeoutLayer {
    /// A layer whose services give every request `timeout`, on `engine`'s timers.
    pub fn new(engine: TimerEngine, timeout: Duration) -> Self {
        TimeoutLayer {
            engine,
            timeout,
            incoming: NoIncoming,
        }
    }

    /// As [`new`](Self::new), on the process's [`default_engine`](crate::default_engine).
    ///
    /// # Panics
    /// If the default engine cannot start, as [`default_engine`](crate::default_engine).
    pub fn on_default_engine(timeout: Duration) -> Self {
        TimeoutLayer::new(default_engine().clone(), timeout)
    }
}

impl<I> TimeoutLayer<I> {
    /// The same layer, whose services read each request's incoming deadline with `incoming`
    /// and give the request the earlier of it and their own timeout.
    ///
    /// ```
    /// use std::time::Duration;
    /// use shardwheel::{deadline, tower::TimeoutLayer};
    /// use tower::{service_fn, Layer, ServiceExt};
    /// // A request that says how long its caller waits (a `grpc-timeout`), and what it asks.
    /// type Request = (&'static str, u32);
    /// let read = |request: &Request| deadline::parse_grpc_timeout(request.0).ok();
    /// let layer = TimeoutLayer::on_default_engine(Duration::from_secs(5)).incoming(read);
    /// let ask = service_fn(|_: Request| async { Ok::<_, std::io::Error>(deadline::remaining()) });
    /// let left = futures::executor::block_on(layer.layer(ask).oneshot(("100m", 7))).unwrap();
    /// assert!(left.unwrap() <= Duration::from_millis(100)); // not 5 s
    /// ```
    pub fn incoming<J>(self, incoming: J) -> TimeoutLayer<J> {
        TimeoutLayer {
            engine: self.engine,
            timeout: self.timeout,
            incoming,
        }
    }

    /// The deadline each request gets, from its `call`.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The engine the services keep their timers on.
    pub fn engine(&self) -> &TimerEngine {
        &self.engine
    }

    /// How the services read a request's incoming deadline.
    pub(super) fn reader(&self) -> &I {
        &self.incoming
    }
}

impl<I> fmt::Debug for TimeoutLayer<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeoutLayer")
            .field("engine", &self.engine)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
