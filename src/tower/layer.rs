//! [`TimeoutLayer`]: wraps services in [`TimeoutService`](super::TimeoutService)s.

use std::time::Duration;

use crate::engine::global::default_engine;
use crate::engine::TimerEngine;

/// Puts a deadline on every request of the services it wraps, each a [`TimeoutService`](super::TimeoutService) on the same
/// engine.
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
#[derive(Debug, Clone)]
#[must_use = "a TimeoutLayer does nothing until it wraps a service"]
pub struct TimeoutLayer {
    engine: TimerEngine,
    timeout: Duration,
}

impl TimeoutLayer {
    /// A layer whose services give every request `timeout`, on `engine`'s timers.
    pub fn new(engine: TimerEngine, timeout: Duration) -> Self {
        TimeoutLayer { engine, timeout }
    }

    /// As [`new`](Self::new), on the process's [`default_engine`](crate::default_engine).
    ///
    /// # Panics
    /// If the default engine cannot start, as [`default_engine`](crate::default_engine).
    pub fn on_default_engine(timeout: Duration) -> Self {
        TimeoutLayer::new(default_engine().clone(), timeout)
    }

    /// The deadline each request gets, from its `call`.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The engine the services keep their timers on.
    pub fn engine(&self) -> &TimerEngine {
        &self.engine
    }
}
