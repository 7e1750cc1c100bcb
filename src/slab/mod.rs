//! Where timer entries live: a counted pointer ([`SlabArc`]) whose block is a block of a chunk
//! that one thread carves up ([`Allocator`]), or a block of its own.
//!
//! A pending timer is one entry of 32 bytes and a count. Malloc rounds a 40-byte block up to
//! 48 (glibc's chunk header, mimalloc's size classes, which step by 16 bytes there), so a
//! block per entry costs 48 bytes whichever allocator the program links. A block of a chunk
//! costs its 40 and nothing more: a 16 KiB chunk holds 408 of them behind a 32-byte header.
//!
//! - `block`: [`SlabArc`] (std's `Arc` without the weak count, its count 32 bits wide beside
//!   the block's index in its chunk) and the block it points at.
//! - `chunk`: the chunk, and [`Allocator`], which hands out its blocks. Any thread frees a
//!   block, alone or with others in [`Frees`] (one push per free stack and one count per run of
//!   a chunk's blocks); the allocator takes the freed blocks back and hands them out again; a
//!   chunk is freed once its allocator has moved on and its last block is freed. The module
//!   explains the protocol; the loom models `slab_chunk_is_freed_once_by_its_last_user`,
//!   `slab_blocks_freed_together_free_each_chunk_once` and
//!   `slab_trim_leaves_its_chunks_behind_while_their_blocks_are_freed` check it.
//!
//! An allocator hands out again the freed blocks of all its chunks, so it holds as many chunks
//! as were needed at once; the engine's statistics report their bytes (`Stats::entry_bytes`).
//! After a spike, a sweep that looks at one chunk per 64 allocations finds them mostly free
//! and the allocator starts afresh (a trim): it leaves its chunks behind and gives them up a
//! few at a time, as it gives all of them up when its engine is dropped. A chunk given up goes
//! back to the system allocator when its last block is freed: a long-lived timer keeps its
//! whole chunk (16 KiB) allocated.

mod allocator;
mod block;
mod chunk;

pub(crate) use allocator::Allocator;
#[cfg(all(test, loom))]
pub(crate) use allocator::Trim;
pub(crate) use block::SlabArc;
pub(crate) use chunk::Frees;
