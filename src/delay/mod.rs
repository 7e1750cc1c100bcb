//! The delay queue: values held until their deadlines, then yielded as a stream. The top layer:
//! it holds the engine's shared state (`engine::EngineShared`), for one sleep per queue.
//!
//! - `queue`: [`DelayQueue`] itself: its state, construction, size and storage.
//! - `insert`: inserting, removing and resetting values, and arming the queue's one timer.
//! - `expiry`: taking the values due out of the wheel and yielding them, soonest first.
//! - `wheel`: the queue's own timing wheel, where values wait for their ticks.
//! - `values`: where the values live: a vector with a free list, which shrinks as the
//!   queue empties, keeping what a fill used if it filled a quarter of it.
//! - `key`: [`Key`], [`Expired`], and [`KeyError`].

mod expiry;
mod insert;
mod key;
mod queue;
mod values;
mod wheel;

pub use key::{Expired, Key, KeyError};
pub use queue::DelayQueue;
