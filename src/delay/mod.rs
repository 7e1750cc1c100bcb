//! The delay queue: values held until their deadlines, then yielded as a stream, expiry driven
//! by the engine's timers. The top layer: it uses the engine through `engine::EngineLink`.
//!
//! - `queue`: [`DelayQueue`] itself: inserting, removing, resetting, polling.
//! - `slab`: where the values live: a vector of slots with a free list, which shrinks as the
//!   queue empties.
//! - `inbox`: what the engine's callbacks share with the queue: the records of fired timers
//!   and the waker of the task polling the queue.
//! - `key`: [`Key`], [`Expired`], and the errors [`KeyError`] and [`InsertError`].

mod inbox;
mod key;
mod queue;
mod slab;

pub use key::{Expired, InsertError, Key, KeyError};
pub use queue::DelayQueue;
