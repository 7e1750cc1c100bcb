//! # shardwheel
//!
//! A sharded, lock-free timer engine for servers that hold very many cancellable timeouts: one
//! hierarchical timing wheel per cpu, each driven by its own tick thread; inserts that travel
//! to their shard through lock-free queues; cancellation by one compare-and-swap on the timer's
//! state word; expired callbacks run on a rayon pool, so a slow callback never stalls ticking.
//!
//! ```
//! use std::sync::mpsc;
//! use std::time::Duration;
//! use shardwheel::TimerEngine;
//!
//! let engine = TimerEngine::builder().build()?;
//!
//! // An RPC deadline that is met: the response arrives, the timeout is cancelled.
//! let deadline = engine.schedule(Duration::from_secs(5), || eprintln!("request timed out"))?;
//! assert!(deadline.cancel());
//!
//! // One that runs out.
//! let (tx, rx) = mpsc::channel();
//! engine.schedule(Duration::from_millis(10), move || tx.send(()).unwrap())?;
//! rx.recv_timeout(Duration::from_secs(10)).unwrap();
//!
//! // Shutdown hands back what never ran.
//! engine.schedule(Duration::from_secs(60), || {})?;
//! assert_eq!(engine.shutdown().len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Guarantees: a callback runs at or after its deadline (never early), at most once, and never
//! after a `cancel` that returned `true`. Every timer scheduled is fired, cancelled, or handed
//! back by [`TimerEngine::shutdown`].

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// The layers, lowest first; each imports only from itself and the layers before it here.
// Events for the rare things (the `tracing` feature):
mod trace;
// Synchronisation primitives (the loom shim):
mod sync;
// Where entries live: counted pointers into slots of chunks:
mod slab;
// Timer entries and their state word; time as ticks:
mod entry;
mod time;
// The queues into a shard; the timing wheel:
mod queue;
mod wheel;
// Where fired callbacks run; where a tick thread runs:
mod callbacks;
mod placement;
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
// Structures built on the engine: the delay queue:
mod delay;

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
    try_default_engine, BuildError, Builder, Lateness, RepeatBuilder, ScheduleError, ShardStats,
    Stats, TimerEngine, Unfired,
};
pub use time::ManualClock;
pub use timer::{
    Elapsed, Interval, MissedTickBehavior, Repeat, Sleep, Timeout, TimerHandle, TimerState,
};
