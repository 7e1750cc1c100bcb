//! Chunks of blocks, and the allocator one thread carves them with.
//!
//! A chunk is a header, then `blocks` blocks of one type. Its allocator (one thread at a time)
//! hands out blocks it took back, then the newest chunk's unused ones, then the whole free
//! stack; only then a new chunk. Any thread frees a block: it pushes it onto the allocator's
//! take-all free stack (`sync::stack`, named by the chunk's header) and counts one free in the
//! chunk's `live` word. [`Frees`] batches many frees (a shard firing a tick).
//!
//! The allocator counts its allocations in the header, its alone, and adds them to `live` when
//! it gives the chunk up (dropped, or after a trim). So `live`, wrapping, is minus the frees
//! until then and the live count after; whoever brings it to zero (the last freer, or the
//! allocator if none is live) frees the chunk. Before the give-up it never reaches zero.

use std::alloc::Layout;
use std::mem;
use std::ptr::{self, NonNull};

use std::mem::ManuallyDrop;

use super::block::{free_block, Block, SlabArc};
use super::discard;
use crate::sync::{alloc, Arc, AtomicUsize, Ordering, TakeAllStack, UnsafeCell};

/// An allocator's free stack: freed blocks of all its chunks, linked through their bodies.
pub(super) type FreeBlocks<T> = TakeAllStack<Block<T>>;

#[repr(C)]
pub(super) struct Header<T> {
    /// The allocations added at the give-up, minus the frees; wrapping (see the module doc).
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
/// the calling thread (dropped, or seen to be the last).
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

/// Counts `n` frees of `chunk`'s blocks, already pushed, and frees the chunk if they were its
/// last live blocks and its allocator gave it up.
///
/// # Safety
/// The chunk is live, and the calling thread freed those `n` blocks and has not counted them.
unsafe fn count_freed<T>(chunk: NonNull<Header<T>>, n: usize) {
    // SAFETY: the chunk lives until `live` reaches zero, which these frees have not counted;
    // only `live` is read through this reference.
    let header = unsafe { chunk.as_ref() };
    // AcqRel: Release so this thread's push and uses happen before the chunk's free by
    // whoever zeroes `live`; Acquire for when that is this thread.
    if header.live.fetch_sub(n, Ordering::AcqRel) == n {
        // SAFETY: `live` reached zero: the allocator gave the chunk up and no block is live.
        unsafe { dealloc_chunk(chunk) };
    }
}

/// Letting go of a [`SlabArc`]: the last holder drops the value and frees the block.
impl<T> SlabArc<T> {
    /// As `drop`; but if this is the last reference, seen with a load, the value is dropped
    /// now and a chunk block is freed with the others `frees` gathers.
    pub(crate) fn drop_into(this: Self, frees: &mut Frees<T>) {
        // Acquire: as in `get_mut`, pairs with every holder's Release decrement. A count of one
        // cannot grow: new references come only from existing ones.
        if this.count().load(Ordering::Acquire) != 1 {
            drop(this);
            return;
        }
        let block = ManuallyDrop::new(this).block;
        // SAFETY: this reference holds the last count; the block goes to `frees` alone.
        unsafe { free_block(block, |block, index| frees.add(block, index)) };
    }
}

impl<T> Drop for SlabArc<T> {
    fn drop(&mut self) {
        // Release: this holder's uses of the value happen before the last holder drops it.
        if self.count().fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Acquire: pairs with the other holders' Release decrements (a load, not a fence, as
        // std's `Arc` under ThreadSanitizer, which does not model fences).
        self.count().load(Ordering::Acquire);
        // SAFETY: this was the last count; a chunk's block is freed at once.
        unsafe { free_block(self.block, |block, index| free(block, index)) };
    }
}

/// The most runs a [`Frees`] gathers before it flushes: bounds its buffer and the wait.
const MAX_RUNS: usize = 1024;

/// Freed blocks of chunks, freed together: a block let go of here (`SlabArc::drop_into`)
/// costs a load, and [`flush`](Self::flush) pushes a chain per free stack with one CAS and
/// counts a run of one chunk's blocks with one subtraction. Pushes come before counts, so
/// every chunk a chain reaches, and its stack, stay allocated until the pushes are done.
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

// SAFETY: a `Frees` holds free memory its holder alone touches and counts on chunks, which
// any thread may take; as `SlabArc`, it asks `T: Send + Sync`.
unsafe impl<T: Send + Sync> Send for Frees<T> {}

impl<T> Frees<T> {
    pub(crate) fn new() -> Self {
        Frees {
            chains: Vec::new(),
            runs: Vec::new(),
            recent: 0,
        }
    }

    /// Adds a chunk's block whose value has been dropped, freed by the next
    /// [`flush`](Self::flush) (or now, if the runs are at their bound).
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
                // SAFETY: the chunk has a block waiting in `runs`, so it is live; only its
                // free stack's address is read.
                let stack = unsafe { Arc::as_ptr(&chunk.as_ref().free) };
                // Nearly always the last block's chain; else a search of a few stacks.
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
            // SAFETY: live until its runs are counted; this thread freed these `n` blocks; a
            // chunk with several runs stays live for the later ones.
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
    // of the free stack); the block was allocated there with this layout, and no block of it
    // is live. Its pages go back to the system as `discard` says.
    unsafe {
        ptr::drop_in_place(chunk.as_ptr());
        discard::free_chunk(chunk.as_ptr().cast(), layout::<T>(blocks).0);
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

/// Gives up `chunk`: adds its handed-out blocks to `live`, and frees it if none is live.
///
/// # Safety
/// The chunk is live and not given up before, no block of it will be handed out again, and the
/// calling thread is its allocator's user.
pub(super) unsafe fn give_up_chunk<T>(chunk: NonNull<Header<T>>) {
    // SAFETY: live until `live` reaches zero, which needs the addition below; this thread is
    // its allocator's user.
    let allocated = unsafe { handed_out(chunk) };
    // SAFETY: as above.
    let live = unsafe { chunk.as_ref() }
        .live
        // AcqRel: as in `free`.
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
