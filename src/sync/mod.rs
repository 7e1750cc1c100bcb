//! The one place the crate takes its synchronisation primitives from: the lowest layer.
//!
//! Under `cfg(loom)` atomics, `Arc`, `Mutex`, `Condvar`, `UnsafeCell`, threads, raw allocation
//! and the MPMC queue come from loom (or a loom-visible stand-in), so the models see every
//! interleaving; otherwise std's and crossbeam's, under the same paths. No other module imports
//! `std::sync::atomic` for a modelled protocol.
//!
//! - `cap`: the optional limit on pending timers, as permits.
//! - `cell`: `UnsafeCell` with loom's closure-based API.
//! - `counter`: statistics counters, which loom does not model.
//! - `mutex`: `Mutex` and `Condvar` that never report poisoning.
//! - `queue`: an unbounded multi-producer queue (`SegQueue`, or a loom stand-in).
//! - `claims`: a batch shared out in ranges, taken from the front and split by thieves.
//! - `stack`: a take-all stack (many push, a taker takes everything).
//! - `ids`: thread numbers, lane indices, engine ids, and key-id blocks.
//! - `prefetch`: a cache prefetch hint.
//! - `drop`: dropping a value in place, then freeing its memory even if the drop panics.
//! - `fenced`: a SeqCst fence as a value, taken by the reads of the Dekker pairs.

mod cap;
mod cell;
mod claims;
mod counter;
mod drop;
mod fenced;
mod ids;
mod mutex;
mod prefetch;
mod queue;
mod stack;

pub(crate) use cap::{Cap, Permit, Permits};
pub(crate) use cell::UnsafeCell;
pub(crate) use claims::{in_batches, Claim, Holder};
pub(crate) use counter::Counter;
pub(crate) use drop::drop_then_free;
pub(crate) use fenced::Fenced;
pub(crate) use ids::{lane_index, next_engine_id, next_ids, owner_number, thread_number};
pub(crate) use mutex::{Condvar, Mutex, MutexGuard};
pub(crate) use prefetch::prefetch;
pub(crate) use queue::SegQueue;
pub(crate) use stack::TakeAllStack;

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering},
    Arc,
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering},
    Arc, Weak,
};

/// std's `Arc`, for what no modelled protocol touches (a user's pool, a clock's watchers).
pub(crate) type StdArc<T> = std::sync::Arc<T>;

/// Raw allocation: loom's under `cfg(loom)` (which reports leaks), std's otherwise.
pub(crate) mod alloc {
    #[cfg(loom)]
    pub(crate) use loom::alloc::{alloc, dealloc};
    #[cfg(not(loom))]
    pub(crate) use std::alloc::{alloc, dealloc};

    /// Tells the kernel that the whole pages within `len` bytes at `start` hold nothing worth
    /// keeping, so they leave the resident set now, whatever the global allocator does with
    /// the block later; they read as zeros if touched again. Linux only, outside loom and Miri.
    ///
    /// # Safety
    /// The bytes are the caller's, and it reads nothing it wrote there before.
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    pub(crate) unsafe fn discard(start: *mut u8, len: usize) {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0);
        if !page.is_power_of_two() {
            return;
        }
        let first = (start as usize).next_multiple_of(page);
        let end = (start as usize).saturating_add(len) & !(page - 1);
        if end > first {
            // SAFETY: the pages lie within the caller's bytes (by this function's contract);
            // MADV_DONTNEED on private anonymous memory only zeroes them. A failure leaves
            // them resident, which is all this call changes.
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_DONTNEED) };
        }
    }
}

/// Thread functions: loom's under `cfg(loom)`, std's otherwise.
pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, yield_now, Thread};
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, park_timeout, yield_now, Thread};

    #[cfg(loom)]
    pub(crate) use loom::thread::JoinHandle;
    #[cfg(not(loom))]
    pub(crate) use std::thread::JoinHandle;

    /// loom has no timed park; a model treats a timed sleep as "until woken".
    #[cfg(loom)]
    pub(crate) fn park_timeout(_: std::time::Duration) {
        park();
    }

    /// Starts a thread named `name` (loom's threads have no names).
    pub(crate) fn spawn_named<T, F>(name: &str, f: F) -> std::io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        #[cfg(loom)]
        {
            let _ = name;
            Ok(loom::thread::spawn(f))
        }
        #[cfg(not(loom))]
        {
            std::thread::Builder::new().name(name.to_owned()).spawn(f)
        }
    }
}
