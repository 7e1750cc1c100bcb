//! A shard: one timing wheel, the tick thread that alone touches it, and the lanes through
//! which everyone else reaches it.
//!
//! - `worker`: [`Shard`], the tick thread's own state and its loop (turn, poll, sleep).
//! - `core`: [`ShardCore`], what the shard shares: its stop flag, counters, clock, cap, signal.
//! - `lane`: [`Lane`], the queues into the shard from a group of producer threads, with the
//!   admission and queueing of a timer (the producer's half of the shutdown hand-off).
//! - `signal`: the sleep word and its wake-up protocol.
//! - `executor`: where expired callbacks run (a rayon pool, the tick thread, or a user's
//!   spawner, as [`Task`]s).
//! - `relay`: the hand-over of callbacks to the pool: a queue of batches per shard, and
//!   runners that share the batches out (`sync::claims`) and park when there is nothing to
//!   run.
//! - `run`: running one callback (caught panics, counts, the cap).
//! - `lateness`: the histogram of how late the shard fires its timers.
//! - `pinning`: letting go of a pinned core too busy to keep the shard on time.
//! - `moving`: moving a neighbour's pinned thread off a core that does not run it, and back.
//! - `waking`: asking the kernel to wake the tick thread on time (timer slack, slice).
//! - `cap`: the optional limit on pending timers.

mod cap;
mod core;
mod executor;
mod lane;
mod lateness;
mod moving;
mod pinning;
mod relay;
mod run;
mod signal;
#[cfg(not(loom))]
mod waking;
mod worker;

pub(crate) use self::cap::Cap;
pub(crate) use self::core::ShardCore;
pub use executor::Task;
pub(crate) use executor::{Executor, Spawner};
#[cfg(all(test, loom))]
pub(crate) use lane::LaneCounts;
pub(crate) use lane::{Lane, Ownership, Refusal};
pub(crate) use lateness::BUCKETS as LATENESS_BUCKETS;
#[cfg(all(test, loom))]
pub(crate) use moving::Whereabouts;
pub(crate) use relay::{Inflight, Job, Relay, Spawn};
pub(crate) use run::in_callback_of;
pub(crate) use worker::{Shard, Stopped};
