//! A take-all stack: many threads push, and whoever takes, takes everything.
//!
//! A Treiber stack with no single-node pop: a push swings `top` to a new chain with one CAS, a
//! take swaps `top` for null. With no pop nothing reads a successor through `top`, so there is
//! no ABA, even when a taken node is pushed again. The link field is the user's (a pusher's
//! closure writes it): an entry's callback cell, its `next`, or a free block's body.

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

    /// Pushes a chain starting at `first`; `link_last` gets the current top on each attempt
    /// and must make it the chain's last node's successor. The caller owns the links until the
    /// push. Returns whether the stack was empty before.
    #[inline]
    pub(crate) fn push_chain(&self, first: *mut T, mut link_last: impl FnMut(*mut T)) -> bool {
        // Relaxed: only the pointer is needed; the CAS below publishes.
        let mut top = self.top.load(Ordering::Relaxed);
        loop {
            link_last(top);
            // Release on success: a taker sees the links and the nodes' earlier writes.
            // Relaxed on failure: the retry needs only the new top.
            match self
                .top
                .compare_exchange_weak(top, first, Ordering::Release, Ordering::Relaxed)
            {
                Ok(previous) => return previous.is_null(),
                Err(actual) => top = actual,
            }
        }
    }

    /// Takes the whole stack (the chain's first node, or null); the caller owns the chain.
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
