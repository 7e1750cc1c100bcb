//! Freed chunks whose pages go back to the system at a quiet moment.
//!
//! A chunk freed after its allocator gave it up has no live block; its whole pages are
//! discarded (`madvise(MADV_DONTNEED)`, see `sync::alloc::discard`) before the global
//! allocator gets it back, so that an allocator that keeps freed memory (glibc's, below the
//! top of its heap) keeps no resident page of it. A discard makes every cpu running the
//! process flush its TLB, tens of microseconds on a virtual machine, so a storm that frees
//! thousands of chunks on a shard thread would pay that thousands of times while its timers
//! wait. So a chunk a shard thread frees ([`Releaser`]) waits in a list the whole process
//! shares, and shards discard and free the waiting chunks a few at a time ([`release`]) on
//! calm turns, when no crowd of callbacks fires or waits (see `shard::worker`); a shard that
//! finds [`MOST_WAITING`] already waiting releases them all. Any other thread discards and
//! frees a chunk at once: no shard is told of it, and one may sleep for hours.
//!
//! Outside Linux, and under loom and Miri, a chunk is freed at once, undiscarded. The list is
//! a std mutex that loom does not see; no model's protocol passes through it.

use std::alloc::Layout;

/// The most chunks waiting at once (512 MiB of 64 KiB chunks, the memory of 13 million
/// timers): past it, the shard that frees a chunk releases the whole list.
#[cfg(all(target_os = "linux", not(loom), not(miri)))]
const MOST_WAITING: usize = 8192;

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
mod waiting {
    use std::alloc::Layout;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, PoisonError};

    /// A freed chunk: its address and layout.
    pub(super) struct Freed(pub(super) *mut u8, pub(super) Layout);

    // SAFETY: a waiting chunk is no thread's: whoever takes it off the list frees it.
    unsafe impl Send for Freed {}

    static LIST: Mutex<Vec<Freed>> = Mutex::new(Vec::new());

    /// How many chunks wait: a glance that spares an empty list its lock.
    static COUNT: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        /// Whether the thread is a shard's, which releases the chunks it frees (see
        /// `Releaser`).
        pub(super) static ON_SHARD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Adds `chunk`; returns how many wait now.
    pub(super) fn push(chunk: Freed) -> usize {
        let mut list = LIST.lock().unwrap_or_else(PoisonError::into_inner);
        list.push(chunk);
        // Relaxed: a hint for `is_empty`; the list itself is read under the lock.
        COUNT.store(list.len(), Ordering::Relaxed);
        list.len()
    }

    /// Whether any chunk waits.
    pub(super) fn any() -> bool {
        // Relaxed: as in `push`.
        COUNT.load(Ordering::Relaxed) > 0
    }

    /// Takes up to `most` waiting chunks.
    pub(super) fn take(most: usize) -> Vec<Freed> {
        // Relaxed: as in `push`; a chunk missed here is taken by the next call.
        if COUNT.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        let mut list = LIST.lock().unwrap_or_else(PoisonError::into_inner);
        let from = list.len().saturating_sub(most);
        let taken = list.split_off(from);
        if list.is_empty() {
            // Give a spike's list back too.
            *list = Vec::new();
        }
        COUNT.store(list.len(), Ordering::Relaxed);
        taken
    }
}

/// Frees a chunk of `layout` at `start`, its pages discarded first, now or later (see the
/// module documentation).
///
/// # Safety
/// The block at `start` was allocated with `layout` by the global allocator, and is no one's.
pub(super) unsafe fn free_chunk(start: *mut u8, layout: Layout) {
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    {
        let freed = waiting::Freed(start, layout);
        // A thread exiting with its thread-locals gone is no shard's.
        if !waiting::ON_SHARD.try_with(|on| on.get()).unwrap_or(false) {
            discard_and_free([freed]);
        } else if waiting::push(freed) >= MOST_WAITING {
            release(usize::MAX);
        }
    }
    #[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
    // SAFETY: by this function's contract.
    unsafe {
        crate::sync::alloc::dealloc(start, layout)
    };
}

/// Discards and frees up to `most` of the chunks waiting; true if some still wait.
pub(crate) fn release(most: usize) -> bool {
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    {
        discard_and_free(waiting::take(most));
        waiting::any()
    }
    #[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
    {
        let _ = most;
        false
    }
}

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
fn discard_and_free(chunks: impl IntoIterator<Item = waiting::Freed>) {
    for waiting::Freed(start, layout) in chunks {
        // SAFETY: a waiting chunk was allocated with its layout and is no one's; taken off
        // the list, it is this thread's alone.
        unsafe {
            crate::sync::alloc::discard(start, layout.size());
            crate::sync::alloc::dealloc(start, layout);
        }
    }
}

/// Held by a shard thread while it runs its turns, which release the chunks it frees; any
/// other thread's are released at once (see the module documentation).
pub(crate) struct Releaser(());

impl Releaser {
    pub(crate) fn new() -> Self {
        #[cfg(all(target_os = "linux", not(loom), not(miri)))]
        waiting::ON_SHARD.with(|on| on.set(true));
        Releaser(())
    }
}

impl Drop for Releaser {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", not(loom), not(miri)))]
        let _ = waiting::ON_SHARD.try_with(|on| on.set(false));
    }
}
