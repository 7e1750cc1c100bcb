//! Freed chunks whose pages go back to the system at a quiet moment.
//!
//! A chunk freed after its allocator gave it up has no live block; its whole pages are
//! discarded (`madvise(MADV_DONTNEED)`, see `sync::alloc::discard`) before the global
//! allocator gets it back, so that an allocator that keeps freed memory (glibc's, below the
//! top of its heap) keeps no resident page of it. A discard makes every cpu running the
//! process flush its TLB, tens of microseconds on a virtual machine, so a storm that frees
//! thousands of chunks on a shard thread would pay that thousands of times while its timers
//! wait. So a chunk a shard thread frees (while its [`DiscardLater`] lives) waits in its
//! engine's [`Discards`], and the shards discard and free the waiting chunks a few at a time
//! ([`Discards::discard_some`]) on calm turns, when no crowd of callbacks fires or waits (see
//! `shard::worker`); a shard that finds [`MOST_WAITING`] already waiting discards them all, and
//! so do the engine's shutdown and its drop. Any other thread discards and frees a chunk at
//! once: no shard is told of it, and one may sleep for hours.
//!
//! Outside Linux, and under loom and Miri, a chunk is freed at once, undiscarded. The list is
//! behind a std mutex that loom does not see; no model's protocol passes through it.

use std::alloc::Layout;
use std::marker::PhantomData;
use std::sync::Arc;

/// The most chunks waiting at once in one engine's list (512 MiB of 64 KiB chunks, the memory
/// of 13 million timers): past it, the shard that frees a chunk discards the whole list.
const MOST_WAITING: usize = 8192;

/// An engine's freed chunks waiting for their discard (see the module documentation).
pub(crate) struct Discards(imp::Chunks);

impl Discards {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Discards(imp::Chunks::default()))
    }

    /// Discards and frees up to `most` of the chunks waiting; true if some still wait.
    pub(crate) fn discard_some(&self, most: usize) -> bool {
        self.0.discard_some(most)
    }

    /// Until the guard drops, the chunks the calling thread frees wait here.
    pub(crate) fn later(self: &Arc<Self>) -> DiscardLater {
        DiscardLater {
            _binding: imp::bind(self),
            _thread: PhantomData,
        }
    }
}

/// A thread's chunks waiting in one engine's [`Discards`]; the thread's earlier binding, if
/// any, back when it drops. It stays on the thread it binds.
#[must_use = "the chunks wait only while the guard lives"]
pub(crate) struct DiscardLater {
    _binding: imp::Binding,
    _thread: PhantomData<*const ()>,
}

/// Frees a chunk of `layout` at `start`, its pages discarded first, now or later (see the
/// module documentation).
///
/// # Safety
/// The block at `start` was allocated with `layout` by the global allocator, and is no one's.
pub(super) unsafe fn free_chunk(start: *mut u8, layout: Layout) {
    // SAFETY: by this function's contract.
    unsafe { imp::free_chunk(start, layout) }
}

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
mod imp {
    use super::{Discards, MOST_WAITING};
    use crate::sync::Mutex;
    use std::alloc::Layout;
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A freed chunk: its address and layout.
    struct Freed(*mut u8, Layout);

    // SAFETY: a waiting chunk is no thread's: whoever takes it off the list frees it.
    unsafe impl Send for Freed {}

    pub(super) struct Chunks {
        list: Mutex<Vec<Freed>>,
        /// How many chunks wait: a glance that spares an empty list its lock.
        pub(super) count: AtomicUsize,
    }

    thread_local! {
        /// The list the chunks this thread frees wait in, if it is a shard's.
        static BOUND: RefCell<Option<Arc<Discards>>> = const { RefCell::new(None) };
    }

    impl Default for Chunks {
        fn default() -> Self {
            Chunks {
                list: Mutex::new(Vec::new()),
                count: AtomicUsize::new(0),
            }
        }
    }

    impl Chunks {
        /// Adds `chunk`; returns how many wait now.
        fn push(&self, chunk: Freed) -> usize {
            let mut list = self.list.lock();
            list.push(chunk);
            // Relaxed: a hint for `take`; the list itself is read under the lock.
            self.count.store(list.len(), Ordering::Relaxed);
            list.len()
        }

        pub(super) fn discard_some(&self, most: usize) -> bool {
            discard_and_free(self.take(most));
            // Relaxed: as in `push`.
            self.count.load(Ordering::Relaxed) > 0
        }

        /// Takes up to `most` waiting chunks.
        fn take(&self, most: usize) -> Vec<Freed> {
            // Relaxed: as in `push`; a chunk missed here is taken by the next call.
            if self.count.load(Ordering::Relaxed) == 0 {
                return Vec::new();
            }
            let mut list = self.list.lock();
            let from = list.len().saturating_sub(most);
            let taken = list.split_off(from);
            if list.is_empty() {
                // Give a spike's list back too.
                *list = Vec::new();
            }
            self.count.store(list.len(), Ordering::Relaxed);
            taken
        }
    }

    impl Drop for Chunks {
        fn drop(&mut self) {
            discard_and_free(self.take(usize::MAX));
        }
    }

    pub(super) struct Binding(Option<Arc<Discards>>);

    pub(super) fn bind(discards: &Arc<Discards>) -> Binding {
        Binding(BOUND.with(|bound| bound.replace(Some(discards.clone()))))
    }

    impl Drop for Binding {
        fn drop(&mut self) {
            let earlier = self.0.take();
            // A thread exiting with its thread-locals gone drops the earlier binding here.
            let _ = BOUND.try_with(|bound| *bound.borrow_mut() = earlier);
        }
    }

    /// See `super::free_chunk`.
    pub(super) unsafe fn free_chunk(start: *mut u8, layout: Layout) {
        // A thread exiting with its thread-locals gone is no shard's.
        let waits = BOUND.try_with(|bound| match &*bound.borrow() {
            Some(discards) => {
                if discards.0.push(Freed(start, layout)) >= MOST_WAITING {
                    discards.discard_some(usize::MAX);
                }
                true
            }
            None => false,
        });
        if waits != Ok(true) {
            discard_and_free([Freed(start, layout)]);
        }
    }

    fn discard_and_free(chunks: impl IntoIterator<Item = Freed>) {
        for Freed(start, layout) in chunks {
            // SAFETY: a waiting chunk was allocated with its layout and is no one's; taken
            // off the list, it is this thread's alone.
            unsafe {
                crate::sync::alloc::discard(start, layout.size());
                crate::sync::alloc::dealloc(start, layout);
            }
        }
    }
}

#[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
mod imp {
    use super::{Discards, MOST_WAITING};
    use std::alloc::Layout;
    use std::sync::Arc;

    #[derive(Default)]
    pub(super) struct Chunks {
        _none: (),
    }

    impl Chunks {
        pub(super) fn discard_some(&self, _most: usize) -> bool {
            let _ = MOST_WAITING;
            false
        }
    }

    pub(super) struct Binding;

    pub(super) fn bind(_discards: &Arc<Discards>) -> Binding {
        Binding
    }

    /// See `super::free_chunk`.
    pub(super) unsafe fn free_chunk(start: *mut u8, layout: Layout) {
        // SAFETY: by `super::free_chunk`'s contract.
        unsafe { crate::sync::alloc::dealloc(start, layout) };
    }
}

#[cfg(all(test, target_os = "linux", not(loom), not(miri)))]
mod tests {
    use super::*;

    fn waiting(discards: &Discards) -> usize {
        discards.0.count.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Frees a fresh 64 KiB chunk as a chunk's last user would.
    fn free_a_chunk() {
        let layout = Layout::from_size_align(1 << 16, 4096).expect("a layout");
        // SAFETY: a fresh block of `layout` from the global allocator, no one else's.
        unsafe { free_chunk(std::alloc::alloc(layout), layout) };
    }

    #[test]
    fn a_chunk_waits_in_its_own_engine_s_list_alone() {
        let (mine, other) = (Discards::new(), Discards::new());
        let later = mine.later();
        free_a_chunk();
        free_a_chunk();
        assert_eq!((waiting(&mine), waiting(&other)), (2, 0));
        assert!(!other.discard_some(usize::MAX));
        drop(other);
        assert_eq!(
            waiting(&mine),
            2,
            "another engine's discard leaves these alone"
        );
        drop(later);
        free_a_chunk();
        assert_eq!(waiting(&mine), 2, "an unbound thread frees at once");
        assert!(mine.discard_some(1));
        assert!(!mine.discard_some(usize::MAX));
        assert_eq!(waiting(&mine), 0);
    }

    #[test]
    fn a_binding_restores_the_one_before_it() {
        let (outer, inner) = (Discards::new(), Discards::new());
        let _outer = outer.later();
        drop(inner.later());
        free_a_chunk();
        assert_eq!((waiting(&outer), waiting(&inner)), (1, 0));
    }
}
