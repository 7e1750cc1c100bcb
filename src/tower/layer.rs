//! [`TimeoutLayer`]: wraps services in [`Timeout`].

use std::sync::Arc;
use std::time::Duration;

use tower_layer::Layer;

use super::service::Timeout;
use crate::engine::TimerEngine;

/// Puts a deadline on every request of the services it wraps, each a [`Timeout`] on the same
/// engine.
///
/// The engine is shared: an `Arc<TimerEngine>` (a [`TimerEngine`] is not `Clone`, and every
/// service the layer makes, and every clone of those, keeps its timers there). The layer, its
/// services and their response futures each hold the engine, so it runs until the last of
/// them is dropped, even if the caller drops its own `Arc` first.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use shardwheel::tower::TimeoutLayer;
/// use shardwheel::TimerEngine;
/// use tower::{service_fn, ServiceBuilder, ServiceExt};
///
/// let engine = Arc::new(TimerEngine::builder().build()?);
/// let service = ServiceBuilder::new()
///     .layer(TimeoutLayer::new(engine.clone(), Duration::from_secs(5)))
///     .service_fn(|name: &'static str| async move {
///         Ok::<_, std::convert::Infallible>(format!("hello, {name}"))
///     });
/// let reply = futures::executor::block_on(service.oneshot("world"));
/// assert_eq!(reply.unwrap(), "hello, world");
/// // The response came first: its deadline was cancelled.
/// assert_eq!(engine.stats().cancelled, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    engine: Arc<TimerEngine>,
    timeout: Duration,
}

impl TimeoutLayer {
    /// A layer whose services give every request `timeout`, on `engine`'s timers.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let layer = shardwheel::tower::TimeoutLayer::new(engine, Duration::from_millis(250));
    /// assert_eq!(layer.timeout(), Duration::from_millis(250));
    /// ```
    pub fn new(engine: Arc<TimerEngine>, timeout: Duration) -> Self {
        TimeoutLayer { engine, timeout }
    }

    /// The deadline each request gets, from its `call`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let layer = shardwheel::tower::TimeoutLayer::new(engine, Duration::from_secs(1));
    /// assert_eq!(layer.timeout(), Duration::from_secs(1));
    /// ```
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The engine the services keep their timers on.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// let engine = Arc::new(shardwheel::TimerEngine::builder().build().unwrap());
    /// let layer = shardwheel::tower::TimeoutLayer::new(engine.clone(), Duration::from_secs(1));
    /// assert!(Arc::ptr_eq(layer.engine(), &engine));
    /// ```
    pub fn engine(&self) -> &Arc<TimerEngine> {
        &self.engine
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout::new(inner, self.engine.clone(), self.timeout)
    }
}
