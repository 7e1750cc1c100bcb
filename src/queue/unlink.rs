//! The unlink stack: how a cancel tells the shard to take a timer out of its wheel.
//!
//! A timer cancelled after linking holds its slot and memory until the shard unlinks it. The
//! canceller owns the emptied callback cell (rule 3 of `entry::node`), which serves as the link
//! of a per-lane take-all stack (`sync::stack`): the canceller pushes with one Release CAS, no
//! allocation; the shard takes the whole chain with one Acquire swap per turn and owns its
//! cells. Order does not matter: the shard re-reads each state word.
//!
//! The push takes no count: from the cancel on, the wheel's count belongs to the request. The
//! wheel never lets a cancelled, still-LINKED entry go on its own (`Wheel::settle`,
//! `Wheel::drain`): it unlinks it and leaves the count, which the shard releases on taking the
//! request (`Wheel::unlink_cancelled`). Requests left when the lane goes are released with it,
//! after the wheel was drained.

use std::ptr::{self, NonNull};

use crate::entry::{Entry, EntryRef};
use crate::sync::TakeAllStack;

/// A reusable buffer of requests taken off a stack (see [`Unlinks::take_all`]).
#[derive(Default)]
pub(crate) struct Requests(pub(crate) Vec<NonNull<Entry>>);

// SAFETY: each pointer stands for the strong count its request owns, as an `EntryRef` (which
// is `Send`) would.
unsafe impl Send for Requests {}

pub(crate) struct Unlinks {
    stack: TakeAllStack<Entry>,
}

impl Unlinks {
    pub(crate) fn new() -> Self {
        Unlinks {
            stack: TakeAllStack::new(),
        }
    }

    /// Pushes `entry` for the shard to unlink. Any thread.
    ///
    /// # Safety
    /// The caller won the cancel that emptied `entry`'s cell, the cancel found it LINKED (the
    /// wheel's count is now the request's), and it was not pushed before.
    pub(crate) unsafe fn push(&self, entry: &EntryRef) {
        let node = EntryRef::as_ptr(entry).cast_mut();
        self.stack.push_chain(node, |top| {
            // SAFETY: `node` is live (the caller's `entry`), and by this function's contract
            // the calling thread owns its callback cell until the push publishes it.
            unsafe { (*node).set_unlink_next(NonNull::new(top)) }
        });
    }

    /// Takes every request so far into `out` (each entry standing for its request's count);
    /// returns how many. Any thread: each call takes a whole chain.
    pub(crate) fn take_all(&self, out: &mut Vec<NonNull<Entry>>) -> usize {
        let mut node = self.stack.take_all();
        let before = out.len();
        while let Some(current) = NonNull::new(node) {
            // SAFETY: the entry is live: its request owns a count. The swap above took the
            // chain off the stack, so this thread owns the cells of its entries.
            node =
                unsafe { current.as_ref().unlink_next() }.map_or(ptr::null_mut(), NonNull::as_ptr);
            out.push(current);
        }
        out.len() - before
    }

    /// Takes every request and releases the counts they own; returns how many.
    ///
    /// # Safety
    /// No wheel holds any entry on the stack linked (each was unlinked and unmarked).
    pub(crate) unsafe fn release_all(&self) -> usize {
        let mut left = Vec::new();
        let released = self.take_all(&mut left);
        for entry in left {
            // SAFETY: each request owns one count of its entry (see the module docs), which no
            // wheel holds any more (by this function's contract); it is released once, here.
            drop(unsafe { EntryRef::from_raw(entry.as_ptr()) });
        }
        released
    }

    /// Whether nothing is waiting to be unlinked.
    pub(crate) fn is_empty(&self) -> bool {
        // Ordered by the sleep protocol's fence when a shard is about to sleep (see
        // `shard::signal`); elsewhere a hint.
        self.stack.is_empty()
    }
}

impl Drop for Unlinks {
    fn drop(&mut self) {
        // SAFETY: a lane outlives its shard's wheel (dropped or drained first, see
        // `shard::Stopped`), and draining unmarks every entry.
        unsafe { self.release_all() };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::entry::CallbackBox;
    use crate::entry::SlotId;
    use crate::sync::Arc;

    /// An entry as a cancel that must tell the shard leaves it: marked LINKED, cancelled, with
    /// the count a wheel would hold for it taken (and forgotten) here.
    fn cancelled_while_linked(deadline: u64) -> EntryRef {
        let entry = EntryRef::new(Entry::new(deadline, CallbackBox::new(|| {})));
        entry
            .mark_linked(entry.state(), SlotId { level: 0, slot: 1 })
            .unwrap();
        let (before, callback) = entry.cancel().expect("a new entry can be cancelled");
        assert!(before.linked_at().is_some());
        drop(callback);
        std::mem::forget(entry.clone()); // the wheel's count, now the request's
        entry
    }

    /// What a wheel does when it meets the entry before the request: unlinks and unmarks it.
    fn unlinked_by_the_wheel(entry: &EntryRef) {
        entry.mark_unlinked();
    }

    #[test]
    fn takes_every_request_once_and_releases_its_count() {
        let stack = Unlinks::new();
        assert!(stack.is_empty());
        let entries: Vec<EntryRef> = (0..5).map(cancelled_while_linked).collect();
        for entry in &entries {
            // SAFETY: each entry was just cancelled while linked and is pushed once.
            unsafe { stack.push(entry) };
        }
        assert!(!stack.is_empty());
        let mut taken = Vec::new();
        assert_eq!(stack.take_all(&mut taken), 5);
        assert!(stack.is_empty());
        let mut deadlines: Vec<u64> = taken
            .iter()
            // SAFETY: each request keeps its entry alive.
            .map(|e| unsafe { e.as_ref() }.state().deadline())
            .collect();
        deadlines.sort_unstable();
        assert_eq!(deadlines, vec![0, 1, 2, 3, 4]);
        for entry in &entries {
            unlinked_by_the_wheel(entry);
            // SAFETY: pushed again once, as a new request with the count taken back below.
            unsafe { stack.push(entry) };
        }
        // SAFETY: unmarked above, as a drained wheel leaves them.
        unsafe { stack.release_all() };
        for entry in &entries {
            assert_eq!(
                EntryRef::strong_count(entry),
                1,
                "the request's count was released"
            );
        }
        assert_eq!(stack.take_all(&mut Vec::new()), 0);
    }

    #[test]
    fn requests_left_on_the_stack_are_released_with_it() {
        let stack = Unlinks::new();
        let entry = cancelled_while_linked(7);
        // SAFETY: just cancelled while linked, pushed once.
        unsafe { stack.push(&entry) };
        unlinked_by_the_wheel(&entry);
        assert_eq!(EntryRef::strong_count(&entry), 2);
        drop(stack);
        assert_eq!(EntryRef::strong_count(&entry), 1);
    }

    #[test]
    fn pushes_from_many_threads_all_arrive() {
        let stack = Arc::new(Unlinks::new());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let stack = stack.clone();
                std::thread::spawn(move || {
                    for i in 0..500 {
                        let entry = cancelled_while_linked(t * 1000 + i);
                        unlinked_by_the_wheel(&entry);
                        // SAFETY: cancelled while linked here, pushed once.
                        unsafe { stack.push(&entry) };
                    }
                })
            })
            .collect();
        let mut taken = Vec::new();
        for thread in threads {
            stack.take_all(&mut taken);
            thread.join().unwrap();
        }
        stack.take_all(&mut taken);
        let mut deadlines: Vec<u64> = taken
            .iter()
            // SAFETY: each request keeps its entry alive.
            .map(|e| unsafe { e.as_ref() }.state().deadline())
            .collect();
        deadlines.sort_unstable();
        deadlines.dedup();
        assert_eq!(deadlines.len(), 2000);
        for entry in taken {
            // SAFETY: each request owns one count, and no wheel holds the entry.
            drop(unsafe { EntryRef::from_raw(entry.as_ptr()) });
        }
    }
}
