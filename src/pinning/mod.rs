//! How a shard's tick thread is scheduled: pinned to a cpu when the builder asks for it
//! (`pin_threads(true)`), unpinned when its turns keep beginning late there, and asking the
//! kernel to wake it on time. It imports `sync` and `trace` only.
//!
//! - `affinity`: the cpus the process may use, and setting the calling thread's (the one way
//!   the crate sets an affinity).
//! - `watch`: [`Pinning`], where the thread runs as the stats read it, and [`LagWatch`],
//!   which unpins a pinned thread whose turns begin late.
//! - `waking`: timer slack and scheduling slice for a tick thread.

mod affinity;
#[cfg(not(loom))]
mod waking;
mod watch;

pub(crate) use affinity::cpus;
#[cfg(not(loom))]
pub(crate) use waking::tune_current_thread;
pub(crate) use watch::{LagWatch, Pinning};
