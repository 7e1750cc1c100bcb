//! Where timer entries live: a counted pointer ([`SlabArc`]) to a block of a chunk that one
//! thread carves up ([`Allocator`]), or to a block of its own.
//!
//! - `block`: [`SlabArc`] (std's `Arc` without the weak count, its 32-bit count beside the
//!   block's index in its chunk) and the block.
//! - `chunk`: the chunk and its free protocol, told in its module doc; loom models
//!   `slab_chunk_is_freed_once_by_its_last_user`,
//!   `slab_blocks_freed_together_free_each_chunk_once` and
//!   `slab_trim_leaves_its_chunks_behind_while_their_blocks_are_freed` check it.
//! - `allocator`: [`Allocator`], which hands blocks out and trims after a spike.
//! - `discard`: [`Discards`], an engine's freed chunks, whose pages go back to the system at a
//!   quiet moment.

mod allocator;
mod block;
mod chunk;
mod discard;

pub(crate) use allocator::Allocator;
#[cfg(all(test, loom))]
pub(crate) use allocator::Trim;
pub(crate) use block::SlabArc;
pub(crate) use chunk::Frees;
pub(crate) use discard::{DiscardLater, Discards};
