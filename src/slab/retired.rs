//! Freed chunks whose pages go back to the system at a quiet moment.
//!
//! A chunk freed after its allocator gave it up has no live block; its whole pages are
//! discarded (`madvise(MADV_DONTNEED)`, see `sync::alloc::discard`) before the global
//! allocator gets it back, so that an allocator that keeps freed memory (glibc's, below the
//! top of its heap) keeps no resident page of it. A discard makes every cpu running the
//! process flush its TLB, tens of microseconds on a virtual machine, so a storm that frees
//! thousands of chunks on a shard thread would pay that thousands of times while its timers
//! wait. So a freed chunk waits in a list the whole process shares, and shards discard and free
//! the waiting chunks a few at a time ([`release`]) on calm turns, when no crowd of callbacks
//! fires or waits (see `shard::worker`); whoever finds [`MOST_WAITING`] already waiting, or no
//! shard running ([`Releaser`]), releases them all.
//!
//! Outside Linux, and under loom and Miri, a chunk is freed at once, undiscarded. The list is
//! a std mutex that loom does not see; no model's protocol passes through it.

use std::alloc::Layout;

/// The most chunks waiting at once (512 MiB of 64 KiB chunks, the memory of 13 million
/// timers): past it, whoever frees a chunk releases the whole list.
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

    /// How many threads will release waiting chunks (see `Releaser`).
    pub(super) static RELEASERS: AtomicUsize = AtomicUsize::new(0);

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
        let waiting = waiting::push(waiting::Freed(start, layout));
        // Relaxed: a thread that stops releasing lets go of the count after its last turn;
        // a chunk that misses it waits for the next shard or the bound.
        let no_one = waiting::RELEASERS.load(std::sync::atomic::Ordering::Relaxed) == 0;
        if waiting >= MOST_WAITING || no_one {
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
fn discard_and_free(chunks: Vec<waiting::Freed>) {
    for waiting::Freed(start, layout) in chunks {
        // SAFETY: a waiting chunk was allocated with its layout and is no one's; taken off
        // the list, it is this thread's alone.
        unsafe {
            crate::sync::alloc::discard(start, layout.size());
            crate::sync::alloc::dealloc(start, layout);
        }
    }
}

/// Held by a shard thread while it runs: chunks freed while no thread holds one are released
/// at once, so none waits for a shard that will never come.
pub(crate) struct Releaser(());

impl Releaser {
    pub(crate) fn new() -> Self {
        #[cfg(all(target_os = "linux", not(loom), not(miri)))]
        // Relaxed: a count read as a hint (see `free_chunk`).
        waiting::RELEASERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Releaser(())
    }
}

impl Drop for Releaser {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", not(loom), not(miri)))]
        // Relaxed: as in `new`.
        waiting::RELEASERS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}
