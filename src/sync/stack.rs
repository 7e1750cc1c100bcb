//! A take-all stack: many threads push, and whoever takes, takes everything.
//!
//! A Treiber stack with no single-node pop: a push swings `top` to a new chain with one CAS, a
//! take swaps `top` for null. With no pop nothing reads a successor through `top`, so there is
//! no ABA, even when a taken node is pushed again. The link field is the user's (a pusher's
//! closure writes it): an entry's callback cell, its `next`, or a free block's body. A last
//! take may close the stack, swapping in an address no node has: the pushes that find it
//! fail ([`push_unless_closed`](TakeAllStack::push_unless_closed)), the rest were taken.

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
    pub(crate) fn push_chain(&self, first: *mut T, link_last: impl FnMut(*mut T)) -> bool {
        self.push(first, link_last, false).unwrap_or(false)
    }

    /// As [`push_chain`](Self::push_chain), unless the stack was closed: then `Err`, and the
    /// chain is the caller's still.
    #[inline]
    pub(crate) fn push_unless_closed(
        &self,
        first: *mut T,
        link_last: impl FnMut(*mut T),
    ) -> Result<bool, ()> {
        self.push(first, link_last, true)
    }

    #[inline(always)]
    fn push(
        &self,
        first: *mut T,
        mut link_last: impl FnMut(*mut T),
        closable: bool,
    ) -> Result<bool, ()> {
        // Relaxed: only the pointer is needed; the CAS below publishes.
        let mut top = self.top.load(Ordering::Relaxed);
        loop {
            if closable && top == Self::closed() {
                return Err(());
            }
            link_last(top);
            // Release on success: a taker sees the links and the nodes' earlier writes.
            // Relaxed on failure: the retry needs only the new top.
            match self
                .top
                .compare_exchange_weak(top, first, Ordering::Release, Ordering::Relaxed)
            {
                Ok(previous) => return Ok(previous.is_null()),
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

    /// Takes the whole stack for the last time and closes it (see the module documentation).
    pub(crate) fn close(&self) -> *mut T {
        // Acquire: as `take_all`.
        let taken = self.top.swap(Self::closed(), Ordering::Acquire);
        if taken == Self::closed() {
            ptr::null_mut()
        } else {
            taken
        }
    }

    /// The top of a closed stack: a dangling address, which no node has.
    fn closed() -> *mut T {
        ptr::NonNull::dangling().as_ptr()
    }

    /// Whether the stack is empty (a closed one is not).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        // Relaxed: a hint for the callers, which say what orders it where it matters.
        self.top.load(Ordering::Relaxed).is_null()
    }
}
