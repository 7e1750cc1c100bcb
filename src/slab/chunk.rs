//! Chunks of blocks, and the allocator one thread carves them with.
//!
//! A chunk is one block: a header, then `blocks` blocks of one type. Its allocator (used by one
//! thread at a time) hands out blocks: first free blocks it took back, then blocks of its newest
//! chunk never used, then whatever was freed since, taken whole off the allocator's free stack;
//! only when that is empty too does it start a new chunk.
//!
//! Any thread frees a block: it pushes the block onto its allocator's free stack (a take-all
//! stack, `sync::stack`, which the chunk's header names) and counts one free in the chunk's
//! `live` word. So a freed block of any of the allocator's chunks is handed out again, and the
//! allocator holds no more blocks than were ever live at once.
//!
//! A thread that frees many blocks at once (a shard firing a tick's one-shot timers) gathers them
//! in [`Frees`], which pushes them a chain at a time and counts them a run at a time.
//!
//! The allocator does not count its allocations in `live` one by one, which would touch a shared
//! word on every allocation: it counts them in the header, where only it reads and writes, and adds
//! them to `live` when it gives the chunk up (when it is dropped, or after a trim). So `live`,
//! wrapping, is the frees' negative until then, and the number of live blocks after; whoever brings
//! it to zero (the last freer, or the allocator if nothing is live) frees the chunk. Before the
//! give-up it never reaches zero from above, since a block is freed only after it was allocated. A
//! timer that outlives its engine keeps its own chunk, not the others.

use std::alloc::Layout;
use std::mem;
use std::ptr::{self, NonNull};

use std::mem::ManuallyDrop;

use super::block::{release, Block, SlabArc};
use crate::sync::{alloc, Arc, AtomicUsize, Ordering, TakeAllStack, UnsafeCell};

/// An allocator's free stack: freed blocks of all its chunks, linked through their bodies.
pub(super) type FreeBlocks<T> = TakeAllStack<Block<T>>;

#[repr(C)]
pub(super) struct Header<T> {
    /// The allocations added at the give-up, minus the frees; wrapping (see the module
    /// documentation).
    pub(super) live: AtomicUsize,
    /// Where this chunk's freed blocks go.
    free: Arc<FreeBlocks<T>>,
    /// Blocks of this chunk handed out; the allocator's alone.
    allocated: UnsafeCell<usize>,
    /// How many blocks follow the header.
    blocks: u32,
}

/// A chunk of `blocks` blocks, and where its first block starts.
pub(super) fn layout<T>(blocks: u32) -> (Layout, usize) {
    let Ok(array) = Layout::array::<Block<T>>(blocks as usize) else {
        unreachable!("a chunk's blocks are bounded by `CHUNK_BYTES` or a test's small count")
    };
    let Ok((layout, first)) = Layout::new::<Header<T>>().extend(array) else {
        unreachable!("as above")
    };
    (layout.pad_to_align(), first)
}

/// Bytes from a chunk's start to its block at `index`.
fn offset_of_block<T>(index: u32) -> usize {
    layout::<T>(0).1 + index as usize * mem::size_of::<Block<T>>()
}

/// The block at `index` of `chunk`.
///
/// # Safety
/// `index` is below the chunk's block count.
pub(super) unsafe fn block_at<T>(chunk: NonNull<Header<T>>, index: u32) -> NonNull<Block<T>> {
    // SAFETY: by this function's contract the block lies within the chunk's block.
    unsafe { chunk.byte_add(offset_of_block::<T>(index)) }.cast()
}

/// The chunk a block at `index` belongs to.
///
/// # Safety
/// `block` is a block of a live chunk, at `index`.
pub(super) unsafe fn chunk_of<T>(block: NonNull<Block<T>>, index: u32) -> NonNull<Header<T>> {
    // SAFETY: by this function's contract the chunk starts that many bytes before the block,
    // within the same block.
    unsafe { block.byte_sub(offset_of_block::<T>(index)) }.cast()
}

/// Frees a chunk's block whose value has been dropped; frees the chunk too if that was its last
/// live block and its allocator has given it up.
///
/// # Safety
/// `block` is a block of a live chunk at `index`, its value dropped, its last count given up by
/// the calling thread (released, or seen to be the last).
pub(super) unsafe fn free<T>(block: NonNull<Block<T>>, index: u32) {
    // SAFETY: by this function's contract; the chunk (and so its free stack) is live until
    // this block's free is counted, after the push.
    unsafe {
        let chunk = chunk_of(block, index);
        push_freed(&chunk.as_ref().free, block, block);
        count_freed(chunk, 1);
    }
}

/// Pushes the chain of freed blocks `first`..=`last` onto `stack`.
///
/// # Safety
/// The chain's blocks are free, linked from `first` to `last`, and the calling thread's until
/// this push publishes them; their chunks stay live until it returns (their frees are not yet
/// counted).
unsafe fn push_freed<T>(stack: &FreeBlocks<T>, first: NonNull<Block<T>>, last: NonNull<Block<T>>) {
    stack.push_chain(first.as_ptr(), |top| {
        // SAFETY: the chain is this thread's until the push publishes it.
        unsafe { Block::set_next(last, top) }
    });
}

/// Counts `n` frees of `chunk`'s blocks, pushed onto its free stack already, and frees the
/// chunk if they were its last live blocks and its allocator has given it up.
///
/// # Safety
/// The chunk is live, and the calling thread freed those `n` blocks and has not counted them.
unsafe fn count_freed<T>(chunk: NonNull<Header<T>>, n: usize) {
    // SAFETY: the chunk lives until `live` reaches zero, which these frees have not counted.
    // Only `live` is read through this reference; `allocated` is the allocator's (in an
    // `UnsafeCell`).
    let header = unsafe { chunk.as_ref() };
    // AcqRel: Release so that this thread's push (and every use of the blocks before it) happens
    // before the chunk is freed by whoever brings `live` to zero; Acquire for when that is this
    // thread, so the other freers' pushes and the allocator's writes happen before its free.
    if header.live.fetch_sub(n, Ordering::AcqRel) == n {
        // SAFETY: `live` reached zero: the allocator gave the chunk up and no block is live.
        unsafe { dealloc_chunk(chunk) };
    }
}

/// Letting go of a [`SlabArc`]: the last holder drops the value and frees the block, into its
/// chunk or its own block.
impl<T> SlabArc<T> {
    /// Lets go of the reference as `drop` does; but if it is the last, as seen with a load
    /// rather than a decrement, the value is dropped now and its block, if in a chunk, freed
    /// with the others `frees` gathers (see [`Frees`]).
    pub(crate) fn drop_into(this: Self, frees: &mut Frees<T>) {
        // Acquire: as in `get_mut`: pairs with the Release decrement of every holder that let
        // go, so their uses of the value happen before its drop here. A count of one cannot
        // grow under this reference: a new one is only ever made from an existing one.
        if this.count().load(Ordering::Acquire) != 1 {
            drop(this);
            return;
        }
        let block = ManuallyDrop::new(this).block;
        // SAFETY: this reference holds the last count, given up here; the block goes to `frees`
        // alone.
        unsafe { release(block, |block, index| frees.add(block, index)) };
    }
}

impl<T> Drop for SlabArc<T> {
    fn drop(&mut self) {
        // Release: this holder's uses of the value happen before the last holder drops it.
        if self.count().fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Acquire: pairs with the other holders' Release decrements. A load rather than a
        // fence, as std's `Arc` does under ThreadSanitizer, which does not model fences.
        self.count().load(Ordering::Acquire);
        // SAFETY: this was the last count; a chunk's block is freed at once.
        unsafe { release(self.block, |block, index| free(block, index)) };
    }
}

/// The most runs a [`Frees`] gathers before it frees what it holds: a bound on its buffer, and
/// on how long the blocks wait before their allocator can hand them out again.
const MAX_RUNS: usize = 1024;

/// Freed blocks of chunks, waiting to be freed together. Letting go of a last reference one at a
/// time takes three read-modify-writes (`SlabArc`'s drop decrements the count, then [`free`]
/// pushes the block and counts it off the chunk's `live`); a block let go of into a `Frees`
/// (`SlabArc::drop_into`) takes none of its own: its count is seen to be the last with a load,
/// and [`flush`](Self::flush) pushes a chain per free stack with one compare-and-swap and
/// counts a run of blocks of one chunk with one subtraction.
///
/// The pushes come before the counts: a block waiting here still counts as live in its chunk,
/// so every chunk a chain reaches into, and the chain's stack (which chunk headers hold), stay
/// allocated until the pushes are done.
pub(crate) struct Frees<T> {
    /// A chain per free stack met.
    chains: Vec<Chain<T>>,
    /// Runs of blocks of one chunk, in the order they came.
    runs: Vec<(NonNull<Header<T>>, usize)>,
    /// The chain the last block went to.
    recent: usize,
}

/// Blocks freed to one stack, linked from `first` to `last`.
struct Chain<T> {
    stack: *const FreeBlocks<T>,
    first: NonNull<Block<T>>,
    last: NonNull<Block<T>>,
}

// SAFETY: a `Frees` holds blocks whose values are dropped (free memory its holder alone
// touches) and counts on chunks, which any thread may take; as `SlabArc`, it asks `T: Send +
// Sync` of the values that lived there.
unsafe impl<T: Send + Sync> Send for Frees<T> {}

impl<T> Frees<T> {
    pub(crate) fn new() -> Self {
        Frees {
            chains: Vec::new(),
            runs: Vec::new(),
            recent: 0,
        }
    }

    /// Adds a chunk's block whose value has been dropped, to be freed by the next
    /// [`flush`](Self::flush) (or now, with the others, if the runs are at their bound).
    ///
    /// # Safety
    /// As [`free`], and the block is not freed otherwise.
    pub(super) unsafe fn add(&mut self, block: NonNull<Block<T>>, index: u32) {
        // SAFETY: by this function's contract.
        let chunk = unsafe { chunk_of(block, index) };
        let at = match self.runs.last_mut() {
            // The block before was of this chunk, so went to this chunk's stack.
            Some((last, n)) if *last == chunk => {
                *n += 1;
                self.recent
            }
            _ => {
                if self.runs.len() == MAX_RUNS {
                    self.flush();
                }
                self.runs.push((chunk, 1));
                // SAFETY: the chunk has a block waiting in `runs`, so it is live; only its free
                // stack's address is read.
                let stack = unsafe { Arc::as_ptr(&chunk.as_ref().free) };
                // Nearly always the chain of the block before (the same allocator); else a
                // search of the few stacks this thread frees to.
                let recent = self.recent;
                let found = match self.chains.get(recent) {
                    Some(chain) if chain.stack == stack => Some(recent),
                    _ => self.chains.iter().position(|chain| chain.stack == stack),
                };
                let Some(at) = found else {
                    self.recent = self.chains.len();
                    self.chains.push(Chain {
                        stack,
                        first: block,
                        last: block,
                    });
                    return;
                };
                self.recent = at;
                at
            }
        };
        let chain = &mut self.chains[at];
        // SAFETY: the block is free and this thread's (by this function's contract).
        unsafe { Block::set_next(block, chain.first.as_ptr()) };
        chain.first = block;
    }

    /// Frees every block added (see the type's documentation).
    pub(crate) fn flush(&mut self) {
        for chain in self.chains.drain(..) {
            // SAFETY: the chain was linked by `add`, each block the caller's; the chunks of its
            // blocks, one of which holds the stack, have their frees waiting in `runs`.
            unsafe { push_freed(&*chain.stack, chain.first, chain.last) };
        }
        for (chunk, n) in self.runs.drain(..) {
            // SAFETY: live until its runs are counted; this thread freed these `n` blocks. A
            // chunk with several runs is counted once per run, each run keeping it live for
            // the ones after.
            unsafe { count_freed(chunk, n) };
        }
    }
}

impl<T> Drop for Frees<T> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// # Safety
/// `chunk` is no one's any more: given up, with no live block.
pub(super) unsafe fn dealloc_chunk<T>(chunk: NonNull<Header<T>>) {
    // SAFETY: the chunk is live until the `dealloc` below; `blocks` was written by `new_chunk`.
    let blocks = unsafe { chunk.as_ref() }.blocks;
    // SAFETY: the header was written by `new_chunk`, and is dropped once, here (which lets go
    // of the free stack); the block was allocated there with this layout.
    unsafe {
        ptr::drop_in_place(chunk.as_ptr());
        alloc::dealloc(chunk.as_ptr().cast(), layout::<T>(blocks).0);
    }
}

pub(super) fn new_chunk<T>(blocks: u32, free: Arc<FreeBlocks<T>>) -> NonNull<Header<T>> {
    let layout = layout::<T>(blocks).0;
    // SAFETY: the layout has a header, so it is not zero-sized.
    let raw = unsafe { alloc::alloc(layout) }.cast::<Header<T>>();
    let Some(chunk) = NonNull::new(raw) else {
        std::alloc::handle_alloc_error(layout)
    };
    let header = Header {
        live: AtomicUsize::new(0),
        free,
        allocated: UnsafeCell::new(0),
        blocks,
    };
    // SAFETY: a fresh block of the header's layout, this thread's alone.
    unsafe { chunk.as_ptr().write(header) };
    chunk
}

/// Gives up `chunk`: adds the blocks its allocator handed out to `live`, and frees the chunk if
/// none of them is live any more (else its last freer does).
///
/// # Safety
/// The chunk is live and not given up before, no block of it will be handed out again, and the
/// calling thread is its allocator's user.
pub(super) unsafe fn give_up_chunk<T>(chunk: NonNull<Header<T>>) {
    // SAFETY: the chunk is live until `live` reaches zero, which needs the addition below;
    // this thread is its allocator's user.
    let allocated = unsafe { handed_out(chunk) };
    // SAFETY: as above.
    let live = unsafe { chunk.as_ref() }
        .live
        // AcqRel: as in `free`: Release so this thread's writes to the chunk happen before its
        // free by a later freer, Acquire for when that is this thread.
        .fetch_add(allocated, Ordering::AcqRel)
        .wrapping_add(allocated);
    if live == 0 {
        // SAFETY: given up just now, and no block is live.
        unsafe { dealloc_chunk(chunk) };
    }
}

/// How many blocks of `chunk` its allocator has handed out.
///
/// # Safety
/// The chunk is live, and the calling thread is its allocator's user.
pub(super) unsafe fn handed_out<T>(chunk: NonNull<Header<T>>) -> usize {
    // SAFETY: by this function's contract; `allocated` is the allocator's alone.
    unsafe { chunk.as_ref() }
        .allocated
        .with_mut(|allocated| unsafe { *allocated })
}

/// Counts one more block of `chunk` handed out.
///
/// # Safety
/// The chunk is live and not given up, and the calling thread is its allocator's user.
pub(super) unsafe fn count_handed_out<T>(chunk: NonNull<Header<T>>) {
    // SAFETY: by this function's contract.
    unsafe { chunk.as_ref() }
        .allocated
        .with_mut(|allocated| unsafe { *allocated = (*allocated).wrapping_add(1) });
}
