//! The one place the crate takes its synchronisation primitives from.
//!
//! Under `cfg(loom)` every atomic, `Arc`, `Mutex`, `Condvar`, `UnsafeCell`, thread function and
//! the inbound queue come from loom (or a loom-visible stand-in), so the model checker sees every
//! interleaving of the engine's protocols. Otherwise they are std's and crossbeam's. No other
//! file imports `std::sync::atomic`; code that needs an atomic imports it from here.
//! The asymmetric fences of the wake-up and shutdown protocols live here too ([`barrier`]).

pub(crate) mod barrier;

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    sync::{
        atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering},
        Arc, Condvar, Mutex, MutexGuard,
    },
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering},
    Arc, Condvar, Mutex, MutexGuard, Weak,
};

#[cfg(loom)]
pub(crate) use loom::sync::Arc as EntryArc;
/// The reference-counted pointer a timer entry lives in: `triomphe::Arc` (std's `Arc` without
/// the weak count, 8 bytes less per timer), or loom's `Arc` under loom.
#[cfg(not(loom))]
pub(crate) use triomphe::Arc as EntryArc;

/// std's `Arc`, for what never takes part in a modelled protocol and crosses the public API:
/// a user's rayon pool.
pub(crate) type StdArc<T> = std::sync::Arc<T>;

/// Thread functions: loom's under `cfg(loom)`, std's otherwise.
pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, yield_now, Thread};
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, park_timeout, yield_now, Thread};

    /// loom has no timed park; a model treats a timed sleep as "until woken".
    #[cfg(loom)]
    pub(crate) fn park_timeout(_: std::time::Duration) {
        park();
    }
}

/// `std::cell::UnsafeCell` with loom's closure-based API, so one body of code serves both.
#[cfg(not(loom))]
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a unique pointer to the value.
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// An unbounded multi-producer queue: crossbeam's lock-free `SegQueue`, or under loom a
/// loom-visible stand-in (loom cannot see inside crossbeam's atomics). The stand-in keeps its
/// items behind a loom mutex but answers `is_empty` from a separate length counter written
/// with Release and read with Acquire, like a lock-free queue's indices: it promises no more
/// ordering than the real queue does, so a protocol that leans on a missing fence fails the
/// model instead of passing through the mutex's stronger ordering.
pub(crate) struct Queue<T> {
    #[cfg(not(loom))]
    inner: crossbeam_queue::SegQueue<T>,
    #[cfg(loom)]
    inner: Mutex<std::collections::VecDeque<T>>,
    #[cfg(loom)]
    len: AtomicUsize,
}

#[cfg(not(loom))]
impl<T> Queue<T> {
    pub(crate) fn new() -> Self {
        Queue {
            inner: crossbeam_queue::SegQueue::new(),
        }
    }

    pub(crate) fn push(&self, value: T) {
        self.inner.push(value);
    }

    pub(crate) fn pop(&self) -> Option<T> {
        self.inner.pop()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

#[cfg(loom)]
impl<T> Queue<T> {
    pub(crate) fn new() -> Self {
        Queue {
            inner: Mutex::new(std::collections::VecDeque::new()),
            len: AtomicUsize::new(0),
        }
    }

    pub(crate) fn push(&self, value: T) {
        self.inner.lock().unwrap().push_back(value);
        self.len.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn pop(&self) -> Option<T> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let value = self.inner.lock().unwrap().pop_front();
        if value.is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        value
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }
}

/// A small per-thread number, handed out once per thread, that spreads producer threads over a
/// shard's lanes. Under loom every thread gets 0 (a static loom atomic cannot outlive a model).
#[cfg(not(loom))]
pub(crate) fn thread_slot() -> usize {
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;
    static NEXT: StdAtomicUsize = StdAtomicUsize::new(0);
    thread_local! {
        // Relaxed: the counter only hands out distinct numbers; nothing is published with it.
        static SLOT: usize = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    SLOT.with(|slot| *slot)
}

#[cfg(loom)]
pub(crate) fn thread_slot() -> usize {
    0
}

/// The calling thread's slot, when it may take a single-writer fast path: a lane's first
/// user becomes its owner and counts and recycles entries without read-modify-write
/// operations (see `lane`). Slots are never reused, so no two threads share one. `None` under
/// loom, where every thread has slot 0: models take the shared paths, and the recycling
/// stack has a model of its own.
#[cfg(not(loom))]
pub(crate) fn owner_slot() -> Option<usize> {
    Some(thread_slot())
}

#[cfg(loom)]
pub(crate) fn owner_slot() -> Option<usize> {
    None
}

/// Asks the CPU to start loading the cache line at `address` and goes on without waiting: a
/// hint that changes nothing the program computes. A plain load would do the same work but
/// hold up every later instruction until the line arrives. A no-op where Rust has no stable
/// prefetch (other than x86-64), and under Miri and loom.
#[inline(always)]
pub(crate) fn prefetch<T>(address: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    #[allow(unused_unsafe)] // a safe function where the compiler knows SSE is enabled
    // SAFETY: PREFETCHT0 accepts any address, mapped or not, and never faults.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = address;
}

/// A number no other engine in this process has had.
pub(crate) fn next_engine_id() -> u64 {
    use std::sync::atomic::AtomicU64 as StdAtomicU64;
    static NEXT: StdAtomicU64 = StdAtomicU64::new(1);
    // Relaxed: only hands out distinct numbers. (A std atomic even under loom: ids are not part
    // of any modelled protocol, and a static loom atomic cannot outlive a model.)
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
