//! The driver's global allocator: mimalloc, called directly.
//!
//! Timer entries are allocated on producer threads and freed on shard threads; glibc's malloc
//! serialises such cross-thread frees on its arena lock, mimalloc hands them back through a
//! per-page atomic list. The `mimalloc` crate's own wrapper calls `mi_malloc_aligned` for every
//! request, which in this mimalloc version rounds a 48-byte, 8-aligned block up to the 64-byte
//! size class; every mimalloc block is at least 8-aligned, so requests aligned to 8 or less go
//! to plain `mi_malloc` here and keep their 48-byte class.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// Every block mimalloc hands out is aligned to at least this.
const MIN_ALIGN: usize = 8;

/// mimalloc as the global allocator.
pub(crate) struct Mimalloc;

// SAFETY: each method forwards to the mimalloc function with the same contract as the
// `GlobalAlloc` method (a block of at least `size` bytes aligned to `align`, or null; `mi_free`
// and `mi_realloc*` accept any block mimalloc returned), choosing the unaligned variant only
// where mimalloc's own alignment already satisfies `layout.align()`.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl's comment.
        unsafe {
            if layout.align() <= MIN_ALIGN {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl's comment.
        unsafe {
            if layout.align() <= MIN_ALIGN {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the `GlobalAlloc` contract).
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (the `GlobalAlloc` contract).
        unsafe {
            if layout.align() <= MIN_ALIGN {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

/// mimalloc's `mi_option_purge_delay` (its header's value, in versions 2 and 3), which the
/// bindings do not name.
const PURGE_DELAY: mi::mi_option_t = 15;

/// From now on, keeps the memory the process frees for its own reuse instead of returning it
/// to the system (mimalloc's purge, off): what a run allocates again is resident already.
pub(crate) fn keep_freed_memory() {
    // SAFETY: sets one of mimalloc's options, which it reads at each purge; any value is valid
    // (a negative delay: never purge).
    unsafe { mi::mi_option_set(PURGE_DELAY, -1) };
}
