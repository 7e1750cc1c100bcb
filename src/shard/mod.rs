//! A shard: one timing wheel, the tick thread that alone touches it, and the lanes through
//! which everyone else reaches it. It imports callbacks, pinning, the wheel, queues, entries.
//!
//! - `worker`: [`Shard`], the tick thread's state and loop (turn, poll, sleep).
//! - `shared`: [`ShardShared`], its stop flag, counters, clock, cap, signal; the horizons.
//! - `outcomes`: what a turn does with the entries it handled.
//! - `lane`: [`Lane`], the queues from one producer thread, and admission (the producer's half
//!   of the shutdown hand-off); the owner's young timers; who owns the lane, and the owner's
//!   and taker's tokens.
//! - `lanes`: [`Lanes`], made as threads first schedule into the shard.
//! - `signal`: the sleep word and its wake-up protocol.
//! - `lateness`: the histogram of how late the shard fires its timers.
//! - `ask`: asking the shard thread what only it can read, by ticket: the look-ahead and the
//!   survey, and the one asking loop.
//! - `survey`: a snapshot's question for the timers in the wheel, answered between turns.
//! - `retime`: what moves the timers whose deadline another layer keeps, when reset.

mod ask;
mod lane;
mod lanes;
mod lateness;
mod outcomes;
mod retime;
mod shared;
mod signal;
mod survey;
mod worker;

#[cfg(test)]
pub(crate) use self::ask::Reply;
pub(crate) use self::ask::{ask_each, Patience, Unanswered};
pub(crate) use self::retime::{Reset, Retime};
pub(crate) use self::shared::ShardShared;
pub(crate) use self::survey::Found;
pub(crate) use lane::{Access, Lane, Memory, OneShot, Origin, Refusal, TimerKind};
#[cfg(all(test, loom))]
pub(crate) use lane::{LaneCounts, Owner};
pub(crate) use lanes::Lanes;
pub(crate) use lateness::BUCKETS as LATENESS_BUCKETS;
#[cfg(test)]
pub(crate) use signal::Announced;
pub(crate) use worker::{Shard, Stopped};
