//! # shardwheel
//!
//! A sharded, lock-free timer engine for servers that hold very many cancellable timeouts: one
//! hierarchical timing wheel per cpu, each driven by its own tick thread; inserts that travel
//! to their shard through lock-free queues; cancellation by one compare-and-swap on the timer's
//! state word; fired callbacks run on a rayon pool, so a slow callback never stalls ticking.
//!
//! ## Quick start
//!
//! ```toml
//! [dependencies]
//! shardwheel = "0.1"
//! ```
//!
//! The free functions run on the [`default_engine`], started on first use (configure it before
//! with [`Builder::build_global`]); a [`TimerEngine`] of your own is
//! [`TimerEngine::builder`]`().build()`, and a clone of it is one more handle on it.
//!
//! ```
//! use std::time::Duration;
//! use futures::executor::block_on;
//!
//! // A deadline on a request: cancelled when the answer comes first.
//! let deadline = shardwheel::schedule(Duration::from_secs(5), || eprintln!("timed out"))?;
//! assert!(deadline.cancel());
//!
//! // A sleep and a timeout, under any executor.
//! block_on(shardwheel::sleep(Duration::from_millis(5)));
//! let answer = block_on(shardwheel::timeout(Duration::from_secs(5), async { 42 }));
//! assert_eq!(answer, Ok(42));
//!
//! // A DelayQueue: values that come out at their deadlines.
//! use futures::StreamExt;
//! let mut sessions = shardwheel::DelayQueue::default();
//! sessions.insert("session 7", Duration::from_millis(5));
//! assert_eq!(block_on(sessions.next()).unwrap().into_inner(), "session 7");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A deadline on every request of a tower service (the `tower` feature):
//!
//! ```
//! # #[cfg(feature = "tower")] {
//! use std::time::Duration;
//! use shardwheel::tower::TimeoutLayer;
//! use tower::{ServiceBuilder, ServiceExt};
//!
//! let service = ServiceBuilder::new()
//!     .layer(TimeoutLayer::on_default_engine(Duration::from_secs(5)))
//!     .service_fn(|name: &'static str| async move {
//!         Ok::<_, std::convert::Infallible>(name.len())
//!     });
//! assert_eq!(futures::executor::block_on(service.oneshot("hello")).unwrap(), 5);
//! # }
//! ```
//!
//! A test on a [`ManualClock`], where time moves only when the test says so (code under test
//! reads the time from [`TimerEngine::now`]):
//!
//! ```
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let clock = shardwheel::ManualClock::new();
//! let engine = shardwheel::TimerEngine::builder().manual_clock(&clock).build()?;
//! let fired = Arc::new(AtomicBool::new(false));
//! let f = fired.clone();
//! engine.schedule(Duration::from_secs(30), move || f.store(true, Ordering::SeqCst))?;
//! clock.advance(Duration::from_secs(29));
//! assert!(!fired.load(Ordering::SeqCst));
//! // Jump to the next timer due; returns once its callback has run.
//! assert_eq!(clock.advance_to_next(), Some(engine.now()));
//! assert!(fired.load(Ordering::SeqCst));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Features
//!
//! All off by default:
//! - `tokio`: `Builder::tokio_callbacks`: callbacks run as tasks on a tokio runtime.
//! - `tower`: `shardwheel::tower`, a timeout middleware on the engine's timers.
//! - `hyper`: `hyper::rt::Timer` for [`TimerEngine`], so hyper's own timeouts run on it.
//! - `tracing`: events for the rare things (a callback panicked, shutdown began and ended).
//! - `metrics`: `shardwheel::metrics::Publisher` publishes [`TimerEngine::stats`] as counters
//!   and gauges of the `metrics` facade.
//!
//! ## Guarantees
//!
//! A callback runs at or after its deadline (never early), at most once, and never after a
//! `cancel` that returned `true`. Every timer scheduled is fired, cancelled, or handed back
//! by [`TimerEngine::shutdown`]. The [`design`] module is a map of how the engine is built.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// The layers, lowest first; each imports only from itself and the layers before it here.
// Events for the rare things (the `tracing` feature):
mod trace;
// Synchronisation primitives (the loom shim):
mod sync;
// Where entries live: counted pointers into blocks of chunks:
mod slab;
// Timer entries and their state word; time as ticks:
mod entry;
mod time;
// The queues into a shard; the timing wheel:
mod queue;
mod wheel;
// Where fired callbacks run; where a tick thread runs:
mod callbacks;
mod pinning;
// A shard, its lanes and its tick thread:
mod shard;
// Handles, repeating timers, sleeps, intervals:
mod timer;
// The public engine:
mod engine;
// Tower middleware on the engine's public API (the `tower` feature):
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
// hyper's `rt::Timer` on the engine (the `hyper` feature):
#[cfg(feature = "hyper")]
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
pub mod hyper;
// Structures built on the engine: the delay queue:
mod delay;
// The statistics through the `metrics` facade (the `metrics` feature):
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;

pub mod design;

#[cfg(all(test, loom))]
#[path = "../loom-tests/mod.rs"]
mod loom_models;

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

pub use callbacks::Task;
pub use delay::{DelayQueue, Expired, InsertError, Key, KeyError};
pub use engine::{
    default_engine, interval, interval_at, repeating, schedule, schedule_at, schedule_repeating,
    schedule_repeating_at, schedule_repeating_with, sleep, sleep_until, timeout, timeout_at,
    try_default_engine, BuildError, Builder, EnterGuard, Lateness, RepeatBuilder, ScheduleError,
    ScheduleErrorKind, Scoped, ShardStats, Stats, TimerEngine, Unfired,
};
pub use time::ManualClock;
pub use timer::{
    Elapsed, Interval, MissedTickBehavior, Repeat, Sleep, Timeout, TimerHandle, TimerState,
};
