//! [`Allocator`]: hands out the blocks of its chunks, one thread at a time, and trims them.
//!
//! A trim: when a [`Census`] finds the chunks mostly free, the allocator starts afresh with a new
//! free stack (the old one belongs to the chunks left behind) and gives the old chunks up a few
//! per step, each freed as at any give-up. No block of a chunk left behind is handed out again,
//! so its `live` takes no allocation after the give-up.

use std::mem;
use std::ptr::{self, NonNull};
use std::sync::atomic::AtomicUsize as StdAtomicUsize;

use super::block::{Block, SlabArc, ALONE};
use super::chunk::{
    block_at, chunk_of, count_handed_out, give_up_chunk, handed_out, layout, new_chunk, FreeBlocks,
    Header,
};
use crate::sync::{prefetch, Arc, Ordering, TakeAllStack, UnsafeCell};

/// The size a chunk aims at: large enough that the pages it discards when freed (see
/// `chunk::dealloc_chunk`) are nearly all of it, the two it shares with its neighbours aside.
const CHUNK_BYTES: usize = 64 * 1024;

/// Passes in a row that must find under `1 / TRIM_SHARE` of the blocks live for a trim, so a
/// refilling burst does not let chunks go just before it needs them.
const LOW_SWEEPS: u32 = 2;

/// See [`LOW_SWEEPS`].
const TRIM_SHARE: usize = 4;

/// Chunks given up per census step after a trim, spreading the trim's cost.
const GIVE_UP_PER_STEP: usize = 32;

/// When an allocator trims (see [`Census`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Trim {
    /// The fewest chunks held for a trim.
    pub(crate) above: usize,
    /// Allocations per step of the census; a step loads one chunk's header.
    pub(crate) every: u32,
}

impl Trim {
    /// The engine's settings.
    pub(crate) const DEFAULT: Trim = Trim {
        above: 16,
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
    left_behind: Vec<NonNull<Header<T>>>,
    /// Whether and when to trim (see [`Census`]).
    census: Census,
}

/// The census that decides a trim: every `trim.every` allocations it adds up one more chunk's
/// live blocks, and at the end of a pass compares the sum with the blocks held.
struct Census {
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

impl Census {
    fn new(trim: Trim) -> Self {
        let trim = Trim {
            above: trim.above.max(1),
            every: trim.every.max(1),
        };
        Census {
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
    /// Chunks not yet given up, for the statistics; one writer. A std atomic even under loom:
    /// no part of the modelled protocol.
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
    /// An allocator whose chunks are about [`CHUNK_BYTES`] each.
    pub(crate) fn new() -> Self {
        let first = layout::<T>(0).1;
        let fit = (CHUNK_BYTES.saturating_sub(first) / mem::size_of::<Block<T>>()).max(1);
        Allocator::with_blocks(u32::try_from(fit).unwrap_or(ALONE - 1))
    }

    /// An allocator whose chunks have `blocks` blocks each (at least one).
    pub(crate) fn with_blocks(blocks: u32) -> Self {
        Allocator::with_settings(blocks, Trim::DEFAULT)
    }

    /// As [`with_blocks`](Self::with_blocks), trimming as `trim` says.
    pub(crate) fn with_settings(blocks: u32, trim: Trim) -> Self {
        let blocks = blocks.clamp(1, ALONE - 1);
        Allocator {
            carver: UnsafeCell::new(Carver {
                chunks: Vec::new(),
                free: Arc::new(TakeAllStack::new()),
                blocks,
                unused: 0,
                reuse: ptr::null_mut(),
                left_behind: Vec::new(),
                census: Census::new(trim),
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

    /// Counts an allocation served without a block (an entry reused whole), so the census goes
    /// on.
    ///
    /// # Safety
    /// As [`alloc`](Self::alloc).
    pub(crate) unsafe fn served_elsewhere(&self) {
        // SAFETY: by this function's contract this thread alone touches the state.
        self.carver
            .with_mut(|carver| unsafe { (*carver).count_allocation(&self.held) });
    }

    /// Gives up every chunk, each freed once its last live block is; a later `alloc` starts
    /// afresh.
    ///
    /// # Safety
    /// As [`alloc`](Self::alloc).
    pub(crate) unsafe fn give_up(&self) {
        // SAFETY: by this function's contract this thread alone touches the state.
        self.carver
            .with_mut(|carver| unsafe { (*carver).give_up(&self.held) });
    }

    /// The bytes of the chunks held (a trim's leftovers included): a snapshot for the stats.
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
                // SAFETY: a reuse-chain block is free and this thread's (taken off the stack
                // whole, its link and index published by the push); its chunk is not given up
                // (`give_up` empties the chain), so it is live.
                unsafe {
                    self.reuse = Block::next(block);
                    // Prefetch the next free block, likely freed on another cpu.
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

    /// Counts an allocation towards the census's next step.
    fn count_allocation(&mut self, held: &StdAtomicUsize) {
        self.census.countdown -= 1;
        if self.census.countdown == 0 {
            self.census.countdown = self.census.trim.every;
            self.step(held);
        }
    }

    /// One census step: gives up some chunks a trim left behind, if any; else adds up the next
    /// chunk's live blocks and trims at a pass's end after `LOW_SWEEPS` low passes.
    fn step(&mut self, held: &StdAtomicUsize) {
        if !self.left_behind.is_empty() {
            let from = self.left_behind.len().saturating_sub(GIVE_UP_PER_STEP);
            for chunk in self.left_behind.drain(from..) {
                // SAFETY: a chunk left behind by a trim is live (not yet given up), and this
                // thread is its allocator's user.
                unsafe { give_up_chunk(chunk) };
            }
            self.count_held(held);
            return;
        }
        let census = &mut self.census;
        let Some(&chunk) = self.chunks.get(census.next) else {
            census.restart();
            return;
        };
        if self.chunks.len() < census.trim.above {
            census.restart();
            census.low = 0;
            return;
        }
        // SAFETY: a chunk on the list is not given up, so it is live, and this thread is its
        // allocator's user.
        let allocated = unsafe { handed_out(chunk) };
        // Relaxed: a glance that only decides whether to start afresh (give-ups order their own
        // memory); a missed free only puts off a trim. Handed-out plus wrapping `live` is the
        // live count, as in `give_up_chunk`.
        // SAFETY: as above.
        let live = unsafe { chunk.as_ref() }.live.load(Ordering::Relaxed);
        census.live += allocated.wrapping_add(live);
        census.next += 1;
        if census.next < self.chunks.len() {
            return;
        }
        let held_blocks = self.chunks.len() * self.blocks as usize;
        if census.live.saturating_mul(TRIM_SHARE) < held_blocks {
            census.low += 1;
        } else {
            census.low = 0;
        }
        census.restart();
        if census.low >= LOW_SWEEPS {
            census.low = 0;
            self.start_afresh();
        }
    }

    /// Leaves every chunk behind, to be given up; the next allocation starts a new chunk.
    fn start_afresh(&mut self) {
        self.census.restart();
        if self.chunks.is_empty() {
            return;
        }
        self.reuse = ptr::null_mut();
        self.left_behind.append(&mut self.chunks);
        // The old stack's blocks belong to chunks left behind: a later `alloc` must not take them.
        self.free = Arc::new(TakeAllStack::new());
    }

    /// Gives up every chunk, the ones left behind by a trim included.
    fn give_up(&mut self, held: &StdAtomicUsize) {
        self.start_afresh();
        for chunk in self.left_behind.drain(..) {
            // SAFETY: a chunk left behind is live until given up, here, once.
            unsafe { give_up_chunk(chunk) };
        }
        self.count_held(held);
    }

    /// Publishes how many chunks the allocator holds.
    fn count_held(&self, held: &StdAtomicUsize) {
        // Relaxed: a statistic; one writer, the allocator's user.
        held.store(
            self.chunks.len() + self.left_behind.len(),
            Ordering::Relaxed,
        );
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
