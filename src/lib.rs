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
//! shardwheel = "0.2"
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
//! A test gets an engine on a [`ManualClock`] of its own, and [`TimerEngine::scope`] points
//! the free functions at it; see [`migration`] for tokio's paused clock.
//!
//! ## What is here
//!
//! | item | what it is for |
//! |---|---|
//! | [`TimerEngine`], [`Builder`], [`BuildError`] | an engine of your own, and its settings |
//! | [`default_engine`], [`try_default_engine`] | the process's engine, behind the free functions |
//! | [`TimerEngine::enter`], [`TimerEngine::scope`] ([`EnterGuard`], [`Scoped`]) | which engine the free functions use here: one per test |
//! | [`ManualClock`] | time that moves only when a test says so |
//! | [`schedule`], [`schedule_at`] | run a callback at a deadline |
//! | [`schedule_repeating`], [`repeating`] ([`RepeatBuilder`], [`Repeat`]) | run it every period; the builder for every other option |
//! | [`TimerHandle`], [`TimerState`] | cancel, reset or look at a timer |
//! | [`ScheduleError`], [`ScheduleErrorKind`] | why a timer was refused, with the callback back |
//! | [`sleep`], [`sleep_until`], [`timeout`], [`timeout_at`], [`interval`], [`interval_at`] | as `tokio::time`, under any executor |
//! | [`Sleep`], [`Timeout`], [`Elapsed`], [`Interval`], [`MissedTickBehavior`] | the futures and types they return |
//! | [`now`] | the time their deadlines are on: the entered engine's clock, as tokio's `Instant::now` |
//! | [`DelayQueue`] and [`delay_queue`] | as tokio-util's `DelayQueue` |
//! | [`Unfired`] | a timer handed back by [`TimerEngine::shutdown`] |
//! | [`Task`] | a fired callback handed to [`Builder::spawn_callbacks`] |
//! | [`stats`] | what [`TimerEngine::stats`] reports |
//! | [`migration`] | each item of `tokio::time`, tokio-util's `DelayQueue` and tower's `timeout`, and its counterpart here |
//!
//! The free functions are `tokio::time`'s and the three ways to schedule a callback; each is
//! the [`TimerEngine`] method of the same name on the engine entered, else the default engine.
//! Everything else (keyed routing, the `try_` forms, statistics, shutdown) is a method.
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

// The layers, lowest first (see `design`); each imports only from those before it.
mod callbacks;
mod delay;
mod engine;
mod entry;
#[cfg(feature = "hyper")]
#[cfg_attr(docsrs, doc(cfg(feature = "hyper")))]
pub mod hyper;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod pinning;
mod queue;
mod shard;
mod slab;
mod sync;
mod time;
mod timer;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
mod trace;
mod wheel;

pub mod design;

#[doc = include_str!("migration.md")]
pub mod migration {}

#[cfg(all(test, loom))]
#[path = "../loom-tests/mod.rs"]
mod loom_models;

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

/// Statistics: what [`TimerEngine::stats`] reports.
pub mod stats {
    pub use crate::engine::{Lateness, ShardStats, Stats};
}

/// The delay queue's keys, items and errors ([`DelayQueue`] is at the
/// root), as tokio-util's `time::delay_queue`.
pub mod delay_queue {
    pub use crate::delay::{DelayQueue, Expired, Key, KeyError};
}

// The engine and its settings.
pub use callbacks::Task;
pub use engine::{
    default_engine, try_default_engine, BuildError, Builder, EnterGuard, Scoped, TimerEngine,
    Unfired,
};
pub use time::ManualClock;
// Callbacks on a timer: scheduling, handles, repeating timers, refusals.
pub use engine::{
    repeating, schedule, schedule_at, schedule_repeating, RepeatBuilder, ScheduleError,
    ScheduleErrorKind,
};
pub use timer::{Repeat, TimerHandle, TimerState};
// As tokio::time: sleeps, timeouts, intervals.
pub use engine::now;
pub use engine::{interval, interval_at, sleep, sleep_until, timeout, timeout_at};
pub use timer::{Elapsed, Interval, MissedTickBehavior, Sleep, Timeout};
// As tokio-util's DelayQueue.
pub use delay::DelayQueue;

// The old paths and names, for one release.
#[allow(deprecated)]
pub use delay::InsertError;
#[allow(deprecated)]
pub use engine::{schedule_repeating_at, schedule_repeating_with};
/// Moved to [`delay_queue::Expired`].
#[deprecated(since = "0.2.0", note = "use `shardwheel::delay_queue::Expired`")]
pub type Expired<T> = delay::Expired<T>;
/// Moved to [`delay_queue::Key`].
#[deprecated(since = "0.2.0", note = "use `shardwheel::delay_queue::Key`")]
pub type Key = delay::Key;
/// Moved to [`delay_queue::KeyError`].
#[deprecated(since = "0.2.0", note = "use `shardwheel::delay_queue::KeyError`")]
pub type KeyError = delay::KeyError;
/// Moved to [`stats::Stats`].
#[deprecated(since = "0.2.0", note = "use `shardwheel::stats::Stats`")]
pub type Stats = engine::Stats;
/// Moved to [`stats::ShardStats`].
#[deprecated(since = "0.2.0", note = "use `shardwheel::stats::ShardStats`")]
pub type ShardStats = engine::ShardStats;
/// Moved to [`stats::Lateness`].
#[deprecated(since = "0.2.0", note = "use `shardwheel::stats::Lateness`")]
pub type Lateness = engine::Lateness;
