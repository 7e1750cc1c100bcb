//! A take-all stack: many threads push, and whoever takes, takes everything.
//!
//! A Treiber stack with no single-node pop: pushing swings `top` to a new chain with one
//! compare-and-swap, and taking swaps `top` for null. The ABA problem of a Treiber stack is a
//! pop that swings `top` to a successor read before the node was taken and pushed back; here
//! nothing reads a successor through `top`, and a push's compare-and-swap succeeds only while
//! `top` is still the node its chain's last link was just set to, so the stack stays whole even
//! when a taken node is pushed again while another pusher holds a stale `top`. The stack stores
//! only the top pointer; which field of a node links it to the next is the user's choice (the
//! unlink stack links through an entry's emptied callback cell, the recycler through its
//! `next`, a slab chunk through a free block's body), so the pusher is handed a closure that
//! writes that link.

use std::ptr;

use super::{AtomicPtr, Ordering};

pub(crate) struct TakeAllStack<T> {
    /// The first node of the chain pushed last, or null.
    top: AtomicPtr<T>,
}

impl<T> TakeAllStack<T> {
    pub(crate) fn new() -> Self {
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
    pub(crate) fn push_chain(&self, first: *mut T, mut link_last: impl FnMut(*mut T)) -> bool {
        // Relaxed: only the pointer is needed; the CAS below publishes.
        let mut top = self.top.load(Ordering::Relaxed);
        loop {
            link_last(top);
            // Release on success: whoever takes the stack sees the links just written, and
            // every write made to the nodes before they were pushed. Relaxed on failure: the
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
    pub(crate) fn take_all(&self) -> *mut T {
        // Acquire: pairs with the Release CAS in `push_chain`.
        self.top.swap(ptr::null_mut(), Ordering::Acquire)
    }

    /// Whether the stack is empty.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        // Relaxed: a hint for the callers, which say what orders it where it matters.
        self.top.load(Ordering::Relaxed).is_null()
    }
}
