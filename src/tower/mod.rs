//! Tower middleware (the `tower` feature): a deadline on every request of a
//! [`Service`](tower_service::Service), kept on the engine's timers.
//!
//! It mirrors `tower::timeout`: [`TimeoutLayer`] wraps a service in a [`TimeoutService`], whose
//! `poll_ready` is the inner service's and whose `call` starts the request together with a
//! [`Sleep`](crate::Sleep) on a [`TimerEngine`](crate::TimerEngine). The response future
//! yields the inner response, or, if the deadline passes first, a [`BoxError`] holding
//! [`Elapsed`](crate::Elapsed), which `downcast_ref::<shardwheel::Elapsed>()` finds. A response
//! that comes first drops the sleep with the response future, and that cancels its timer: one
//! compare-and-swap, counted in [`Stats::cancelled`](crate::stats::Stats::cancelled).
//!
//! # Deadlines that pass down
//!
//! A request's deadline is the earliest of the layer's timeout, the deadline it came with
//! ([`TimeoutLayer::incoming`]) and the current one; its `call` and each poll of its response
//! run in a [`deadline`](crate::deadline) scope of it, so the service's own timeouts end by it
//! (and it may answer with one's inherited `Elapsed` before the layer's own comes).
//!
//! # Refusals are not timeouts
//!
//! A deadline the engine cannot hold (it is shut down, or at its `max_pending` cap) is not a
//! deadline that passed. `call` asks the engine for the timer first
//! ([`TimerEngine::try_sleep`](crate::TimerEngine::try_sleep)); if it is refused, the inner
//! service is not called at all, so no work starts for a request that could not be timed, and
//! the response future fails at once with [`Overloaded`], boxed like every error here. A
//! server can tell the two apart by downcasting: `Overloaded` is load shedding (answer 503),
//! `Elapsed` a deadline that passed (answer 504). Errors are boxed, as tower's are.
//!
//! Where it differs from `tower::timeout`: the timers live on a shardwheel engine instead of
//! the tokio runtime, so the middleware runs under any executor, and refusals are reported
//! as above. A deadline beyond the engine's [`max_delay`](crate::TimerEngine::max_delay)
//! never passes.
//!
//! - `layer`: [`TimeoutLayer`].
//! - `service`: [`TimeoutService`], the service.
//! - `future`: [`ResponseFuture`].
//! - `incoming`: [`IncomingDeadline`], how a service reads a request's own deadline.
//! - `error`: [`Overloaded`].

mod error;
mod future;
mod incoming;
mod layer;
mod service;

pub use self::error::Overloaded;
pub use self::future::ResponseFuture;
pub use self::incoming::{IncomingDeadline, NoIncoming};
pub use self::layer::TimeoutLayer;
pub use self::service::TimeoutService;

/// The error of a [`TimeoutService`] service: the inner service's error,
/// [`Elapsed`](crate::Elapsed) when the deadline passed first, or [`Overloaded`] when the
/// engine refused the deadline. The same type as tower's own `BoxError`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
