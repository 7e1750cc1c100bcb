//! Where fired callbacks run: a shard hands each turn's callbacks over as one batch, and this
//! layer runs them, counts them and releases their permits. It imports `sync` and `entry` only.
//!
//! - `executor`: [`Executor`] (the pool, the tick thread, or a user's spawner) and [`Task`].
//! - `relay`: the hand-over of batches to the pool's runners, who share them out.
//! - `run`: running one callback (caught panics, counts, the cap).
//! - `counts`: [`ShardCallbacks`], a shard's counts of callbacks handed over, begun, ended.
//! - `pool`: the rayon pool an engine starts or shares for its callbacks.

mod counts;
mod executor;
mod pool;
mod relay;
mod run;

pub(crate) use counts::ShardCallbacks;
pub use executor::Task;
pub(crate) use executor::{Executor, Spawner};
pub(crate) use pool::CallbackPool;
pub(crate) use relay::{HandOver, Inflight};
#[cfg(all(test, loom))]
pub(crate) use relay::{Job, Relay, Spawn};
pub(crate) use run::in_callback_of;
