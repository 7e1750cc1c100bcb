//! Tower middleware (the `tower` feature): a deadline on every request of a
//! [`Service`](tower_service::Service), kept on the engine's timers.
//!
//! It mirrors `tower::timeout`: [`TimeoutLayer`] wraps a service in a [`Timeout`], whose
//! `poll_ready` is the inner service's and whose `call` starts the request together with a
//! [`Sleep`](crate::Sleep) on a shared [`TimerEngine`](crate::TimerEngine). The response future
//! yields the inner response, or, if the deadline passes first, a [`BoxError`] holding
//! [`Elapsed`](crate::Elapsed), which `downcast_ref::<shardwheel::Elapsed>()` finds. A response
//! that comes first drops the sleep with the response future, and that cancels its timer: one
//! compare-and-swap, counted in [`Stats::cancelled`](crate::Stats::cancelled).
//!
//! The engine is shared as an `Arc<TimerEngine>`, held by the layer, each service and each
//! response future, so it outlives a service dropped while its responses are under way.
//!
//! Where the two differ: the timers live on a shardwheel engine instead of the tokio runtime,
//! so the middleware runs under any executor, and a deadline the engine cannot hold (it is
//! shut down, or at its `max_pending` cap) elapses at once, as every
//! [`TimerEngine::sleep`](crate::TimerEngine::sleep) does. A deadline beyond the engine's
//! [`max_delay`](crate::TimerEngine::max_delay) never passes.
//!
//! - `layer`: [`TimeoutLayer`].
//! - `service`: [`Timeout`], the service.
//! - `future`: [`ResponseFuture`].

mod future;
mod layer;
mod service;

pub use self::future::ResponseFuture;
pub use self::layer::TimeoutLayer;
pub use self::service::Timeout;

/// The error of a [`Timeout`] service: the inner service's error, or
/// [`Elapsed`](crate::Elapsed) when the deadline passed first. The same type as tower's own
/// `BoxError`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
