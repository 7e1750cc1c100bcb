//! How a shard's tick thread is scheduled: pinned when the builder asks (`pin_threads(true)`),
//! unpinned when its turns keep beginning late, and asking the kernel to wake it on time. It
//! imports `sync` and `trace` only.

mod affinity;
#[cfg(not(loom))]
mod waking;
mod watch;

pub(crate) use affinity::cpus;
#[cfg(not(loom))]
pub(crate) use waking::tune_current_thread;
pub(crate) use watch::{LagWatch, Pinning};
