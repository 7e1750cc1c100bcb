//! The engine: the public [`TimerEngine`], how it is built, how it routes timers to shards,
//! and how it shuts down without losing one. The top layer: it alone knows every layer below.
//!
//! - `api`: [`TimerEngine`] and its scheduling calls.
//! - `builder`: [`Builder`], the settings, and the assembly of shards, lanes and pool.
//! - `repeat`: [`RepeatBuilder`], the options of a repeating timer.
//! - `shared`: [`EngineShared`](shared::EngineShared), what the engine's parts share, and the catch-up a manual clock asks for.
//! - `routing`: which shard a timer goes to.
//! - `shutdown`: stopping, joining, and handing back [`Unfired`] timers.
//! - `closing`: the protocol by which callers of `shutdown` and `drop` meet.
//! - `stats`: [`Stats`], [`ShardStats`] and the [`Lateness`] histogram.
//! - `error`: [`BuildError`] and [`ScheduleError`].
//! - `global`: the default engine, [`default_engine`].
//! - `refused`: what a refused [`Sleep`](crate::Sleep), `Timeout` or `Interval` tells.
//! - `scope`: [`EnterGuard`] and [`Scoped`], which engine the free functions use.

mod api;
mod builder;
mod closing;
mod error;
mod global;
#[cfg(test)]
mod hooks;
mod refused;
mod repeat;
mod routing;
mod scope;
mod shared;
mod shutdown;
mod stats;
#[cfg(all(test, not(loom)))]
mod tests;

pub use self::api::TimerEngine;
pub use self::builder::Builder;
pub use self::error::{BuildError, ScheduleError, ScheduleErrorKind};
pub(crate) use self::global::current_engine;
pub use self::global::now;
pub use self::global::{
    default_engine, interval, interval_at, repeating, schedule, schedule_at, schedule_repeating,
    sleep, sleep_until, timeout, timeout_at, try_default_engine,
};
#[allow(deprecated)]
pub use self::global::{schedule_repeating_at, schedule_repeating_with};
pub use self::repeat::RepeatBuilder;
pub use self::scope::{EnterGuard, Scoped};
pub(crate) use self::shared::EngineShared;
pub use self::shutdown::Unfired;
pub use self::stats::{Lateness, ShardStats, Stats};

#[cfg(all(test, loom))]
pub(crate) use self::closing::{Closing, Duty};
