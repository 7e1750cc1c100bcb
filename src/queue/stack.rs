//! A take-all stack of entries: many threads push, and whoever takes, takes everything.
//!
//! A Treiber stack with no single-node pop: pushing swings `top` to a new chain with one
//! compare-and-swap, and taking swaps `top` for null. Since no one ever pops one node and
//! pushes it back while another thread holds a stale `top`, the ABA problem of a Treiber stack
//! cannot arise. The stack stores only the top pointer; which field of an entry links it to the
//! next is the user's choice (the unlink stack links through the emptied callback cell, the
//! recycler through `next`), so the pusher is handed a closure that writes that link.

use std::ptr;

use crate::entry::Entry;
use crate::sync::{AtomicPtr, Ordering};

pub(super) struct TakeAllStack {
    /// The first node of the chain pushed last, or null.
    top: AtomicPtr<Entry>,
}

impl TakeAllStack {
    pub(super) fn new() -> Self {
        TakeAllStack {
            top: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Pushes a chain that starts at `first`. `link_last` is called with the current top (on
    /// each attempt) and must make it the successor of the chain's last node. Returns whether
    /// the stack was empty before.
    ///
    /// The caller owns the chain's links until the push publishes them.
    #[inline]
    pub(super) fn push_chain(
        &self,
        first: *mut Entry,
        mut link_last: impl FnMut(*mut Entry),
    ) -> bool {
        // Relaxed: only the pointer is needed; the CAS below publishes.
        let mut top = self.top.load(Ordering::Relaxed);
        loop {
            link_last(top);
            // Release on success: whoever takes the stack sees the links just written, and
            // every write made to the entries before they were pushed. Relaxed on failure: the
            // next attempt needs only the new top.
            match self
                .top
                .compare_exchange_weak(top, first, Ordering::Release, Ordering::Relaxed)
            {
                Ok(previous) => return previous.is_null(),
                Err(actual) => top = actual,
            }
        }
    }

    /// Takes the whole stack: the first node of the chain, or null. The caller owns the chain
    /// from then on.
    #[inline]
    pub(super) fn take_all(&self) -> *mut Entry {
        // Acquire: pairs with the Release CAS in `push_chain`.
        self.top.swap(ptr::null_mut(), Ordering::Acquire)
    }

    /// Whether the stack is empty.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        // Relaxed: a hint for the callers, which say what orders it where it matters.
        self.top.load(Ordering::Relaxed).is_null()
    }
}
