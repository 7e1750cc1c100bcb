//! [`Allocator`]: hands out the blocks of its chunks, one thread at a time, and trims them.
//!
//! An allocator whose chunks are mostly free for a while (after a spike) gives them up without
//! being dropped: a sweep, one chunk per few dozen allocations, adds up their live blocks, and
//! after two passes that found fewer than a quarter of the blocks live it starts afresh (a trim).
//! It empties its chain of free blocks, takes a new free stack (the old one, and the blocks on it,
//! belong to the chunks left behind), and gives the old chunks up a few per step of the sweep.
//! Each is then freed as at the give-up: now, if none of its blocks is live, else by the freer of
//! its last. No block of a chunk left behind is handed out again, so a chunk's `live` takes no
//! allocation after its give-up.

use std::mem;
use std::ptr::{self, NonNull};
use std::sync::atomic::AtomicUsize as StdAtomicUsize;

use super::block::{Block, SlabArc, ALONE};
use super::chunk::{
    block_at, chunk_of, count_handed_out, give_up_chunk, handed_out, layout, new_chunk, FreeBlocks,
    Header,
};
use crate::sync::{prefetch, Arc, Ordering, TakeAllStack, UnsafeCell};

/// The size a chunk aims at: 16 KiB, 408 blocks of 40 bytes behind a 32-byte header.
const CHUNK_BYTES: usize = 16 * 1024;

/// A trim takes a sweep's count of live blocks below `1 / TRIM_SHARE` of the blocks held, this
/// many sweeps in a row: so a burst refilling the chunks, whose first sweep finds them nearly
/// empty, does not let them go just before it needs them.
const LOW_SWEEPS: u32 = 2;

/// See [`LOW_SWEEPS`].
const TRIM_SHARE: usize = 4;

/// Chunks given up per step of the sweep after a trim: the trim's cost (a system allocator's
/// free per chunk), spread over the allocations after it rather than paid at once.
const RETIRE_PER_STEP: usize = 32;

/// When an allocator trims (see [`Sweep`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Trim {
    /// The fewest chunks held for a trim: fewer are not worth a new start.
    pub(crate) above: usize,
    /// Allocations per step of the sweep; a step loads one chunk's header.
    pub(crate) every: u32,
}

impl Trim {
    /// The engine's: from 64 chunks (1 MiB of 16 KiB chunks) on, a step every 64 allocations.
    pub(crate) const DEFAULT: Trim = Trim {
        above: 64,
        every: 64,
    };
}

/// The allocator's state.
struct Carver<T> {
    /// Every chunk not yet given up; the last is the newest.
    chunks: Vec<NonNull<Header<T>>>,
    /// The blocks freed into this allocator's chunks.
    free: Arc<FreeBlocks<T>>,
    /// Blocks per new chunk.
    blocks: u32,
    /// The next block of the newest chunk never handed out.
    unused: u32,
    /// Free blocks taken off `free`, linked through their bodies.
    reuse: *mut Block<T>,
    /// Chunks left behind by a trim, to give up a few at a time.
    retiring: Vec<NonNull<Header<T>>>,
    /// Whether and when to trim (see [`Sweep`]).
    sweep: Sweep,
}

/// The sweep that decides a trim: after a spike, an allocator whose chunks are mostly free
/// starts afresh and gives the old ones up, `RETIRE_PER_STEP` a step, so that those with no
/// live block go back to the system allocator then, and the others with their last live block
/// (see the module documentation). Every `trim.every` allocations it adds up one more chunk's
/// live blocks; at the end of a pass over the chunks it compares the sum with the blocks held.
struct Sweep {
    trim: Trim,
    /// Allocations until the next step.
    countdown: u32,
    /// The next chunk to look at.
    next: usize,
    /// Live blocks counted in this pass so far.
    live: usize,
    /// Passes in a row that found the chunks mostly free.
    low: u32,
}

impl Sweep {
    fn new(trim: Trim) -> Self {
        let trim = Trim {
            above: trim.above.max(1),
            every: trim.every.max(1),
        };
        Sweep {
            trim,
            countdown: trim.every,
            next: 0,
            live: 0,
            low: 0,
        }
    }

    /// Starts the next pass from the first chunk.
    fn restart(&mut self) {
        self.next = 0;
        self.live = 0;
    }
}

/// Hands out blocks of chunks, one thread at a time (see the module documentation).
pub(crate) struct Allocator<T> {
    carver: UnsafeCell<Carver<T>>,
    /// Chunks not yet given up, for the statistics; written by the allocator's user alone. A
    /// std atomic even under loom: a statistic, no part of the protocol the models check.
    held: StdAtomicUsize,
    /// The size of a chunk's block.
    chunk_bytes: usize,
}

// SAFETY: the state is reached only under `alloc`'s and `give_up`'s contract (no two
// accesses race); the blocks it hands out are `SlabArc`s, `Send` and `Sync` as `T` allows.
unsafe impl<T: Send + Sync> Send for Allocator<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Allocator<T> {}

impl<T> Allocator<T> {
    /// An allocator whose chunks are about 16 KiB each.
    pub(crate) fn new() -> Self {
        let first = layout::<T>(0).1;
        let fit = (CHUNK_BYTES.saturating_sub(first) / mem::size_of::<Block<T>>()).max(1);
        Allocator::with_blocks(u32::try_from(fit).unwrap_or(ALONE - 1))
    }

    /// An allocator whose chunks have `blocks` blocks each (at least one).
    pub(crate) fn with_blocks(blocks: u32) -> Self {
        Allocator::with_settings(blocks, Trim::DEFAULT)
    }

    /// An allocator whose chunks have `blocks` blocks each (at least one), trimming as `trim`
    /// says (see [`Sweep`]).
    pub(crate) fn with_settings(blocks: u32, trim: Trim) -> Self {
        let blocks = blocks.clamp(1, ALONE - 1);
        Allocator {
            carver: UnsafeCell::new(Carver {
                chunks: Vec::new(),
                free: Arc::new(TakeAllStack::new()),
                blocks,
                unused: 0,
                reuse: ptr::null_mut(),
                retiring: Vec::new(),
                sweep: Sweep::new(trim),
            }),
            held: StdAtomicUsize::new(0),
            chunk_bytes: layout::<T>(blocks).0.size(),
        }
    }

    /// `value` in a free block of one of the allocator's chunks, or of a new one.
    ///
    /// # Safety
    /// Every earlier call of `alloc` or `give_up` on this allocator happens before this one
    /// (one thread at a time, each handing over to the next with a Release and an Acquire).
    pub(crate) unsafe fn alloc(&self, value: T) -> SlabArc<T> {
        // SAFETY: by this function's contract this thread alone touches the state.
        self.carver
            .with_mut(|carver| unsafe { (*carver).alloc(value, &self.held) })
    }

    /// Counts an allocation its user served without it (an entry reused whole), so that the
    /// sweep deciding a trim goes on while the chunks are not needed (see [`Sweep`]).
    ///
    /// # Safety
    /// As [`alloc`](Self::alloc).
    pub(crate) unsafe fn served_elsewhere(&self) {
        // SAFETY: by this function's contract this thread alone touches the state.
        self.carver
            .with_mut(|carver| unsafe { (*carver).count_allocation(&self.held) });
    }

    /// Gives up every chunk: each is freed once its last live block is. A later `alloc` starts
    /// afresh.
    ///
    /// # Safety
    /// As [`alloc`](Self::alloc).
    pub(crate) unsafe fn give_up(&self) {
        // SAFETY: by this function's contract this thread alone touches the state.
        self.carver
            .with_mut(|carver| unsafe { (*carver).give_up(&self.held) });
    }

    /// The bytes of the chunks the allocator holds (not yet given up, the ones a trim left
    /// behind included), read from any thread: a snapshot for the statistics.
    pub(crate) fn bytes(&self) -> usize {
        // Relaxed: a snapshot; nothing is read through it.
        self.held.load(Ordering::Relaxed) * self.chunk_bytes
    }
}

impl<T> Drop for Allocator<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no other thread can be in `alloc` or `give_up`.
        unsafe { self.give_up() };
    }
}

impl<T> Carver<T> {
    /// `value` in a free block; a new chunk, if one is started, is counted in `held`.
    fn alloc(&mut self, value: T, held: &StdAtomicUsize) -> SlabArc<T> {
        self.count_allocation(held);
        let (block, index) = self.next_block(held);
        // SAFETY: the block is free and this thread's (see `next_block`).
        unsafe {
            Block::init(block, index, value);
            SlabArc::from_block(block)
        }
    }

    /// A free block, counted as handed out in its chunk.
    fn next_block(&mut self, held: &StdAtomicUsize) -> (NonNull<Block<T>>, u32) {
        loop {
            if let Some(block) = NonNull::new(self.reuse) {
                // SAFETY: a block of the reuse chain is free and this thread's: it was taken off
                // the stack whole, and its link and index were published by the push. Its
                // chunk has not been given up (`give_up` empties the chain), so it is live.
                unsafe {
                    self.reuse = Block::next(block);
                    // Start loading the next free block now, an allocation before it is needed:
                    // it was freed on another thread, most likely on another core.
                    prefetch(self.reuse);
                    let index = Block::index(block);
                    count_handed_out(chunk_of(block, index));
                    return (block, index);
                }
            }
            if let Some(&newest) = self.chunks.last() {
                if self.unused < self.blocks {
                    let index = self.unused;
                    self.unused += 1;
                    // SAFETY: `index` is below the chunk's block count, no block at or above
                    // `unused` has been handed out, and the chunk is live (not given up).
                    unsafe {
                        count_handed_out(newest);
                        return (block_at(newest, index), index);
                    }
                }
            }
            self.reuse = self.free.take_all();
            if self.reuse.is_null() {
                self.chunks.push(new_chunk(self.blocks, self.free.clone()));
                self.count_held(held);
                self.unused = 0;
            }
        }
    }

    /// Counts an allocation towards the sweep's next step.
    fn count_allocation(&mut self, held: &StdAtomicUsize) {
        self.sweep.countdown -= 1;
        if self.sweep.countdown == 0 {
            self.sweep.countdown = self.sweep.trim.every;
            self.step(held);
        }
    }

    /// One step of the sweep (see [`Sweep`]): gives up some of the chunks a trim left behind,
    /// if any; else adds up the next chunk's live blocks and, at the end of a pass, trims if the
    /// chunks were mostly free for `LOW_SWEEPS` passes in a row.
    fn step(&mut self, held: &StdAtomicUsize) {
        if !self.retiring.is_empty() {
            let from = self.retiring.len().saturating_sub(RETIRE_PER_STEP);
            for chunk in self.retiring.drain(from..) {
                // SAFETY: a chunk left behind by a trim is live (not yet given up), and this
                // thread is its allocator's user.
                unsafe { give_up_chunk(chunk) };
            }
            self.count_held(held);
            return;
        }
        let sweep = &mut self.sweep;
        let Some(&chunk) = self.chunks.get(sweep.next) else {
            sweep.restart();
            return;
        };
        if self.chunks.len() < sweep.trim.above {
            sweep.restart();
            sweep.low = 0;
            return;
        }
        // SAFETY: a chunk on the list is not given up, so it is live, and this thread is its
        // allocator's user.
        let allocated = unsafe { handed_out(chunk) };
        // Relaxed: a glance that decides nothing about this chunk's memory, only whether to
        // start afresh (the give-ups after it have their own ordering). A free missed here
        // counts its block as live, which only puts off a trim. As in `give_up_chunk`, the
        // handed-out count plus the wrapping `live` is the number of live blocks.
        // SAFETY: as above.
        let live = unsafe { chunk.as_ref() }.live.load(Ordering::Relaxed);
        sweep.live += allocated.wrapping_add(live);
        sweep.next += 1;
        if sweep.next < self.chunks.len() {
            return;
        }
        let held_blocks = self.chunks.len() * self.blocks as usize;
        if sweep.live.saturating_mul(TRIM_SHARE) < held_blocks {
            sweep.low += 1;
        } else {
            sweep.low = 0;
        }
        sweep.restart();
        if sweep.low >= LOW_SWEEPS {
            sweep.low = 0;
            self.start_afresh();
        }
    }

    /// Leaves every chunk behind, to be given up: no block of theirs is handed out again, and the
    /// next allocation starts a new chunk.
    fn start_afresh(&mut self) {
        self.sweep.restart();
        if self.chunks.is_empty() {
            return;
        }
        self.reuse = ptr::null_mut();
        self.retiring.append(&mut self.chunks);
        // The blocks on the old stack belong to chunks left behind (and, once they are given
        // up, perhaps freed): a later `alloc` must not take them.
        self.free = Arc::new(TakeAllStack::new());
    }

    /// Gives up every chunk, the ones left behind by a trim included.
    fn give_up(&mut self, held: &StdAtomicUsize) {
        self.start_afresh();
        for chunk in self.retiring.drain(..) {
            // SAFETY: a chunk left behind is live until given up, here, once.
            unsafe { give_up_chunk(chunk) };
        }
        self.count_held(held);
    }

    /// Publishes how many chunks the allocator holds.
    fn count_held(&self, held: &StdAtomicUsize) {
        // Relaxed: a statistic; one writer, the allocator's user.
        held.store(self.chunks.len() + self.retiring.len(), Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
