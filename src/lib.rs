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
//! shardwheel = "0.3"
//! futures = "0.3" # for the examples' `block_on`; under tokio, `.await` instead
//! ```
//!
//! The free functions run on the [`default_engine`], started on first use (configure it before
//! with [`Builder::build_global`](engine::Builder::build_global)); a [`TimerEngine`] of your
//! own is [`TimerEngine::builder`]`().build()`, and a clone of it is one more handle on it.
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
//! let mut sessions = shardwheel::delay_queue::DelayQueue::default();
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
//! | [`TimerEngine`] | an engine of your own; [`TimerEngine::builder`] for its settings |
//! | [`default_engine`] | the process's engine, behind the free functions |
//! | [`TimerEngine::enter`], [`TimerEngine::scope`] | which engine the free functions use here: one per test |
//! | [`ManualClock`] | time that moves only when a test says so |
//! | [`schedule`], [`schedule_at`] | run a callback at a deadline |
//! | [`repeating`] | run it every period |
//! | [`TimerHandle`], [`TimerState`] | cancel, reset or look at a timer |
//! | [`ScheduleError`], [`ScheduleErrorKind`] | why a timer was refused, with the callback back |
//! | [`sleep`], [`sleep_until`], [`timeout`], [`timeout_at`], [`interval`], [`interval_at`] | as `tokio::time`, under any executor |
//! | [`Sleep`], [`Timeout`], [`Elapsed`], [`Interval`], [`MissedTickBehavior`] | the futures and types they return |
//! | [`now`] | the time their deadlines are on: the entered engine's clock, as tokio's `Instant::now` |
//! | [`TimerEngine::schedule_boot`], [`TimerEngine::schedule_at_wall`] | deadlines on the boot clock (the time the machine slept counts) and the wall clock (`SystemTime`), with `sleep_` and `timeout_` forms |
//! | [`delay_queue`] | as tokio-util's `time::delay_queue`: the `DelayQueue`, its keys and items |
//! | [`deadline`] | a deadline that passes down a call chain: timeouts inside end by it |
//! | [`engine`] | the engine's own types: its builder, guards, what shutdown hands back, a repeating timer's builder |
//! | [`stats`] | what [`TimerEngine::stats`] reports, and [`TimerEngine::pending_timers`]: each pending timer, with the line that scheduled it when the engine tracks sites |
//! | [`migration`] | each item of `tokio::time`, tokio-util's `DelayQueue` and tower's `timeout`, and its counterpart here |
//!
//! ## One way to each thing
//!
//! - A callback once: [`schedule`], [`schedule_at`]; by key, [`TimerEngine::schedule_keyed`]
//!   and `_at`. Every period: [`repeating`]`(period).schedule(f)`, the
//!   [`RepeatBuilder`](engine::RepeatBuilder)'s options between. No `schedule_repeating`
//!   shortcut: the builder's defaults are the common timer, already one line.
//! - Where a timer is: [`TimerHandle::state`]. A value out of a delay queue:
//!   [`remove`](delay_queue::DelayQueue::remove), a `Result` (`.ok()` is tokio-util's
//!   `try_remove`). The default engine: [`default_engine`]; to configure it, or to see a failed
//!   start as an error, [`Builder::build_global`](engine::Builder::build_global) first.
//! - The free functions are the [`TimerEngine`] methods of the same name on the engine
//!   entered, else the default engine; the rest (keyed routing, the `try_` forms, statistics,
//!   shutdown) are methods only.
//! - A deadline on another clock than the monotonic one, per timer: `schedule_boot`,
//!   `sleep_boot`, `timeout_boot` (a suspend counts) and `schedule_at_wall`,
//!   `sleep_until_wall`, `timeout_at_wall` (a `SystemTime`). A step of the wall clock or a
//!   resume takes effect within two ticks on Linux, within a second elsewhere, and none is
//!   early on its own clock. `reset(d)` is `d` from now on its own clock, `deadline` is its
//!   monotonic estimate, and while a look finds it early `state()` reads `Fired` for that run.
//!   A deadline scope bounds their timeouts too, each deadline on its own clock.
//! - What is pending: [`TimerEngine::pending`] counts, [`TimerEngine::pending_timers`] lists
//!   (with [`Builder::track_sites`](engine::Builder::track_sites), by site, age and key).
//!
//! A refused sleep, timeout or interval does not fail (tokio would panic) and never hangs: at
//! the cap it waits for a permit; after shutdown a fallback thread of the process ends it at
//! its deadline, never early; `refused` says why. The `try_` forms
//! ([`TimerEngine::try_sleep`], `try_timeout`, `try_interval`, their `_until` and `_at`
//! forms, [`Interval::try_tick`], `DelayQueue::try_insert`) return the refusal up front, as a
//! [`ScheduleError`], instead of a sleep that waits: for a caller that would rather shed work.
//!
//! ## Features
//!
//! All off by default:
//! - `tokio`: `Builder::tokio_callbacks`: callbacks run as tasks on a tokio runtime.
//! - `tower`: `shardwheel::tower`, a timeout middleware on the engine's timers, which runs
//!   each request in a [`deadline`] scope, taking the earlier of its own and the caller's.
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
mod clock;
mod delay;
pub mod engine;
mod entry;
// hyper's timer: an impl only, documented on `TimerEngine`.
#[cfg(feature = "hyper")]
mod hyper;
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

/// Statistics: what [`TimerEngine::stats`] reports, and what a snapshot of the pending timers
/// lists ([`TimerEngine::pending_timers`]).
pub mod stats {
    pub use crate::engine::pending::{
        ClockDeadline, PendingAges, PendingTimer, PendingTimers, SiteCount, SnapshotError, Stage,
    };
    pub use crate::engine::stats::{Lateness, ShardStats, Stats};
}

#[doc(inline)]
pub use engine::deadline;

/// As tokio-util's `time::delay_queue`: the [`DelayQueue`](crate::delay_queue::DelayQueue),
/// its keys, items and errors.
pub mod delay_queue {
    pub use crate::delay::{DelayQueue, Expired, Key, KeyError};
}

// An engine, the default one, and a test's time.
pub use engine::api::TimerEngine;
pub use engine::global::default_engine;
pub use time::ManualClock;
// Callbacks on a timer: scheduling, handles, refusals.
pub use engine::error::{ScheduleError, ScheduleErrorKind};
pub use engine::global::{repeating, schedule, schedule_at};
pub use timer::{TimerHandle, TimerState};
// As tokio::time: sleeps, timeouts, intervals.
pub use engine::global::{interval, interval_at, now, sleep, sleep_until, timeout, timeout_at};
pub use timer::{Elapsed, Interval, MissedTickBehavior, Sleep, Timeout};
