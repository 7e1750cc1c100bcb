//! Chunks of slots, and the allocator one thread carves them with.
//!
//! A chunk is one block: a header, then `slots` slots of one type. Its allocator (used by one
//! thread at a time) hands out slots: first free slots it took back, then slots of its newest
//! chunk never used, then whatever was freed since, taken whole off the allocator's free stack;
//! only when that is empty too does it start a new chunk.
//!
//! Any thread frees a slot: it pushes the slot onto its allocator's free stack (a take-all
//! stack, `sync::stack`, which the chunk's header names) and counts one free in the chunk's
//! `live` word. So a freed slot of any of the allocator's chunks is handed out again, and the
//! allocator holds no more slots than were ever live at once.
//!
//! A thread that frees many slots at once (a shard firing a tick's one-shot timers) gathers them
//! in [`Frees`], which pushes them a chain at a time and counts them a run at a time.
//!
//! The allocator does not count its allocations in `live` one by one, which would touch a shared
//! word on every allocation: it counts them in the header, where only it reads and writes, and adds
//! them to `live` when it gives the chunk up (when it is dropped, or after a trim). So `live`,
//! wrapping, is the frees' negative until then, and the number of live slots after; whoever brings
//! it to zero (the last freer, or the allocator if nothing is live) frees the chunk. Before the
//! give-up it never reaches zero from above, since a slot is freed only after it was allocated. A
//! timer that outlives its engine keeps its own chunk, not the others.
//!
//! An allocator whose chunks are mostly free for a while (after a spike) gives them up without
//! being dropped: a sweep, one chunk per few dozen allocations, adds up their live slots, and
//! after two passes that found fewer than a quarter of the slots live it starts afresh (a trim).
//! It empties its chain of free slots, takes a new free stack (the old one, and the slots on it,
//! belong to the chunks left behind), and gives the old chunks up a few per step of the sweep.
//! Each is then freed as at the give-up: now, if none of its slots is live, else by the freer of
//! its last. No slot of a chunk left behind is handed out again, so a chunk's `live` takes no
//! allocation after its give-up.

use std::alloc::Layout;
use std::mem;
use std::ptr::{self, NonNull};
use std::sync::atomic::AtomicUsize as StdAtomicUsize;

use super::slot::{SlabArc, Slot, ALONE};
use crate::sync::{alloc, prefetch, Arc, AtomicUsize, Ordering, TakeAllStack, UnsafeCell};

/// The size a chunk aims at: 16 KiB, 408 slots of 40 bytes behind a 32-byte header.
const CHUNK_BYTES: usize = 16 * 1024;

/// A trim takes a sweep's count of live slots below `1 / TRIM_SHARE` of the slots held, this
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

/// An allocator's free stack: freed slots of all its chunks, linked through their bodies.
type FreeSlots<T> = TakeAllStack<Slot<T>>;

#[repr(C)]
struct Header<T> {
    /// The allocations added at the give-up, minus the frees; wrapping (see the module
    /// documentation).
    live: AtomicUsize,
    /// Where this chunk's freed slots go.
    free: Arc<FreeSlots<T>>,
    /// Slots of this chunk handed out; the allocator's alone.
    allocated: UnsafeCell<usize>,
    /// How many slots follow the header.
    slots: u32,
}

/// A chunk of `slots` slots, and where its first slot starts.
fn layout<T>(slots: u32) -> (Layout, usize) {
    let Ok(array) = Layout::array::<Slot<T>>(slots as usize) else {
        unreachable!("a chunk's slots are bounded by `CHUNK_BYTES` or a test's small count")
    };
    let Ok((layout, first)) = Layout::new::<Header<T>>().extend(array) else {
        unreachable!("as above")
    };
    (layout.pad_to_align(), first)
}

/// Bytes from a chunk's start to its slot at `index`.
fn offset_of_slot<T>(index: u32) -> usize {
    layout::<T>(0).1 + index as usize * mem::size_of::<Slot<T>>()
}

/// The slot at `index` of `chunk`.
///
/// # Safety
/// `index` is below the chunk's slot count.
unsafe fn slot_at<T>(chunk: NonNull<Header<T>>, index: u32) -> NonNull<Slot<T>> {
    // SAFETY: by this function's contract the slot lies within the chunk's block.
    unsafe { chunk.byte_add(offset_of_slot::<T>(index)) }.cast()
}

/// The chunk a slot at `index` belongs to.
///
/// # Safety
/// `slot` is a slot of a live chunk, at `index`.
unsafe fn chunk_of<T>(slot: NonNull<Slot<T>>, index: u32) -> NonNull<Header<T>> {
    // SAFETY: by this function's contract the chunk starts that many bytes before the slot,
    // within the same block.
    unsafe { slot.byte_sub(offset_of_slot::<T>(index)) }.cast()
}

/// Frees a chunk's slot whose value has been dropped; frees the chunk too if that was its last
/// live slot and its allocator has given it up.
///
/// # Safety
/// `slot` is a slot of a live chunk at `index`, its value dropped, its last count given up by
/// the calling thread (released, or seen to be the last).
pub(super) unsafe fn free<T>(slot: NonNull<Slot<T>>, index: u32) {
    // SAFETY: by this function's contract; the chunk (and so its free stack) is live until
    // this slot's free is counted, after the push.
    unsafe {
        let chunk = chunk_of(slot, index);
        push_freed(&chunk.as_ref().free, slot, slot);
        count_freed(chunk, 1);
    }
}

/// Pushes the chain of freed slots `first`..=`last` onto `stack`.
///
/// # Safety
/// The chain's slots are free, linked from `first` to `last`, and the calling thread's until
/// this push publishes them; their chunks stay live until it returns (their frees are not yet
/// counted).
unsafe fn push_freed<T>(stack: &FreeSlots<T>, first: NonNull<Slot<T>>, last: NonNull<Slot<T>>) {
    stack.push_chain(first.as_ptr(), |top| {
        // SAFETY: the chain is this thread's until the push publishes it.
        unsafe { Slot::set_next(last, top) }
    });
}

/// Counts `n` frees of `chunk`'s slots, pushed onto its free stack already, and frees the
/// chunk if they were its last live slots and its allocator has given it up.
///
/// # Safety
/// The chunk is live, and the calling thread freed those `n` slots and has not counted them.
unsafe fn count_freed<T>(chunk: NonNull<Header<T>>, n: usize) {
    // SAFETY: the chunk lives until `live` reaches zero, which these frees have not counted.
    // Only `live` is read through this reference; `allocated` is the allocator's (in an
    // `UnsafeCell`).
    let header = unsafe { chunk.as_ref() };
    // AcqRel: Release so that this thread's push (and every use of the slots before it) happens
    // before the chunk is freed by whoever brings `live` to zero; Acquire for when that is this
    // thread, so the other freers' pushes and the allocator's writes happen before its free.
    if header.live.fetch_sub(n, Ordering::AcqRel) == n {
        // SAFETY: `live` reached zero: the allocator gave the chunk up and no slot is live.
        unsafe { dealloc_chunk(chunk) };
    }
}

/// The most runs a [`Frees`] gathers before it frees what it holds: a bound on its buffer, and
/// on how long the slots wait before their allocator can hand them out again.
const MAX_RUNS: usize = 1024;

/// Freed slots of chunks, waiting to be freed together. Letting go of a last reference one at a
/// time takes three read-modify-writes (`SlabArc`'s drop decrements the count, then [`free`]
/// pushes the slot and counts it off the chunk's `live`); a slot let go of into a `Frees`
/// (`SlabArc::drop_into`) takes none of its own: its count is seen to be the last with a load,
/// and [`flush`](Self::flush) pushes a chain per free stack with one compare-and-swap and
/// counts a run of slots of one chunk with one subtraction.
///
/// The pushes come before the counts: a slot waiting here still counts as live in its chunk,
/// so every chunk a chain reaches into, and the chain's stack (which chunk headers hold), stay
/// allocated until the pushes are done.
pub(crate) struct Frees<T> {
    /// A chain per free stack met.
    chains: Vec<Chain<T>>,
    /// Runs of slots of one chunk, in the order they came.
    runs: Vec<(NonNull<Header<T>>, usize)>,
    /// The chain the last slot went to.
    recent: usize,
}

/// Slots freed to one stack, linked from `first` to `last`.
struct Chain<T> {
    stack: *const FreeSlots<T>,
    first: NonNull<Slot<T>>,
    last: NonNull<Slot<T>>,
}

// SAFETY: a `Frees` holds slots whose values are dropped (free memory its holder alone
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

    /// Adds a chunk's slot whose value has been dropped, to be freed by the next
    /// [`flush`](Self::flush) (or now, with the others, if the runs are at their bound).
    ///
    /// # Safety
    /// As [`free`], and the slot is not freed otherwise.
    pub(super) unsafe fn add(&mut self, slot: NonNull<Slot<T>>, index: u32) {
        // SAFETY: by this function's contract.
        let chunk = unsafe { chunk_of(slot, index) };
        let at = match self.runs.last_mut() {
            // The slot before was of this chunk, so went to this chunk's stack.
            Some((last, n)) if *last == chunk => {
                *n += 1;
                self.recent
            }
            _ => {
                if self.runs.len() == MAX_RUNS {
                    self.flush();
                }
                self.runs.push((chunk, 1));
                // SAFETY: the chunk has a slot waiting in `runs`, so it is live; only its free
                // stack's address is read.
                let stack = unsafe { Arc::as_ptr(&chunk.as_ref().free) };
                // Nearly always the chain of the slot before (the same allocator); else a
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
                        first: slot,
                        last: slot,
                    });
                    return;
                };
                self.recent = at;
                at
            }
        };
        let chain = &mut self.chains[at];
        // SAFETY: the slot is free and this thread's (by this function's contract).
        unsafe { Slot::set_next(slot, chain.first.as_ptr()) };
        chain.first = slot;
    }

    /// Frees every slot added (see the type's documentation).
    pub(crate) fn flush(&mut self) {
        for chain in self.chains.drain(..) {
            // SAFETY: the chain was linked by `add`, each slot the caller's; the chunks of its
            // slots, one of which holds the stack, have their frees waiting in `runs`.
            unsafe { push_freed(&*chain.stack, chain.first, chain.last) };
        }
        for (chunk, n) in self.runs.drain(..) {
            // SAFETY: live until its runs are counted; this thread freed these `n` slots. A
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
/// `chunk` is no one's any more: given up, with no live slot.
unsafe fn dealloc_chunk<T>(chunk: NonNull<Header<T>>) {
    // SAFETY: the chunk is live until the `dealloc` below; `slots` was written by `new_chunk`.
    let slots = unsafe { chunk.as_ref() }.slots;
    // SAFETY: the header was written by `new_chunk`, and is dropped once, here (which lets go
    // of the free stack); the block was allocated there with this layout.
    unsafe {
        ptr::drop_in_place(chunk.as_ptr());
        alloc::dealloc(chunk.as_ptr().cast(), layout::<T>(slots).0);
    }
}

fn new_chunk<T>(slots: u32, free: Arc<FreeSlots<T>>) -> NonNull<Header<T>> {
    let layout = layout::<T>(slots).0;
    // SAFETY: the layout has a header, so it is not zero-sized.
    let raw = unsafe { alloc::alloc(layout) }.cast::<Header<T>>();
    let Some(chunk) = NonNull::new(raw) else {
        std::alloc::handle_alloc_error(layout)
    };
    let header = Header {
        live: AtomicUsize::new(0),
        free,
        allocated: UnsafeCell::new(0),
        slots,
    };
    // SAFETY: a fresh block of the header's layout, this thread's alone.
    unsafe { chunk.as_ptr().write(header) };
    chunk
}

/// The allocator's state.
struct Carver<T> {
    /// Every chunk not yet given up; the last is the newest.
    chunks: Vec<NonNull<Header<T>>>,
    /// The slots freed into this allocator's chunks.
    free: Arc<FreeSlots<T>>,
    /// Slots per new chunk.
    slots: u32,
    /// The next slot of the newest chunk never handed out.
    unused: u32,
    /// Free slots taken off `free`, linked through their bodies.
    reuse: *mut Slot<T>,
    /// Chunks left behind by a trim, to give up a few at a time.
    retiring: Vec<NonNull<Header<T>>>,
    /// Whether and when to trim (see [`Sweep`]).
    sweep: Sweep,
}

/// The sweep that decides a trim: after a spike, an allocator whose chunks are mostly free
/// starts afresh and gives the old ones up, `RETIRE_PER_STEP` a step, so that those with no
/// live slot go back to the system allocator then, and the others with their last live slot
/// (see the module documentation). Every `trim.every` allocations it adds up one more chunk's
/// live slots; at the end of a pass over the chunks it compares the sum with the slots held.
struct Sweep {
    trim: Trim,
    /// Allocations until the next step.
    countdown: u32,
    /// The next chunk to look at.
    next: usize,
    /// Live slots counted in this pass so far.
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

/// Hands out slots of chunks, one thread at a time (see the module documentation).
pub(crate) struct Allocator<T> {
    carver: UnsafeCell<Carver<T>>,
    /// Chunks not yet given up, for the statistics; written by the allocator's user alone. A
    /// std atomic even under loom: a statistic, no part of the protocol the models check.
    held: StdAtomicUsize,
    /// The size of a chunk's block.
    chunk_bytes: usize,
}

// SAFETY: the state is reached only under `alloc`'s and `give_up`'s contract (no two
// accesses race); the slots it hands out are `SlabArc`s, `Send` and `Sync` as `T` allows.
unsafe impl<T: Send + Sync> Send for Allocator<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Allocator<T> {}

impl<T> Allocator<T> {
    /// An allocator whose chunks are about 16 KiB each.
    pub(crate) fn new() -> Self {
        let first = layout::<T>(0).1;
        let fit = (CHUNK_BYTES.saturating_sub(first) / mem::size_of::<Slot<T>>()).max(1);
        Allocator::with_slots(u32::try_from(fit).unwrap_or(ALONE - 1))
    }

    /// An allocator whose chunks have `slots` slots each (at least one).
    pub(crate) fn with_slots(slots: u32) -> Self {
        Allocator::with_settings(slots, Trim::DEFAULT)
    }

    /// An allocator whose chunks have `slots` slots each (at least one), trimming as `trim`
    /// says (see [`Sweep`]).
    pub(crate) fn with_settings(slots: u32, trim: Trim) -> Self {
        let slots = slots.clamp(1, ALONE - 1);
        Allocator {
            carver: UnsafeCell::new(Carver {
                chunks: Vec::new(),
                free: Arc::new(TakeAllStack::new()),
                slots,
                unused: 0,
                reuse: ptr::null_mut(),
                retiring: Vec::new(),
                sweep: Sweep::new(trim),
            }),
            held: StdAtomicUsize::new(0),
            chunk_bytes: layout::<T>(slots).0.size(),
        }
    }

    /// `value` in a free slot of one of the allocator's chunks, or of a new one.
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

    /// Gives up every chunk: each is freed once its last live slot is. A later `alloc` starts
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
    /// `value` in a free slot; a new chunk, if one is started, is counted in `held`.
    fn alloc(&mut self, value: T, held: &StdAtomicUsize) -> SlabArc<T> {
        self.count_allocation(held);
        let (slot, index) = self.next_slot(held);
        // SAFETY: the slot is free and this thread's (see `next_slot`).
        unsafe {
            Slot::init(slot, index, value);
            SlabArc::from_slot(slot)
        }
    }

    /// A free slot, counted as handed out in its chunk.
    fn next_slot(&mut self, held: &StdAtomicUsize) -> (NonNull<Slot<T>>, u32) {
        loop {
            if let Some(slot) = NonNull::new(self.reuse) {
                // SAFETY: a slot of the reuse chain is free and this thread's: it was taken off
                // the stack whole, and its link and index were published by the push. Its
                // chunk has not been given up (`give_up` empties the chain), so it is live.
                unsafe {
                    self.reuse = Slot::next(slot);
                    // Start loading the next free slot now, an allocation before it is needed:
                    // it was freed on another thread, most likely on another core.
                    prefetch(self.reuse);
                    let index = Slot::index(slot);
                    count_handed_out(chunk_of(slot, index));
                    return (slot, index);
                }
            }
            if let Some(&newest) = self.chunks.last() {
                if self.unused < self.slots {
                    let index = self.unused;
                    self.unused += 1;
                    // SAFETY: `index` is below the chunk's slot count, no slot at or above
                    // `unused` has been handed out, and the chunk is live (not given up).
                    unsafe {
                        count_handed_out(newest);
                        return (slot_at(newest, index), index);
                    }
                }
            }
            self.reuse = self.free.take_all();
            if self.reuse.is_null() {
                self.chunks.push(new_chunk(self.slots, self.free.clone()));
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
    /// if any; else adds up the next chunk's live slots and, at the end of a pass, trims if the
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
        // counts its slot as live, which only puts off a trim. As in `give_up_chunk`, the
        // handed-out count plus the wrapping `live` is the number of live slots.
        // SAFETY: as above.
        let live = unsafe { chunk.as_ref() }.live.load(Ordering::Relaxed);
        sweep.live += allocated.wrapping_add(live);
        sweep.next += 1;
        if sweep.next < self.chunks.len() {
            return;
        }
        let held_slots = self.chunks.len() * self.slots as usize;
        if sweep.live.saturating_mul(TRIM_SHARE) < held_slots {
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

    /// Leaves every chunk behind, to be given up: no slot of theirs is handed out again, and the
    /// next allocation starts a new chunk.
    fn start_afresh(&mut self) {
        self.sweep.restart();
        if self.chunks.is_empty() {
            return;
        }
        self.reuse = ptr::null_mut();
        self.retiring.append(&mut self.chunks);
        // The slots on the old stack belong to chunks left behind (and, once they are given
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

/// Gives up `chunk`: adds the slots its allocator handed out to `live`, and frees the chunk if
/// none of them is live any more (else its last freer does).
///
/// # Safety
/// The chunk is live and not given up before, no slot of it will be handed out again, and the
/// calling thread is its allocator's user.
unsafe fn give_up_chunk<T>(chunk: NonNull<Header<T>>) {
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
        // SAFETY: given up just now, and no slot is live.
        unsafe { dealloc_chunk(chunk) };
    }
}

/// How many slots of `chunk` its allocator has handed out.
///
/// # Safety
/// The chunk is live, and the calling thread is its allocator's user.
unsafe fn handed_out<T>(chunk: NonNull<Header<T>>) -> usize {
    // SAFETY: by this function's contract; `allocated` is the allocator's alone.
    unsafe { chunk.as_ref() }
        .allocated
        .with_mut(|allocated| unsafe { *allocated })
}

/// Counts one more slot of `chunk` handed out.
///
/// # Safety
/// The chunk is live and not given up, and the calling thread is its allocator's user.
unsafe fn count_handed_out<T>(chunk: NonNull<Header<T>>) {
    // SAFETY: by this function's contract.
    unsafe { chunk.as_ref() }
        .allocated
        .with_mut(|allocated| unsafe { *allocated = (*allocated).wrapping_add(1) });
}

#[cfg(all(test, not(loom)))]
mod tests;
