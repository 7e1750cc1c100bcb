//! A block and the counted pointer to its value: std's `Arc` without the weak count, a 32-bit
//! count beside the block's index in its chunk.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::ops::Deref;
use std::ptr::{self, NonNull};

use crate::sync::{alloc, drop_then_free, AtomicU32, Ordering};

/// The index of a block that is a block of its own, in no chunk.
pub(super) const ALONE: u32 = u32::MAX;

/// The largest count a clone may leave; past it a clone aborts, as std's `Arc` does.
const MAX_COUNT: u32 = i32::MAX as u32;

/// A block: in a chunk (see `chunk`), or a block of its own ([`ALONE`]).
#[repr(C)]
pub(super) struct Block<T> {
    /// Holders of the value while the block is live; unused while it is free.
    count: AtomicU32,
    /// The block's index in its chunk, or [`ALONE`]; never changes while the chunk exists.
    index: u32,
    body: Body<T>,
}

/// A live block's value, or a free block's link on its chunk's free stack.
#[repr(C)]
union Body<T> {
    value: ManuallyDrop<T>,
    next: *mut Block<T>,
}

impl<T> Block<T> {
    /// Makes `block` a live block holding `value`, with one count.
    ///
    /// # Safety
    /// `block` is valid for writes, holds no live value, and no other thread touches it.
    pub(super) unsafe fn init(block: NonNull<Self>, index: u32, value: T) {
        let live = Block {
            count: AtomicU32::new(1),
            index,
            body: Body {
                value: ManuallyDrop::new(value),
            },
        };
        // SAFETY: by this function's contract.
        unsafe { block.as_ptr().write(live) };
    }

    /// The block's index.
    ///
    /// # Safety
    /// `block` was made by [`init`](Self::init) and its chunk (or block) still exists.
    pub(super) unsafe fn index(block: NonNull<Self>) -> u32 {
        // SAFETY: by this function's contract; the index is never written after `init`, and
        // `init` on a reused block writes the same index.
        unsafe { ptr::addr_of!((*block.as_ptr()).index).read() }
    }

    /// Sets a free block's link.
    ///
    /// # Safety
    /// The block is free (its value dropped) and the calling thread alone touches it.
    pub(super) unsafe fn set_next(block: NonNull<Self>, next: *mut Self) {
        // SAFETY: by this function's contract.
        unsafe { ptr::addr_of_mut!((*block.as_ptr()).body.next).write(next) };
    }

    /// A free block's link.
    ///
    /// # Safety
    /// As [`set_next`](Self::set_next), and the link was set.
    pub(super) unsafe fn next(block: NonNull<Self>) -> *mut Self {
        // SAFETY: by this function's contract.
        unsafe { ptr::addr_of!((*block.as_ptr()).body.next).read() }
    }
}

/// A counted shared reference to a value in a block, made by [`SlabArc::new`] (a block of its
/// own) or a chunk's allocator; the last holder drops the value and frees the block.
pub(crate) struct SlabArc<T> {
    pub(super) block: NonNull<Block<T>>,
    _owns: PhantomData<T>,
}

// SAFETY: as std's `Arc`: holders on several threads share `&T` and the last one drops `T`.
unsafe impl<T: Send + Sync> Send for SlabArc<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for SlabArc<T> {}

impl<T> SlabArc<T> {
    /// `value` in a block of its own.
    pub(crate) fn new(value: T) -> Self {
        let layout = Layout::new::<Block<T>>();
        // SAFETY: a block is never zero-sized (it has a count).
        let raw = unsafe { alloc::alloc(layout) }.cast::<Block<T>>();
        let Some(block) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: a fresh block, this thread's alone.
        unsafe {
            Block::init(block, ALONE, value);
            SlabArc::from_block(block)
        }
    }

    /// Takes over the one count of a block just made by [`Block::init`].
    ///
    /// # Safety
    /// As said; no other `SlabArc` holds that count.
    pub(super) unsafe fn from_block(block: NonNull<Block<T>>) -> Self {
        SlabArc {
            block,
            _owns: PhantomData,
        }
    }

    pub(super) fn count(&self) -> &AtomicU32 {
        // SAFETY: the block is live while this reference holds a count.
        unsafe { &(*self.block.as_ptr()).count }
    }

    /// The value's address.
    pub(crate) fn as_ptr(this: &Self) -> *const T {
        // SAFETY: the block is live; this only computes an address within it. (`ManuallyDrop`
        // is `repr(transparent)`, and a `repr(C)` union's fields start at its start.)
        unsafe { ptr::addr_of!((*this.block.as_ptr()).body.value) }.cast::<T>()
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
        let offset = mem::offset_of!(Block<T>, body);
        // SAFETY: `ptr` points `offset` bytes into its block (see `as_ptr`), within the same
        // allocation.
        let block = unsafe { ptr.byte_sub(offset) }
            .cast::<Block<T>>()
            .cast_mut();
        // SAFETY: by this function's contract the pointer is non-null and holds a count.
        unsafe { SlabArc::from_block(NonNull::new_unchecked(block)) }
    }

    /// A second reference to a value only `this` holds: the count goes from one to two with a
    /// plain store, where `clone` would take a read-modify-write.
    ///
    /// # Safety
    /// `this` is the value's only reference (just made, or seen unshared by `get_mut`), so no
    /// other thread touches the count.
    #[inline]
    pub(crate) unsafe fn share_unshared(this: &Self) -> Self {
        debug_assert_eq!(this.count().load(Ordering::Relaxed), 1);
        // Relaxed: by this function's contract no other thread reads the count until the new
        // reference is published, which orders this store before it.
        this.count().store(2, Ordering::Relaxed);
        SlabArc {
            block: this.block,
            _owns: PhantomData,
        }
    }

    /// The value, mutably, if no one else holds it.
    pub(crate) fn get_mut(this: &mut Self) -> Option<&mut T> {
        // Acquire: pairs with every dropped holder's Release decrement.
        if this.count().load(Ordering::Acquire) != 1 {
            return None;
        }
        // SAFETY: this reference is the only one, and the `&mut self` borrow keeps it so.
        Some(unsafe { &mut *SlabArc::as_ptr(this).cast_mut() })
    }

    /// Whether two references hold the same value.
    pub(crate) fn ptr_eq(this: &Self, other: &Self) -> bool {
        this.block == other.block
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
        // Relaxed: as std's `Arc`: the existing reference already orders the new one's uses.
        if self.count().fetch_add(1, Ordering::Relaxed) >= MAX_COUNT {
            std::process::abort();
        }
        SlabArc {
            block: self.block,
            _owns: PhantomData,
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SlabArc<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// Drops a block's value and frees the block (its own block to the allocator, a chunk's to
/// `free_in_chunk`), even if the drop panics.
///
/// # Safety
/// The caller gave up the last count; `free_in_chunk` frees a chunk's block as `chunk::free`.
pub(super) unsafe fn free_block<T>(
    block: NonNull<Block<T>>,
    free_in_chunk: impl FnOnce(NonNull<Block<T>>, u32),
) {
    // SAFETY: by this function's contract the block is live and this thread its last holder.
    let index = unsafe { Block::index(block) };
    let free = || {
        if index == ALONE {
            // SAFETY: the block was allocated by `SlabArc::new` with this layout, and its
            // value has been dropped.
            unsafe { alloc::dealloc(block.as_ptr().cast(), Layout::new::<Block<T>>()) };
        } else {
            free_in_chunk(block, index);
        }
    };
    // SAFETY: as above; the value is dropped once, here (`ManuallyDrop` is
    // `repr(transparent)`, so the value's address is the field's), and the block freed after.
    unsafe {
        let value = ptr::addr_of_mut!((*block.as_ptr()).body.value).cast::<T>();
        drop_then_free(value, free);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_the_value_and_one_word() {
        assert_eq!(mem::size_of::<Block<[u64; 4]>>(), 40);
        assert_eq!(mem::offset_of!(Block<[u64; 4]>, body), 8);
        let a = SlabArc::new([1u64; 4]);
        assert_eq!(SlabArc::as_ptr(&a) as usize % 8, 0);
    }
}
