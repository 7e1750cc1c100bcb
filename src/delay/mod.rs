//! The delay queue: values held until their deadlines, then yielded as a stream, expiry driven
//! by the engine's timers. The top layer: it uses the engine through `engine::EngineLink`.
//!
//! - `queue`: [`DelayQueue`] itself: its state, construction, size and storage.
//! - `insert`: inserting, removing and resetting values, and scheduling their timers.
//! - `expiry`: taking in the values of fired timers and yielding them, soonest first.
//! - `slab`: where the values live: a vector of slots with a free list, which shrinks as the
//!   queue empties.
//! - `inbox`: what the engine's callbacks share with the queue: the records of fired timers
//!   and the waker of the task polling the queue.
//! - `key`: [`Key`], [`Expired`], and the errors [`KeyError`] and [`InsertError`].

mod expiry;
mod inbox;
mod insert;
mod key;
mod queue;
mod slab;

pub use key::{Expired, InsertError, Key, KeyError};
pub use queue::DelayQueue;
