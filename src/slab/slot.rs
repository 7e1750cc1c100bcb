//! A slot and the counted pointer to the value in it: std's `Arc` without the weak count, with
//! a 32-bit count beside the slot's index in its chunk, so that an entry's block is the value
//! and one word.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::ops::Deref;
use std::ptr::{self, NonNull};

use super::chunk;
use crate::sync::{alloc, drop_then_free, AtomicU32, Ordering};

/// The index of a slot that is a block of its own, in no chunk.
pub(super) const ALONE: u32 = u32::MAX;

/// The largest count a clone may leave; past it a clone aborts the process, as std's `Arc`
/// does, so the count can never wrap.
const MAX_COUNT: u32 = i32::MAX as u32;

/// A slot: in a chunk (see `chunk`), or a block of its own ([`ALONE`]).
#[repr(C)]
pub(super) struct Slot<T> {
    /// Holders of the value while the slot is live; unused while it is free.
    count: AtomicU32,
    /// The slot's place in its chunk, or [`ALONE`]; never changes while the chunk exists.
    index: u32,
    body: Body<T>,
}

/// A live slot's value, or a free slot's link on its chunk's free stack.
#[repr(C)]
union Body<T> {
    value: ManuallyDrop<T>,
    next: *mut Slot<T>,
}

impl<T> Slot<T> {
    /// Makes `slot` a live slot holding `value`, with one count.
    ///
    /// # Safety
    /// `slot` is valid for writes, holds no live value, and no other thread touches it.
    pub(super) unsafe fn init(slot: NonNull<Self>, index: u32, value: T) {
        let live = Slot {
            count: AtomicU32::new(1),
            index,
            body: Body {
                value: ManuallyDrop::new(value),
            },
        };
        // SAFETY: by this function's contract.
        unsafe { slot.as_ptr().write(live) };
    }

    /// The slot's index.
    ///
    /// # Safety
    /// `slot` was made by [`init`](Self::init) and its chunk (or block) still exists.
    pub(super) unsafe fn index(slot: NonNull<Self>) -> u32 {
        // SAFETY: by this function's contract; the index is never written after `init`, and
        // `init` on a reused slot writes the same index.
        unsafe { ptr::addr_of!((*slot.as_ptr()).index).read() }
    }

    /// Sets a free slot's link.
    ///
    /// # Safety
    /// The slot is free (its value dropped) and the calling thread alone touches it.
    pub(super) unsafe fn set_next(slot: NonNull<Self>, next: *mut Self) {
        // SAFETY: by this function's contract.
        unsafe { ptr::addr_of_mut!((*slot.as_ptr()).body.next).write(next) };
    }

    /// A free slot's link.
    ///
    /// # Safety
    /// As [`set_next`](Self::set_next), and the link was set.
    pub(super) unsafe fn next(slot: NonNull<Self>) -> *mut Self {
        // SAFETY: by this function's contract.
        unsafe { ptr::addr_of!((*slot.as_ptr()).body.next).read() }
    }
}

/// A counted shared reference to a value in a slot. Made by [`SlabArc::new`] (a block of its
/// own) or by a chunk's allocator (`chunk::Allocator`); the last holder drops the value and
/// frees the slot (see [`release`]).
pub(crate) struct SlabArc<T> {
    slot: NonNull<Slot<T>>,
    _owns: PhantomData<T>,
}

// SAFETY: as std's `Arc`: holders on several threads share `&T` and the last one drops `T`.
unsafe impl<T: Send + Sync> Send for SlabArc<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for SlabArc<T> {}

impl<T> SlabArc<T> {
    /// `value` in a block of its own.
    pub(crate) fn new(value: T) -> Self {
        let layout = Layout::new::<Slot<T>>();
        // SAFETY: a slot is never zero-sized (it has a count).
        let raw = unsafe { alloc::alloc(layout) }.cast::<Slot<T>>();
        let Some(slot) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: a fresh block, this thread's alone.
        unsafe {
            Slot::init(slot, ALONE, value);
            SlabArc::from_slot(slot)
        }
    }

    /// Takes over the one count of a slot just made by [`Slot::init`].
    ///
    /// # Safety
    /// As said; no other `SlabArc` holds that count.
    pub(super) unsafe fn from_slot(slot: NonNull<Slot<T>>) -> Self {
        SlabArc {
            slot,
            _owns: PhantomData,
        }
    }

    fn count(&self) -> &AtomicU32 {
        // SAFETY: the slot is live while this reference holds a count.
        unsafe { &(*self.slot.as_ptr()).count }
    }

    /// The value's address.
    pub(crate) fn as_ptr(this: &Self) -> *const T {
        // SAFETY: the slot is live; this only computes an address within it. (`ManuallyDrop`
        // is `repr(transparent)`, and a `repr(C)` union's fields start at its start.)
        unsafe { ptr::addr_of!((*this.slot.as_ptr()).body.value) }.cast::<T>()
    }

    /// Gives up the reference without releasing its count, as the value's address.
    pub(crate) fn into_raw(this: Self) -> *const T {
        let ptr = SlabArc::as_ptr(&this);
        mem::forget(this);
        ptr
    }

    /// Takes back a reference given up by [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `ptr` came from `into_raw`, and its count is taken back once.
    pub(crate) unsafe fn from_raw(ptr: *const T) -> Self {
        let offset = mem::offset_of!(Slot<T>, body);
        // SAFETY: `ptr` points `offset` bytes into its slot (see `as_ptr`), within the same
        // allocation.
        let slot = unsafe { ptr.byte_sub(offset) }.cast::<Slot<T>>().cast_mut();
        // SAFETY: by this function's contract the pointer is non-null and holds a count.
        unsafe { SlabArc::from_slot(NonNull::new_unchecked(slot)) }
    }

    /// The value, mutably, if no one else holds it.
    pub(crate) fn get_mut(this: &mut Self) -> Option<&mut T> {
        // Acquire: pairs with the Release decrement of every holder that dropped it, so their
        // uses of the value happen before this thread's.
        if this.count().load(Ordering::Acquire) != 1 {
            return None;
        }
        // SAFETY: this reference is the only one, and the `&mut self` borrow keeps it so.
        Some(unsafe { &mut *SlabArc::as_ptr(this).cast_mut() })
    }

    /// Whether two references hold the same value.
    pub(crate) fn ptr_eq(this: &Self, other: &Self) -> bool {
        this.slot == other.slot
    }

    /// Lets go of the reference as `drop` does; but if it is the last, as seen with a load
    /// rather than a decrement, the value is dropped now and its slot, if in a chunk, freed
    /// with the others `frees` gathers (see [`Frees`](chunk::Frees)).
    pub(crate) fn drop_into(this: Self, frees: &mut chunk::Frees<T>) {
        // Acquire: as in `get_mut`: pairs with the Release decrement of every holder that let
        // go, so their uses of the value happen before its drop here. A count of one cannot
        // grow under this reference: a new one is only ever made from an existing one.
        if this.count().load(Ordering::Acquire) != 1 {
            drop(this);
            return;
        }
        let slot = ManuallyDrop::new(this).slot;
        // SAFETY: this reference holds the last count, given up here; the slot goes to `frees`
        // alone.
        unsafe { release(slot, |slot, index| frees.add(slot, index)) };
    }

    /// How many references hold the value (a snapshot).
    #[cfg(test)]
    pub(crate) fn strong_count(this: &Self) -> usize {
        // Relaxed: a snapshot, for tests and assertions; nothing is read through it.
        this.count().load(Ordering::Relaxed) as usize
    }
}

impl<T> Deref for SlabArc<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the value is live while this reference holds a count.
        unsafe { &*SlabArc::as_ptr(self) }
    }
}

impl<T> Clone for SlabArc<T> {
    fn clone(&self) -> Self {
        // Relaxed: as std's `Arc`: a new reference comes from an existing one, which already
        // orders whatever the new one will be used for.
        if self.count().fetch_add(1, Ordering::Relaxed) >= MAX_COUNT {
            std::process::abort();
        }
        SlabArc {
            slot: self.slot,
            _owns: PhantomData,
        }
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
        // SAFETY: this was the last count; a chunk's slot is freed at once.
        unsafe { release(self.slot, |slot, index| chunk::free(slot, index)) };
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SlabArc<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// Drops a slot's value and frees the slot: a block of its own goes back to the allocator, a
/// chunk's slot to `free_in_chunk` (`chunk::free`, or a batch of frees). The slot is freed even
/// if the value's drop panics.
///
/// # Safety
/// The caller gave up the slot's last count (released it, or saw that no other holder is
/// left); `free_in_chunk` frees a chunk's slot whose value has been dropped, as `chunk::free`
/// does.
unsafe fn release<T>(slot: NonNull<Slot<T>>, free_in_chunk: impl FnOnce(NonNull<Slot<T>>, u32)) {
    // SAFETY: by this function's contract the slot is live and this thread its last holder.
    let index = unsafe { Slot::index(slot) };
    let free = || {
        if index == ALONE {
            // SAFETY: the block was allocated by `SlabArc::new` with this layout, and its
            // value has been dropped.
            unsafe { alloc::dealloc(slot.as_ptr().cast(), Layout::new::<Slot<T>>()) };
        } else {
            free_in_chunk(slot, index);
        }
    };
    // SAFETY: as above; the value is dropped once, here (`ManuallyDrop` is
    // `repr(transparent)`, so the value's address is the field's), and the slot freed after.
    unsafe {
        let value = ptr::addr_of_mut!((*slot.as_ptr()).body.value).cast::<T>();
        drop_then_free(value, free);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_the_value_and_one_word() {
        assert_eq!(mem::size_of::<Slot<[u64; 4]>>(), 40);
        assert_eq!(mem::offset_of!(Slot<[u64; 4]>, body), 8);
        let a = SlabArc::new([1u64; 4]);
        assert_eq!(SlabArc::as_ptr(&a) as usize % 8, 0);
    }
}
