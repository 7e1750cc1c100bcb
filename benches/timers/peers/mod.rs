//! The peers: each timer implementation behind [`Peer`](crate::Peer).

mod engine;
mod futures_delay;
mod hash_wheel;
mod mutex_heap;
mod tokio_sleep;

pub(crate) use engine::Shardwheel;
pub(crate) use futures_delay::FuturesTimer;
pub(crate) use hash_wheel::HashWheel;
pub(crate) use mutex_heap::MutexHeapTimer;
pub(crate) use tokio_sleep::Tokio;
