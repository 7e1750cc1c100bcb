//! Recycling entries: a timer scheduled and cancelled costs no allocation and no free.
//!
//! Most RPC timeouts are cancelled while still in the inbound queue, leaving the shard as last
//! holder, and a free there would cross threads. So the shard hands unshared dead entries back
//! to their lane, whose owner (see `shard::lane`) reuses them:
//!
//! - At the end of a turn the shard links a lane's dead entries through `next` and pushes the
//!   chain onto the lane's take-all `returned` stack with one CAS ([`Recycler::give`]).
//! - The owner draws from a private stash, refilled by taking the whole stack with one swap
//!   ([`Recycler::take`]); a timer it takes back young goes straight into the stash
//!   ([`Recycler::keep`], see `queue::young`).
//!
//! The shard gives a lane at most `KEEP_PER_TURN` (`shard::worker`) a turn, and more than
//! [`RETURN_LIMIT`] only after seeing the stack emptied; past that it frees them. Shutdown
//! empties the stacks after joining the shards; `TimerEngine`'s `drop` empties the stashes.

use std::ptr;

use crate::entry::{Entry, EntryRef};
use crate::sync::{prefetch, Ordering, TakeAllStack, UnsafeCell};

/// The most entries a shard leaves on one lane's stack before it sees the stack emptied.
pub(crate) const RETURN_LIMIT: usize = 4096;

/// A lane's spare entries: the stack the shard fills and the stash its owner draws from.
pub(crate) struct Recycler {
    /// A chain of spare entries linked through `next`, each carrying one strong count.
    returned: TakeAllStack<Entry>,
    /// The owner's chain, taken from `returned`. Only the lane's owner touches it, inside a
    /// call on its engine, or `TimerEngine::drop`.
    stash: UnsafeCell<*mut Entry>,
}

// SAFETY: the chains hold strong counts of `Entry`s, which are `Send + Sync`; `returned` is
// atomic, and `stash` is reached only under the single-owner rule of `take`/`free_stash`.
unsafe impl Send for Recycler {}
// SAFETY: as above.
unsafe impl Sync for Recycler {}

impl Recycler {
    pub(crate) fn new() -> Self {
        Recycler {
            returned: TakeAllStack::new(),
            stash: UnsafeCell::new(ptr::null_mut()),
        }
    }

    /// Shard thread: pushes `spares` (each unshared, resolved and unlinked) onto the stack;
    /// returns whether the stack was empty before.
    pub(crate) fn give(&self, spares: &mut Vec<EntryRef>) -> bool {
        let mut chain: *mut Entry = ptr::null_mut();
        let mut last: *mut Entry = ptr::null_mut();
        for entry in spares.drain(..).rev() {
            let node = EntryRef::into_raw(entry).cast_mut();
            if last.is_null() {
                last = node;
            }
            // SAFETY: `node` carries the count `into_raw` took and the shard was its only
            // holder, so this thread alone writes its `next`.
            // Relaxed: published by the push below.
            unsafe { (*node).next.store(chain, Ordering::Relaxed) };
            chain = node;
        }
        if chain.is_null() {
            return false;
        }
        self.returned.push_chain(chain, |head| {
            // SAFETY: `last` is in the chain this thread still owns (unpublished).
            // Relaxed: published by the push.
            unsafe { (*last).next.store(head, Ordering::Relaxed) };
        })
    }

    /// Whether the stack is empty (the owner took everything given so far). Any thread.
    pub(crate) fn is_drained(&self) -> bool {
        // A hint; nothing is read through it.
        self.returned.is_empty()
    }

    /// Owner: a spare entry to reuse, unshared, if there is one.
    ///
    /// # Safety
    /// The caller is the lane's owner thread (so `free_stash` is not running: it runs only
    /// once the lane is closed to owners).
    #[inline]
    pub(crate) unsafe fn take(&self) -> Option<EntryRef> {
        // SAFETY: by this function's contract the calling thread alone touches the stash.
        self.stash.with_mut(|stash| unsafe {
            let mut head = *stash;
            if head.is_null() {
                head = self.returned.take_all();
                if head.is_null() {
                    return None;
                }
            }
            // Relaxed: the links were published by `give` and acquired by the swap, and no one
            // else holds these entries.
            let next = (*head).next.load(Ordering::Relaxed);
            *stash = next;
            if !next.is_null() {
                // Prefetch the next spare (written by the shard on another cpu), both
                // cache lines its count and entry may straddle.
                prefetch(next.cast::<u8>().wrapping_sub(std::mem::size_of::<usize>()));
                prefetch(
                    next.cast::<u8>()
                        .wrapping_add(std::mem::size_of::<Entry>() - 1),
                );
            }
            Some(EntryRef::from_raw(head))
        })
    }

    /// Owner: keeps `spare` (unshared, resolved and unlinked: a timer cancelled young) in the
    /// stash, first in line for the next schedule while its memory is in this cpu's cache.
    ///
    /// # Safety
    /// As [`take`](Self::take).
    #[inline]
    pub(crate) unsafe fn keep(&self, spare: EntryRef) {
        let node = EntryRef::into_raw(spare).cast_mut();
        // SAFETY: by this function's contract the calling thread alone touches the stash, and
        // `node` carries the count `into_raw` took, so this thread alone writes its `next`.
        self.stash.with_mut(|stash| unsafe {
            // Relaxed: the stash is this thread's alone.
            (*node).next.store(*stash, Ordering::Relaxed);
            *stash = node;
        });
    }

    /// Frees the entries on the stack. Any thread; used once the shard thread is gone.
    pub(crate) fn free_returned(&self) {
        let head = self.returned.take_all();
        // SAFETY: the swap made this thread the chain's only holder.
        unsafe { free_chain(head) };
    }

    /// Frees the owner's stash.
    ///
    /// # Safety
    /// No other thread is in [`take`](Self::take) or [`keep`](Self::keep), and none will be
    /// until the caller lets go: it owns the lane, or the lane is closed to owners.
    pub(crate) unsafe fn free_stash(&self) {
        // SAFETY: by this function's contract no other thread touches the stash now.
        let head = self
            .stash
            .with_mut(|stash| unsafe { std::mem::replace(&mut *stash, ptr::null_mut()) });
        // SAFETY: the stash's chain was the owner's, and is this thread's now.
        unsafe { free_chain(head) };
    }
}

impl Drop for Recycler {
    fn drop(&mut self) {
        self.free_returned();
        // SAFETY: `&mut self`: no other thread can reach the stash.
        unsafe { self.free_stash() };
    }
}

/// Drops every entry of a chain linked through `next`.
///
/// # Safety
/// The caller holds the chain: each node carries a strong count no one else will drop.
unsafe fn free_chain(mut node: *mut Entry) {
    while !node.is_null() {
        // SAFETY: by this function's contract the node carries a strong count to drop.
        let entry = unsafe { EntryRef::from_raw(node) };
        // Relaxed: the chain is this thread's alone.
        node = entry.next.load(Ordering::Relaxed);
        drop(entry);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::entry::CallbackBox;

    fn spare(deadline: u64) -> EntryRef {
        EntryRef::new(Entry::new(deadline, CallbackBox::new(|| {})))
    }

    fn take_all(recycler: &Recycler) -> Vec<u64> {
        let mut out = Vec::new();
        // SAFETY: the test thread is the only owner.
        while let Some(entry) = unsafe { recycler.take() } {
            assert!(
                EntryRef::strong_count(&entry) == 1,
                "a spare entry is unshared"
            );
            out.push(entry.state().deadline());
        }
        out
    }

    #[test]
    fn given_entries_come_back_once_each() {
        let recycler = Recycler::new();
        let mut spares: Vec<_> = (0..3).map(spare).collect();
        assert!(recycler.give(&mut spares), "the stack starts empty");
        assert!(spares.is_empty());
        let mut more: Vec<_> = (3..5).map(spare).collect();
        assert!(!recycler.give(&mut more), "the first chain is still there");
        assert!(!recycler.is_drained());
        let mut got = take_all(&recycler);
        got.sort_unstable();
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        assert!(recycler.is_drained());
        assert!(
            !recycler.give(&mut Vec::new()),
            "an empty chain is not pushed"
        );
    }

    #[test]
    fn freeing_releases_the_counts_held() {
        let kept = spare(9);
        let recycler = Recycler::new();
        let mut spares = vec![kept.clone()];
        recycler.give(&mut spares);
        assert_eq!(EntryRef::strong_count(&kept), 2);
        recycler.free_returned();
        assert_eq!(EntryRef::strong_count(&kept), 1);

        // Through the stash, and through `drop`.
        recycler.give(&mut vec![kept.clone(), spare(1)]);
        // SAFETY: the test thread is the only owner.
        let first = unsafe { recycler.take() }.unwrap();
        drop(first);
        recycler.give(&mut vec![spare(2)]);
        drop(recycler);
        assert_eq!(EntryRef::strong_count(&kept), 1);
    }
}
