//! The unlink stack: how a cancel tells the shard to take a timer out of its wheel.
//!
//! A timer cancelled after linking holds its slot and memory until the shard unlinks it. The
//! canceller owns the emptied callback cell (rule 3 of `entry::node`), which serves as the link
//! of a per-lane take-all stack (`sync::stack`): the canceller pushes with one Release CAS, no
//! allocation; the shard takes the whole chain with one Acquire swap per turn and owns its
//! cells. Order does not matter: the shard re-reads each state word.
//!
//! A request is an [`UnlinkRef`]: the wheel's count, which the won cancel took over (see
//! `entry::unlink_ref`). The wheel never lets a cancelled, still-LINKED entry go on its own
//! (`Wheel::settle`, `Wheel::drain`): it unlinks it and leaves the count to the request, which
//! the shard turns back into an entry reference on taking it (`Wheel::unlink_cancelled`).
//! Requests left when the lane goes are dropped with it, after the wheel was drained.

use std::ptr::{self, NonNull};

use crate::entry::{Entry, UnlinkRef};
use crate::sync::TakeAllStack;

/// A reusable buffer of requests taken off a stack (see [`Unlinks::take_all`]).
#[derive(Default)]
pub(crate) struct Requests(pub(crate) Vec<UnlinkRef>);

pub(crate) struct Unlinks {
    stack: TakeAllStack<Entry>,
}

impl Unlinks {
    pub(crate) fn new() -> Self {
        Unlinks {
            stack: TakeAllStack::new(),
        }
    }

    /// Pushes `request` for the shard to unlink. Any thread.
    pub(crate) fn push(&self, request: UnlinkRef) {
        let node = request.into_raw().as_ptr();
        self.stack.push_chain(node, |top| {
            // SAFETY: `node` is live (the request's count), and the cancel that made the
            // request emptied its cell, which the calling thread owns until the push publishes
            // it (a request is made once, and pushed once, as it is consumed here).
            unsafe { (*node).set_unlink_next(NonNull::new(top)) }
        });
    }

    /// Takes every request so far into `out`; returns how many. Any thread: each call takes
    /// a whole chain.
    pub(crate) fn take_all(&self, out: &mut Vec<UnlinkRef>) -> usize {
        let mut node = self.stack.take_all();
        let before = out.len();
        while let Some(current) = NonNull::new(node) {
            // SAFETY: the entry is live: its request owns a count. The swap above took the
            // chain off the stack, so this thread owns the cells of its entries.
            node =
                unsafe { current.as_ref().unlink_next() }.map_or(ptr::null_mut(), NonNull::as_ptr);
            // SAFETY: `push` gave the request up as this pointer, taken back once here.
            out.push(unsafe { UnlinkRef::from_raw(current) });
        }
        out.len() - before
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
        // A lane outlives its shard's wheel (see `shard::Stopped`): each request frees its count.
        self.take_all(&mut Vec::new());
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::entry::{CallbackBox, EntryRef, SlotId};
    use crate::sync::Arc;

    /// An entry as a cancel that must tell the shard leaves it: linked in a one-slot stand-in
    /// for a wheel (a list's pointer holding the wheel's count), then cancelled, with the
    /// request the cancel handed over.
    fn cancelled_while_linked(deadline: u64) -> (EntryRef, FromWheel, UnlinkRef) {
        let entry = EntryRef::new(Entry::new(deadline, CallbackBox::new(|| {})));
        let listed = FromWheel(EntryRef::into_raw(entry.clone()));
        entry
            .mark_linked(entry.state(), SlotId { level: 0, slot: 1 })
            .unwrap();
        let cancelled = Entry::cancel(&entry).expect("a new entry can be cancelled");
        drop(cancelled.callback);
        let request = cancelled.unlink.expect("the cancel found it linked");
        (entry, listed, request)
    }

    /// A wheel's list pointer to an entry (see `cancelled_while_linked`).
    struct FromWheel(*const Entry);

    /// What a wheel does when it meets the entry before the request: takes it out of its list
    /// and unmarks it, leaving the count to the request.
    fn unlinked_by_the_wheel(entry: &EntryRef, listed: FromWheel) {
        assert_eq!(
            listed.0,
            EntryRef::as_ptr(entry),
            "the list held this entry"
        );
        entry.mark_unlinked();
    }

    #[test]
    fn takes_every_request_once_and_releases_its_count() {
        let stack = Unlinks::new();
        assert!(stack.is_empty());
        let (mut entries, mut kept) = (Vec::new(), Vec::new());
        for deadline in 0..5 {
            let (entry, listed, request) = cancelled_while_linked(deadline);
            stack.push(request);
            entries.push((entry, listed));
        }
        assert!(!stack.is_empty());
        let mut taken = Vec::new();
        assert_eq!(stack.take_all(&mut taken), 5);
        assert!(stack.is_empty());
        let mut deadlines: Vec<u64> = taken.iter().map(|e| e.state().deadline()).collect();
        deadlines.sort_unstable();
        assert_eq!(deadlines, vec![0, 1, 2, 3, 4]);
        for (entry, listed) in entries.drain(..) {
            assert_eq!(
                EntryRef::strong_count(&entry),
                2,
                "the request's and the handle's"
            );
            unlinked_by_the_wheel(&entry, listed);
            kept.push(entry);
        }
        taken.into_iter().for_each(|request| stack.push(request));
        assert_eq!(stack.take_all(&mut Vec::new()), 5);
        for entry in &kept {
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
        let (entry, listed, request) = cancelled_while_linked(7);
        stack.push(request);
        unlinked_by_the_wheel(&entry, listed);
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
                        let (entry, listed, request) = cancelled_while_linked(t * 1000 + i);
                        unlinked_by_the_wheel(&entry, listed);
                        stack.push(request);
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
        let mut deadlines: Vec<u64> = taken.iter().map(|e| e.state().deadline()).collect();
        deadlines.sort_unstable();
        deadlines.dedup();
        assert_eq!(deadlines.len(), 2000);
    }
}
